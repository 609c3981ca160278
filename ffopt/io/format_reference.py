"""The problem- and sweep-file reference, generated from the schemas at run time (``ffopt schema``).

Every table a file can hold is a ``Section``: its keys as the validator knows them (type, unit,
default, choices, meaning: ``ffopt.io.schema.Field``) and examples cut from the shipped files in
``problems/``. The sections come from walking the schemas, so a new key, table or [reference]
kind appears here without any change to this module:

- problem files: ``TOP_SCHEMA`` and every table nested in it; ``[reference]`` once with the keys
  every kind shares and once per kind (``reference_spec.SCHEMAS``, ``KIND_DOCS``);
- sweep files: ``SWEEP_SCHEMA`` and its tables, and the entries of ``[runs.parameters]``.

``text()`` renders it for a terminal, ``markdown()`` as the page committed as docs/problem-format.md.
"""

from __future__ import annotations

import difflib
import functools
import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ffopt.errors import ProblemError
from ffopt.io import reference_spec
from ffopt.io.problem import TOP_SCHEMA, all_positive
from ffopt.io.schema import Field, non_negative, positive
from ffopt.io.sweep_schema import PARAMETER_SCHEMA, SWEEP_SCHEMA

REPOSITORY = Path(__file__).resolve().parents[2]
PROBLEMS = REPOSITORY / "problems"
PAGE = "docs/problem-format.md"
REGENERATE = f"ffopt schema --markdown > {PAGE}"
WIDTH = 100  # terminal text is wrapped to this width (fixed, so the output does not depend on the terminal)

# Tables whose keys depend on their `kind`: file, dotted path -> (schema per kind, description per kind)
PER_KIND = {("problem", "reference"): (reference_spec.SCHEMAS, reference_spec.KIND_DOCS)}
# Tables of free keys, documented by a schema the validator does not use (file, dotted path -> schema)
DOC_ONLY = {("sweep", "runs.parameters"): PARAMETER_SCHEMA}

TYPE_NAMES = {
    "float": "number", "int": "integer", "str": "string", "bool": "boolean", "vector": "array of numbers",
    "floats": "array of numbers", "number_or_vector": "number or array of numbers", "matrix": "array of rows",
    "table": "table", "tables": "array of tables", "raw_table": "table", "str_list": "array of strings",
    "list": "array",
}
CHECK_TEXT = {positive: "> 0", non_negative: ">= 0", all_positive: "each > 0"}

# Examples worth showing: section -> (file under problems/, table in that file, entry of an array of tables).
# Sections not listed show the first shipped file that has them; "" as file: no example.
EXAMPLES = {
    "problem": [("e12_line.toml", "", 1)],
    "model": [("arm6_orientation.toml", "model", 1), ("ur5_line.toml", "model", 1)],
    "model.joints": [("e12_line.toml", "model.joints", 1), ("e12_line.toml", "model.joints", 3),
                     ("arm3d_bearing.toml", "model.joints", 2), ("arm3d_bearing.toml", "model.joints", 4),
                     ("panda_line.toml", "model.joints", 1), ("panda_line.toml", "model.joints", 4)],
    "model.joints.flexible": [("canadarm_tool_path.toml", "model.joints", 2)],
    "reference": [("", "", 1)],
    "reference.line": [("arm6_orientation.toml", "reference", 1)],
    "nlp": [("e12_torque_bounded.toml", "nlp", 1)],
    "sweep": [("sweeps/e12_stiffness_duration.toml", "", 1)],
    "sweep.runs": [("sweeps/e12_stiffness_duration.toml", "runs", 2)],
    "sweep.runs.parameters": [("sweeps/e12_stiffness_duration.toml", "runs.parameters", 1),
                              ("sweeps/e1_random.toml", "runs.parameters", 1)],
}

