"""Problem files (TOML) -> validated ``Problem`` objects.

A problem is a robot (``[model]`` with ``[[model.joints]]``), a tool path (``[reference]``),
default solver settings (``[solver]``) and verification settings (``[verification]``).
Lengths in the reference are given in millimetres (``*_mm`` keys) or radians; everything
inside ffopt is SI. See ``problems/*.toml`` for complete, commented examples.

One ``[[model.joints]]`` entry (its keys, frames, drive data, springs, friction and multi-axis bearings)
is checked and converted in ``ffopt.io.joints``; a ``[model] urdf`` chain is read in ``ffopt.io.urdf``.
"""

from __future__ import annotations

import copy
import difflib
import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.electrics import check_electric_chain, parse_electrics
from ffopt.io.flexible_links import parse_flexible_links
from ffopt.io.joints import (INERTIA_FIELDS, JOINT_NAME, JOINT_SCHEMA, check_joint_physics, parse_arm_side, parse_bearing,
                             parse_inertia, parse_rotation, parse_unit_vector)
from ffopt.io.plausibility import check_plausible
from ffopt.io.reference_spec import ReferenceSpec, parse_reference
from ffopt.io.schema import Field, Validator, non_negative, positive
from ffopt.io.urdf import UrdfChain, looks_like_urdf
from ffopt.models.chain import ROTOR_COUPLINGS, Body, Chain, Joint, rotation_rpy
from ffopt.models.flexible import AXES, ORIENTATION, FlexibleModel
from ffopt.settings import nlp as nlp_settings
from ffopt.settings.methods import BDF_ORDER_MAX, BDF_ORDER_MIN, METHODS

BDF_FORMS = ("I3", "I2", "I1")
# the verification case sets (ffopt.sim.verify): default (open loop, motor PD) or full (also baselines, mismatch)
VERIFICATION_CASES = ("default", "full")


def all_positive(values):
    return None if all(x > 0 for x in values) else f"every value must be > 0, got {values}"


PAYLOAD_SCHEMA = dict(INERTIA_FIELDS)

MODEL_SCHEMA = {
    "gravity": Field("vector", default=[0.0, 0.0, 0.0], length=3, unit="m/s^2",
                     doc="gravitational acceleration in the base frame, e.g. [0, 0, -9.81] with z up"),
    "outputs": Field("str_list", doc="controlled outputs: tool coordinates x, y, z, tool-frame angles yaw, "
                                     "pitch, roll, and actuated joint names (link-side angles); as many as actuated "
                                     "joints; default x, y, z"),
    "urdf": Field("str", doc="the robot from a URDF file instead of a chain written here: a path relative to the "
                             "problem file, or package://<package>/<path> (found in $ROS_PACKAGE_PATH or beside the "
                             "problem file). Its links, joint frames, axes, inertials and limits make the chain "
                             "between base_link and tip_link; [[model.joints]] entries name URDF joints and give "
                             "their drives (docs/models.md, \"URDF models\")"),
    "base_link": Field("str", doc="with urdf: the fixed link the chain starts at (its frame is the base frame of "
                                  "gravity and the tool path); required with urdf"),
    "tip_link": Field("str", doc="with urdf: the link the chain ends at (tool_origin and the payload are given in "
                                 "its frame); required with urdf"),
    "tool_origin": Field("vector", required=True, length=3, unit="m",
                         doc="tool point in the last body's frame (with urdf: in tip_link's frame)"),
    "tool_rpy_deg": Field("vector", length=3, unit="deg",
                          doc="tool frame in the last body's frame (with urdf: tip_link's frame): URDF roll, pitch, "
                              "yaw"),
    "constant_inertia": Field("matrix", unit="kg m^2",
                              doc="a constant mass matrix (one row per joint) instead of the rigid-body dynamics: "
                                  "no Coriolis, centripetal or gravity terms (Moberg & Hanssen's E1 simplified)"),
    "rotor_coupling": Field("str", default="reduced", choices=ROTOR_COUPLINGS,
                            doc="reduced: Spong's model; full: rotor gyroscopic coupling (motors on the "
                                "preceding link)"),
    "payload": Field("table", default=None, schema=PAYLOAD_SCHEMA,
                     doc="load fixed to the last body (with urdf: given in tip_link's frame)"),
    "joints": Field("tables", default=None, schema=JOINT_SCHEMA,
                    doc="the joints in chain order from the base, one [[model.joints]] entry each: the joint and "
                        "the rigid body it moves (mass, com, inertia in the body's frame); required without urdf. "
                        "With urdf: entries name URDF joints (any order) and give only their drive (kind, "
                        "stiffness, damping, motor_inertia, gear_ratio, friction, ...); a joint of the chain "
                        "without an entry is a direct drive"),
}

