"""The ``[reference]`` table of a problem file: one schema per path kind, parsed to SI units.

``kind`` selects the schema; keys of another kind are refused with the kind they belong to, typos
get a did-you-mean. Tool positions are in mm (``*_mm``), orientation and joint angles in degrees
(``*_deg``) or radians (``*_rad``), times in s. Every kind shares ``time_law`` (any name of
``ffopt.reference.TIME_LAWS``), ``rest_before``, ``rest_after`` and ``joint_guess``, and ``time_law_shape``: shaping terms added to a polynomial
``time_law`` (``ffopt.reference.time_laws.shaped_time_law``; durations derived from speed or
acceleration limits use the base law, so the shape changes the timing inside a move, not its length).

=============  ===============================================================================
kind           path
=============  ===============================================================================
line           straight tool line ``start_mm`` -> ``end_mm``
polyline       through ``points_mm`` (via points); ``blend`` s of overlap rounds each corner
arc            circular arc: ``start_mm`` + ``center_mm`` + ``angle_deg`` (+ ``normal`` in 3-D),
               or three points ``start_mm``, ``via_mm``, ``end_mm``
joint_ptp      link-side joint move ``q_start_*`` -> ``q_end_*`` of the actuated joints, mapped
               through the rigid forward kinematics to ``model.outputs`` (which may name joints)
prefilter      a raw ``step`` or trapezoidal-speed ``ptp`` move (joints ``q_*`` or a tool line
               ``start_mm`` -> ``end_mm``) through a Butterworth low-pass of ``order`` (default:
               derived from the model) and ``cutoff_hz`` (``ffopt.reference.prefilter``)
=============  ===============================================================================

Cartesian kinds carry the orientation outputs (yaw, pitch, roll) along with ``orientation_*_deg``
(``orientations_deg`` per via point), moved by the same time law, and the joint outputs (a redundant
arm's elbow next to the tool coordinates) with ``joint_start_deg`` (required: one angle per joint
output, in model.outputs order) and ``joint_end_deg`` (default: held at the start): on a line, an
arc and a prefiltered line they move by the tool's own time law (filter), on a polyline by the time
law over the whole motion (they do not stop at the via points). Durations are given (``duration``,
``durations``) or follow from the peak tool speed ``speed_mm_s``; a joint move's from the joints'
speed and acceleration limits (each joint its own, or ``synchronized``: all take the slowest).
A ``prefilter`` move has no time law: the filter smooths its raw profile; its horizon is the raw
motion, the filter's settling time (to ``settle_tolerance`` of the move) and ``rest_after``.

A line, arc or polyline may start from a joint configuration instead of a tool pose: ``q_start_deg``
(the actuated link-side angles, as a joint move's) gives the start's tool position, orientation and joint
outputs by the rigid forward kinematics (passive joints at rest; yaw and roll turned by whole turns to
the end's side) and is the inverse kinematics' start (``joint_guess``); a polyline's ``points_mm`` then
list the points after the start.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.schema import Field, Validator, non_negative, positive
from ffopt.models.chain import Chain
from ffopt.models.flexible import AXES, ORIENTATION, PITCH_RANGE
from ffopt.reference.paths import (
    arc_frame,
    check_blends,
    circle_through,
    duration_for_limits,
    duration_for_speed,
)
from ffopt.reference.prefilter import DEFAULT_SETTLE_TOLERANCE, RAW_KINDS, Butterworth, ptp_profile, step_profile
from ffopt.reference.shaping import SHAPERS
from ffopt.reference.time_laws import TIME_LAWS, SPLINE_DEGREE, SplineLaw, TimeLaw, shaped_time_law
from ffopt.settings.reference import DURATION_FROM_LIMIT_KEYS

KINDS = ("line", "polyline", "arc", "joint_ptp", "prefilter")
TIME_LAW_KEYS = ("time_law", "time_law_shape", "time_law_spline", "shaper", "shaper_modes")  # not of a prefiltered move
# Default prefilter order: the smallest that gives a continuous motor torque, + PREFILTER_MARGIN.
PREFILTER_MARGIN = 1
# Orientation angles must stay this far from a branch cut (yaw, roll) or from gimbal lock (pitch).
ANGLE_MARGIN = math.radians(1.0)
DURATION_MAX_S = 10.0  # reference.duration = "min": the longest move searched unless duration_max says

_COMMON = {
    "kind": Field("str", required=True, choices=KINDS, doc="the kind of path; each kind has its own keys"),
    "time_law": Field("str", default="poly11", choices=(*TIME_LAWS, "spline"),
                      doc="rest-to-rest time law s(tau) of every move: polynomials with 2 (quintic) to 9 (poly19) "
                          "zero derivatives at the rests (poly11: 5), cinf (all zero), or spline (its acceleration "
                          "a B-spline: time_law_spline; what a minimum-time search finds)"),
    "time_law_spline": Field("floats", default=(),
                             doc=f"with time_law = \"spline\": the coefficients a_j of the law's acceleration "
                                 f"s''(tau) = sum_j a_j B_j(tau), B_j uniform B-splines of degree {SPLINE_DEGREE} on "
                                 "[0, 1] (ffopt.reference.time_laws.SplineLaw); they must sum to 0 and bring s to 1 "
                                 "(the law ends at rest), s must not run backwards; the law is C^8 at the rests. "
                                 "Written by ffopt plan --min-time; default none"),
    "time_law_shape": Field("floats", default=(),
                            doc="shaping coefficients c_i added to the polynomial time_law: s = base + sum_i c_i "
                                "phi_i, phi_i = (4 tau (1 - tau))^(n+1) P_(i-1)(2 tau - 1) (n zero derivatives of the "
                                "base, P Legendre): keeps the rests' smoothness; s must stay monotone. Found by "
                                "ffopt.dae.rest_to_rest.shape_for_rest so the arm ends at rest (12 coefficients, the "
                                "law then also C^(n+2) at the rests: the torque table does not alternate there); "
                                "default none"),
    "shaper": Field("str", choices=SHAPERS,
                    doc="input shaper convolved with the time law: zv or zvd (Singer & Seering 1990), ei or the "
                        "two-hump ei2 (Singhose, Seering & Singer 1994), impulses on each of shaper_modes; the motion "
                        "is longer by the shaper's duration (half a damped period per mode for zv, a whole one for "
                        "zvd and ei, 1.5 for ei2) and the exact inverse tracks the shaped path. Set by "
                        "solver.robust_rest; default none"),
    "shaper_modes": Field("matrix",
                          doc="the modes the shaper cancels, one row [natural frequency Hz, damping ratio] each "
                              "(frequency > 0, damping ratio in [0, 1)); required with shaper"),
    "rest_before": Field("float", default=0.05, check=non_negative, unit="s", doc="rest before the motion (s)"),
    "rest_after": Field("float", default=0.3, check=non_negative, unit="s", doc="rest after the motion (s)"),
    "joint_guess": Field("vector", unit="rad",
                         doc="link-side joint angles (rad) near the start, one per joint in chain order (picks "
                             "the IK branch)"),
}
_TIMING = {
    "duration": Field("float", check=positive, unit="s",
                      doc="motion time (s); or \"min\": the shortest move within the problem's limits that ends at "
                          "rest (nlp.torque_max, nlp.torque_rate_max, the URDF's velocity limits; ffopt.motion.min_time,"
                          " ffopt plan --min-time); the plan's problem.toml holds the duration found"),
    "duration_max": Field("float", check=positive, unit="s",
                          doc="with duration = \"min\": the longest move the search considers (s); default "
                              f"{DURATION_MAX_S:g} s"),
    "speed_mm_s": Field("float", check=positive, unit="mm/s", doc="peak tool speed (mm/s), instead of duration"),
}
_ORIENTATION = {
    "orientation_start_deg": Field("vector", unit="deg", doc="yaw/pitch/roll outputs at the start (deg)"),
    "orientation_end_deg": Field("vector", unit="deg", doc="yaw/pitch/roll outputs at the end (deg)"),
}
_JOINT_OUTPUTS = {
    "joint_start_deg": Field("vector", unit="deg",
                             doc="angles of the joint outputs at the start (deg), one per joint named in "
                                 "model.outputs, in that order (e.g. a redundant arm's elbow next to the tool axes); "
                                 "required when model.outputs names joints"),
    "joint_start_rad": Field("vector", unit="rad", doc="joint_start_deg in rad, instead of it"),
    "joint_end_deg": Field("vector", unit="deg",
                           doc="angles of the joint outputs at the end (deg), moved from joint_start_deg by the time "
                               "law (on a polyline over the whole motion); default: joint_start (held)"),
    "joint_end_rad": Field("vector", unit="rad", doc="joint_end_deg in rad, instead of it"),
}
JOINT_OUTPUT_KEYS = tuple(_JOINT_OUTPUTS)
_JOINT_START = {
    "q_start_deg": Field("vector", unit="deg",
                         doc="start from this joint configuration: the actuated link-side joint angles (deg), one per "
                             "actuated joint in chain order (as a joint move's q_start_deg); the tool pose there (rigid "
                             "forward kinematics, passive joints at rest) is the start, instead of start_mm, "
                             "orientation_start_deg and joint_start_deg (on a polyline the points given are the ones "
                             "after it), and the inverse kinematics starts there (the default joint_guess)"),
    "q_start_rad": Field("vector", unit="rad", doc="q_start_deg in rad, instead of it"),
}
SCHEMAS: dict[str, dict[str, Field]] = {
    "line": {**_COMMON, **_TIMING, **_ORIENTATION, **_JOINT_OUTPUTS, **_JOINT_START,
             "start_mm": Field("vector", unit="mm", doc="tool position outputs at the start (mm); required unless "
                                                        "q_start_deg"),
             "end_mm": Field("vector", required=True, unit="mm", doc="tool position outputs at the end (mm)")},
    "polyline": {**_COMMON, **_JOINT_OUTPUTS, **_JOINT_START,
                 "points_mm": Field("matrix", required=True, unit="mm",
                                    doc="start, via points and end (mm), one row each (with q_start_deg: the via "
                                        "points and the end)"),
                 "durations": Field("number_or_vector", unit="s", doc="time of each segment (s), or one for all"),
                 "speed_mm_s": Field("float", check=positive, unit="mm/s",
                                     doc="peak tool speed on each segment (mm/s), instead of durations"),
                 "blend": Field("number_or_vector", default=0.0, unit="s",
                                doc="overlap of consecutive segments at each via point (s); 0 stops there"),
                 "orientations_deg": Field("matrix", unit="deg",
                                           doc="yaw/pitch/roll outputs at each point of points_mm (deg)")},
    "arc": {**_COMMON, **_TIMING, **_ORIENTATION, **_JOINT_OUTPUTS, **_JOINT_START,
            "start_mm": Field("vector", unit="mm", doc="tool position at the start (mm); required unless q_start_deg"),
            "center_mm": Field("vector", unit="mm", doc="centre of the circle (mm), with angle_deg"),
            "angle_deg": Field("float", unit="deg", doc="signed angle swept about the normal (deg)"),
            "normal": Field("vector", length=3, doc="normal of the arc's plane (3-D arcs with center_mm)"),
            "via_mm": Field("vector", unit="mm", doc="a point on the arc between start and end (mm), with end_mm"),
            "end_mm": Field("vector", unit="mm", doc="end of the three-point arc (mm)")},
    "joint_ptp": {**_COMMON,
                  "q_start_deg": Field("vector", unit="deg",
                                       doc="actuated link-side joint angles at the start (deg)"),
                  "q_start_rad": Field("vector", unit="rad", doc="q_start_deg in rad, instead of it"),
                  "q_end_deg": Field("vector", unit="deg", doc="actuated link-side joint angles at the end (deg)"),
                  "q_end_rad": Field("vector", unit="rad", doc="q_end_deg in rad, instead of it"),
                  "duration": Field("number_or_vector", unit="s",
                                    doc="motion time (s), or one per actuated joint; or \"min\" (as for a line)"),
                  "duration_max": _TIMING["duration_max"],
                  "speed_max_deg_s": Field("number_or_vector", unit="deg/s",
                                           doc="joint speed limits (deg/s), one or one per joint, instead of duration"),
                  "speed_max_rad_s": Field("number_or_vector", unit="rad/s", doc="speed_max_deg_s in rad/s"),
                  "acceleration_max_deg_s2": Field("number_or_vector", unit="deg/s^2",
                                                   doc="joint acceleration limits (deg/s^2), with speed_max_deg_s"),
                  "acceleration_max_rad_s2": Field("number_or_vector", unit="rad/s^2",
                                                   doc="acceleration_max_deg_s2 in rad/s^2"),
                  "synchronized": Field("bool", default=True,
                                        doc="every joint takes the longest joint's time (else each its own)")},
    "prefilter": {**{k: f for k, f in _COMMON.items() if k not in TIME_LAW_KEYS}, **_ORIENTATION,
                  **_JOINT_OUTPUTS,
                  "raw": Field("str", required=True, choices=RAW_KINDS,
                               doc="raw move: a step at rest_before, or ptp (trapezoidal speed: piecewise-"
                                   "constant acceleration within the speed and acceleration limits)"),
                  "cutoff_hz": Field("float", required=True, check=positive, unit="Hz", doc="Butterworth cutoff (-3 dB)"),
                  "order": Field("int", check=lambda n: None if n >= 1 else f"must be >= 1, got {n}",
                                 doc="filter order (default: derived from the model's inverse)"),
                  "settle_tolerance": Field("float", default=DEFAULT_SETTLE_TOLERANCE,
                                            check=lambda x: None if 0 < x < 1 else f"must be in (0, 1), got {x}",
                                            doc="the motion ends when the filter's tail is below this share of "
                                                "the move"),
                  "q_start_deg": Field("vector", unit="deg", doc="actuated link-side joint angles at the start"),
                  "q_start_rad": Field("vector", unit="rad", doc="q_start_deg in rad"),
                  "q_end_deg": Field("vector", unit="deg", doc="actuated link-side joint angles at the end"),
                  "q_end_rad": Field("vector", unit="rad", doc="q_end_deg in rad"),
                  "speed_max_deg_s": Field("number_or_vector", unit="deg/s", doc="raw ptp: joint speed limits"),
                  "speed_max_rad_s": Field("number_or_vector", unit="rad/s", doc="speed_max_deg_s in rad/s"),
                  "acceleration_max_deg_s2": Field("number_or_vector", unit="deg/s^2",
                                                   doc="raw ptp: joint acceleration limits"),
                  "acceleration_max_rad_s2": Field("number_or_vector", unit="rad/s^2",
                                                   doc="acceleration_max_deg_s2 in rad/s^2"),
                  "start_mm": Field("vector", unit="mm", doc="tool line: position outputs at the start"),
                  "end_mm": Field("vector", unit="mm", doc="tool line: position outputs at the end"),
                  "speed_max_mm_s": Field("float", check=positive, unit="mm/s",
                                          doc="raw ptp on a tool line: speed limit"),
                  "acceleration_max_mm_s2": Field("float", check=positive, unit="mm/s^2",
                                                  doc="raw ptp on a tool line: acceleration limit")},
}

# What each kind draws (``ffopt schema`` prints it with the kind's keys; tests require one per kind).
KIND_DOCS = {
    "line": "straight tool line start_mm -> end_mm; tool angle outputs move orientation_start_deg -> "
            "orientation_end_deg and joint outputs joint_start_deg -> joint_end_deg by the same time law",
    "polyline": "through via points: overlapping rest-to-rest moves p(t) = P0 + sum_i (P_i+1 - P_i) s((t - t_i) / "
                "T_i); blend seconds of overlap round each corner, 0 stops at the via point; joint outputs move "
                "joint_start_deg -> joint_end_deg by the time law over the whole motion (no stop at via points)",
    "arc": "circular arc, its angle driven by the time law: start_mm + center_mm + angle_deg (+ normal in 3-D), or "
           "three points start_mm, via_mm, end_mm; tool angle and joint outputs move by the same time law",
    "joint_ptp": "joint-space point-to-point move of the actuated joints (link side), mapped through the rigid "
                 "kinematics (passive joints at rest) to model.outputs, which may name the joints",
    "prefilter": "a raw move that is not smooth enough to invert (raw = step at rest_before, or ptp: synchronised "
                 "trapezoidal speed) through a Butterworth low-pass of order n (Thuemmel, Otter & Bals, eq. 12): "
                 "the filter states are the path's derivatives; no time law; the order is derived from the "
                 "model's inverse unless given, and the horizon extends until the filter has settled",
}


@dataclass(frozen=True)
class ReferenceSpec:
    """A validated [reference] table in SI units. ``params`` hold the kind's own values:

    line: start, end (output order); polyline: points (n x n_out, joint outputs held at their start),
    durations, blends, joint_start / joint_end (full output vectors, joint rows only: the whole-motion
    move of the joint outputs); arc: center, start, angle, normal, extra_start, extra_end (orientation
    then joint outputs), position/orientation/extra output indices;
    joint_ptp: q_start, q_end, durations (per actuated joint, after synchronisation).
    """

    kind: str
    duration: float  # the whole motion (s), without the rests
    time_law: str
    rest_before: float
    rest_after: float
    joint_guess: np.ndarray | None
    params: dict = field(default_factory=dict)
    angle_centres: dict = field(default_factory=dict)  # branch centres of yaw/roll outputs (rad)
    time_law_shape: tuple[float, ...] = ()  # shaping coefficients added to the polynomial time_law
    shaper: tuple | None = None  # (kind, ((Hz, damping ratio), ...)): an input shaper convolved with the time law
    minimum_time: bool = False  # duration = "min": the duration is duration_max until ffopt.motion.min_time sets it
    time_law_spline: tuple[float, ...] = ()  # time_law = "spline": its acceleration's B-spline coefficients

    @property
    def law(self) -> TimeLaw | SplineLaw:
        """The time law the path moves by: ``time_law`` with the ``time_law_shape`` terms (if any), or the spline law
        of ``time_law_spline``."""
        if self.time_law == "spline":
            return _spline_law(self.time_law_spline)
        return shaped_time_law(self.time_law, self.time_law_shape)

    @property
    def start(self) -> np.ndarray | None:
        return self.params.get("start")

    @property
    def start_field(self) -> str:
        """The key that gives the path's start, for messages about it."""
        if self.params.get("q_start_given") or "q_start" in self.params:
            return "reference.q_start_deg"
        return "reference.points_mm (row 1)" if self.kind == "polyline" else "reference.start_mm"

    @property
    def end(self) -> np.ndarray | None:
        return self.params.get("end")


