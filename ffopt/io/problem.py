"""Problem files (TOML) -> validated ``Problem`` objects.

A problem is a robot (``[model]`` with ``[[model.joints]]``), a tool path (``[reference]``),
default solver settings (``[solver]``) and verification settings (``[verification]``).
Lengths in the reference are given in millimetres (``*_mm`` keys) or radians; everything
inside ffopt is SI. See ``problems/*.toml`` for complete, commented examples.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.schema import Field, Validator, non_negative, positive
from ffopt.models.chain import JOINT_KINDS, Body, Chain, Joint
from ffopt.models.flexible import AXES, FlexibleModel
from ffopt.nlp import settings as nlp_settings

TIME_LAWS = ("poly11", "hermite9", "quintic")
BDF_FORMS = ("I3", "I2", "I1")
# auto: the zero dynamics choose bdf or nlp, with fallbacks (ffopt.auto_method); hi..dc: seed 000 family
METHODS = ("auto", "bdf", "nlp", "hi", "dd", "dd43", "dd44", "dd48", "dd49", "km", "dc")

JOINT_SCHEMA = {
    "name": Field("str", required=True),
    "kind": Field("str", required=True, choices=JOINT_KINDS),
    "axis": Field("vector", required=True, length=3),
    "origin": Field("vector", default=[0.0, 0.0, 0.0], length=3),
    "mass": Field("float", required=True, check=non_negative),
    "com": Field("vector", default=[0.0, 0.0, 0.0], length=3),
    "inertia": Field("matrix", doc="3x3 about the centre of mass, body frame"),
    "inertia_diag": Field("vector", length=3, doc="diagonal of the inertia about the centre of mass"),
    "stiffness": Field("float", default=0.0, check=non_negative),
    "stiffness_cubic": Field("float", default=0.0, check=non_negative),
    "damping": Field("float", default=0.0, check=non_negative),
    "motor_inertia": Field("float", default=0.0, check=non_negative),
    "viscous_friction": Field("float", default=0.0, check=non_negative),
    "coulomb_friction": Field("float", default=0.0, check=non_negative),
}

MODEL_SCHEMA = {
    "gravity": Field("vector", default=[0.0, 0.0, 0.0], length=3),
    "outputs": Field("str_list", doc="controlled tool coordinates, e.g. ['x', 'z']"),
    "tool_origin": Field("vector", required=True, length=3),
    "constant_inertia": Field("matrix"),
    "joints": Field("tables", required=True, schema=JOINT_SCHEMA),
}

REFERENCE_SCHEMA = {
    "kind": Field("str", required=True, choices=("line",)),
    "start_mm": Field("vector", required=True),
    "end_mm": Field("vector", required=True),
    "duration": Field("float", required=True, check=positive),
    "time_law": Field("str", default="poly11", choices=TIME_LAWS),
    "rest_before": Field("float", default=0.05, check=non_negative),
    "rest_after": Field("float", default=0.3, check=non_negative),
    "joint_guess": Field("vector", doc="link-side joint angles near the start (picks the branch)"),
}

SOLVER_SCHEMA = {
    "method": Field("str", default="auto", choices=METHODS),
    "order": Field("int", default=6, check=lambda k: None if 1 <= k <= 6 else f"must be 1..6, got {k}"),
    "step": Field("float", default=1e-3, check=positive),
    "form": Field("str", default="I1", choices=BDF_FORMS),
    "scaling_power": Field("float", default=None),
}

VERIFICATION_SCHEMA = {
    "enabled": Field("bool", default=True),
    "pd_bandwidth_hz": Field("float", default=5.0, check=positive),
    "pd_damping_ratio": Field("float", default=1.0, check=positive),
    "payload_scales": Field("vector", default=[0.5, 2.0]),
    "rtol": Field("float", default=1e-9, check=positive),
}

NLP_SCHEMA = {
    "scheme": Field("str", default="radau", choices=nlp_settings.SCHEMES),
    "degree": Field("int", default=3, check=lambda d: None if 1 <= d <= 9 else f"must be 1..9, got {d}"),
    "step": Field("float", default=1e-3, check=positive, doc="collocation interval length h (s)"),
    "objective": Field("str", default="smoothness", choices=nlp_settings.OBJECTIVES),
    "torque_max": Field("vector", doc="bound on |u| per motor (N m)"),
    "torque_rate_max": Field("vector", doc="bound on |du/dt| per motor (N m/s)"),
    "tracking": Field("str", default="exact", choices=nlp_settings.TRACKING),
    "band_mm": Field("float", default=1.0, check=positive, doc="tool band half-width / penalty error scale"),
    "penalty_weight": Field("float", default=1e3, check=positive),
    "pre_actuation_s": Field("float", default=0.0, check=non_negative),
    "post_actuation_s": Field("float", default=0.0, check=non_negative),
    "strategy": Field("str", default="auto", choices=nlp_settings.STRATEGIES),
    "backend": Field("str", default="casadi", choices=nlp_settings.BACKENDS),
    "square_by_newton": Field("bool", default=True,
                              doc="casadi/auto backends: solve a square NLP (causal exact tracking, no bounds) "
                                  "by Newton + sparse LU instead of IPOPT"),
    "warm_start": Field("str", default="bdf", choices=nlp_settings.WARM_STARTS),
    "tol": Field("float", default=1e-8, check=positive),
    "max_iter": Field("int", default=3000, check=lambda n: None if n > 0 else f"must be > 0, got {n}"),
    "max_wall_time_s": Field("float", default=600.0, check=positive),
}

TOP_SCHEMA = {
    "name": Field("str", required=True),
    "description": Field("str", default=""),
    "model": Field("table", required=True, schema=MODEL_SCHEMA),
    "reference": Field("table", required=True, schema=REFERENCE_SCHEMA),
    "solver": Field("table", default=None, schema=SOLVER_SCHEMA),
    "verification": Field("table", default=None, schema=VERIFICATION_SCHEMA),
    "nlp": Field("table", default=None, schema=NLP_SCHEMA),
}


class _ProblemValidator(Validator):
    def value(self, x, field, where):
        if field.kind == "str_list":
            if not isinstance(x, list) or not all(isinstance(c, str) and c in AXES for c in x) or not x:
                self.fail(where, f"expected a list of tool axes from {list(AXES)}, got {x!r}")
            if len(set(x)) != len(x):
                self.fail(where, f"repeated axis in {x!r}")
            return list(x)
        return super().value(x, field, where)


@dataclass(frozen=True)
class ReferenceSpec:
    kind: str
    start: np.ndarray  # SI (m)
    end: np.ndarray
    duration: float
    time_law: str
    rest_before: float
    rest_after: float
    joint_guess: np.ndarray | None


@dataclass(frozen=True)
class SolverSettings:
    method: str = "auto"
    order: int = 6
    step: float = 1e-3
    form: str = "I1"
    scaling_power: float | None = None  # None: the form's default


@dataclass(frozen=True)
class VerificationSettings:
    enabled: bool = True
    pd_bandwidth_hz: float = 5.0
    pd_damping_ratio: float = 1.0
    payload_scales: tuple[float, ...] = (0.5, 2.0)
    rtol: float = 1e-9


@dataclass(frozen=True)
class Problem:
    name: str
    description: str
    chain: Chain
    outputs: tuple[str, ...]
    reference_spec: ReferenceSpec
    solver: SolverSettings = field(default_factory=SolverSettings)
    verification: VerificationSettings = field(default_factory=VerificationSettings)
    source: str = "<memory>"
    nlp: nlp_settings.NlpSettings = field(default_factory=nlp_settings.NlpSettings)

    @cached_property
    def model(self) -> FlexibleModel:
        return FlexibleModel(self.chain, self.outputs, self.name)

    @cached_property
    def reference(self):
        from ffopt.reference import line

        spec = self.reference_spec
        return line(spec.start, spec.end, spec.duration, time_law=spec.time_law,
                    rest_before=spec.rest_before, rest_after=spec.rest_after, names=list(self.outputs))

    def with_solver(self, **changes) -> "Problem":
        return self._sharing_model(replace(self, solver=replace(self.solver, **{k: v for k, v in changes.items()
                                                                               if v is not None})))

    def with_nlp(self, **changes) -> "Problem":
        return self._sharing_model(replace(self, nlp=replace(self.nlp, **{k: v for k, v in changes.items()
                                                                         if v is not None})))

    def _sharing_model(self, new: "Problem") -> "Problem":
        """Settings changed only: keep the built model and reference (and their cached CasADi functions)."""
        for name in ("model", "reference"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]
        return new

    def with_chain(self, chain: Chain) -> "Problem":
        return replace(self, chain=chain)


def load_problem(path: str | Path) -> Problem:
    """Read and validate a problem file. Raises ProblemError naming the file and field."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such problem file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ProblemError(f"{path}: not valid TOML: {err}") from None
    return problem_from_dict(data, source=str(path))