ROBUST_KINDS = ("none", "worst_case")  # solver.robust
SOLVER_SCHEMA = {
    "method": Field("str", default="auto", choices=METHODS,
                    doc="auto: the zero dynamics choose bdf (minimum phase) or the non-causal nlp, and a failed "
                        "solve falls back to the next formulation; "
                        "bdf: constant-step BDF on the inverse DAE; nlp: collocation NLP solved by IPOPT ([nlp]); "
                        "hi, dd, km, dc: Moberg & Hanssen's solver family (dd: automatic dummy derivatives, any "
                        "model); dd43..dd49: their hand-made E1 systems (CLI: --method)"),
    "order": Field("int", default=6, check=lambda k: None if BDF_ORDER_MIN <= k <= BDF_ORDER_MAX else
                   f"must be {BDF_ORDER_MIN}..{BDF_ORDER_MAX}, got {k}",
                   doc=f"BDF order k, {BDF_ORDER_MIN}..{BDF_ORDER_MAX} (CLI: --order)"),
    "step": Field("float", default=1e-3, check=positive, unit="s",
                  doc="BDF time step h (CLI: --step, which sets nlp.step too)"),
    "form": Field("str", default="I1", choices=BDF_FORMS,
                  doc="DAE form of method bdf: I3 the original DAE; I2 with the velocity constraint; I1 also with "
                      "the acceleration constraint and dummy accelerations (CLI: --form)"),
    "scaling_power": Field("float", default=None,
                           doc="scale the constraint rows of the BDF Newton system by (1/h)^p; default 2 for I3, "
                               "1 for I2, 0 for I1 (CLI: --scaling-power)"),
    "end_at_rest": Field("bool", default=True,
                         doc="where the exact-tracking plan would end with its zero dynamics still moving (a passive "
                             "joint swinging while the tool stands still), re-plan along the same path in the same "
                             "time with a shaped time law (reference.time_law_shape) that ends at rest; false keeps "
                             "the exact-tracking plan of the given time law (its residual is reported)"),
    "robust": Field("str", default="none", choices=ROBUST_KINDS,
                    doc="worst_case: plan the time law (an EI shaper scanned over the vertices of the ranges, then "
                        "rest to rest) so that the worst residual after the table over the [uncertainty] ranges is "
                        "least, in a move one period of the PD-held mode longer (ffopt.plan.worst_case; needs "
                        "[uncertainty]); the written problem.toml holds the law found (robust = none there); "
                        "none: plan on the nominal model only"),
    "robust_rest": Field("bool", default=False,
                         doc="rest to rest that also holds on a plant whose springs or payload are off by ~10 %: the "
                             "time law is convolved with a ZVD shaper (reference.shaper) on the lowest mode of the arm "
                             "held by the verification's motor PD and on the lightly damped pair of the zero dynamics "
                             "at the end pose, then shaped to end at rest (needs end_at_rest). The move is longer by "
                             "the shaper (E12: 0.3 -> 1.49 s), the peak input usually lower; summary.json "
                             "method_choice.rest_to_rest.robust holds the trade-off: move time, peak input and the "
                             "residual vibration nominal and on the +-10 % plants, against the plain plan's"),
}

VERIFICATION_SCHEMA = {
    "enabled": Field("bool", default=True, doc="simulate the plan on the flexible model (CLI: --no-verify)"),
    "pd_bandwidth_hz": Field("float", default=5.0, check=positive, unit="Hz",
                             doc="bandwidth f of the motor-side PD loop of the closed-loop cases: Kp = J (2 pi f)^2, "
                                 "Kd = 2 zeta J 2 pi f with J the motor inertia (direct drive: the joint's inertia)"),
    "pd_damping_ratio": Field("float", default=1.0, check=positive, doc="damping ratio zeta of that PD loop"),
    "payload_scales": Field("vector", default=[0.5, 2.0], check=all_positive,
                            doc="model-mismatch cases: the payload's (or else the last body's) mass and inertia "
                                "times each factor; [] for none"),
    "rtol": Field("float", default=1e-9, check=positive,
                  doc="relative tolerance of the CVODES simulations (absolute: rtol / 100)"),
    "cases": Field("str", default="default", choices=VERIFICATION_CASES,
                   doc="default: the plan open loop and with the motor PD; full: also the cubic-spline torques, "
                       "rigid feedforward, PD only and the payload cases (CLI: --verify)"),
    "settle_s": Field("float", default=None, check=non_negative, unit="s",
                      doc="every case goes on after the table for this long with the controller holding the final "
                          "pose (its static torque; the PD on its static motor angles); the residual vibration there "
                          "is part of the verdict. Default: 3 periods of the held arm's slowest mode, at least 1 s, "
                          "at most 30 s; 0: no settle window"),
    "tolerance_mm": Field("float", default=None, check=positive, unit="mm",
                          doc="the plan is verified when the tool stays within this distance of the path (motor PD "
                              "case) during the move and after the table; else ffopt plan exits with code 3. Default: "
                              "1e-4 of the arm's reach (the sum of its link lengths)"),
    "tolerance_mrad": Field("float", default=None, check=positive, unit="mrad",
                            doc="the same for angle outputs (tool angles, joint angles); default 0.1 mrad"),
}