@lru_cache(maxsize=32)
def _spline_law(coefficients: tuple[float, ...]) -> SplineLaw:
    return SplineLaw(coefficients)


class _Outputs:
    """Which model outputs are tool positions, orientation angles and joint angles."""

    def __init__(self, outputs):
        self.names = list(outputs)
        self.pos = [i for i, o in enumerate(outputs) if o in AXES]
        self.ang = [i for i, o in enumerate(outputs) if o in ORIENTATION]
        self.joint = [i for i, o in enumerate(outputs) if o not in AXES and o not in ORIENTATION]

    def assemble(self, pos_mm, ang_deg, joint_rad=None) -> np.ndarray:
        """Full output vector (SI) from position (mm), orientation (deg) and joint (rad) parts."""
        y = np.zeros(len(self.names))
        y[self.pos] = np.asarray(pos_mm, float) / 1000.0
        if self.ang:
            y[self.ang] = np.radians(ang_deg)
        if self.joint:
            y[self.joint] = joint_rad
        return y

    def joint_names(self) -> str:
        return ", ".join(self.names[i] for i in self.joint)


def parse_reference(v: Validator, raw: dict, outputs, chain: Chain) -> ReferenceSpec:
    """Validate the [reference] table against its kind's schema and convert it to SI."""
    kind = raw.get("kind")
    if kind is None:
        v.fail("reference.kind", f"missing required key (one of {', '.join(KINDS)})")
    v.value(kind, _COMMON["kind"], "reference.kind")
    schema = SCHEMAS[kind]
    for key in raw:
        owners = [k for k, s in SCHEMAS.items() if key in s and key not in schema]
        if key in JOINT_OUTPUT_KEYS and owners:
            v.fail(f"reference.{key}", f"is a key of the tool paths ({' / '.join(owners)}), not of kind '{kind}': a "
                   "joint move sets every actuated joint, the joint outputs included, by q_start_deg / q_end_deg")
        if owners and key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            v.fail(f"reference.{key}", f"is a key of kind {' / '.join(repr(o) for o in owners)}, not of "
                   f"kind '{kind}'{hint}")
    raw, minimum_time = _minimum_time(v, raw, schema)
    r = v.table(raw, schema, "reference")
    out = _Outputs(outputs)
    law = TIME_LAWS.get(r.get("time_law"))
    shape = tuple(r.get("time_law_shape") or ())
    spline = tuple(r.get("time_law_spline") or ())
    if (r.get("time_law") == "spline") != bool(spline):
        v.fail("reference.time_law_spline" if spline else "reference.time_law",
               "time_law = \"spline\" and time_law_spline (its coefficients) go together")
    if spline:
        if shape:
            v.fail("reference.time_law_shape", "shaping terms need a polynomial time law, not a spline")
        try:
            law = SplineLaw(spline)
        except ProblemError as err:
            v.fail("reference.time_law_spline", str(err).split(": ", 1)[1])
    if shape:
        try:
            shaped_time_law(law, shape)
        except ProblemError as err:
            v.fail("reference.time_law_shape", str(err).split(": ", 1)[1])
    shaper = _shaper(v, r)
    try:
        parsed = _PARSERS[kind](v, r, out, law, chain)
    except ProblemError as err:  # geometry checks of ffopt.reference name the field but not the file
        if str(err).startswith(v.source):
            raise
        raise ProblemError(f"{v.source}: {err}") from None
    duration, params, guess = parsed  # guess: the kind's default (a joint move's start pose)
    if r["joint_guess"] is not None:
        guess = np.array(r["joint_guess"])
    if guess is not None and len(guess) != chain.n_joints:
        v.fail("reference.joint_guess", f"expected {chain.n_joints} link-side angles (one per joint, "
               f"{', '.join(j.name for j in chain.joints)}), got {len(guess)}")
    return ReferenceSpec(kind, duration, r.get("time_law", kind), r["rest_before"], r["rest_after"], guess, params,
                         _angle_centres(v, out, params), shape, shaper, minimum_time, spline)