PROBLEM_INTRO = (
    "A problem file (TOML) describes a robot (`[model]` with one `[[model.joints]]` entry per joint), the path its "
    "outputs follow (`[reference]`) and, optionally, how to plan (`[solver]`, `[nlp]`) and check the plan "
    "(`[verification]`). `ffopt plan FILE --out DIR` plans it; the files in `problems/` are complete, commented "
    "examples."
)
SWEEP_INTRO = (
    "A sweep file (TOML) names a base problem and the problem fields to vary by their dotted names; "
    "`ffopt sweep FILE --out DIR` plans every run on Dask. Examples in `problems/sweeps/`."
)
CONVENTIONS = (
    ("Units", "SI units and radians: m, kg, s, rad, N m (torque), N m/rad (stiffness), N m s/rad (damping), kg m^2 "
              "(inertia). A key whose name ends in a unit is given in that unit: `_mm`, `_deg`, `_rad`, `_s`, `_hz`, "
              "`_mm_s` (mm/s), `_deg_s` (deg/s), `_deg_s2` (deg/s^2). Drive data are arm-side values (torque at the "
              "gear output, per rad of the joint) unless the key ends in `_motor_side` or is `rotor_inertia`; "
              "`gear_ratio` converts those. The results (trajectory.csv, summary.json) state their units."),
    ("Frames", "The base frame is fixed; `gravity` is given in it. Joint i sits at `origin`, a point in the frame of "
               "body i-1 (the base frame for the first joint); its joint frame is that frame turned by `rpy_deg` "
               "(URDF roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)) or `rotation`; `axis` is given in the joint "
               "frame, and body i's frame is the joint frame turned by the joint angle q_i about `axis`. At q = 0 "
               "without fixed rotations every body frame is parallel to the base frame. A body's `com` and "
               "`inertia` (about the centre of mass), the next joint's `origin`, `tool_origin` and "
               "`[model.payload]` are given in the body's own frame; the tool frame is the last body's frame "
               "turned by `tool_rpy_deg`."),
    ("Joints", "`elastic_gear`: a motor (`motor_inertia`) drives the joint through a spring-damper gear, and the "
               "motor angle qm is a coordinate of its own; `direct`: the torque acts on the joint itself (a stiff "
               "gear or a direct drive); `passive`: no motor, a spring-damper with rest angle 0 (an elastic "
               "bearing, a link's bending, a tool mount); with `axes`, 2-3 axes at one point with coupled "
               "`stiffness_matrix` and `damping_matrix`, named `<name>_1`, `<name>_2`, .... Elastic-gear and direct "
               "joints are actuated: one torque u each (at the gear output, column `u_<name>` of trajectory.csv). "
               "A `flexible` table makes the joint's body a flexible beam with modal coordinates `<name>.mode<j>` "
               "(m)."),
    ("Outputs", "`model.outputs` names what the inverse model makes follow the path, as many outputs as actuated "
                "joints: tool-point coordinates `x`, `y`, `z` (base frame); tool-frame angles `yaw`, `pitch`, "
                "`roll` (Z-Y-X, R = Rz(yaw) Ry(pitch) Rx(roll); gimbal lock at pitch = +-90 deg); actuated joints by "
                "name (their link-side angle). `[reference]` gives the positions in mm in the order the outputs "
                "name them, tool angles in deg, joint moves in deg or rad. Joint and tool outputs may be mixed (a "
                "redundant arm: the tool axes and its elbow joint); a tool path then gives the joint outputs' angles "
                "in `joint_start_deg` / `joint_end_deg`."),
    ("Timing", "Every path starts at rest, rests `rest_before`, moves (the time law s rises from 0 to 1 with zero "
               "derivatives at both ends) and rests `rest_after`; the plan and its verification cover the whole "
               "interval. A motion time is given (`duration`, `durations`) or follows from a speed (`speed_mm_s`, "
               "the peak tool speed) or from joint speed and acceleration limits."),
    ("Derived automatically", "Not in the file: the start state (static equilibrium at the start of the path, "
                              "gears and passive joints deflected under gravity; the inverse kinematics from "
                              "`joint_guess`, or a joint move's start), the motor angles and every derivative "
                              "of the path, arm-side from motor-side drive data, the joints of a multi-axis "
                              "bearing, the mode shapes of flexible links, the BDF row scaling "
                              "(`solver.scaling_power`), the NLP strategy (`nlp.strategy = \"auto\"`, from the "
                              "zero dynamics along the path) and its pre- and post-actuation, the PD gains of the "
                              "verification (from `pd_bandwidth_hz`). Before any solve the path is checked on the "
                              "rigid robot: workspace, inverse-kinematics branch jumps, singularities, gimbal lock."),
    ("Checks", "An unknown key is an error (with a did-you-mean; a key of another `[reference]` kind is named as "
               "such), so is a vector of the wrong length (never broadcast) and a pair given twice (`duration` "
               "and `speed_mm_s`, `inertia` and `inertia_diag`, arm-side and motor-side data). Each error is one "
               "line naming the file and the dotted field, e.g. `e12_line.toml: model.joints[3].stiffness: must be "
               ">= 0, got -1.0`; `ffopt plan` exits with code 2 and writes nothing."),
    ("Fields by name", "`Problem.with_values` and a sweep's `set` and `parameters` name a field by its dotted "
                       "path: `model.joints.q3.stiffness` (a joint entry by its name) or "
                       "`model.joints[3].stiffness` (by its 1-based position), `nlp.torque_max[2]` (an array "
                       "element). The command-line options of `ffopt plan` override `[solver]` and `[nlp]`."),
)