NLP_SCHEMA = {
    "scheme": Field("str", default="radau", choices=nlp_settings.SCHEMES,
                    doc="collocation rule: radau (Radau IIA of the given degree) or euler (implicit Euler, order 1)"),
    "degree": Field("int", default=3, check=lambda d: None if 1 <= d <= 9 else f"must be 1..9, got {d}",
                    doc="collocation points per interval, 1..9 (Radau IIA of degree d has order 2d - 1)"),
    "step": Field("float", default=1e-3, check=positive, unit="s", doc="collocation interval length h (CLI: --step)"),
    "objective": Field("str", default="smoothness", choices=nlp_settings.OBJECTIVES,
                       doc="smoothness: integral of (du/dt)^2; effort: integral of (u - u at rest)^2; tracking "
                           "(band or penalty tracking only): the tool error alone"),
    "torque_max": Field("vector", check=all_positive, unit="N m",
                        doc="bound on |u| per motor, one value per actuated joint in chain order; or \"urdf\": the "
                            "effort limits of the URDF's joints ([model] urdf)"),
    "voltage_max": Field("vector", check=all_positive, unit="V",
                         doc="bound on the armature voltage |u| per motor (drives with electrics), one value per "
                             "actuated joint; torque_max then bounds the motor torque (the current)"),
    "torque_rate_max": Field("vector", check=all_positive, unit="N m/s",
                             doc="bound on |du/dt| per motor, one value per actuated joint"),
    "tracking": Field("str", default="exact", choices=nlp_settings.TRACKING,
                      doc="exact: the path as an equality constraint; band: the tool error within band_mm; "
                          "penalty: the weighted tool error in the objective"),
    "band_mm": Field("float", default=1.0, check=positive, unit="mm",
                     doc="tool band half-width / penalty error scale"),
    "penalty_weight": Field("float", default=1e3, check=positive,
                            doc="weight of the penalty on (tool error / band_mm)^2 against the objective"),
    "pre_actuation_s": Field("float", default=0.0, check=non_negative, unit="s",
                             doc="time before the motion in which the torques may act (non-causal inversion); 0 "
                                 "with strategy noncausal: 10 time constants of the slowest unstable zero, 0.05..3 s"),
    "post_actuation_s": Field("float", default=0.0, check=non_negative, unit="s",
                              doc="time after the motion in which the torques may act, as pre_actuation_s"),
    "strategy": Field("str", default="auto", choices=nlp_settings.STRATEGIES,
                      doc="causal: from rest at the start; noncausal: stable inversion with pre- and "
                          "post-actuation; auto: causal if the zero dynamics are stable along the path"),
    "backend": Field("str", default="auto", choices=nlp_settings.BACKENDS,
                     doc="casadi: CasADi's IPOPT; cyipopt: IPOPT through cyipopt with interval-wise derivatives; "
                         "pyomo: a Pyomo model; fatrop: the stage-structured interior point fatrop on the stage-ordered "
                         "NLP (slower here: seconds of set-up); ipopt-c: IPOPT through its C interface with interval-wise "
                         "derivatives; auto: Newton for a square NLP, else ipopt-c (else cyipopt, else casadi, where "
                         "IPOPT's C library is not found) (CLI: --backend)"),
    "square_by_newton": Field("bool", default=True,
                              doc="casadi/auto backends: solve a square NLP (causal exact tracking, no bounds) "
                                  "by Newton + sparse LU instead of IPOPT"),
    "linear_solver": Field("str", default="mumps", choices=nlp_settings.LINEAR_SOLVERS,
                           doc="IPOPT's sparse symmetric indefinite solver: mumps, or spral (CasADi's IPOPT only: "
                               "backend auto then solves through CasADi's nlpsol; cyipopt has mumps alone)"),
    "compile": Field("bool", default=True,
                     doc="the NLP's interval and point derivatives as C compiled once (gcc -O0) into the cache "
                         "folder; false: CasADi's virtual machine (same numbers, slower)"),
    "warm_start": Field("str", default="bdf", choices=nlp_settings.WARM_STARTS,
                        doc="start point: the BDF solution (bdf; where there is none, a non-causal NLP starts as with rigid), the "
                            "rigid model's feedforward (rigid: stiff gears, passive joints locked; method auto's choice for a "
                            "non-minimum-phase arm) or rest (none) (CLI: --warm-start)"),
    "tol": Field("float", default=1e-8, check=positive,
                 doc="IPOPT's convergence tolerance tol (constraint violation: 1e-3 tol)"),
    "max_iter": Field("int", default=nlp_settings.MAX_ITER, check=lambda n: None if n > 0 else f"must be > 0, got {n}",
                      doc="iteration limit of the NLP solve (CLI: --max-iter)"),
    "max_cpu_time_s": Field("float", default=nlp_settings.MAX_CPU_TIME_S, check=positive, unit="s",
                            doc="CPU-time limit of the NLP solve (this process and its solver worker): "
                                "transcription, set-up, iterations, per NLP attempt (method auto makes at most "
                                "two); the same on a busy or an idle machine"),
    "max_wall_time_s": Field("float", default=None, check=positive, unit="s",
                             doc="wall-time guard of the NLP solve, per NLP attempt; default "
                                 f"{nlp_settings.WALL_GUARD_FACTOR:g} x max_cpu_time_s (CLI: --max-time)"),
}

