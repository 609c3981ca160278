"""The problem-format reference (`ffopt schema`, docs/problem-format.md): every key documented, units that
match the key names, the committed page equal to the generated one, and new schemas appearing by themselves."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ffopt.cli.main import main
from ffopt.io import format_reference as ref
from ffopt.io import reference_spec
from ffopt.io.problem import TOP_SCHEMA
from ffopt.io.schema import Field
from ffopt.io.sweep_schema import PARAMETER_SCHEMA, SWEEP_SCHEMA

REPO = Path(__file__).resolve().parents[1]
# SI units and the edge units the key names announce, combined with spaces (products), / and ^n
UNIT_WORDS = {"m", "kg", "s", "rad", "N", "Hz", "mm", "deg", "V", "A", "Ohm", "H", "mrad"}  # H, Ohm, A, V: DC-motor
# electrics; mrad: the verification tolerance of angle outputs (the unit of its reported errors)
# a key ending in one of these is given in that unit (longest suffix wins)
SUFFIX_UNITS = {"_mm": "mm", "_mrad": "mrad", "_deg": "deg", "_rad": "rad", "_s": "s", "_hz": "Hz", "_mm_s": "mm/s",
                "_deg_s": "deg/s", "_rad_s": "rad/s", "_deg_s2": "deg/s^2", "_rad_s2": "rad/s^2"}


def every_field() -> list[tuple[str, Field]]:
    """(dotted key, Field) of every key a problem or sweep file may hold, walked from the schemas themselves
    (independent of the generator): nested tables, every [reference] kind, the sweep's parameter entries."""
    out = []

    def walk(schema: dict, where: str):
        for key, field in schema.items():
            out.append((f"{where}.{key}", field))
            if field.schema is not None:
                walk(field.schema, f"{where}.{key}")

    walk(TOP_SCHEMA, "problem")
    for kind, schema in reference_spec.SCHEMAS.items():
        walk(schema, f"problem.reference[{kind}]")
    walk(SWEEP_SCHEMA, "sweep")
    walk(PARAMETER_SCHEMA, "sweep.runs.parameters")
    return out


@pytest.fixture(autouse=True)
def fresh_sections():
    ref.sections.cache_clear()
    yield
    ref.sections.cache_clear()


def test_every_key_has_a_meaning():
    fields = every_field()
    assert len(fields) > 120  # the walk reaches the nested tables and every kind
    missing = [key for key, field in fields if not field.doc.strip()]
    assert not missing, f"keys without doc= (what the key means; ffopt schema prints it): {missing}"
    kinds = set(reference_spec.SCHEMAS) | set(reference_spec.KINDS)
    assert not kinds - set(reference_spec.KIND_DOCS), "add the new [reference] kind to reference_spec.KIND_DOCS"


def test_units_are_si_and_match_the_key_names():
    for key, field in every_field():
        words = re.split(r"[ /]", re.sub(r"\^\d", "", field.unit)) if field.unit else []
        assert set(words) <= UNIT_WORDS, f"{key}: unit {field.unit!r} is not written with {sorted(UNIT_WORDS)}"
        name = key.rsplit(".", 1)[1]
        suffix = max((s for s in SUFFIX_UNITS if name.endswith(s)), key=len, default=None)
        if suffix is not None:
            assert field.unit == SUFFIX_UNITS[suffix], f"{key}: the name says {SUFFIX_UNITS[suffix]}, unit is " \
                                                       f"{field.unit!r}"
    units = dict(every_field())
    assert units["problem.model.joints.stiffness"].unit == "N m/rad"
    assert units["problem.model.joints.rotor_inertia"].unit == "kg m^2"  # motor-side keys get units too
    assert units["problem.model.joints.coulomb_friction_motor_side"].unit == "N m"


def test_every_key_is_in_the_reference():
    page = ref.markdown()
    for key, _ in every_field():
        assert f"| `{key.rsplit('.', 1)[1]}` |" in page, key
    names = [s.name for s in ref.sections()]
    assert len(names) == len(set(names))
    assert {"model.joints.flexible", "model.payload", "sweep.runs.parameters"} <= set(names)
    assert {f"reference.{kind}" for kind in reference_spec.SCHEMAS} <= set(names)


def test_committed_page_is_the_generated_one():
    committed = (REPO / ref.PAGE).read_text(encoding="utf-8")
    assert committed == ref.markdown(), f"{ref.PAGE} is out of date: regenerate it with `{ref.REGENERATE}`"


