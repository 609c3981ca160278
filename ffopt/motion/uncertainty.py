"""Parameter ranges of the plant (``[uncertainty]``) and the plants drawn from them.

A user knows the gear stiffness, the payload or a link's mass within a range, never exactly. The table
names model fields by the dotted names of ``ffopt simulate --set`` / ``Problem.with_values``
(``ffopt.io.values``), ``*`` standing for every entry of an array of tables that has the field::

    [uncertainty]
    samples = 64            # plants in all: the vertices, then a scrambled Sobol design
    seed = 0
    [uncertainty.ranges]
    "model.joints.*.stiffness" = "+-20%"   # relative to each joint's own value
    "model.joints.q3.mass" = "+-20%"
    "model.payload.mass" = [0.0, 5.0]      # an absolute interval

A relative range scales the nominal value (a vector field, e.g. ``inertia_diag``, as a whole); an interval
sets a scalar field (also one the problem leaves out, e.g. a payload's mass on an arm without ``[model.payload]``:
each plant sets it, the nominal problem keeps its default). ``uncertainty_from_dict`` validates the table with errors naming the field (unknown,
empty range, a value that makes the model unphysical); ``plants`` builds the plants: every vertex of the box
(with many fields the 2 d axis extremes and a capped set of corners, ``vertex_points``), then a scrambled
Sobol design (Sobol, on the distribution of points in a cube; Owen's scrambling) with the seed, so that the
same seed gives the same plants.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np

from ffopt.errors import ProblemError

__all__ = ["Range", "Uncertainty", "Plant", "uncertainty_from_dict", "expand_field", "vertex_points",
           "design_points", "plants", "problem_uncertainty", "MAX_ALL_VERTICES", "MAX_VERTICES", "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 64
MAX_ALL_VERTICES = 6  # up to this many fields: all 2^d vertices (64); more: axis extremes + capped corners
MAX_VERTICES = 32  # ... at most this many vertices then
_RELATIVE = re.compile(r"^\s*(?:\+-|\+/-|±)\s*([0-9.eE+-]+)\s*(%?)\s*$")
# Fields whose value must stay positive (> 0) or non-negative (>= 0) for the model to be physical; others are
# left to the problem's own validation (run on every vertex).
_POSITIVE = ("stiffness", "stiffness_motor_side", "motor_inertia", "rotor_inertia", "gear_ratio", "length",
             "youngs_modulus", "density")
_NON_NEGATIVE = ("mass", "damping", "damping_motor_side", "inertia_diag", "inertia", "stiffness_cubic",
                 "viscous_friction", "coulomb_friction")


@dataclass(frozen=True)
class Range:
    """One uncertain field: a dotted name (``*`` expanded) with its nominal value and bounds."""

    name: str  # a concrete dotted name, e.g. model.joints.q3.stiffness
    nominal: object  # float or list (vector field)
    low: float  # relative ranges: the factor's bounds (0.8, 1.2); intervals: the value's bounds
    high: float
    relative: bool
    written: str  # the key as written in the table (before * was expanded)

    def value(self, x: float):
        """The field's value at x in [0, 1] (0: low, 1: high)."""
        a = self.low + (self.high - self.low) * float(x)
        if not self.relative:
            return a
        if isinstance(self.nominal, list):
            return (np.asarray(self.nominal, float) * a).tolist()
        return float(self.nominal) * a

    def text(self) -> str:
        if self.relative:
            return f"{self.name} x[{self.low:g}, {self.high:g}]"
        return f"{self.name} in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class Uncertainty:
    """The validated ``[uncertainty]`` table."""

    ranges: tuple[Range, ...]
    samples: int = DEFAULT_SAMPLES
    seed: int = 0
    raw: dict = field(default_factory=dict, compare=False)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.ranges]

    def values(self, x) -> dict:
        """{dotted name: value} at the unit point x (one coordinate per range)."""
        return {r.name: r.value(xi) for r, xi in zip(self.ranges, x)}


@dataclass
class Plant:
    """One plant of the design: its label, unit point (0: every low bound, 1: high), values and problem."""

    label: str
    point: np.ndarray
    values: dict
    problem: object = None


def _flatten(table: dict, prefix: str = "") -> dict:
    """Nested tables (``model.joints."*".stiffness = ...`` unquoted in TOML) as dotted names."""
    out = {}
    for k, v in table.items():
        name = f"{prefix}.{k}" if prefix else str(k)
        out.update(_flatten(v, name) if isinstance(v, dict) else {name: v})
    return out