HOLDS = ("zoh", "linear")
OUTPUT_SCHEMA = {
    "sample_time": Field("float", default=None, check=positive, unit="s",
                         doc="period at which the controller applies the planned input; the trajectory table is "
                             "written at this period and the plan is made exact for it (NLP) or resampled to it "
                             "(BDF). Must be a whole multiple of the step of the method that plans "
                             "(solver.step for BDF, nlp.step for the NLP; a BDF step of 1/4-1/8 of the sample time "
                             "gives the resampling the data it needs). Default: that step, if hold is given; "
                             "without an [output] table the table is on the solver's own points"),
    "hold": Field("str", default=None, choices=HOLDS,
                  doc="how the controller applies the input between samples: zoh = held constant over each period "
                      "(the row's value from its time to the next row), linear = interpolated linearly between "
                      "the rows. Default linear. The verification simulates the plan with the same hold"),
}

TOP_SCHEMA = {
    "name": Field("str", required=True, doc="short name of the problem (plots, summary.json)"),
    "description": Field("str", default="", doc="what the problem is, in a line (summary.json, report)"),
    "model": Field("table", required=True, schema=MODEL_SCHEMA, doc="the robot"),
    "reference": Field("raw_table", required=True,
                           doc="the path the outputs follow; its kind selects its keys"),
    "solver": Field("table", default=None, schema=SOLVER_SCHEMA,
                    doc="solver settings (command-line options override them)"),
    "verification": Field("table", default=None, schema=VERIFICATION_SCHEMA,
                          doc="forward simulation of the plan (open loop, motor PD loop, baselines, mismatch)"),
    "nlp": Field("table", default=None, schema=NLP_SCHEMA, doc="the collocation NLP (method nlp)"),
    "output": Field("table", default=None, schema=OUTPUT_SCHEMA,
                    doc="how the planned input is applied: sample period and hold (what is planned is what is "
                        "applied and verified)"),
    "uncertainty": Field("raw_table", default=None,
                         doc="ranges of model fields the plant may have (ffopt.motion.uncertainty): samples, seed and "
                             "[uncertainty.ranges] by dotted name, \"+-20%\" or [low, high], * for every joint"),
}


class _ProblemValidator(Validator):
    def value(self, x, field, where):
        if where == "nlp.torque_max" and x == "urdf":
            return x  # the URDF's effort limits, resolved with the chain (_nlp_settings)
        if field.kind == "str_list":
            if not isinstance(x, list) or not x or not all(isinstance(c, str) and c for c in x):
                self.fail(where, f"expected a non-empty list of names, got {x!r}")
            if len(set(x)) != len(x):
                self.fail(where, f"repeated output in {x!r}")
            return list(x)
        return super().value(x, field, where)


@dataclass(frozen=True)
class SolverSettings:
    method: str = "auto"
    order: int = 6
    step: float = 1e-3
    form: str = "I1"
    scaling_power: float | None = None  # None: the form's default
    end_at_rest: bool = True  # re-plan with a shaped time law where the exact plan would end moving
    robust_rest: bool = False  # ... on a ZVD-shaped path, insensitive to the stiffness and the payload
    robust: str = "none"  # "worst_case": the law least sensitive over the [uncertainty] ranges (ffopt.plan.worst_case)