def test_reference_kinds_split_into_shared_and_own_keys():
    by_name = {s.name: s for s in ref.sections()}
    shared = set(by_name["reference"].fields)
    assert {"kind", "rest_before", "rest_after", "joint_guess"} <= shared
    # time_law belongs to every kind but the prefilter (whose filter makes the motion), so it is no shared key
    assert all(("time_law" in schema) == (kind != "prefilter") for kind, schema in reference_spec.SCHEMAS.items())
    for kind, schema in reference_spec.SCHEMAS.items():
        own = by_name[f"reference.{kind}"]
        assert own.kind == kind and set(own.fields) == set(schema) - shared
    assert "points_mm" in by_name["reference.polyline"].fields and "points_mm" not in by_name["reference.arc"].fields


def test_a_new_kind_and_a_new_table_appear_by_themselves(monkeypatch):
    """What the parallel work adds (a [reference] kind, an [output] table) is in the reference without
    touching the generator."""
    monkeypatch.setitem(reference_spec.SCHEMAS, "prefilter", {
        **reference_spec.SCHEMAS["line"],
        "cutoff_hz": Field("float", unit="Hz", doc="cut-off frequency of the prefilter")})
    monkeypatch.setitem(reference_spec.KIND_DOCS, "prefilter", "a line smoothed by a Butterworth prefilter")
    monkeypatch.setitem(TOP_SCHEMA, "output", Field("table", default=None, doc="the torque table as delivered",
                                                    schema={"hold": Field("str", choices=("zoh", "linear"),
                                                                          doc="hold between samples")}))
    text = ref.text(ref.find("reference.prefilter"))
    assert "cutoff_hz" in text and "[Hz]" in text and "Butterworth" in text and "start_mm" in text
    assert "time_law" not in text  # a shared key stays in section reference
    output = ref.text(ref.find("output"))
    assert "[output]" in output and "one of zoh, linear" in output
    assert "cutoff_hz" in ref.markdown() and "`[output]`" in ref.markdown()


def test_examples_are_cut_from_the_shipped_files():
    sections = ref.sections()
    with_examples = {s.name for s in sections if s.examples}
    assert with_examples >= {"problem", "model", "model.payload", "model.joints", "model.joints.flexible",
                             "solver", "verification", "nlp", "sweep", "sweep.plan", "sweep.runs",
                             "sweep.runs.parameters", *(f"reference.{k}" for k in reference_spec.KINDS)}
    for s in sections:
        for ex in s.examples:
            source = (REPO / ex.source).read_text(encoding="utf-8")
            assert ex.text in source, (s.name, ex.source)  # verbatim, comments included
            data = tomllib.loads(ex.text)  # each example is valid TOML on its own
            if s.kind is not None:
                assert data["reference"]["kind"] == s.kind
            assert "seed 000" not in ex.text.lower() and "../shared" not in ex.text


def test_excerpt_takes_one_entry_with_its_sub_tables():
    text = '# intro\nname = "a"\n\n[[runs]]\nx = 1\n[runs.parameters]\np = [1]\n\n[[runs]]\nx = 2\n[plan]\nv = 1\n'
    assert ref.excerpt(text, "") == 'name = "a"'
    assert ref.excerpt(text, "runs", 1) == "[[runs]]\nx = 1\n[runs.parameters]\np = [1]"
    assert ref.excerpt(text, "runs", 2) == "[[runs]]\nx = 2"
    assert ref.excerpt(text, "plan") == "[plan]\nv = 1"
    assert ref.excerpt(text, "runs", 3) == "" and ref.excerpt(text, "model") == ""


def test_markdown_links_point_at_headings():
    page = ref.markdown()
    slugs = {re.sub(r"[^a-z0-9 _-]", "", h.lower()).replace(" ", "-")
             for h in re.findall(r"^#{2,3} (.+)$", page, flags=re.M)}
    targets = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert targets and targets <= slugs, targets - slugs
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", page, flags=re.S))
    assert "u_&lt;name>" in prose and "<name>" not in prose  # outside code, < is escaped (else an HTML tag)


def test_cli_prints_one_section(capsys):
    assert main(["schema", "reference.arc"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('[reference] kind = "arc"') and "center_mm" in out and "[mm]" in out
    assert "points_mm" not in out  # a polyline key
    assert "Example (problems/arm3d_arc.toml)" in out


def test_cli_prints_one_key_of_every_kind_that_has_it(capsys):
    assert main(["schema", "reference.duration"]) == 0
    out = capsys.readouterr().out
    assert {"reference.line", "reference.arc", "reference.joint_ptp"} <= set(re.findall(r"schema (reference\.\w+)",
                                                                                       out))
    assert "polyline" not in out  # polyline has durations, not duration
    assert main(["schema", "nlp.torque_max"]) == 0
    assert "[N m]" in capsys.readouterr().out


def test_cli_markdown_is_the_page(capsys):
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == ref.markdown()


def test_cli_unknown_section_is_bad_input(capsys):
    assert main(["schema", "referense.ark"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'reference.arc'" in err and "model.joints" in err