def _minimum_time(v, raw: dict, schema: dict) -> tuple[dict, bool]:
    """reference.duration = "min": the table with duration_max (default DURATION_MAX_S) as the move's duration
    until the search finds it, and True; the table as it is and False otherwise."""
    if raw.get("duration") != "min":
        if raw.get("duration_max") is not None:
            v.fail("reference.duration_max", "bounds the search of duration = \"min\"; give that, or remove it")
        return raw, False
    if "duration_max" not in schema:
        v.fail("reference.duration", "\"min\" is for the kinds with one duration (line, arc, joint_ptp)")
    for key in DURATION_FROM_LIMIT_KEYS:
        if raw.get(key) is not None:
            v.fail(f"reference.{key}", "with duration = \"min\" the search sets the duration: remove it")
    return {**raw, "duration": raw.get("duration_max", DURATION_MAX_S)}, True


def _shaper(v, r) -> tuple | None:
    """(kind, modes) of reference.shaper / shaper_modes, or None."""
    kind, modes = r.get("shaper"), r.get("shaper_modes")
    if kind is None:
        if modes is not None:
            v.fail("reference.shaper_modes", f"given without reference.shaper ({', '.join(SHAPERS)})")
        return None
    if not modes:
        v.fail("reference.shaper_modes", f"missing: shaper {kind!r} needs the modes it cancels, rows "
               "[natural frequency Hz, damping ratio]")
    for i, row in enumerate(modes):
        if len(row) != 2 or not row[0] > 0 or not 0 <= row[1] < 1:
            v.fail("reference.shaper_modes", f"row {i + 1}: expected [frequency Hz > 0, damping ratio in [0, 1)], "
                   f"got {list(row)}")
    return kind, tuple((float(f), float(z)) for f, z in modes)


