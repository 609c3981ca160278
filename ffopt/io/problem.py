"""Problem files (TOML) -> validated ``Problem`` objects.

A problem is a robot (``[model]`` with ``[[model.joints]]``), a tool path (``[reference]``),
default solver settings (``[solver]``) and verification settings (``[verification]``).
Lengths in the reference are given in millimetres (``*_mm`` keys) or radians; everything
inside ffopt is SI. See ``problems/*.toml`` for complete, commented examples.

Joints (conventions in ``ffopt.models.chain``): frames by ``origin`` + ``rpy_deg`` (URDF) or
``rotation``; drive data on the arm side or on the motor side with ``gear_ratio`` (``MOTOR_SIDE``:
arm side = motor side x ratio^2, Coulomb friction x |ratio|); a passive joint with ``axes`` and
``stiffness_matrix`` / ``damping_matrix`` is a multi-axis elastic bearing, expanded into revolute
joints ``name_1``, ``name_2``, ... with one coupled spring (``SpringGroup``). Nonlinear springs
(``stiffness_knees`` / ``stiffness_slopes`` / ``knee_width``, ``stiffness_polynomial``) and friction
(Coulomb, viscous, Stribeck on the motor side, ``link_*`` on the link side) are the laws of
``ffopt.models.flexible.spring_torque`` and ``friction_torque``.
"""

from __future__ import annotations

import copy
import difflib
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.electrics import ELECTRICS_SCHEMA, check_electric_chain, parse_electrics
from ffopt.io.flexible_links import FLEXIBLE_SCHEMA, parse_flexible_links
from ffopt.io.reference_spec import ReferenceSpec, parse_reference
from ffopt.io.schema import Field, Validator, non_negative, positive
from ffopt.io.urdf import UrdfChain, looks_like_urdf
from ffopt.models.chain import JOINT_KINDS, ROTOR_COUPLINGS, Body, Chain, Joint, SpringGroup, rotation_rpy
from ffopt.models.flexible import AXES, COULOMB_SMOOTHING, ORIENTATION, FlexibleModel
from ffopt.nlp import settings as nlp_settings

BDF_FORMS = ("I3", "I2", "I1")
# auto: the zero dynamics choose bdf or nlp, with fallbacks (ffopt.auto_method); hi..dc: Moberg & Hanssen's family
METHODS = ("auto", "bdf", "nlp", "hi", "dd", "dd43", "dd44", "dd48", "dd49", "km", "dc")


def all_positive(values):
    return None if all(x > 0 for x in values) else f"every value must be > 0, got {values}"


JOINT_NAME = re.compile(r"[A-Za-z0-9_.\-]+")  # joint names name CSV columns (u_<name>, q_<name>, ...)

_INERTIA_FIELDS = {
    "mass": Field("float", required=True, check=non_negative, unit="kg", doc="mass of the rigid body"),
    "com": Field("vector", default=[0.0, 0.0, 0.0], length=3, unit="m",
                 doc="centre of mass in the body's frame"),
    "inertia": Field("matrix", unit="kg m^2",
                     doc="3x3 inertia tensor about the centre of mass in the body's frame (symmetric, products of "
                         "inertia included); or inertia_diag; default zero"),
    "inertia_diag": Field("vector", length=3, unit="kg m^2",
                          doc="diagonal of the inertia about the centre of mass (principal axes along the body "
                              "frame), instead of inertia"),
}
# Drive-train data on the motor side (as on a data sheet), converted with gear_ratio i:
# arm side = motor side x i^2 (stiffness, damping, viscous friction, inertia), Coulomb x |i|.
MOTOR_SIDE = {
    "stiffness_motor_side": ("stiffness", 2),
    "damping_motor_side": ("damping", 2),
    "rotor_inertia": ("motor_inertia", 2),
    "viscous_friction_motor_side": ("viscous_friction", 2),
    "coulomb_friction_motor_side": ("coulomb_friction", 1),
    "stribeck_friction_motor_side": ("stribeck_friction", 1),
    "stribeck_velocity_motor_side": ("stribeck_velocity", -1),
    "coulomb_smoothing_motor_side": ("coulomb_smoothing", -1),
}
_DRIVE_UNITS = {"stiffness": "N m/rad", "damping": "N m s/rad", "motor_inertia": "kg m^2",
                "viscous_friction": "N m s/rad", "coulomb_friction": "N m", "stribeck_friction": "N m",
                "stribeck_velocity": "rad/s", "coulomb_smoothing": "rad/s"}  # per rad of the motor on its side