@dataclass(frozen=True)
class Example:
    source: str  # path in the repository, e.g. problems/e12_line.toml
    text: str  # the lines of that file, verbatim


@dataclass(frozen=True)
class Section:
    name: str  # dotted id for `ffopt schema NAME`: "model.joints", "reference.arc", "sweep.runs"
    header: str  # how the table is written in a file: "[model]", "[[model.joints]]", "top level"
    doc: str
    fields: dict[str, Field]
    file: str  # "problem" or "sweep"
    path: str  # dotted path of the table in its file ("" for the top level)
    kind: str | None = None  # the [reference] kind (per-kind sections)
    examples: tuple[Example, ...] = ()


# ------------------------------------------------------------------------------------ sections
@functools.cache
def sections() -> tuple[Section, ...]:
    """Every table of a problem file, then of a sweep file, with examples from the shipped files."""
    found = [Section("problem", "top level of a problem file", PROBLEM_INTRO, TOP_SCHEMA, "problem", "")]
    found += _walk(TOP_SCHEMA, "problem", "")
    found.append(Section("sweep", "top level of a sweep file", SWEEP_INTRO, SWEEP_SCHEMA, "sweep", ""))
    found += _walk(SWEEP_SCHEMA, "sweep", "")
    return tuple(_with_examples(s) for s in found)


def _walk(schema: dict[str, Field], file: str, where: str) -> list[Section]:
    out = []
    for key, field in schema.items():
        path = f"{where}.{key}" if where else key
        name = path if file == "problem" else f"sweep.{path}"
        if field.kind in ("table", "tables") and field.schema is not None:
            header = f"[[{path}]]" if field.kind == "tables" else f"[{path}]"
            out.append(Section(name, header, field.doc, field.schema, file, path))
            out += _walk(field.schema, file, path)
        elif (file, path) in PER_KIND:
            out += _per_kind(file, path, name, field.doc)
        elif (file, path) in DOC_ONLY:
            out.append(Section(name, f"[{path}]", field.doc, DOC_ONLY[file, path], file, path))
    return out


def _per_kind(file: str, path: str, name: str, doc: str) -> list[Section]:
    """The keys every kind shares (the table's own section), then one section per kind with its other keys."""
    schemas, kind_docs = PER_KIND[file, path]
    first = next(iter(schemas.values()))
    common = {k: f for k, f in first.items() if all(s.get(k) == f for s in schemas.values())}
    kinds = ", ".join(f"{name}.{k}" for k in schemas)
    out = [Section(name, f"[{path}]", f"{doc}. The keys every kind takes; each kind's own keys are in its "
                   f"section ({kinds}).", common, file, path)]
    for kind, schema in schemas.items():
        own = {k: f for k, f in schema.items() if k not in common}
        what = kind_docs.get(kind, "")
        out.append(Section(f"{name}.{kind}", f'[{path}] kind = "{kind}"', f"{what}. Also takes the keys of "
                           f"section {name}.", own, file, path, kind))
    return out