@dataclass(frozen=True)
class VerificationSettings:
    enabled: bool = True
    pd_bandwidth_hz: float = 5.0
    pd_damping_ratio: float = 1.0
    payload_scales: tuple[float, ...] = (0.5, 2.0)
    rtol: float = 1e-9
    cases: str = "default"  # "full": with the baselines and the payload mismatch (ffopt.sim.verify)
    settle_s: float | None = None  # after the table; None: from the held arm's slowest mode (ffopt.sim.settle)
    tolerance_mm: float | None = None  # None: 1e-4 of the arm's reach
    tolerance_mrad: float | None = None  # None: 0.1 mrad


@dataclass(frozen=True)
class OutputSettings:
    """The [output] table: the controller's sample period and hold. ``stated`` is False without the table
    (then the plan keeps the solver's own grid: BDF steps or collocation points, linear in between)."""

    sample_time: float | None = None  # s; None: the step of the method that plans
    hold: str | None = None  # zoh | linear; None: linear

    @property
    def stated(self) -> bool:
        return self.sample_time is not None or self.hold is not None

    @property
    def hold_kind(self) -> str:
        return self.hold or "linear"

    def period(self, step: float) -> float:
        """The sample period for a method planning with ``step``."""
        return float(step if self.sample_time is None else self.sample_time)


def samples_per_period(sample_time: float, step: float, where: str = "output.sample_time") -> int:
    """m with sample_time = m * step (m >= 1 integer); ProblemError naming ``where`` otherwise."""
    ratio = sample_time / step
    m = int(round(ratio))
    if m < 1 or abs(ratio - m) > 1e-6 * max(1.0, ratio):
        raise ProblemError(f"{where}: {sample_time:g} s must be a whole multiple of the planning step {step:g} s "
                           f"(ratio {ratio:.6g}); choose a sample time of k x {step:g} s or change the step")
    return m


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
    flexible_links: tuple = ()  # ffopt.models.flexible_links.FlexibleLink per flexible link body
    output: OutputSettings = field(default_factory=OutputSettings)
    raw: dict | None = field(default=None, repr=False, compare=False)  # the validated tables (None: built by hand)
    urdf: UrdfChain | None = field(default=None, repr=False, compare=False)  # [model] urdf: what the URDF gave

    @classmethod
    def from_dict(cls, data: dict, source: str = "<memory>") -> "Problem":
        """A problem from tables as a TOML file holds them (see ``problem_from_dict``)."""
        return problem_from_dict(data, source)

    def with_values(self, values: dict) -> "Problem":
        """A copy with fields set by dotted name, validated again like a file (``ffopt.io.values``):
        ``problem.with_values({"model.joints.q3.stiffness": 8e4, "reference.duration": 0.4})``."""
        from ffopt.io.values import with_values

        if self.raw is None:
            raise ProblemError(f"{self.source}: with_values needs a problem read from a file or a dict; this one "
                               "was assembled from a chain object (with_chain)")
        return with_values(self.raw, values, problem_from_dict, self.source)

    def with_joint_guess(self, guess) -> "Problem":
        """The same problem with reference.joint_guess = ``guess`` (rad, one per joint), e.g. the start configuration
        the path check found; the model and reference objects are kept (a guess changes neither)."""
        g = np.asarray(guess, float).ravel()
        raw = None
        if self.raw is not None:
            raw = copy.deepcopy(self.raw)
            raw["reference"]["joint_guess"] = [float(x) for x in g]
        new = replace(self, reference_spec=replace(self.reference_spec, joint_guess=g), raw=raw)
        for name in ("model", "reference"):  # cached properties: built once, shared
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]
        return new

    def to_dict(self) -> dict:
        """The problem's tables as a TOML file would hold them (after every change by name)."""
        if self.raw is None:
            raise ProblemError(f"{self.source}: this problem was assembled from a chain object (with_chain) and "
                               "has no file form")
        return copy.deepcopy(self.raw)

    def to_toml(self) -> str:
        """The problem as TOML text (``load_problem`` reads it back to the same problem); made once per (frozen)
        problem: a plan asks for it for the written problem.toml and for the keys of its disk caches."""
        return self._toml_text

    @cached_property
    def _toml_text(self) -> str:
        import tomlkit

        return tomlkit.dumps(self.to_dict())

    @cached_property
    def model(self) -> FlexibleModel:
        from ffopt.reference.build import angle_centres

        centres = angle_centres(self.reference_spec, self.chain, self.outputs)
        if self.flexible_links:
            from ffopt.models.flexible_links import FlexibleLinkModel

            return FlexibleLinkModel(self.chain, self.flexible_links, self.outputs, self.name, centres)
        return FlexibleModel(self.chain, self.outputs, self.name, centres)

    @cached_property
    def reference(self):
        from ffopt.reference.build import reference_from_spec

        try:
            return reference_from_spec(self.reference_spec, self.model)
        except ProblemError as err:  # the geometry's checks name the field; the message names the file too
            if str(err).startswith(self.source):
                raise
            raise ProblemError(f"{self.source}: {err}") from None

    def with_solver(self, **changes) -> "Problem":
        changes = {k: v for k, v in changes.items() if v is not None}
        return self._sharing_model(replace(self, solver=replace(self.solver, **changes),
                                           raw=_raw_with(self.raw, "solver", changes)))

    def with_nlp(self, **changes) -> "Problem":
        changes = {k: v for k, v in changes.items() if v is not None}
        return self._sharing_model(replace(self, nlp=replace(self.nlp, **changes),
                                           raw=_raw_with(self.raw, "nlp", changes)))

    def with_model_of(self, other: "Problem") -> "Problem":
        """This problem with ``other``'s built model (and its cached CasADi functions) where the model would be the
        same: equal [model] tables, name and orientation branch centres (a change of the move's duration or of the
        settings). A search over durations builds a problem per duration; without this each rebuilt the model's
        expressions (the minimum-time search's single plans: 50 of their 80 ms on the UR5)."""
        same = (self.raw is not None and other.raw is not None and self.raw.get("model") == other.raw.get("model")
                and self.name == other.name and self.reference_spec.angle_centres == other.reference_spec.angle_centres)
        if same and "model" in other.__dict__ and "model" not in self.__dict__:
            self.__dict__["model"] = other.__dict__["model"]
        return self

    def _sharing_model(self, new: "Problem") -> "Problem":
        """Settings changed only: keep the built model and reference (and their cached CasADi functions)."""
        for name in ("model", "reference"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]
        return new

    def with_chain(self, chain: Chain) -> "Problem":
        return replace(self, chain=chain, raw=None)