# Nonlinear spring and friction keys (ffopt.models.flexible.spring_torque / friction_torque), arm side.
SPRING_LAW = ("stiffness_knees", "stiffness_slopes", "knee_width", "stiffness_polynomial")
MOTOR_FRICTION = ("viscous_friction", "coulomb_friction", "stribeck_friction", "stribeck_velocity")
LINK_FRICTION = ("link_viscous_friction", "link_coulomb_friction")
JOINT_SCHEMA = {
    "name": Field("str", required=True,
                  doc="joint name: letters, digits, _, -, . (names the CSV columns u_<name>, q_<name>, ... and "
                      "the dotted field names model.joints.<name>.<key>)"),
    "kind": Field("str", required=True, choices=(*JOINT_KINDS, "locked"),
                  doc="elastic_gear: a motor with its own angle behind an elastic gear (needs stiffness and "
                      "motor_inertia); direct: the torque acts on the joint itself; passive: a non-actuated "
                      "spring-damper with rest angle 0; locked (URDF joints only): fixed at angle_deg, its link "
                      "merged into the preceding one like a fixed joint"),
    "angle_deg": Field("float", unit="deg",
                       doc="kind locked: the angle the joint is fixed at (default 0; a prismatic joint is locked at "
                           "position 0)"),
    "axis": Field("vector", length=3, doc="rotation axis in the joint frame (normalised; one axis)"),
    "axes": Field("matrix", doc="passive joints: 2-3 successive axes at one point, one row each (a multi-axis "
                                "elastic bearing, expanded into joints <name>_1, <name>_2, ...), instead of axis"),
    "origin": Field("vector", default=[0.0, 0.0, 0.0], length=3, unit="m",
                    doc="joint position in the previous body's frame (the base frame for the first joint)"),
    "rpy_deg": Field("vector", length=3, unit="deg",
                     doc="joint frame in the previous body's frame: URDF roll, pitch, yaw, R = Rz(yaw) Ry(pitch) "
                         "Rx(roll); default: not turned"),
    "rotation": Field("matrix", doc="joint frame in the previous body's frame as a 3x3 rotation matrix (columns = "
                                    "the joint frame's axes), instead of rpy_deg"),
    **_INERTIA_FIELDS,
    "mass": Field("float", check=non_negative, unit="kg",
                  doc="mass of the rigid body the joint moves (required in a chain written in the problem file; "
                      "with [model] urdf the bodies come from the URDF)"),
    "stiffness": Field("float", default=0.0, check=non_negative, unit="N m/rad",
                       doc="gear stiffness (elastic_gear) or joint spring (passive), arm side: torque k d + "
                           "stiffness_cubic d^3 + damping d' on the deflection d (motor angle - link angle; a "
                           "passive joint's angle)"),
    "stiffness_cubic": Field("float", default=0.0, check=non_negative, unit="N m/rad^3",
                             doc="cubic term k3 of a hardening gear or joint spring"),
    "damping": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                     doc="gear damping (elastic_gear) or joint damper (passive), arm side"),
    "stiffness_matrix": Field("matrix", unit="N m/rad",
                              doc="multi-axis bearing (axes): symmetric positive definite K, one row per axis; "
                                  "torque -K q - D q'"),
    "damping_matrix": Field("matrix", unit="N m s/rad",
                            doc="multi-axis bearing (axes): symmetric positive semi-definite D, one row per axis"),
    "motor_inertia": Field("float", default=0.0, check=non_negative, unit="kg m^2",
                           doc="rotor inertia on the arm side (rotor inertia x gear_ratio^2); an elastic_gear "
                               "needs > 0, a direct drive adds it to the joint"),
    "viscous_friction": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                              doc="viscous friction of the motor bearing, arm side (on the motor speed; direct "
                                  "drive: the joint speed)"),
    "coulomb_friction": Field("float", default=0.0, check=non_negative, unit="N m",
                              doc="Coulomb friction of the motor bearing, arm side, smoothed: fc tanh(speed / "
                                  "1e-3 rad/s)"),
    "gear_ratio": Field("float", doc="motor angle / joint angle (signed); needed for motor-side data and "
                                     "rotor_coupling = \"full\"; default 1"),
    **{k: Field("float", check=non_negative, unit=_DRIVE_UNITS[a],
                doc=f"{a} on the motor side (data sheet), instead of {a}: arm side = value "
                    + {1: "x |gear_ratio|", -1: "/ |gear_ratio|"}.get(p, f"x gear_ratio^{p}"))
       for k, (a, p) in MOTOR_SIDE.items()},  # p = -1: arm side = value / |gear_ratio| (a speed)
    "rotor_inertia_transverse": Field("float", default=0.0, check=non_negative, unit="kg m^2",
                                      doc="rotor inertia about a diameter, full rotor coupling"),
    "rotor_axis": Field("vector", length=3, doc="rotor axis in the preceding body's frame (default: joint axis)"),
    "stiffness_knees": Field("vector", unit="rad", doc="deflections (increasing, > 0) where the spring's slope changes"),
    "stiffness_slopes": Field("vector", unit="N m/rad", doc="slope beyond each knee (> 0): piecewise-linear spring"),
    "knee_width": Field("float", check=positive, unit="rad", doc="rounding width of each knee"),
    "stiffness_polynomial": Field("vector", doc="odd stiffening terms: coefficients of d^3, d^5, ... (>= 0; "
                                                "N m/rad^3, N m/rad^5, ...)"),
    "coulomb_smoothing": Field("float", check=positive, unit="rad/s",
                               doc="tanh width of the Coulomb/Stribeck friction (default 1e-3)"),
    "stribeck_friction": Field("float", check=non_negative, unit="N m", doc="breakaway friction above Coulomb"),
    "stribeck_velocity": Field("float", check=positive, unit="rad/s", doc="Stribeck velocity"),
    "link_viscous_friction": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                                   doc="link-side bearing viscous friction"),
    "link_coulomb_friction": Field("float", default=0.0, check=non_negative, unit="N m",
                                   doc="link-side bearing Coulomb friction"),
    "flexible": Field("table", default=None, schema=FLEXIBLE_SCHEMA,
                      doc="the body is a flexible beam (assumed modes), e.g. flexible = { modes = 2, EI = 1.0e5, "
                          "length = 6.0, mass = 140.0 }"),
    "electrics": Field("table", default=None, schema=ELECTRICS_SCHEMA,
                       doc="armature-controlled DC motor (needs gear_ratio; every actuated joint or none): the input "
                           "becomes its voltage, e.g. electrics = { inductance = 2e-3, resistance = 1.0, "
                           "torque_constant = 0.1, back_emf_constant = 0.1 }"),
}