# ------------------------------------------------------------------------------------- kinds
def _cartesian(v, kind: str, out: _Outputs, min_pos: int = 1):
    if out.joint and not out.pos:
        v.fail("reference.kind", f"a '{kind}' path moves the tool, but model.outputs names only joints "
               f"({out.joint_names()}): use kind = \"joint_ptp\" for a joint move")
    if len(out.pos) < min_pos:
        v.fail("reference.kind", f"a '{kind}' path needs at least {min_pos} tool position outputs (x, y, z) in "
               f"model.outputs, got {out.names}")


def _point(v, r, key: str, n: int, what: str = "tool position outputs") -> np.ndarray:
    x = r[key]
    if len(x) != n:
        v.fail(f"reference.{key}", f"expected {n} values (one per {what}), got {len(x)}")
    return np.array(x, float)


def _orientation_pair(v, r, out: _Outputs, start_deg=None):
    """(start, end) orientation outputs (deg); ``start_deg``: the start from q_start_deg (yaw and roll turned by
    whole turns to within 180 deg of the end: the same orientation)."""
    keys = ("orientation_start_deg", "orientation_end_deg")
    if not out.ang:
        for k in keys:
            if r[k] is not None:
                v.fail(f"reference.{k}", "model.outputs has no orientation angle (yaw, pitch, roll) to move")
        return None, None
    names = ", ".join(out.names[i] for i in out.ang)
    for k in keys if start_deg is None else keys[1:]:
        if r[k] is None:
            v.fail(f"reference.{k}", f"missing: model.outputs has orientation angles ({names})")
    a0, a1 = (None if (start_deg is not None and k == keys[0]) else
              _point(v, r, k, len(out.ang), f"orientation output ({names})") for k in keys)
    return (a0 if start_deg is None else _near(start_deg, a1, [out.names[i] for i in out.ang])), a1