def expand_field(raw: dict, key: str, source: str) -> list[tuple[str, object]]:
    """The concrete dotted names ``key`` stands for in the problem table ``raw`` (``*``: each named entry of an
    array of tables that has the rest of the path) with their nominal values; a ProblemError if none."""
    from ffopt.io.values import split_key

    parts = key.split(".")
    out: list[tuple[str, object]] = []

    def walk(node, i, path):
        if i == len(parts):
            out.append((path, node))
            return
        part = parts[i]
        if isinstance(node, list) and part == "*":
            for k, entry in enumerate(node):
                name = entry.get("name", f"[{k + 1}]") if isinstance(entry, dict) else f"[{k + 1}]"
                walk(entry, i + 1, f"{path}.{name}" if not name.startswith("[") else f"{path}{name}")
            return
        if isinstance(node, list):
            names = [e.get("name") if isinstance(e, dict) else None for e in node]
            if part in names:
                walk(node[names.index(part)], i + 1, f"{path}.{part}")
            return
        if isinstance(node, dict) and part in node:
            walk(node[part], i + 1, f"{path}.{part}" if path else part)

    if "*" not in parts:
        split_key(key)  # a malformed name is an error of its own
    walk(raw, 0, "")
    out = [(n, v) for n, v in out if _is_number(v) or (isinstance(v, list) and v and all(_is_number(x) for x in v))]
    if not out:
        what = "no entry has this field" if "*" in parts else "no such numeric field in the problem"
        raise ProblemError(f"{source}: uncertainty.ranges.{key!r}: {what} (dotted names as `ffopt simulate --set` "
                           "takes them, e.g. 'model.joints.q3.stiffness', 'model.joints.*.stiffness', "
                           "'model.payload.mass')")
    return out


def _fields(raw: dict, key: str, source: str, relative: bool) -> list[tuple[str, object]]:
    """``expand_field``; an absolute interval may also name a field the problem leaves out (its default: e.g.
    a payload's mass on an arm without [model.payload]), which each plant then sets."""
    try:
        return expand_field(raw, key, source)
    except ProblemError:
        if relative or "*" in key:
            raise
        return [(key, None)]


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _bounds(spec, where: str) -> tuple[float, float, bool]:
    """(low, high, relative) of a range as written: "+-20%", "+-0.2" (relative) or [lo, hi] (absolute)."""
    if isinstance(spec, str):
        m = _RELATIVE.match(spec)
        if m is None:
            raise ProblemError(f"{where}: {spec!r} is not a range: write a relative range \"+-20%\" (or \"+-0.2\") "
                               "or an absolute interval [low, high]")
        try:
            r = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        except ValueError:
            raise ProblemError(f"{where}: {spec!r}: {m.group(1)!r} is not a number") from None
        if not r > 0:
            raise ProblemError(f"{where}: empty range {spec!r} (the relative half-width must be > 0)")
        return 1.0 - r, 1.0 + r, True
    if isinstance(spec, (list, tuple)) and len(spec) == 2 and all(_is_number(x) for x in spec):
        lo, hi = float(spec[0]), float(spec[1])
        if not hi > lo:
            raise ProblemError(f"{where}: empty range [{spec[0]}, {spec[1]}] (expected low < high)")
        return lo, hi, False
    raise ProblemError(f"{where}: expected a relative range \"+-20%\" or an interval [low, high], got {spec!r}")


def _check_physical(name: str, nominal, lo: float, hi: float, relative: bool, where: str) -> None:
    """A stiffness, inertia, ratio must stay > 0, a mass or damping >= 0 over the whole range."""
    leaf = name.rsplit(".", 1)[-1]
    nom = np.atleast_1d(np.asarray(0.0 if nominal is None else nominal, float))
    if relative:
        ends = np.concatenate([nom * lo, nom * hi])
        if np.any(nom < 0) or np.any(nom == 0):
            raise ProblemError(f"{where}: a relative range of {name} (nominal {nominal}) does not vary it: its "
                               "nominal value is zero or negative; give an absolute interval [low, high]")
    else:
        if nom.size != 1:
            raise ProblemError(f"{where}: {name} is a vector ({nominal}); give a relative range \"+-10%\"")
        ends = np.array([lo, hi])
    if leaf in _POSITIVE and ends.min() <= 0:
        raise ProblemError(f"{where}: {name} would be {ends.min():g} at the range's low end: a {leaf} must be > 0")
    if leaf in _NON_NEGATIVE and ends.min() < 0:
        raise ProblemError(f"{where}: {name} would be {ends.min():g} at the range's low end: a {leaf} must be >= 0")