PAYLOAD_SCHEMA = dict(_INERTIA_FIELDS)

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

SOLVER_SCHEMA = {
    "method": Field("str", default="auto", choices=METHODS,
                    doc="auto: the zero dynamics choose bdf (minimum phase) or the non-causal nlp, and a failed "
                        "solve falls back to the next formulation; "
                        "bdf: constant-step BDF on the inverse DAE; nlp: collocation NLP solved by IPOPT ([nlp]); "
                        "hi, dd, km, dc: Moberg & Hanssen's solver family (dd: automatic dummy derivatives, any "
                        "model); dd43..dd49: their hand-made E1 systems (CLI: --method)"),
    "order": Field("int", default=6, check=lambda k: None if 1 <= k <= 6 else f"must be 1..6, got {k}",
                   doc="BDF order k, 1..6 (CLI: --order)"),
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
    "cases": Field("str", default="default", choices=("default", "full"),
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
                                 "with strategy noncausal: 10 time constants of the worst unstable zero, 0.05..3 s"),
    "post_actuation_s": Field("float", default=0.0, check=non_negative, unit="s",
                              doc="time after the motion in which the torques may act, as pre_actuation_s"),
    "strategy": Field("str", default="auto", choices=nlp_settings.STRATEGIES,
                      doc="causal: from rest at the start; noncausal: stable inversion with pre- and "
                          "post-actuation; auto: causal if the zero dynamics are stable along the path"),
    "backend": Field("str", default="auto", choices=nlp_settings.BACKENDS,
                     doc="casadi: CasADi's IPOPT; cyipopt: IPOPT through cyipopt with interval-wise derivatives; "
                         "pyomo: a Pyomo model; fatrop: the stage-structured interior point fatrop on the stage-ordered "
                         "NLP (slower here: seconds of set-up); auto: Newton for a square NLP, else cyipopt "
                         "(CLI: --backend)"),
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
                        doc="start point: the BDF solution (bdf) or rest (none) (CLI: --warm-start)"),
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

        return reference_from_spec(self.reference_spec, self.model)

    def with_solver(self, **changes) -> "Problem":
        changes = {k: v for k, v in changes.items() if v is not None}
        return self._sharing_model(replace(self, solver=replace(self.solver, **changes),
                                           raw=_raw_with(self.raw, "solver", changes)))

    def with_nlp(self, **changes) -> "Problem":
        changes = {k: v for k, v in changes.items() if v is not None}
        return self._sharing_model(replace(self, nlp=replace(self.nlp, **changes),
                                           raw=_raw_with(self.raw, "nlp", changes)))

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
    ver = d["verification"]
    verification = VerificationSettings(**{**ver, "payload_scales": tuple(ver["payload_scales"])}) if ver \
        else VerificationSettings()
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
        data = _arm_side(v, j, where, m["rotor_coupling"])
        rotation = _rotation(v, j, where)
        body = Body(j["mass"], np.array(j["com"]), _inertia(v, j, where))
        if j["axes"] is None:
            joint = Joint(name=j["name"], kind=j["kind"], axis=_unit(v, j["axis"], f"{where}.axis"),
                          origin=np.array(j["origin"]), body=body, rotation=rotation,
                          electrics=parse_electrics(v, j, where), **data)
            _check_joint_physics(v, joint, where)
            joints.append(joint)
            continue
        parse_electrics(v, j, where)  # a passive bearing: electrics are an error
        expanded, group = _bearing(v, j, where, rotation, body, first_index=len(joints))
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
        payload = Body(m["payload"]["mass"], np.array(m["payload"]["com"]), _inertia(v, m["payload"], "model.payload"))
    tool_rotation = np.eye(3) if m["tool_rpy_deg"] is None else rotation_rpy(*np.radians(m["tool_rpy_deg"]))
    chain = Chain(tuple(joints), np.array(m["tool_origin"]), np.array(m["gravity"]), const, tuple(groups),
                  payload, tool_rotation, m["rotor_coupling"])
    check_electric_chain(v, chain)
    return chain