def _near(angles_deg, target_deg, names) -> np.ndarray:
    """yaw and roll turned by whole turns to within 180 deg of ``target_deg`` (pitch as it is)."""
    out = np.array(angles_deg, float)
    for k, name in enumerate(names):
        if name != "pitch":
            out[k] += 360.0 * np.round((target_deg[k] - out[k]) / 360.0)
    return out


def _start_pose(v, r, out: _Outputs, chain: Chain):
    """((position mm, orientation deg, joint outputs rad) of the tool at q_start_deg, the full link vector), or
    (None, None) without q_start_deg. The start pose is the rigid forward kinematics there (passive joints at
    rest); the keys that would give it too are refused."""
    act = chain.actuated
    names = [chain.joints[i].name for i in act]
    q = _angle_pair(v, r, "q_start", len(act), f"actuated joint ({', '.join(names)})", required=False)
    if q is None:
        return None, None
    key = "reference.q_start_deg" if r["q_start_deg"] is not None else "reference.q_start_rad"
    for other in ("start_mm", "orientation_start_deg", "joint_start_deg", "joint_start_rad"):
        if r.get(other) is not None:
            v.fail(f"reference.{other}", f"the start is given by {key} (a joint configuration) already: give the "
                   "start as the joint configuration or as the tool pose, not both")
    for value, i in zip(q, act):
        joint = chain.joints[i]
        if not joint.q_min - 1e-9 <= value <= joint.q_max + 1e-9:
            v.fail(key, f"{joint.name} = {math.degrees(value):.4g} deg is outside its limits "
                   f"[{math.degrees(joint.q_min):.4g}, {math.degrees(joint.q_max):.4g}] deg (the URDF's <limit>)")
    qa = np.zeros(chain.n_joints)
    qa[act] = q
    y = _forward_outputs(chain, out.names, qa)
    return (1000.0 * y[out.pos], np.degrees(y[out.ang]), y[out.joint]), qa


def _forward_outputs(chain: Chain, outputs, qa) -> np.ndarray:
    """model.outputs of the rigid chain at the link angles qa (yaw and roll on (-pi, pi])."""
    from ffopt.models.flexible import FlexibleModel

    return np.array(FlexibleModel(chain, tuple(outputs)).output(qa), float).ravel()


