"""Sweep files (TOML) -> the list of runs, each a fully resolved problem with a hash of its spec.

A sweep file names a base problem and the problem fields to vary, by dotted name (as
``Problem.with_values``)::

    name = "E12 gear stiffness x duration"
    problem = "e12_line.toml"                  # relative to the sweep file

    [set]                                      # fields set for every run
    "verification.payload_scales" = []

    [plan]                                     # how every run is planned
    verify = true                              # default: the problem's verification.enabled
    compile = false                            # C code for the BDF loop (default false, see PLAN_SCHEMA)
    plots = false                              # PNGs in every run folder

    [[runs]]                                   # a block of runs; the sweep is the union of the blocks
    name = "bdf"
    mode = "grid"                              # grid: every combination; list: i-th values together;
    set = { "solver.method" = "bdf" }          # random: `samples` draws with `seed`
    [runs.parameters]
    "reference.duration" = [0.3, 0.4, 0.5]     # a list of values
    gear_stiffness = { fields = ["model.joints.q1.stiffness", "model.joints.q2.stiffness"],
                       logspace = [3e4, 3e5, 4] }

A parameter is a list of values or a table with one of ``values``, ``linspace = [a, b, n]``,
``logspace = [a, b, n]`` (n values from a to b, evenly spaced in log), and in random mode also
``uniform = [a, b]``, ``loguniform = [a, b]``, ``integers = [a, b]`` (inclusive) or ``choice`` (a list);
``fields`` sets several problem fields to the same value (default: the parameter's own name). Every
run's problem is validated before any run starts; an error names the sweep file, the block and the
values.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffopt._version import __version__
from ffopt.errors import ProblemError
from ffopt.io.problem import Problem, load_problem
from ffopt.io.schema import Field, Validator
from ffopt.io.sweep_schema import DETERMINISTIC, PLAN_SCHEMA, RANDOM, RESERVED, RESERVED_PREFIXES, SWEEP_SCHEMA


@dataclass(frozen=True)
class Run:
    """One run: its parameter values, every field set by name, and the resolved problem."""

    index: int  # position in the sweep (blocks in order, grid in row-major order of the parameters)
    block: str
    params: dict  # parameter name -> value (the Parquet input columns)
    values: dict  # dotted field -> value (the sweep's and block's set, and the parameters)
    problem: Problem = field(repr=False)
    run_id: str = ""  # hash of the full spec (problem, plan settings, ffopt version)

    def spec(self, plan: dict) -> dict:
        return {"problem": self.problem.to_dict(), "plan": plan, "ffopt": __version__}


@dataclass
class Sweep:
    source: Path
    name: str
    description: str
    base: Problem
    plan: dict  # verify (None: the problem's), compile, plots
    runs: list[Run]
    parameters: list[str]  # parameter names in column order
    duplicates: int = 0  # runs dropped because an earlier run has the same spec
    text: str = ""  # the sweep file as read (copied into the sweep folder)


def spec_hash(spec: dict) -> str:
    """16 hex digits of the SHA-256 of the spec as canonical JSON (sorted keys, exact float repr)."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# A sweep of more runs than this is refused unless asked for (``max_runs=None``, ``ffopt sweep --force``): a
# 1000 x 1000 grid grew past 2.4 GB while its million problems were validated, silently, and would take
# months on one machine. Every run's problem is built before the sweep starts (an error names its values).
MAX_RUNS = 10_000
PROGRESS_S = 1.5  # a line at least this often while the runs' problems are checked