def _raw_with(raw: dict | None, table: str, changes: dict) -> dict | None:
    """``raw`` with ``changes`` in ``[table]`` (keeps the file form in step with with_solver/with_nlp)."""
    from ffopt.io.values import plain

    if raw is None or not changes:
        return raw
    raw = copy.deepcopy(raw)
    raw.setdefault(table, {}).update(plain(changes))
    return raw


def load_problem(path: str | Path) -> Problem:
    """Read and validate a problem file. Raises ProblemError naming the file and field."""
    path = Path(path)
    if path.is_dir():
        raise ProblemError(f"{path}: is a directory, expected a TOML problem file")
    if not path.is_file():
        raise ProblemError(f"{path}: no such problem file")
    try:
        text = path.read_text(encoding="utf-8")
        if looks_like_urdf(text, path):
            raise ProblemError(f"{path}: this is a URDF robot description, not a problem file: write a problem file "
                               f"with [model] urdf = \"{path.name}\", base_link, tip_link, tool_origin and a "
                               "[reference] (docs/models.md, \"URDF models\"; e.g. problems/ur5_line.toml)")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ProblemError(f"{path}: not valid TOML: {err}") from None
    except UnicodeDecodeError:
        raise ProblemError(f"{path}: not a text file (TOML problem files are UTF-8 text)") from None
    except OSError as err:
        raise ProblemError(f"{path}: cannot read the problem file: {err.strerror or err}") from None
    return problem_from_dict(data, source=str(path))