def find(name: str) -> list[Section]:
    """The section ``name``, or the sections holding the key ``name`` = "<section>.<key>" (a key of several
    [reference] kinds gives one per kind, each with only that key). ProblemError if there is none."""
    every = sections()
    for s in every:
        if s.name == name:
            return [s]
    table, _, key = name.rpartition(".")
    hits = [s for s in every if key in s.fields and (s.name == table or s.kind and s.name.rpartition(".")[0] == table)]
    if hits:
        return [Section(s.name, s.header, s.doc, {key: s.fields[key]}, s.file, s.path, s.kind) for s in hits]
    names = [s.name for s in every]
    close = difflib.get_close_matches(name, names + [f"{s.name}.{k}" for s in every for k in s.fields], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ProblemError(f"schema: no section or key {name!r}{hint}; sections: {', '.join(names)}")


# ------------------------------------------------------------------------------------ examples
def _with_examples(section: Section) -> Section:
    wanted = EXAMPLES.get(section.name)
    if wanted is None:
        wanted = _first_file_with(section)
    examples = []
    for file, table, entry in wanted:
        path = PROBLEMS / file
        if not file or not path.is_file():
            continue
        text = excerpt(path.read_text(encoding="utf-8"), table, entry)
        if text:
            examples.append(Example(path.relative_to(REPOSITORY).as_posix(), text))
    return Section(section.name, section.header, section.doc, section.fields, section.file, section.path,
                   section.kind, tuple(examples))


def _first_file_with(section: Section) -> list[tuple[str, str, int]]:
    """The first shipped file (sorted by name) that has the table (of the section's kind)."""
    folder = PROBLEMS if section.file == "problem" else PROBLEMS / "sweeps"
    if not folder.is_dir():
        return []
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        table = _lookup(data, section.path)
        if table is None or (section.kind is not None and table.get("kind") != section.kind):
            continue
        return [(path.relative_to(PROBLEMS).as_posix(), section.path, 1)]
    return []


def _lookup(data: dict, path: str):
    for key in filter(None, path.split(".")):
        data = data[0] if isinstance(data, list) and data else data
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data[0] if isinstance(data, list) and data else data


HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]\s]+)\s*\]\]?\s*(#.*)?$")


def excerpt(text: str, table: str, entry: int = 1) -> str:
    """The lines of ``[table]`` (the ``entry``-th ``[[table]]``, with its sub-tables) as the file has them,
    comments included; ``table = ""``: the top-level keys. "" if the file has no such table."""
    lines = text.splitlines()
    headers = [(i, m.group(2), m.group(1) == "[[") for i, line in enumerate(lines) if (m := HEADER.match(line))]
    if not table:
        end = headers[0][0] if headers else len(lines)
        first = next((i for i in range(end) if lines[i].strip() and not lines[i].lstrip().startswith("#")), end)
        return _trim(lines[first:end])
    starts = [(i, array) for i, name, array in headers if name == table]
    if len(starts) < entry:
        return ""
    start, array = starts[entry - 1]
    end = next((i for i, name, _ in headers if i > start and not (array and name.startswith(table + "."))),
               len(lines))
    return _trim(lines[start:end])


def _trim(lines: list[str]) -> str:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(line.rstrip() for line in lines)


# ------------------------------------------------------------------------------------ one key
def key_type(field: Field, code: str = "") -> str:
    """E.g. "array of 3 numbers", "number > 0", "string, one of a, b" (``code``: the quote around choices)."""
    kind = TYPE_NAMES.get(field.kind, field.kind)
    if field.length is not None and field.kind in ("vector", "floats"):
        kind = f"array of {field.length} numbers"
    if field.check in CHECK_TEXT:
        kind += f" {CHECK_TEXT[field.check]}"
    if field.choices:
        kind += ", one of " + ", ".join(f"{code}{c}{code}" for c in field.choices)
    return kind


def key_default(field: Field) -> str:
    if field.required:
        return "required"
    return "" if field.default is None else toml_value(field.default)


def toml_value(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f'"{x}"'
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in x) + "]"
    return repr(x)


def key_meaning(field: Field, name: str, section: Section, link=lambda s: s.name) -> str:
    """The key's doc; a table's doc names the section that lists its keys (``link(section)``)."""
    path = f"{section.path}.{name}" if section.path else name
    table = next((s for s in sections() if s.file == section.file and s.path == path and s.kind is None), None)
    return field.doc if table is None else f"{field.doc} (section {link(table)})"


# ------------------------------------------------------------------------------------ terminal
def text(selected: list[Section] | None = None) -> str:
    """The reference for a terminal: the conventions and every section, or only ``selected``."""
    parts = []
    if selected is None:
        parts.append(_wrap("Problem and sweep file format (generated from ffopt's schemas; `ffopt schema "
                           "SECTION` prints one section, `ffopt schema --markdown` this as Markdown)." +
                           ("" if PROBLEMS.is_dir() else " Examples: the problems/ folder of the ffopt repository "
                                                         "(not installed with this copy)."), 0))
        parts.append("Conventions\n" + "\n\n".join(_wrap(f"{title}. {body}", 2) for title, body in CONVENTIONS))
        selected = sections()
    parts += [_section_text(s) for s in selected]
    return "\n\n".join(parts) + "\n"


def _section_text(section: Section) -> str:
    lines = [f"{section.header}   (ffopt schema {section.name})"]
    if section.doc:
        lines.append(_wrap(section.doc, 2))
    width = max([len(k) for k in section.fields] + [14]) + 4
    for key, field in section.fields.items():
        facts = key_type(field) + f" [{field.unit}]" * bool(field.unit)
        default = key_default(field)
        if default:
            facts += "; " + (default if default == "required" else f"default {default}")
        lines.append("")
        lines.append(_wrap(facts, width, first=f"  {key}".ljust(width)))
        lines.append(_wrap(key_meaning(field, key, section), width))
    for ex in section.examples:
        lines += ["", f"  Example ({ex.source}):", textwrap.indent(ex.text, "    ")]
    return "\n".join(lines)


def _wrap(text_: str, indent: int, first: str | None = None) -> str:
    pad = " " * indent
    return textwrap.fill(text_.replace("`", ""), WIDTH, initial_indent=pad if first is None else first,
                         subsequent_indent=pad, break_on_hyphens=False, break_long_words=False)


# ------------------------------------------------------------------------------------ Markdown
def markdown() -> str:
    """The whole reference as the Markdown page docs/problem-format.md."""
    every = sections()
    out = ["# Problem and sweep file format", "",
           f"<!-- Generated from ffopt's schemas; do not edit. Regenerate: {REGENERATE} -->",
           "", "Generated from the schemas ffopt validates files with, so every key a file may hold is here "
           "with its type, unit, default and meaning. On a terminal: `ffopt schema` (everything) or "
           "`ffopt schema SECTION` (one table, e.g. `ffopt schema reference.arc`, or one key, e.g. "
           "`ffopt schema model.joints.stiffness`).", "",
           "Contents:", "", "- [Conventions](#conventions)"]
    for file, title in (("problem", "Problem files"), ("sweep", "Sweep files")):
        links = ", ".join(_link(s) for s in every if s.file == file)
        out.append(f"- {title}: {links}")
    out += ["", "## Conventions", ""]
    out += [f"**{title}.** {_md(body)}\n" for title, body in CONVENTIONS]
    for file, title in (("problem", "Problem files"), ("sweep", "Sweep files")):
        out += [f"## {title}", ""]
        for s in every:
            if s.file == file:
                out += _section_markdown(s)
    return "\n".join(out).rstrip() + "\n"


def markdown_sections(selected: list[Section]) -> str:
    """Only the ``selected`` sections, as in the page."""
    return "\n".join(line for s in selected for line in _section_markdown(s)).rstrip() + "\n"


def _heading(section: Section) -> str:
    return f"`{section.header}`" if section.path else section.header.capitalize()


def _link(section: Section) -> str:
    return f"[`{section.name}`](#{_slug(_heading(section))})"


def _section_markdown(section: Section) -> list[str]:
    out = [f"### {_heading(section)}", "", f"`ffopt schema {section.name}`" + (f": {_md(section.doc)}" if
                                                                                 section.doc else ""), ""]
    if section.fields:
        out += ["| key | type | unit | default | meaning |", "|---|---|---|---|---|"]
        for key, field in section.fields.items():
            default = key_default(field)
            cells = [f"`{key}`", key_type(field, "`"), field.unit, default if default in ("", "required") else
                     f"`{default}`", key_meaning(field, key, section, _link)]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    for ex in section.examples:
        out += [f"Example (`{ex.source}`):", "", "```toml", ex.text, "```", ""]
    return out


def _md(text_: str) -> str:
    """``<`` outside code spans as an entity (else Markdown takes <name> for an HTML tag)."""
    parts = text_.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _cell(text_: str) -> str:
    return _md(text_).replace("|", "\\|")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")