def _unit(v: Validator, vec, where: str) -> np.ndarray:
    if vec is None:
        v.fail(where, "missing required key (a joint needs axis, or axes for a multi-axis passive bearing)")
    vec = np.array(vec, float)
    norm = np.linalg.norm(vec)
    if norm < 1e-12:
        v.fail(where, "must be a non-zero vector")
    return vec / norm


def _rotation(v: Validator, j: dict, where: str) -> np.ndarray:
    """Fixed rotation of the joint frame relative to the parent frame (identity by default)."""
    if j["rpy_deg"] is not None and j["rotation"] is not None:
        v.fail(f"{where}.rotation", "give either rpy_deg or rotation, not both")
    if j["rpy_deg"] is not None:
        return rotation_rpy(*np.radians(j["rpy_deg"]))
    if j["rotation"] is None:
        return np.eye(3)
    R = np.array(j["rotation"])
    if R.shape != (3, 3):
        v.fail(f"{where}.rotation", f"must be 3x3, got {R.shape[0]}x{R.shape[1]}")
    err = np.abs(R.T @ R - np.eye(3)).max()
    if err > 1e-9 or np.linalg.det(R) < 0:
        v.fail(f"{where}.rotation", f"must be a proper rotation matrix (R^T R = I within 1e-9, det = +1); "
               f"got |R^T R - I| = {err:.2g}, det = {np.linalg.det(R):.6g}: give more digits or use rpy_deg")
    return R