def uncertainty_from_dict(data: dict | None, problem, source: str | None = None) -> Uncertainty | None:
    """The ``[uncertainty]`` table ``data`` (None: none) of ``problem`` validated: samples (int >= 1), seed (int),
    ranges {dotted name: "+-r%" | [lo, hi]}; every vertex is checked by the problem's own validation."""
    if data is None:
        return None
    source = source or problem.source
    if not isinstance(data, dict):
        raise ProblemError(f"{source}: uncertainty: expected a table, got {type(data).__name__}")
    unknown = set(data) - {"samples", "seed", "ranges"}
    if unknown:
        raise ProblemError(f"{source}: uncertainty.{sorted(unknown)[0]}: unknown key (samples, seed, ranges; the "
                           "ranges go in [uncertainty.ranges])")
    samples, seed = data.get("samples", DEFAULT_SAMPLES), data.get("seed", 0)
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise ProblemError(f"{source}: uncertainty.samples: expected an integer >= 1, got {samples!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ProblemError(f"{source}: uncertainty.seed: expected an integer >= 0, got {seed!r}")
    table = data.get("ranges")
    if not isinstance(table, dict) or not table:
        raise ProblemError(f"{source}: uncertainty.ranges: missing or empty (e.g. \"model.joints.*.stiffness\" = "
                           "\"+-20%\")")
    raw = problem.to_dict()
    ranges: list[Range] = []
    for key, spec in _flatten(table).items():
        where = f"{source}: uncertainty.ranges.{key!r}"
        lo, hi, relative = _bounds(spec, where)
        for name, nominal in _fields(raw, key, source, relative):
            if name in {r.name for r in ranges}:
                raise ProblemError(f"{where}: {name} has a range already")
            _check_physical(name, nominal, lo, hi, relative, where)
            ranges.append(Range(name, nominal, lo, hi, relative, key))
    out = Uncertainty(tuple(ranges), samples, seed, dict(data))
    for x in itertools.islice(itertools.product((0.0, 1.0), repeat=len(ranges)), 4):
        try:
            problem.with_values(out.values(x))  # the problem's own checks at a few vertices
        except ProblemError as err:
            raise ProblemError(f"{source}: uncertainty.ranges: the plant at {_point_text(out, x)} is not valid: "
                               f"{err}") from None
    return out


def _point_text(u: Uncertainty, x) -> str:
    return ", ".join(f"{r.name} = {_short(r.value(xi))}" for r, xi in zip(u.ranges, x))


def _short(v) -> str:
    return f"{v:.4g}" if _is_number(v) else "[" + ", ".join(f"{a:.4g}" for a in v) + "]"


def vertex_points(d: int, seed: int = 0, max_vertices: int = MAX_VERTICES) -> np.ndarray:
    """Vertices of [0, 1]^d: all 2^d for d <= MAX_ALL_VERTICES; else the 2 d axis extremes (one field at a
    bound, the others mid-range), the two corners with every field low or every field high, and seeded random
    corners up to ``max_vertices`` rows."""
    if d <= MAX_ALL_VERTICES:
        return np.array(list(itertools.product((0.0, 1.0), repeat=d)))
    rows = [np.zeros(d), np.ones(d)]
    for i in range(d):
        for b in (0.0, 1.0):
            x = np.full(d, 0.5)
            x[i] = b
            rows.append(x)
    rng = np.random.default_rng(seed)
    seen = {tuple(r) for r in rows}
    while len(rows) < max(max_vertices, 2 * d + 2) and len(seen) < 2 ** d + 2 * d:
        x = rng.integers(0, 2, d).astype(float)
        if tuple(x) not in seen:
            seen.add(tuple(x))
            rows.append(x)
    return np.array(rows)


def design_points(d: int, n: int, seed: int = 0) -> np.ndarray:
    """n points of a scrambled Sobol sequence in [0, 1]^d (scipy.stats.qmc; the seed fixes the scrambling)."""
    import warnings

    from scipy.stats import qmc

    if n <= 0:
        return np.zeros((0, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance of n not a power of 2: fine for a design
        return qmc.Sobol(d, scramble=True, seed=seed).random(n)


def plants(problem, ranges: Uncertainty, n: int | None = None, seed: int | None = None,
           build: bool = True) -> list[Plant]:
    """The plants of the uncertainty: its vertices first (``vertex_points``), then scrambled Sobol points up to
    n in all (default ranges.samples; n smaller than the vertices: the first n vertices). Each a ``Plant``
    with the problem with its values applied (build=False: values only, for workers that build their own)."""
    n = ranges.samples if n is None else int(n)
    seed = ranges.seed if seed is None else int(seed)
    d = len(ranges.ranges)
    vertices = vertex_points(d, seed)
    points = np.vstack([vertices, design_points(d, n - len(vertices), seed)])[:n]
    out = []
    for k, x in enumerate(points):
        label = (f"vertex {''.join('-' if xi == 0 else '+' if xi == 1 else 'o' for xi in x)}" if k < len(vertices)
                 else f"sample {k + 1 - len(vertices)}")
        values = ranges.values(x)
        out.append(Plant(label, x, values, problem.with_values(values) if build else None))
    return out


def problem_uncertainty(problem) -> Uncertainty | None:
    """The problem file's ``[uncertainty]`` table validated (None without one)."""
    raw = problem.to_dict() if getattr(problem, "raw", None) is not None else {}
    return uncertainty_from_dict(raw.get("uncertainty"), problem)