def load_sweep(path: str | Path, max_runs: int | None = MAX_RUNS, progress=None) -> Sweep:
    """Read a sweep file, expand its blocks into runs and validate every run's problem (at most ``max_runs``
    runs; None: any number; ``progress``: called with a line while the problems are checked)."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such sweep file")
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ProblemError(f"{path}: not valid TOML: {err}") from None
    except (UnicodeDecodeError, OSError) as err:
        raise ProblemError(f"{path}: cannot read the sweep file: {err}") from None
    return sweep_from_dict(data, path, text, max_runs=max_runs, progress=progress)


def sweep_from_dict(data: dict, source: str | Path = "<memory>", text: str | None = None,
                    base: Problem | None = None, max_runs: int | None = MAX_RUNS, progress=None) -> Sweep:
    """A sweep from the tables of a sweep file (e.g. built in a notebook). ``source`` names it in errors
    and is where a relative ``problem`` path starts; ``base``: the base problem as an object instead of
    the ``problem`` key."""
    import tomlkit

    source = Path(source)
    v = Validator(str(source))
    schema = SWEEP_SCHEMA if base is None else {**SWEEP_SCHEMA, "problem": Field("str", default="")}
    d = v.table(data, schema, "")
    if base is None:
        problem_path = Path(d["problem"]) if Path(d["problem"]).is_absolute() else source.parent / d["problem"]
        if not problem_path.is_file():
            v.fail("problem", f"no such problem file {d['problem']!r} (looked for {problem_path})")
        base = load_problem(problem_path)
    if text is None:
        text = f"# base problem: {base.source}\n" + tomlkit.dumps(data)
    common = dict(_flatten(d["set"] or {}))
    plan = dict(d["plan"] or {k: f.default for k, f in PLAN_SCHEMA.items()})  # verify, compile, plots
    blocks = [(f"runs[{b + 1}]", block, _parameters(v, block, f"runs[{b + 1}]")) for b, block in enumerate(d["runs"])]
    total = _check_run_count(v, blocks, max_runs)
    runs, names = [], []
    said = time.perf_counter()
    for where, block, params in blocks:
        label = block["name"] or where.removeprefix("runs[").removesuffix("]")
        fixed = {**common, **dict(_flatten(block["set"] or {}))}
        names += [n for n in params if n not in names]
        for combo in _combinations(v, block, params, where):
            runs.append(_resolve(v, base, len(runs), label, params, combo, fixed, where))
            if progress is not None and time.perf_counter() - said >= PROGRESS_S:
                progress(f"checking the runs' problems: {len(runs)} of {total}")
                said = time.perf_counter()
    unique, seen = [], set()
    for run in runs:
        run_id = spec_hash(run.spec(plan))
        if run_id not in seen:
            seen.add(run_id)
            unique.append(Run(len(unique), run.block, run.params, run.values, run.problem, run_id))
    return Sweep(source, d["name"] or source.stem, d["description"], base, plan, unique, names,
                 len(runs) - len(unique), text)


def _block_runs(block: dict, params: dict[str, _Parameter]) -> int:
    """How many runs a block expands into, counted without expanding it."""
    if block["mode"] == "random":
        return int(block["samples"] or 0)
    lengths = [len(p.arg) if p.kind == "values" else int(p.arg[2]) for p in params.values()]
    return math.prod(lengths) if block["mode"] == "grid" else (max(lengths) if lengths else 0)


def _check_run_count(v: Validator, blocks, max_runs: int | None) -> int:
    counts = [(where, block, _block_runs(block, params)) for where, block, params in blocks]
    total = sum(n for *_, n in counts)
    if max_runs is not None and total > max_runs:
        where, block, n = max(counts, key=lambda c: c[2])
        v.fail("runs", f"{total:,} runs ({where}{' ' + repr(block['name']) if block['name'] else ''}: {n:,}), more than "
               f"the {max_runs:,} ffopt runs without being asked: every run's problem is built before the sweep starts, "
               "and each run takes seconds; use a coarser grid or split the sweep, or give --force (max_runs=None) to "
               "run them all")
    return total


def _flatten(table: dict, prefix: str = ""):
    """Dotted names (quoted keys) -> values; TOML reads unquoted dotted keys as nested tables, which
    name the same fields."""
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _flatten(value, name)
        else:
            yield name, value


@dataclass(frozen=True)
class _Parameter:
    name: str
    fields: tuple[str, ...]
    kind: str  # one of DETERMINISTIC + RANDOM
    arg: object


def _parameters(v: Validator, block: dict, where: str) -> dict[str, _Parameter]:
    table = block["parameters"]
    if not table:
        v.fail(f"{where}.parameters", "no parameters: name at least one problem field to vary")
    out = {}
    for name, spec in table.items():
        at = f"{where}.parameters.{name}" if "." not in name else f'{where}.parameters."{name}"'
        if isinstance(spec, dict) and not ({"fields", *DETERMINISTIC, *RANDOM} & set(spec)):
            # an unquoted dotted key (reference.duration = [...]) reads as nested tables
            for sub, value in _flatten(spec, name):
                out.update(_parameters(v, {**block, "parameters": {sub: value}}, where))
            continue
        out[name] = _parameter(v, name, spec, at, block["mode"])
    return out


def _parameter(v: Validator, name: str, spec, at: str, mode: str) -> _Parameter:
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        v.fail(at, f"the name {name!r} is a column of the results table; name the parameter otherwise (its "
               "problem fields go in fields = [...])")
    if isinstance(spec, list):
        spec = {"values": spec}
    if not isinstance(spec, dict):
        v.fail(at, f"expected a list of values or a table (values, linspace, logspace, ...), got {spec!r}")
    fields = spec.get("fields", [name])
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        v.fail(f"{at}.fields", f"expected a list of dotted field names, got {fields!r}")
    kinds = [k for k in spec if k != "fields"]
    allowed = DETERMINISTIC + (RANDOM if mode == "random" else ())
    unknown = [k for k in kinds if k not in allowed]
    if unknown:
        extra = " (random draws need mode = \"random\")" if set(unknown) & set(RANDOM) else ""
        v.fail(f"{at}.{unknown[0]}", f"unknown key{extra}; use one of {', '.join(allowed)} (and fields)")
    if len(kinds) != 1:
        v.fail(at, f"give exactly one of {', '.join(allowed)}, got {', '.join(kinds) or 'none'}")
    kind, arg = kinds[0], spec[kinds[0]]
    if kind in ("values", "choice"):
        if not isinstance(arg, list) or not arg:
            v.fail(f"{at}.{kind}", f"expected a non-empty list of values, got {arg!r}")
        arg = _uniform_numbers(arg)
    elif kind in ("linspace", "logspace"):
        ok = isinstance(arg, list) and len(arg) == 3 and all(_number(x) for x in arg[:2]) and \
            isinstance(arg[2], int) and not isinstance(arg[2], bool) and arg[2] >= 1
        if not ok or (kind == "logspace" and min(arg[:2]) <= 0):
            v.fail(f"{at}.{kind}", f"expected [first, last, count]{' with first, last > 0' if kind == 'logspace' else ''}"
                   f", got {arg!r}")
    else:
        ok = isinstance(arg, list) and len(arg) == 2 and all(_number(x) for x in arg) and arg[0] <= arg[1]
        if kind == "integers":
            ok = ok and all(isinstance(x, int) for x in arg)
        if not ok or (kind == "loguniform" and arg[0] <= 0):
            v.fail(f"{at}.{kind}", f"expected [low, high] with low <= high{' > 0' if kind == 'loguniform' else ''}, "
                   f"got {arg!r}")
    return _Parameter(name, tuple(fields), kind, arg)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _uniform_numbers(values: list) -> list:
    """Integers and floats mixed in one list become floats (one column type per parameter)."""
    if all(_number(x) for x in values) and any(isinstance(x, float) for x in values):
        return [float(x) for x in values]
    return list(values)


def _values(p: _Parameter) -> list:
    if p.kind == "values":
        return p.arg
    a, b, n = p.arg
    grid = np.linspace(a, b, n) if p.kind == "linspace" else np.geomspace(a, b, n)
    return [float(x) for x in grid]


def _draw(p: _Parameter, rng: np.random.Generator, n: int) -> list:
    if p.kind in DETERMINISTIC:
        values = _values(p)
        return [values[i] for i in rng.integers(len(values), size=n)]
    if p.kind == "choice":
        return [p.arg[i] for i in rng.integers(len(p.arg), size=n)]
    a, b = p.arg
    if p.kind == "uniform":
        return rng.uniform(a, b, n).tolist()
    if p.kind == "loguniform":
        return np.exp(rng.uniform(math.log(a), math.log(b), n)).tolist()
    return rng.integers(a, b + 1, size=n).tolist()


def _combinations(v: Validator, block: dict, params: dict[str, _Parameter], where: str) -> list[dict]:
    names = list(params)
    if block["mode"] != "random" and (block["samples"] is not None or block["seed"] is not None):
        v.fail(f"{where}.{'samples' if block['samples'] is not None else 'seed'}",
               'only for mode = "random"')
    if block["mode"] == "grid":
        return [dict(zip(names, combo)) for combo in itertools.product(*(_values(params[n]) for n in names))]
    if block["mode"] == "list":
        columns = {n: _values(params[n]) for n in names}
        lengths = {n: len(c) for n, c in columns.items()}
        if len(set(lengths.values())) != 1:
            v.fail(f"{where}.parameters", "mode = \"list\" takes the i-th value of every parameter together: they "
                   f"need equal lengths, got {lengths}")
        return [dict(zip(names, row)) for row in zip(*columns.values())]
    if block["samples"] is None or block["seed"] is None:
        v.fail(f"{where}.{'samples' if block['samples'] is None else 'seed'}",
               'mode = "random" needs samples (how many runs) and seed (the same seed draws the same runs)')
    rng = np.random.default_rng(block["seed"])
    draws = {n: _draw(params[n], rng, block["samples"]) for n in names}
    return [{n: draws[n][i] for n in names} for i in range(block["samples"])]


def _resolve(v: Validator, base: Problem, index: int, block: str, params: dict[str, _Parameter], combo: dict,
             fixed: dict, where: str) -> Run:
    values = dict(fixed)
    for name, value in combo.items():
        values.update({f: value for f in params[name].fields})
    try:
        problem = base.with_values(values)
    except ProblemError as err:
        shown = ", ".join(f"{n} = {x!r}" for n, x in combo.items())
        v.fail(where, f"run {index + 1} ({shown}): {err}")
    return Run(index, block, dict(combo), values, problem)