def _arm_side(v: Validator, j: dict, where: str, coupling: str) -> dict:
    """Drive-train data in arm-side units: given directly, or on the motor side with gear_ratio."""
    ratio = j["gear_ratio"]
    if ratio is not None and abs(ratio) < 1e-12:
        v.fail(f"{where}.gear_ratio", "must be non-zero")
    out = {k: j[k] for k in ("stiffness", "stiffness_cubic", "damping", "motor_inertia", "viscous_friction",
                             "coulomb_friction", "rotor_inertia_transverse", "coulomb_smoothing",
                             "stribeck_friction", "stribeck_velocity", *LINK_FRICTION)}
    for key, (arm, power) in MOTOR_SIDE.items():
        if j[key] is None:
            continue
        if ratio is None:
            v.fail(f"{where}.{key}", "motor-side data need gear_ratio (arm side = motor side x gear_ratio^2)")
        if out[arm] not in (0.0, None):
            v.fail(f"{where}.{key}", f"give either {arm} (arm side) or {key} (motor side), not both")
        out[arm] = j[key] * abs(ratio) ** power
    out.update(_spring_friction_laws(v, j, where, out))
    is_actuated = j["kind"] != "passive"
    if not is_actuated:
        for key in ("gear_ratio", "rotor_inertia", "rotor_axis", "motor_inertia"):
            if j[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a passive joint has no motor")
    if coupling == "full" and is_actuated and ratio is None:
        v.fail(f"{where}.gear_ratio", "rotor_coupling = \"full\" needs the gear ratio of every actuated joint "
               "(the rotor spins gear_ratio times as fast as the joint; 1 for a direct drive)")
    out["gear_ratio"] = 1.0 if ratio is None else float(ratio)
    out["rotor_axis"] = None if j["rotor_axis"] is None else _unit(v, j["rotor_axis"], f"{where}.rotor_axis")
    return out


def _spring_friction_laws(v: Validator, j: dict, where: str, out: dict) -> dict:
    """The nonlinear spring and friction keys checked against the joint kind and each other (arm side)."""
    kind = j["kind"]
    if kind == "direct":
        for key in (*SPRING_LAW, "stiffness_cubic"):
            if j[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a direct joint has no spring (it is actuated rigidly)")
        for key in LINK_FRICTION:
            if out[key]:
                v.fail(f"{where}.{key}", f"a direct joint's link and motor turn together: give its bearing friction "
                       f"as {key.removeprefix('link_')}")
    if kind == "passive":
        for key in MOTOR_FRICTION:
            if out[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a passive joint has no motor: its bearing friction is "
                       "link_viscous_friction / link_coulomb_friction (or damping)")
    knees, slopes, width = j["stiffness_knees"], j["stiffness_slopes"], j["knee_width"]
    if (knees is None) != (slopes is None):
        v.fail(f"{where}.{'stiffness_slopes' if slopes is None else 'stiffness_knees'}",
               "missing: a piecewise-linear spring needs stiffness_knees (rad) and stiffness_slopes (one slope "
               "beyond each knee)")
    if knees is not None:
        k = np.array(knees)
        if len(slopes) != len(k) or len(k) == 0:
            v.fail(f"{where}.stiffness_slopes", f"expected {len(k)} slopes (one beyond each knee), got {len(slopes)}")
        if k[0] <= 0 or np.any(np.diff(k) <= 0):
            v.fail(f"{where}.stiffness_knees", f"must be increasing deflections > 0 (rad), got {list(knees)}")
        if min(slopes) <= 0:
            v.fail(f"{where}.stiffness_slopes", f"must be > 0 (a monotone spring), got {list(slopes)}")
        if width is None:
            v.fail(f"{where}.knee_width", "missing: the knees are rounded over knee_width (rad) so that the inverse "
                   "model can differentiate the spring law; the law then differs from the sharp one by at most "
                   "|slope change| x knee_width x log 2")
        gap = min(np.diff(np.r_[0.0, k]))
        if width > 0.5 * gap:
            v.fail(f"{where}.knee_width", f"{width:g} rad rounds over more than half the smallest knee distance "
                   f"({gap:g} rad); use a smaller width")
    elif width is not None:
        v.fail(f"{where}.knee_width", "without stiffness_knees there is no knee to round")
    poly = j["stiffness_polynomial"]
    if poly is not None:
        if j["stiffness_cubic"]:
            v.fail(f"{where}.stiffness_polynomial", "give either stiffness_cubic or stiffness_polynomial (whose first "
                   "entry is the d^3 coefficient), not both")
        if min(poly) < 0:
            v.fail(f"{where}.stiffness_polynomial", f"coefficients must be >= 0 (a stiffening, monotone spring), got "
                   f"{list(poly)}; for a softening gear use stiffness_knees with smaller slopes")
    if out["stribeck_friction"] and not out["stribeck_velocity"]:
        v.fail(f"{where}.stribeck_velocity", "missing: stribeck_friction decays over stribeck_velocity (rad/s)")
    return {"stiffness_knees": tuple(knees or ()), "stiffness_slopes": tuple(slopes or ()),
            "knee_width": width or 0.0, "stiffness_polynomial": tuple(poly or ()),
            "coulomb_smoothing": out["coulomb_smoothing"] or COULOMB_SMOOTHING,
            "stribeck_friction": out["stribeck_friction"] or 0.0, "stribeck_velocity": out["stribeck_velocity"] or 0.0}


def _bearing(v: Validator, j: dict, where: str, rotation: np.ndarray, body: Body, first_index: int):
    """A passive joint with 2-3 axes: successive revolute joints at one point (massless between them,
    the body on the last), named name_1..name_k, with a coupled spring tau = -K q - D q'."""
    if j["kind"] != "passive":
        v.fail(f"{where}.axes", f"only a passive joint can have several axes (a {j['kind']} joint has one axis)")
    if j["axis"] is not None:
        v.fail(f"{where}.axes", "give either axis or axes, not both")
    axes = np.array(j["axes"])
    k = axes.shape[0]
    if axes.shape[1] != 3 or not 2 <= k <= 3:
        v.fail(f"{where}.axes", f"expected 2 or 3 axes of 3 numbers each, got {k} of {axes.shape[1]}")
    axes = np.array([_unit(v, a, f"{where}.axes[{r + 1}]") for r, a in enumerate(axes)])
    if np.linalg.svd(axes, compute_uv=False).min() < 1e-6:
        v.fail(f"{where}.axes", "the axes must be linearly independent")
    for key in ("stiffness", "damping", "stiffness_cubic"):
        if j[key] != 0.0:
            v.fail(f"{where}.{key}", f"a multi-axis bearing takes {key.split('_')[0]}_matrix ({k}x{k}), not {key}")
    for key in (*SPRING_LAW, *LINK_FRICTION):
        if j[key] not in (None, 0.0):
            v.fail(f"{where}.{key}", "a multi-axis bearing has a linear spring (stiffness_matrix, damping_matrix)")
    K = _spd(v, j["stiffness_matrix"], k, f"{where}.stiffness_matrix", definite=True)
    D = _spd(v, j["damping_matrix"], k, f"{where}.damping_matrix", definite=False)
    massless = Body(0.0, np.zeros(3), np.zeros((3, 3)))
    joints = []
    for r in range(k):
        joints.append(Joint(name=f"{j['name']}_{r + 1}", kind="passive", axis=axes[r],
                            origin=np.array(j["origin"]) if r == 0 else np.zeros(3),
                            body=body if r == k - 1 else massless,
                            rotation=rotation if r == 0 else np.eye(3)))
    return joints, SpringGroup(j["name"], tuple(range(first_index, first_index + k)), K, D)


def _spd(v: Validator, mat, k: int, where: str, definite: bool) -> np.ndarray:
    if mat is None:
        if definite:
            v.fail(where, f"missing: a multi-axis bearing needs a {k}x{k} stiffness matrix")
        return np.zeros((k, k))
    mat = np.array(mat)
    if mat.shape != (k, k):
        v.fail(where, f"must be {k}x{k} (one row and column per axis), got {mat.shape[0]}x{mat.shape[1]}")
    if not np.allclose(mat, mat.T, rtol=1e-12, atol=0.0):
        v.fail(where, "must be symmetric")
    low = np.linalg.eigvalsh(mat).min()
    if low <= 0 if definite else low < -1e-12 * max(1.0, np.abs(mat).max()):
        v.fail(where, f"must be positive {'definite' if definite else 'semi-definite'} (smallest eigenvalue {low:.4g})")
    return mat


def _check_expanded_names(v: Validator, joints: list[Joint]):
    seen = set()
    for jt in joints:
        if jt.name in seen:
            v.fail("model.joints", f"joint name {jt.name!r} is used twice (a bearing's axes are named "
                   "name_1, name_2, ...)")
        seen.add(jt.name)


def _inertia(v: Validator, j: dict, where: str) -> np.ndarray:
    if j["inertia"] is not None and j["inertia_diag"] is not None:
        v.fail(f"{where}.inertia", "give either inertia or inertia_diag, not both")
    if j["inertia"] is not None:
        inertia = np.array(j["inertia"])
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T):
            v.fail(f"{where}.inertia", "must be a symmetric 3x3 matrix")
    else:
        inertia = np.diag(j["inertia_diag"] or [0.0, 0.0, 0.0])
    principal = np.linalg.eigvalsh(inertia)
    if principal.min() < -1e-12:
        v.fail(f"{where}.inertia", "must be positive semi-definite")
    # a rigid body's principal moments satisfy the triangle inequality I_a <= I_b + I_c (each is an
    # integral of the squared distance from one axis, and d_a^2 <= d_b^2 + d_c^2). Exempt: the planar
    # convention of Moberg & Hanssen's tables, one moment about the axis of motion and the others 0.
    largest, others = principal[-1], principal[0] + principal[1]
    planar = others == 0.0
    if largest > others + 1e-9 * max(largest, 1e-300) and not planar:
        field = "inertia_diag" if j["inertia"] is None else "inertia"
        v.fail(f"{where}.{field}", f"principal moments {np.round(principal, 6).tolist()} kg m^2 break the triangle "
               f"inequality of a rigid body (the largest, {largest:.6g}, exceeds the sum of the other two, "
               f"{others:.6g}); for a planar arm give only the moment about the axis of motion and set the other two to 0")
    return inertia


def _check_joint_physics(v: Validator, joint: Joint, where: str):
    if joint.kind in ("elastic_gear", "passive") and joint.stiffness <= 0:
        v.fail(f"{where}.stiffness", f"a {joint.kind} joint needs stiffness > 0 (or stiffness_motor_side with "
               "gear_ratio)" if joint.kind == "elastic_gear" else f"a {joint.kind} joint needs stiffness > 0")
    if joint.kind == "elastic_gear" and joint.motor_inertia <= 0:
        v.fail(f"{where}.motor_inertia", "an elastic_gear joint needs motor_inertia > 0 (or rotor_inertia with "
               "gear_ratio)")


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