def problem_from_dict(data: dict, source: str = "<memory>") -> Problem:
    """Validate tables as a TOML problem file holds them (NumPy numbers and arrays are accepted) and
    build the Problem; a ProblemError names ``source`` and the dotted field."""
    from ffopt.io.values import plain

    if not isinstance(data, dict):
        raise ProblemError(f"{source}: expected a table (dict) of the problem file's sections, got "
                           f"{type(data).__name__}")
    data = plain(data)
    v = _ProblemValidator(source)
    d = v.table(data, TOP_SCHEMA, "")
    urdf = None
    if d["model"]["urdf"] is not None:
        from ffopt.io.urdf import build_urdf_chain

        chain, urdf, data["model"]["urdf"] = build_urdf_chain(v, d["model"], data["model"], source)
    else:
        chain = _build_chain(v, d["model"])
    flexible = parse_flexible_links(v, [] if urdf else d["model"]["joints"], chain)
    outputs = tuple(d["model"]["outputs"] or ("x", "y", "z"))
    _check_outputs(v, outputs, chain)
    ref = parse_reference(v, d["reference"], outputs, chain)
    solver = SolverSettings(**d["solver"]) if d["solver"] else SolverSettings()
    _check_robust_rest(v, solver, ref)
    if solver.robust == "worst_case" and not data.get("uncertainty"):
        v.fail("solver.robust", "worst_case plans over the ranges of an [uncertainty] table: add one (e.g. "
               "[uncertainty.ranges] \"model.joints.*.stiffness\" = \"+-20%\")")
    ver = d["verification"]
    verification = VerificationSettings(**{**ver, "payload_scales": tuple(ver["payload_scales"])}) if ver \
        else VerificationSettings()
    check_plausible(v, chain, data, verification, flexible)  # scales no robot has, before any solve
    nlp = _nlp_settings(v, d["nlp"], [chain.joints[i].name for i in chain.actuated], urdf)
    _check_drive_bounds(v, nlp, chain)
    output = OutputSettings(**d["output"]) if d["output"] else OutputSettings()
    return Problem(d["name"], d["description"], chain, outputs, ref, solver, verification, source, nlp,
                   flexible, output, data, urdf)


def _check_robust_rest(v: Validator, solver: SolverSettings, ref) -> None:
    """solver.robust_rest shapes a time law for rest: it needs end_at_rest and a path moved by a time law."""
    if not solver.robust_rest:
        return
    if not solver.end_at_rest:
        v.fail("solver.robust_rest", "needs solver.end_at_rest = true (a robust rest-to-rest plan is a rest-to-rest "
               "plan on a shaped path)")
    if ref.kind == "prefilter":
        v.fail("solver.robust_rest", "a prefiltered reference has no time law to shape: use a path with a time law "
               "(e.g. kind = \"line\", time_law = \"poly11\")")


def _check_drive_bounds(v: Validator, nlp: nlp_settings.NlpSettings, chain: Chain) -> None:
    """Voltage bounds need DC-motor electrics; a torque-rate bound is not modelled with them."""
    electric = any(j.electrics is not None for j in chain.joints)
    if nlp.voltage_max is not None and not electric:
        v.fail("nlp.voltage_max", "the drives have no electrics (the input is the motor torque): use torque_max, or "
               "give the actuated joints their electrics")
    if nlp.torque_rate_max is not None and electric:
        v.fail("nlp.torque_rate_max", "not available with DC-motor electrics (the torque is a state there, its rate "
               "set by the voltage): bound the voltage (voltage_max) and the torque (torque_max) instead")


def _nlp_settings(v: Validator, table: dict | None, motors: list[str], urdf: UrdfChain | None = None
                  ) -> nlp_settings.NlpSettings:
    if not table:
        return nlp_settings.NlpSettings()
    t = dict(table)
    if t["torque_max"] == "urdf":
        if urdf is None:
            v.fail("nlp.torque_max", "\"urdf\" takes the effort limits of a URDF model ([model] urdf); this chain "
                   "is written in the problem file: give one bound per motor")
        effort = {j.name: j.effort for j in urdf.joints}
        missing = [m for m in motors if not np.isfinite(effort[m])]
        if missing:
            v.fail("nlp.torque_max", f"\"urdf\": {urdf.path.name} gives no effort limit for {', '.join(missing)}; "
                   "give one bound per motor")
        t["torque_max"] = [effort[m] for m in motors]
    for key in ("torque_max", "torque_rate_max", "voltage_max"):
        if t[key] is not None and len(t[key]) != len(motors):  # never broadcast one value to every motor
            v.fail(f"nlp.{key}", f"expected {len(motors)} values (one per motor: {', '.join(motors)}), "
                   f"got {len(t[key])}")
        if t[key] is not None and min(t[key]) <= 0:
            v.fail(f"nlp.{key}", f"must be > 0 for every motor, got {list(t[key])}")
        t[key] = None if t[key] is None else tuple(t[key])
    return nlp_settings.NlpSettings(**t)