def problem_from_dict(data: dict, source: str = "<memory>") -> Problem:
    v = _ProblemValidator(source)
    d = v.table(data, TOP_SCHEMA, "")
    chain = _build_chain(v, d["model"])
    outputs = tuple(d["model"]["outputs"] or ("x", "y", "z"))
    n_act = len(chain.actuated)
    if len(outputs) != n_act:
        v.fail("model.outputs", f"{len(outputs)} controlled outputs {list(outputs)} but {n_act} actuated "
               "joints: the inverse model needs as many outputs as inputs")
    ref = _reference_spec(v, d["reference"], len(outputs), chain.n_joints)
    solver = SolverSettings(**d["solver"]) if d["solver"] else SolverSettings()
    ver = d["verification"]
    verification = VerificationSettings(**{**ver, "payload_scales": tuple(ver["payload_scales"])}) if ver \
        else VerificationSettings()
    nlp = _nlp_settings(d["nlp"])
    return Problem(d["name"], d["description"], chain, outputs, ref, solver, verification, source, nlp)


def _nlp_settings(table: dict | None) -> nlp_settings.NlpSettings:
    if not table:
        return nlp_settings.NlpSettings()
    t = dict(table)
    for key in ("torque_max", "torque_rate_max"):
        t[key] = None if t[key] is None else tuple(t[key])
    return nlp_settings.NlpSettings(**t)