def _joint_outputs(v, r, out: _Outputs, chain: Chain, start=None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Start and end angles (rad) of the joint outputs: joint_start_* required (or ``start``, from q_start_deg),
    joint_end_* default held."""
    if not out.joint:
        for k in JOINT_OUTPUT_KEYS:
            if r[k] is not None:
                v.fail(f"reference.{k}", f"model.outputs names no joint ({', '.join(out.names)}): "
                       "joint_start_deg / joint_end_deg give the angles of joint outputs")
        return None, None
    what = f"joint output, in model.outputs order: {out.joint_names()}"
    q0 = _angle_pair(v, r, "joint_start", len(out.joint), what, required=False) if start is None else start
    if q0 is None:
        v.fail("reference.joint_start_deg", f"missing: model.outputs names joints ({out.joint_names()}); give their "
               "angles at the start, joint_start_deg (or joint_start_rad), and joint_end_deg to move them (default: "
               "held at the start)")
    q1 = _angle_pair(v, r, "joint_end", len(out.joint), what, required=False)
    if start is None:
        _check_joint_output_limits(v, r, out, chain, "joint_start", q0)
    if q1 is None:
        return q0, q0.copy()
    _check_joint_output_limits(v, r, out, chain, "joint_end", q1)
    return q0, q1


def _check_joint_output_limits(v, r, out: _Outputs, chain: Chain, base: str, q: np.ndarray):
    """A joint output's given angle lies within its joint's position limits (a URDF's <limit>)."""
    joints = {j.name: j for j in chain.joints}
    key = f"{base}_deg" if r[f"{base}_deg"] is not None else f"{base}_rad"
    for value, i in zip(q, out.joint):
        joint = joints.get(out.names[i])
        if joint is not None and not joint.q_min - 1e-9 <= value <= joint.q_max + 1e-9:
            v.fail(f"reference.{key}", f"{out.names[i]} = {math.degrees(value):.4g} deg is outside its limits "
                   f"[{math.degrees(joint.q_min):.4g}, {math.degrees(joint.q_max):.4g}] deg (the URDF's <limit>)")


def _duration(v, r, law, length_m: float) -> float:
    if r["duration"] is not None and r["speed_mm_s"] is not None:
        v.fail("reference.speed_mm_s", "give either duration or speed_mm_s, not both")
    if r["duration"] is not None:
        return r["duration"]
    if r["speed_mm_s"] is None:
        v.fail("reference.duration", "missing: give the motion time duration (s) or the tool speed speed_mm_s")
    if length_m <= 0.0:
        v.fail("reference.speed_mm_s", "the tool does not move (a path of length 0): give duration instead")
    return duration_for_speed(law, length_m, r["speed_mm_s"] / 1000.0)


def _start_point(v, r, out: _Outputs, pose) -> np.ndarray:
    """start_mm, or the position of the start pose from q_start_deg."""
    if pose is not None:
        return pose[0]
    if r["start_mm"] is None:
        v.fail("reference.start_mm", "missing: give the tool position at the start, or the joint configuration "
               "q_start_deg there")
    return _point(v, r, "start_mm", len(out.pos))


def _line(v, r, out, law, chain):
    _cartesian(v, "line", out)
    pose, guess = _start_pose(v, r, out, chain)
    p0, p1 = _start_point(v, r, out, pose), _point(v, r, "end_mm", len(out.pos))
    a0, a1 = _orientation_pair(v, r, out, None if pose is None else pose[1])
    q0, q1 = _joint_outputs(v, r, out, chain, None if pose is None else pose[2])
    d = _duration(v, r, law, np.linalg.norm(p1 - p0) / 1000.0)
    return d, {"start": out.assemble(p0, a0, q0), "end": out.assemble(p1, a1, q1), "q_start_given": pose is not None}, guess


def _polyline(v, r, out, law, chain):
    _cartesian(v, "polyline", out)
    pose, guess = _start_pose(v, r, out, chain)
    pts = np.array(r["points_mm"], float)
    first = 2 if pose is None else 1
    if pts.ndim != 2 or pts.shape[0] < first or pts.shape[1] != len(out.pos):
        v.fail("reference.points_mm", f"expected at least {first} rows of {len(out.pos)} values (one per tool position "
               f"output{'' if pose is None else '; the start is q_start_deg'}), got "
               f"{pts.shape[0]} x {pts.shape[1] if pts.ndim == 2 else 0}")
    if pose is not None:
        pts = np.vstack([pose[0], pts])
    n_seg = pts.shape[0] - 1
    angs = None
    if out.ang or r["orientations_deg"] is not None:
        if not out.ang:
            v.fail("reference.orientations_deg", "model.outputs has no orientation angle (yaw, pitch, roll)")
        if r["orientations_deg"] is None:
            v.fail("reference.orientations_deg", "missing: model.outputs has orientation angles")
        angs = np.array(r["orientations_deg"], float)
        n_rows = pts.shape[0] - (pose is not None)
        if angs.shape != (n_rows, len(out.ang)):
            v.fail("reference.orientations_deg", f"expected {n_rows} rows (one per point of points_mm) of "
                   f"{len(out.ang)} values, got {angs.shape[0]} x {angs.shape[1]}")
        if pose is not None:
            angs = np.vstack([_near(pose[1], angs[0], [out.names[i] for i in out.ang]), angs])
    # held at q0 in the points; build adds the whole-motion move to q1
    q0, q1 = _joint_outputs(v, r, out, chain, None if pose is None else pose[2])
    P = np.array([out.assemble(pts[i], None if angs is None else angs[i], q0) for i in range(pts.shape[0])])
    lengths = np.linalg.norm(np.diff(pts, axis=0), axis=1) / 1000.0
    T = _segment_durations(v, r, law, lengths)
    blends = np.asarray(r["blend"], float)
    if blends.ndim == 0:
        blends = np.full(n_seg - 1, float(blends))
    elif blends.size != n_seg - 1:
        v.fail("reference.blend", f"expected one number or {n_seg - 1} (one per via point), got {blends.size}")
    if np.any(blends < 0):
        v.fail("reference.blend", "must be >= 0")
    check_blends(T, blends)
    params = {"points": P, "durations": T, "blends": blends, "q_start_given": pose is not None}
    if out.joint:
        params.update(joint_start=out.assemble(np.zeros(len(out.pos)), np.zeros(len(out.ang)), q0),
                      joint_end=out.assemble(np.zeros(len(out.pos)), np.zeros(len(out.ang)), q1))
    return float(T.sum() - blends.sum()), params, guess


def _segment_durations(v, r, law, lengths: np.ndarray) -> np.ndarray:
    if r["durations"] is not None and r["speed_mm_s"] is not None:
        v.fail("reference.speed_mm_s", "give either durations or speed_mm_s, not both")
    if r["durations"] is None:
        if r["speed_mm_s"] is None:
            v.fail("reference.durations", "missing: give the segment times durations (s) or the tool speed speed_mm_s")
        if np.any(lengths <= 0):
            v.fail("reference.speed_mm_s", f"segment {int(np.argmin(lengths)) + 1} has length 0 (the tool only "
                   "turns): give durations instead")
        return np.array([duration_for_speed(law, L, r["speed_mm_s"] / 1000.0) for L in lengths])
    T = np.asarray(r["durations"], float)
    if T.ndim == 0:
        T = np.full(lengths.size, float(T))
    if T.size != lengths.size:
        v.fail("reference.durations", f"expected one number or {lengths.size} (one per segment), got {T.size}")
    if np.any(T <= 0):
        v.fail("reference.durations", f"must be > 0, got {T.tolist()}")
    return T


def _arc(v, r, out, law, chain):
    _cartesian(v, "arc", out, min_pos=2)
    n = len(out.pos)
    if n > 3:
        v.fail("reference.kind", f"an arc needs 2 or 3 tool position outputs, got {n}")
    pose, guess = _start_pose(v, r, out, chain)
    p0 = _start_point(v, r, out, pose) / 1000.0
    three_point = r["via_mm"] is not None or r["end_mm"] is not None
    if three_point:
        for key in ("center_mm", "angle_deg", "normal"):
            if r[key] is not None:
                v.fail(f"reference.{key}", "a three-point arc (via_mm, end_mm) takes no centre, angle or normal")
        for key in ("via_mm", "end_mm"):
            if r[key] is None:
                v.fail(f"reference.{key}", "missing: a three-point arc needs both via_mm and end_mm")
        try:
            centre, normal, angle = circle_through(p0, _point(v, r, "via_mm", n) / 1000.0,
                                                   _point(v, r, "end_mm", n) / 1000.0)
        except ProblemError as err:  # the file and the fields the user gave
            v.fail("reference.start_mm, via_mm, end_mm", str(err).removeprefix("reference: "))
        if n == 2:
            angle, normal = (angle if normal[2] > 0 else -angle), None
    else:
        for key in ("center_mm", "angle_deg"):
            if r[key] is None:
                v.fail(f"reference.{key}", "missing: give center_mm and angle_deg (and normal in 3-D), or the "
                       "three points start_mm, via_mm, end_mm")
        centre, angle, normal = _point(v, r, "center_mm", n) / 1000.0, math.radians(r["angle_deg"]), r["normal"]
        if angle == 0.0:
            v.fail("reference.angle_deg", "must not be 0")
    _, _, radius = arc_frame(centre, p0, normal)
    a0, a1 = _orientation_pair(v, r, out, None if pose is None else pose[1])
    q0, q1 = _joint_outputs(v, r, out, chain, None if pose is None else pose[2])
    d = _duration(v, r, law, radius * abs(angle))
    extra = [np.concatenate([[] if a is None else np.radians(a), [] if q is None else q])
             for a, q in ((a0, q0), (a1, q1))]
    params = {"center": centre, "start": p0, "angle": angle, "normal": normal, "pos": out.pos, "ang": out.ang,
              "extra": out.ang + out.joint,  # the rows after the position: orientation, then joint outputs
              "extra_start": extra[0] if extra[0].size else None, "extra_end": extra[1] if extra[1].size else None,
              "q_start_given": pose is not None}
    return d, params, guess


def _joint_ptp(v, r, out, law, chain):
    act = chain.actuated
    names = [chain.joints[i].name for i in act]
    what = f"actuated joint ({', '.join(names)})"
    q0 = _angle_pair(v, r, "q_start", len(act), what)
    q1 = _angle_pair(v, r, "q_end", len(act), what)
    dist = np.abs(q1 - q0)
    if not dist.any():
        v.fail("reference.q_end_deg" if r["q_end_deg"] is not None else "reference.q_end_rad",
               "equals the start: no joint moves")
    T = _joint_durations(v, r, law, dist, what)
    if r["synchronized"]:
        T = np.full(len(act), T[dist > 0].max())
    guess = np.zeros(chain.n_joints)
    guess[act] = q0
    return float(T[dist > 0].max()), {"q_start": q0, "q_end": q1, "durations": T}, guess


def _angle_pair(v, r, base: str, n: int, what: str, required: bool = True, unit: str = "") -> np.ndarray | None:
    """An angle vector given in deg (``<base>_deg<unit>``) or rad (``<base>_rad<unit>``), in rad.

    Joint targets need one value per joint; limits (``unit`` set) may be one number for all joints.
    """
    kd, kr = f"{base}_deg{unit}", f"{base}_rad{unit}"
    deg, rad = r.get(kd), r.get(kr)
    if deg is not None and rad is not None:
        v.fail(f"reference.{kr}", f"give either {kd} or {kr}, not both")
    if deg is None and rad is None:
        if required:
            v.fail(f"reference.{kd}", f"missing: give {kd} or {kr}")
        return None
    key = kd if deg is not None else kr
    x = np.asarray(deg if deg is not None else rad, float)
    if x.ndim == 0:
        if not unit:
            v.fail(f"reference.{key}", f"expected {n} values (one per {what}), got a single number")
        x = np.full(n, float(x))
    if x.size != n:
        v.fail(f"reference.{key}", f"expected {n} values (one per {what}), got {x.size}")
    return np.radians(x) if deg is not None else x


def _joint_durations(v, r, law, dist: np.ndarray, what: str) -> np.ndarray:
    n = dist.size
    vmax = _angle_pair(v, r, "speed_max", n, what, required=False, unit="_s")
    amax = _angle_pair(v, r, "acceleration_max", n, what, required=False, unit="_s2")
    if r["duration"] is not None:
        if vmax is not None or amax is not None:
            v.fail("reference.duration", "give either duration or the joint limits (speed_max_*, "
                   "acceleration_max_*), not both")
        T = np.asarray(r["duration"], float)
        if T.ndim == 0:
            T = np.full(n, float(T))
        if T.size != n:
            v.fail("reference.duration", f"expected one number or {n} (one per {what}), got {T.size}")
        if np.any(T <= 0):
            v.fail("reference.duration", f"must be > 0, got {T.tolist()}")
        return T
    if vmax is None or amax is None:
        v.fail("reference.duration", "missing: give duration (s), or both joint limits speed_max_deg_s and "
               "acceleration_max_deg_s2 (or *_rad_*)")
    for key, lim in (("speed_max", vmax), ("acceleration_max", amax)):
        if np.any(lim <= 0):
            v.fail(f"reference.{key}_*", f"must be > 0, got {lim.tolist()}")
    return np.array([duration_for_limits(law, d, vm, am) if d > 0 else 0.0 for d, vm, am in zip(dist, vmax, amax)])


def _prefilter(v, r, out, law, chain):
    """A raw step or ptp move (joint space or a tool line) and the Butterworth filter that smooths it."""
    joint_keys = [k for k in ("q_start_deg", "q_start_rad", "q_end_deg", "q_end_rad") if r[k] is not None]
    tool_keys = [k for k in ("start_mm", "end_mm") if r[k] is not None]
    if joint_keys and tool_keys:
        v.fail(f"reference.{tool_keys[0]}", f"give a joint move ({joint_keys[0]}, ...) or a tool line "
               "(start_mm, end_mm), not both")
    if not joint_keys and not tool_keys:
        v.fail("reference.q_start_deg", "missing: give the joint move q_start_deg / q_end_deg (or *_rad), or the "
               "tool line start_mm / end_mm")
    if joint_keys:
        start, end, dist, limits, guess = _prefilter_joints(v, r, out, chain)
    else:
        start, end, dist, limits, guess = _prefilter_line(v, r, out, chain)
    if r["raw"] == "step":
        profile = step_profile(r["rest_before"])
    else:
        profile = ptp_profile(r["rest_before"], dist, *limits)
    order, info = _prefilter_order(v, r, out, chain, profile)
    filt = Butterworth(order, r["cutoff_hz"])
    settle = filt.settling_time(profile, r["settle_tolerance"])
    info.update(filter="butterworth", order=order, cutoff_hz=filt.cutoff_hz, delay_s=filt.delay, raw=r["raw"],
                raw_start_s=profile.t_start, raw_end_s=profile.t_end, settle_tolerance=r["settle_tolerance"],
                settling_time_s=settle, t_end_s=profile.t_end + settle + r["rest_after"],
                horizon="extended automatically: t_end = end of the raw motion + settling time + rest_after")
    y = filt.response(profile, np.linspace(profile.t_start, profile.t_end + settle, 4001))
    info["overshoot"] = float(max(y.max() - 1.0, 0.0))  # of the move (a step through order n: 4 % .. 17 %)
    params = {"space": "joint" if joint_keys else "tool", "start": start, "end": end, "profile": profile,
              "order": order, "cutoff_hz": filt.cutoff_hz, "settling_time": settle, "info": info,
              "y_range": (float(min(y.min(), 0.0)), float(max(y.max(), 1.0)))}
    if joint_keys:
        params.update(q_start=start, q_end=end)
    return profile.t_end - profile.t_start + settle, params, guess


def _prefilter_joints(v, r, out, chain):
    act = chain.actuated
    what = f"actuated joint ({', '.join(chain.joints[i].name for i in act)})"
    q0 = _angle_pair(v, r, "q_start", len(act), what)
    q1 = _angle_pair(v, r, "q_end", len(act), what)
    if not np.any(q1 != q0):
        v.fail("reference.q_end_deg" if r["q_end_deg"] is not None else "reference.q_end_rad",
               "equals the start: no joint moves")
    limits = None
    if r["raw"] == "ptp":
        limits = tuple(_angle_pair(v, r, base, len(act), what, required=False, unit=unit)
                       for base, unit in (("speed_max", "_s"), ("acceleration_max", "_s2")))
        for (base, unit), lim in zip((("speed_max", "_s"), ("acceleration_max", "_s2")), limits):
            if lim is None:
                v.fail(f"reference.{base}_deg{unit}", f"missing: raw = \"ptp\" needs {base}_deg{unit} (or "
                       f"{base}_rad{unit})")
            if np.any(lim <= 0):
                v.fail(f"reference.{base}_*", f"must be > 0, got {lim.tolist()}")
    _refuse(v, r, ("speed_max_mm_s", "acceleration_max_mm_s2"), "limit a tool line (start_mm, end_mm); a joint "
            "move takes speed_max_deg_s and acceleration_max_deg_s2")
    _refuse(v, r, JOINT_OUTPUT_KEYS, "go with a tool line (start_mm, end_mm); a joint move sets every actuated "
            "joint, the joint outputs included, by q_start_deg / q_end_deg")
    _refuse_step_limits(v, r)
    guess = np.zeros(chain.n_joints)
    guess[act] = q0
    return q0, q1, np.abs(q1 - q0), limits, guess


def _prefilter_line(v, r, out, chain):
    _cartesian(v, "prefilter", out)
    for k in ("start_mm", "end_mm"):
        if r[k] is None:
            v.fail(f"reference.{k}", "missing: a prefiltered tool line needs start_mm and end_mm")
    p0, p1 = (_point(v, r, k, len(out.pos)) for k in ("start_mm", "end_mm"))
    a0, a1 = _orientation_pair(v, r, out)
    q0, q1 = _joint_outputs(v, r, out, chain)
    length = float(np.linalg.norm(p1 - p0)) / 1000.0
    if length == 0.0:
        v.fail("reference.end_mm", "equals start_mm: the tool does not move")
    _refuse(v, r, ("speed_max_deg_s", "speed_max_rad_s", "acceleration_max_deg_s2", "acceleration_max_rad_s2"),
            "limit a joint move; a tool line takes speed_max_mm_s and acceleration_max_mm_s2")
    limits = None
    if r["raw"] == "ptp":
        for k in ("speed_max_mm_s", "acceleration_max_mm_s2"):
            if r[k] is None:
                v.fail(f"reference.{k}", "missing: raw = \"ptp\" on a tool line needs speed_max_mm_s and "
                       "acceleration_max_mm_s2")
        limits = (r["speed_max_mm_s"] / 1000.0, r["acceleration_max_mm_s2"] / 1000.0)
    _refuse_step_limits(v, r)
    return out.assemble(p0, a0, q0), out.assemble(p1, a1, q1), length, limits, None


def _refuse(v, r, keys, why: str):
    for k in keys:
        if r[k] is not None:
            v.fail(f"reference.{k}", why)


def _refuse_step_limits(v, r):
    if r["raw"] == "step":
        _refuse(v, r, ("speed_max_deg_s", "speed_max_rad_s", "acceleration_max_deg_s2", "acceleration_max_rad_s2",
                       "speed_max_mm_s", "acceleration_max_mm_s2"),
                "a raw step has no speed or acceleration limits (the cutoff sets the pace); use raw = \"ptp\"")


def _prefilter_order(v, r, out, chain, profile) -> tuple[int, dict]:
    """The filter order from the derivatives nu of the path the inverse needs (Pantelides on the inverse
    model) and the raw profile's smoothness: a raw input whose derivative m jumps (step: m = 0, ptp:
    m = 2) filtered with order n is continuous up to its derivative n + m - 1, so a continuous motor
    torque needs n >= nu + 1 - m (``order_required``); the default is one more (PREFILTER_MARGIN), which
    makes the torque's rate continuous and the BDF torque error near the raw profile's corners 30-200x
    smaller (measured on the Manutec r3, results/manutec_r3.md)."""
    from ffopt.analysis.structural import reference_smoothness_cached
    from ffopt.models.flexible import FlexibleModel

    need = reference_smoothness_cached(FlexibleModel(chain, tuple(out.names)))
    m = profile.degree
    required = max(need.derivatives + 1 - m, 1)
    default = required + PREFILTER_MARGIN
    raw = {0: "a raw step jumps in value", 2: "the raw ptp profile jumps in acceleration"}.get(
        m, f"the raw profile jumps in its derivative {m}")
    why_required = (f"{need.explain()}; {raw}, so a Butterworth filter of order n makes the path continuous up to "
                    f"its derivative n{f' + {m - 1}' if m > 1 else (' - 1' if m == 0 else '')} and a continuous motor "
                    f"torque needs order >= {required}")
    given = r["order"]
    if given is not None and given < required:
        v.fail("reference.order", f"{given} is too low for this model: {why_required}; use order >= {required} "
               f"(leave it out for {default})")
    if given is None:
        reason = (f"derived: {required} + {PREFILTER_MARGIN} = {default}; {why_required}, and one more makes the "
                  "torque's rate continuous too, which BDF's differences of the motor angles need (Manutec r3, "
                  "BDF-6, h = 1 ms: torque error 1e-3..1e-2 of the peak at the minimum order, 3e-4..5e-6 with one "
                  "more; results/manutec_r3.md)")
    else:
        reason = f"reference.order (at least {required}: {why_required})"
    info = {"order_source": "derived" if given is None else "reference.order", "order_required": required,
            "order_default": default, "path_derivatives_needed": need.derivatives, "raw_jump_derivative": m,
            "order_reason": reason}
    return (default if given is None else given), info


_PARSERS = {"line": _line, "polyline": _polyline, "arc": _arc, "joint_ptp": _joint_ptp, "prefilter": _prefilter}


# ------------------------------------------------------------------------------ orientation
def _angle_centres(v, out: _Outputs, params: dict) -> dict:
    """Branch centres of yaw/roll (midpoint of the given values) and the orientation range checks.

    A Cartesian path moves each orientation angle between the values given (the time law is
    monotone), so the given values bound it: yaw and roll must span less than 360 deg - 2 margins,
    pitch must stay ANGLE_MARGIN inside (-90, 90) deg (gimbal lock of yaw/pitch/roll).
    """
    if not out.ang or "q_start" in params:
        return {}
    if "points" in params:
        values = params["points"][:, out.ang]
    elif "extra_start" in params:
        values = np.array([params["extra_start"], params["extra_end"]])
    elif "y_range" in params:  # a prefiltered line overshoots its end (and may undershoot its start)
        values = np.array([params["start"] + (params["end"] - params["start"]) * y for y in params["y_range"]])
        values = values[:, out.ang]
    else:
        values = np.array([params["start"], params["end"]])[:, out.ang]
    centres = {}
    for j, i in enumerate(out.ang):
        name, lo, hi = out.names[i], values[:, j].min(), values[:, j].max()
        if name == "pitch":
            if lo <= PITCH_RANGE[0] + ANGLE_MARGIN or hi >= PITCH_RANGE[1] - ANGLE_MARGIN:
                v.fail("reference", f"pitch reaches {math.degrees(lo if -lo > hi else hi):.6g} deg: yaw/pitch/roll is "
                       "singular at pitch = +-90 deg (gimbal lock) and the path must stay 1 deg inside; "
                       "turn the tool another way or rotate the world frame")
            continue
        if hi - lo >= 2 * math.pi - 2 * ANGLE_MARGIN:
            v.fail("reference", f"{name} spans {math.degrees(hi - lo):.6g} deg: an angle output covers less than "
                   "360 deg (minus 1 deg each side) along one path; split the motion")
        centres[name] = 0.5 * (lo + hi)
    return centres