def _build_chain(v: Validator, m: dict) -> Chain:
    if m["joints"] is None:
        v.fail("model.joints", "missing required key: the joints of the chain, one [[model.joints]] entry each "
               "(or the robot from a URDF file: [model] urdf = \"robot.urdf\")")
    for key in ("base_link", "tip_link"):
        if m[key] is not None:
            v.fail(f"model.{key}", "belongs to a URDF model ([model] urdf); a chain written in the problem file "
                   "starts at its base frame and ends at the last joint's body")
    joints, groups, names = [], [], set()
    for i, j in enumerate(m["joints"]):
        where = f"model.joints[{i + 1}]"
        if j["mass"] is None:
            v.fail(f"{where}.mass", "missing required key")
        if j["kind"] == "locked" or j["angle_deg"] is not None:
            v.fail(f"{where}.{'kind' if j['kind'] == 'locked' else 'angle_deg'}", "kind = \"locked\" (with "
                   "angle_deg) is for the joints of a URDF model; in a chain written here, merge the body into "
                   "the previous one")
        if not JOINT_NAME.fullmatch(j["name"]):
            v.fail(f"{where}.name", f"{j['name']!r}: use letters, digits, '_', '-' and '.' only "
                   "(the name labels CSV columns such as u_<name>)")
        if j["name"] in names:
            v.fail(f"{where}.name", f"duplicate joint name {j['name']!r}")
        names.add(j["name"])
        data = parse_arm_side(v, j, where, m["rotor_coupling"])
        rotation = parse_rotation(v, j, where)
        body = Body(j["mass"], np.array(j["com"]), parse_inertia(v, j, where))
        if j["axes"] is None:
            joint = Joint(name=j["name"], kind=j["kind"], axis=parse_unit_vector(v, j["axis"], f"{where}.axis"),
                          origin=np.array(j["origin"]), body=body, rotation=rotation,
                          electrics=parse_electrics(v, j, where), **data)
            check_joint_physics(v, joint, where)
            joints.append(joint)
            continue
        parse_electrics(v, j, where)  # a passive bearing: electrics are an error
        expanded, group = parse_bearing(v, j, where, rotation, body, first_index=len(joints))
        joints += expanded
        groups.append(group)
    _check_expanded_names(v, joints)
    n = len(joints)
    const = m["constant_inertia"]
    if const is not None:
        const = np.array(const)
        if const.shape != (n, n):
            v.fail("model.constant_inertia", f"must be {n}x{n} (one row per joint), got {const.shape}")
        if not np.allclose(const, const.T) or np.linalg.eigvalsh(const).min() <= 0:
            v.fail("model.constant_inertia", "must be symmetric positive definite")
        if m["rotor_coupling"] == "full":
            v.fail("model.rotor_coupling", "\"full\" needs the rigid-body model; it cannot be combined with "
                   "constant_inertia")
    payload = None
    if m["payload"] is not None:
        pl = m["payload"]
        payload = Body(pl["mass"], np.array(pl["com"]), parse_inertia(v, pl, "model.payload"))
    tool_rotation = np.eye(3) if m["tool_rpy_deg"] is None else rotation_rpy(*np.radians(m["tool_rpy_deg"]))
    chain = Chain(tuple(joints), np.array(m["tool_origin"]), np.array(m["gravity"]), const, tuple(groups),
                  payload, tool_rotation, m["rotor_coupling"])
    check_electric_chain(v, chain)
    return chain


def _check_expanded_names(v: Validator, joints: list[Joint]):
    seen = set()
    for jt in joints:
        if jt.name in seen:
            v.fail("model.joints", f"joint name {jt.name!r} is used twice (a bearing's axes are named "
                   "name_1, name_2, ...)")
        seen.add(jt.name)


def _check_outputs(v: Validator, outputs: tuple[str, ...], chain: Chain):
    """Each output is a tool axis, an orientation angle or an actuated joint; as many as inputs."""
    joints = {j.name: j for j in chain.joints}
    valid = [*AXES, *ORIENTATION, *(j.name for j in chain.joints if j.kind != "passive")]
    for o in outputs:
        if o in joints and (o in AXES or o in ORIENTATION):
            v.fail("model.outputs", f"{o!r} is both a tool output and a joint name; rename the joint")
        if o in joints and joints[o].kind == "passive":
            v.fail("model.outputs", f"{o!r} is a passive joint: joint outputs name actuated joints (the path check "
                   "holds passive joints at rest)")
        if o not in valid:
            close = difflib.get_close_matches(o, valid, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            v.fail("model.outputs", f"unknown output {o!r}{hint}: use tool axes x, y, z, tool angles yaw, pitch, "
                   f"roll or actuated joint names ({', '.join(valid[6:])})")
    n_act = len(chain.actuated)
    if len(outputs) != n_act:
        v.fail("model.outputs", f"{len(outputs)} controlled outputs {list(outputs)} but {n_act} actuated "
               "joints: the inverse model needs as many outputs as inputs")