def _build_chain(v: Validator, m: dict) -> Chain:
    joints = []
    names = set()
    for i, j in enumerate(m["joints"]):
        where = f"model.joints[{i + 1}]"
        if j["name"] in names:
            v.fail(f"{where}.name", f"duplicate joint name {j['name']!r}")
        names.add(j["name"])
        axis = np.array(j["axis"])
        norm = np.linalg.norm(axis)
        if norm < 1e-12:
            v.fail(f"{where}.axis", "must be a non-zero vector")
        joints.append(Joint(
            name=j["name"], kind=j["kind"], axis=axis / norm, origin=np.array(j["origin"]),
            body=Body(j["mass"], np.array(j["com"]), _inertia(v, j, where)),
            stiffness=j["stiffness"], stiffness_cubic=j["stiffness_cubic"], damping=j["damping"],
            motor_inertia=j["motor_inertia"], viscous_friction=j["viscous_friction"],
            coulomb_friction=j["coulomb_friction"],
        ))
        _check_joint_physics(v, joints[-1], where)
    n = len(joints)
    const = m["constant_inertia"]
    if const is not None:
        const = np.array(const)
        if const.shape != (n, n):
            v.fail("model.constant_inertia", f"must be {n}x{n} (one row per joint), got {const.shape}")
        if not np.allclose(const, const.T) or np.linalg.eigvalsh(const).min() <= 0:
            v.fail("model.constant_inertia", "must be symmetric positive definite")
    return Chain(tuple(joints), np.array(m["tool_origin"]), np.array(m["gravity"]), const)


def _inertia(v: Validator, j: dict, where: str) -> np.ndarray:
    if j["inertia"] is not None and j["inertia_diag"] is not None:
        v.fail(f"{where}.inertia", "give either inertia or inertia_diag, not both")
    if j["inertia"] is not None:
        inertia = np.array(j["inertia"])
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T):
            v.fail(f"{where}.inertia", "must be a symmetric 3x3 matrix")
    else:
        inertia = np.diag(j["inertia_diag"] or [0.0, 0.0, 0.0])
    if np.linalg.eigvalsh(inertia).min() < -1e-12:
        v.fail(f"{where}.inertia", "must be positive semi-definite")
    return inertia


def _check_joint_physics(v: Validator, joint: Joint, where: str):
    if joint.kind in ("elastic_gear", "passive") and joint.stiffness <= 0:
        v.fail(f"{where}.stiffness", f"a {joint.kind} joint needs stiffness > 0")
    if joint.kind == "elastic_gear" and joint.motor_inertia <= 0:
        v.fail(f"{where}.motor_inertia", "an elastic_gear joint needs motor_inertia > 0")


def _reference_spec(v: Validator, r: dict, n_out: int, n_joints: int) -> ReferenceSpec:
    for key in ("start_mm", "end_mm"):
        if len(r[key]) != n_out:
            v.fail(f"reference.{key}", f"expected {n_out} values (one per controlled output), got {len(r[key])}")
    guess = r["joint_guess"]
    if guess is not None and len(guess) != n_joints:
        v.fail("reference.joint_guess", f"expected {n_joints} link-side angles, got {len(guess)}")
    return ReferenceSpec(
        kind=r["kind"], start=np.array(r["start_mm"]) / 1000.0, end=np.array(r["end_mm"]) / 1000.0,
        duration=r["duration"], time_law=r["time_law"], rest_before=r["rest_before"],
        rest_after=r["rest_after"], joint_guess=None if guess is None else np.array(guess),
    )
