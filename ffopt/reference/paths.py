"""Constructors of references: lines, polylines with blends, circular arcs, joint-space moves.

Time line: rest for ``rest_before`` s, motion, rest for ``rest_after`` s. With s the rest-to-rest
time law and S(t; t0, T) = s(clamp((t - t0) / T, 0, 1)) one rest-to-rest move on [t0, t0 + T],

    line:       theta(t) = start + (end - start) S(t; rest_before, duration)
    polyline:   theta(t) = P_0 + sum_i (P_i+1 - P_i) S(t; t_i, T_i),  t_i+1 = t_i + T_i - blend_i
                (+ delta S(t; t_motion_start, t_motion_end - t_motion_start): ``whole_motion_move``, the
                joint outputs of a redundant arm that do not stop at the via points)
                (overlapping rest-to-rest moves: as smooth as s everywhere; with blend_i = 0 the
                path stops exactly at P_i+1, with blend_i > 0 it rounds the corner near P_i+1)
    arc:        theta(t) = C + cos(phi(t)) u + sin(phi(t)) (n x u),  phi(t) = angle S(t; rest_before, duration)
    joint_ptp:  q_j(t) = q_start_j + (q_end_j - q_start_j) S(t; rest_before, T_j),
                theta(t) = forward_kinematics(q(t))

Each is C^n wherever the time law is (n = law.n_zero_derivs: 5 for poly11), across the rest
junctions and every segment/blend boundary (``Reference.breakpoint_jumps``). Extra output
components (orientation angles) can ride along an arc, moved by the same S.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import casadi as ca
import numpy as np

from ffopt.errors import PathError, ProblemError
from ffopt.reference.reference import Reference, TimeLine, apply_function
from ffopt.reference.time_laws import TimeLaw, get_time_law

__all__ = ["line", "polyline", "arc", "ArcGeometry", "circle_through", "arc_frame", "check_blends", "joint_ptp",
           "JointMove", "time_law_peak", "duration_for_speed", "duration_for_limits", "whole_motion_move"]


def _real(value, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ProblemError(f"{field} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ProblemError(f"{field} must be finite, got {v}")
    return v


def _positive(value, field: str) -> float:
    v = _real(value, field)
    if v <= 0.0:
        raise ProblemError(f"{field} must be > 0, got {value}")
    return v


def _nonnegative(value, field: str) -> float:
    v = _real(value, field)
    if v < 0.0:
        raise ProblemError(f"{field} must be >= 0, got {value}")
    return v


def _vector(value, field: str) -> np.ndarray:
    """A scalar or 1-D sequence of finite numbers as a 1-D float array (length >= 1)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ProblemError(f"{field} must be a number or a list of numbers, got {value!r}") from None
    if isinstance(value, bool):
        raise ProblemError(f"{field} must be a number or a list of numbers, got {value!r}")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ProblemError(f"{field} must be a number or a non-empty 1-D list, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ProblemError(f"{field} must be finite, got {arr.tolist()}")
    return arr


def _names(names, n: int, field: str, default_prefix: str) -> list[str]:
    if names is None:
        return [f"{default_prefix}{i}" for i in range(n)] if n > 1 else [default_prefix]
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if len(names) != n or not all(isinstance(s, str) and s for s in names):
        raise ProblemError(f"{field} must be {n} non-empty strings, got {names!r}")
    if len(set(names)) != n:
        raise ProblemError(f"{field} must be distinct, got {names!r}")
    return names


def _time_line(duration, rest_before, rest_after):
    d = _positive(duration, "reference.duration")
    rb = _nonnegative(rest_before, "reference.rest_before")
    ra = _nonnegative(rest_after, "reference.rest_after")
    return d, rb, ra


def time_law_peak(law: TimeLaw, order: int) -> float:
    """max over tau in [0, 1] of |d^order s / dtau^order| (e.g. 1.875 for the quintic's speed)."""
    tau = np.linspace(0.0, 1.0, 20001)
    return float(np.abs(law(tau, order)).max())


def duration_for_speed(law: TimeLaw, length: float, speed: float) -> float:
    """Duration of a rest-to-rest move of ``length`` whose peak speed is ``speed``."""
    return time_law_peak(law, 1) * length / speed


def duration_for_limits(law: TimeLaw, distance: float, speed_max: float, acceleration_max: float) -> float:
    """Shortest rest-to-rest move over ``distance`` within the speed and acceleration limits."""
    d = abs(distance)
    return max(time_law_peak(law, 1) * d / speed_max, math.sqrt(time_law_peak(law, 2) * d / acceleration_max))


def _move(t, law: TimeLaw, t0: float, T: float):
    """S(t; t0, T) = s(clamp((t - t0) / T, 0, 1)): a rest-to-rest move on [t0, t0 + T]."""
    tau = (t - t0) / T
    return law.expression(ca.if_else(tau < 0, 0, ca.if_else(tau > 1, 1, tau)))


def _straight(start: np.ndarray, end: np.ndarray, law: TimeLaw, rb: float, d: float):
    t = ca.SX.sym("t")
    s = law.expression((t - rb) / d)  # the Reference clamps t to the motion interval
    motion = ca.DM(start) + ca.DM(end - start) * s
    return t, motion


def line(
    start,
    end,
    duration: float,
    time_law: str | TimeLaw = "poly11",
    rest_before: float = 0.0,
    rest_after: float = 0.0,
    names: Sequence[str] | None = None,
) -> Reference:
    """Straight line from ``start`` to ``end`` (scalars or vectors of any equal length).

    ``names`` default to "theta" (one output) or "theta0", "theta1", ...
    """
    p0, p1 = _endpoints(start, end, "reference.start", "reference.end")
    d, rb, ra = _time_line(duration, rest_before, rest_after)
    law = get_time_law(time_law)
    nm = _names(names, p0.size, "reference.names", "theta")
    t, motion = _straight(p0, p1, law, rb, d)
    return Reference(t, motion, TimeLine(rb, rb + d, rb + d + ra, law.name), nm)


def _endpoints(a, b, field_a: str, field_b: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of a move as vectors of equal length (ProblemError naming the fields)."""
    p0, p1 = _vector(a, field_a), _vector(b, field_b)
    if p0.size != p1.size:
        raise ProblemError(f"{field_a} and {field_b} must have the same length, got {p0.size} and {p1.size}")
    return p0, p1


def _per_segment(value, n: int, field: str, check) -> np.ndarray:
    arr = _vector(value, field)
    if arr.size == 1:
        arr = np.full(n, arr[0])
    if arr.size != n:
        raise ProblemError(f"{field} must be one number or {n} numbers, got {arr.size}")
    for x in arr:
        check(x, field)
    return arr


def polyline(
    points,
    durations,
    blends=0.0,
    time_law: str | TimeLaw = "poly11",
    rest_before: float = 0.0,
    rest_after: float = 0.0,
    names: Sequence[str] | None = None,
) -> Reference:
    """Path through ``points`` (n x m, n >= 2) as overlapping rest-to-rest moves, one per segment.

    ``durations``: one per segment (or one for all). ``blends``: overlap in s at each of the n - 2
    via points (or one for all): segment i+1 starts ``blends[i]`` before segment i ends. 0 stops
    exactly at the via point; a blend may take at most half of each adjacent segment, so only
    neighbouring segments overlap and the path passes near every via point.
    """
    P = np.asarray(points, dtype=float) if not isinstance(points, str) else np.array([])
    if P.ndim != 2 or P.shape[0] < 2 or P.shape[1] < 1 or not np.all(np.isfinite(P)):
        raise ProblemError(f"reference.points must be at least 2 points of finite numbers, got shape {P.shape}")
    n_seg = P.shape[0] - 1
    T = _per_segment(durations, n_seg, "reference.durations", _positive)
    b = _per_segment(blends, n_seg - 1, "reference.blend", _nonnegative) if n_seg > 1 else np.zeros(0)
    check_blends(T, b)
    short = np.nonzero(np.all(P[1:] == P[:-1], axis=1))[0]
    if short.size:
        raise ProblemError(f"reference.points {short[0] + 1} and {short[0] + 2} are equal (a segment of length 0)")
    rb = _nonnegative(rest_before, "reference.rest_before")
    ra = _nonnegative(rest_after, "reference.rest_after")
    law = get_time_law(time_law)
    starts = rb + np.concatenate([[0.0], np.cumsum(T[:-1] - b)])
    t = ca.SX.sym("t")
    motion = ca.DM(P[0])
    for i in range(n_seg):
        motion = motion + ca.DM(P[i + 1] - P[i]) * _move(t, law, starts[i], T[i])
    t1 = starts[-1] + T[-1]
    nm = _names(names, P.shape[1], "reference.names", "theta")
    edges = sorted({float(x) for x in np.concatenate([starts, starts + T])})
    return Reference(t, motion, TimeLine(rb, t1, t1 + ra, law.name, edges), nm)


def whole_motion_move(ref: Reference, delta, time_law: str | TimeLaw = "poly11") -> Reference:
    """``ref`` plus ``delta`` (one entry per output, 0 for outputs that follow ``ref``) moved by one
    rest-to-rest move S(t; t_motion_start, duration) over its whole motion: as smooth as the law."""
    d = _vector(delta, "reference.delta")
    if d.size != ref.n_out:
        raise ProblemError(f"reference.delta must have {ref.n_out} entries (one per output), got {d.size}")
    law = get_time_law(time_law)
    s = law.expression((ref.t - ref.t_motion_start) / ref.duration)  # the Reference clamps t to the motion
    return ref.with_motion(ref.motion + ca.DM(d) * s)


def check_blends(durations: np.ndarray, blends: np.ndarray) -> None:
    """A blend may take at most half of each adjacent segment (so only neighbours overlap)."""
    for i, bi in enumerate(blends):
        if bi > 0.5 * min(durations[i], durations[i + 1]) * (1 + 1e-12):
            raise ProblemError(f"reference.blend at via point {i + 2}: {bi:g} s is more than half of an adjacent "
                               f"segment ({durations[i]:g} s, {durations[i + 1]:g} s); shorten the blend")


def circle_through(start, via, end) -> tuple[np.ndarray, np.ndarray, float]:
    """Centre, unit normal and angle (rad, in (0, 2 pi)) of the arc from ``start`` through ``via`` to ``end``.

    Points in 2-D or 3-D; the normal is (via - start) x (end - start), so the arc turns positively
    about it. Raises ProblemError if the points are (nearly) collinear or coincide.
    """
    A, B, C = (np.pad(np.asarray(x, float), (0, 3 - len(x))) for x in (start, via, end))
    ab, ac = B - A, C - A
    n = np.cross(ab, ac)
    scale = max(np.linalg.norm(ab), np.linalg.norm(ac))
    if min(np.linalg.norm(ab), np.linalg.norm(ac), np.linalg.norm(C - B)) <= 1e-12 * max(scale, 1e-300) or \
            np.linalg.norm(n) < 1e-9 * scale**2:
        raise ProblemError("reference: the arc's start, via and end points are collinear or coincide; "
                           "no circle passes through them")
    # Circumcentre: A + (|ac|^2 (n x ab) + |ab|^2 (ac x n)) / (2 |n|^2)
    centre = A + (np.dot(ac, ac) * np.cross(n, ab) + np.dot(ab, ab) * np.cross(ac, n)) / (2 * np.dot(n, n))
    n = n / np.linalg.norm(n)
    u, w = A - centre, C - centre
    angle = math.atan2(np.dot(np.cross(u, w), n), np.dot(u, w)) % (2 * math.pi)
    return centre[: len(start)], n, angle


def arc_frame(center: np.ndarray, start: np.ndarray, normal) -> tuple[np.ndarray, np.ndarray, float]:
    """u = start - centre and v = n x u (the in-plane direction of motion at the start), radius."""
    u = start - center
    r = float(np.linalg.norm(u))
    if r < 1e-12:
        raise ProblemError("reference: the arc's start point is its centre (radius 0)")
    if start.size == 2:
        if normal is not None:
            raise ProblemError("reference.normal: a planar arc (2 position outputs) turns in their plane; "
                               "give no normal (a positive angle turns from the first output axis to the second)")
        return u, np.array([-u[1], u[0]]), r
    if start.size != 3:
        raise ProblemError(f"reference: an arc needs 2 or 3 position outputs, got {start.size}")
    if normal is None:
        raise ProblemError("reference.normal: a 3-D arc needs the normal of its plane")
    n = _vector(normal, "reference.normal")
    if n.size != 3 or np.linalg.norm(n) < 1e-12:
        raise ProblemError(f"reference.normal must be a non-zero 3-vector, got {n.tolist()}")
    n = n / np.linalg.norm(n)
    if abs(np.dot(u, n)) > 1e-6 * r:
        raise ProblemError("reference.normal: the start point does not lie in the plane through the centre "
                           f"normal to {n.round(6).tolist()} (start - centre has {np.dot(u, n):.3g} m along it)")
    return u, np.cross(n, u), r


@dataclass(frozen=True)
class ArcGeometry:
    """A circular arc about ``center`` from ``start`` through ``angle`` rad, positive about the plane's
    ``normal`` (3-D only: a planar arc of 2 position components turns from the first axis to the second)."""

    center: Sequence[float]
    start: Sequence[float]
    angle: float
    normal: Sequence[float] | None = None


def arc(
    geometry: ArcGeometry,
    duration: float,
    time_law: str | TimeLaw = "poly11",
    rest_before: float = 0.0,
    rest_after: float = 0.0,
    names: Sequence[str] | None = None,
    extra_start=None,
    extra_end=None,
) -> Reference:
    """The circular arc of ``geometry`` (``ArcGeometry``: 2 or 3 position components) in ``duration`` s.

    ``extra_start``/``extra_end``: further output components (e.g. orientation angles) appended after
    the position, moved by the same time law.
    """
    c, p0 = _endpoints(geometry.center, geometry.start, "reference.center", "reference.start")
    phi = _real(geometry.angle, "reference.angle")
    if phi == 0.0:
        raise ProblemError("reference.angle must not be 0")
    d, rb, ra = _time_line(duration, rest_before, rest_after)
    law = get_time_law(time_law)
    u, v, _ = arc_frame(c, p0, geometry.normal)
    t = ca.SX.sym("t")
    s = law.expression((t - rb) / d)
    motion = ca.DM(c) + ca.DM(u) * ca.cos(phi * s) + ca.DM(v) * ca.sin(phi * s)
    if extra_start is not None or extra_end is not None:
        e0, e1 = _endpoints(extra_start, extra_end, "reference.extra_start", "reference.extra_end")
        motion = ca.vertcat(motion, ca.DM(e0) + ca.DM(e1 - e0) * s)
    nm = _names(names, motion.numel(), "reference.names", "theta")
    return Reference(t, motion, TimeLine(rb, rb + d, rb + d + ra, law.name), nm)


@dataclass(frozen=True)
class JointMove:
    """A joint-space point-to-point move from ``q_start`` to ``q_end`` (one entry per joint), the joints named
    ``joint_names`` (default "q0", "q1", ...)."""

    q_start: Sequence[float]
    q_end: Sequence[float]
    joint_names: Sequence[str] | None = None


def joint_ptp(
    move: JointMove,
    duration,
    forward_kinematics: ca.Function,
    time_law: str | TimeLaw = "poly11",
    rest_before: float = 0.0,
    rest_after: float = 0.0,
    names: Sequence[str] | None = None,
    n_check: int = 201,
) -> Reference:
    """The joint-space point-to-point ``move`` (``JointMove``) mapped through ``forward_kinematics`` (q -> output).

    ``duration``: one number (every joint moves in that time: synchronised) or one per joint
    (each joint its own rest-to-rest move, all starting at ``rest_before``; a joint that does not
    move may have any duration). ``forward_kinematics``: casadi.Function with one input of
    len(move.q_start) entries; its first output (flattened) is theta. The joint path is kept as
    ``ref.joint`` (``ref.joint_function``). The output path is sampled at ``n_check`` points
    (values and first derivative) and a non-finite value raises PathError.
    """
    q0, q1 = _endpoints(move.q_start, move.q_end, "reference.q_start", "reference.q_end")
    T = _per_segment(duration, q0.size, "reference.duration", _positive)
    rb = _nonnegative(rest_before, "reference.rest_before")
    ra = _nonnegative(rest_after, "reference.rest_after")
    law = get_time_law(time_law)
    jn = _names(move.joint_names, q0.size, "reference.joint_names", "q")
    moving = q1 != q0
    d = float(T[moving].max()) if moving.any() else float(T.max())
    t = ca.SX.sym("t")
    full = T >= d * (1 - 1e-15)  # joints moving over the whole motion need no inner clamp
    s_full = law.expression((t - rb) / d)
    qm = ca.vertcat(*[q0[j] + (q1[j] - q0[j]) * (s_full if full[j] else _move(t, law, rb, T[j]))
                      for j in range(q0.size)])
    edges = sorted({rb, rb + d, *(rb + T[moving])})
    timeline = TimeLine(rb, rb + d, rb + d + ra, law.name, edges)
    joint = Reference(t, qm, timeline, jn)
    out = apply_function(forward_kinematics, qm, q0.size, "reference.forward_kinematics")
    nm = _names(names, out.numel(), "reference.names", "theta")
    ref = Reference(t, out, timeline, nm, joint)
    ts = np.linspace(rb, rb + d, max(int(n_check), 2))
    for order in (0, 1):
        vals = ref.evaluate(ts, order)
        bad = ~np.all(np.isfinite(vals), axis=1)
        if bad.any():
            raise PathError(
                f"reference.forward_kinematics gives non-finite "
                f"{'values' if order == 0 else 'velocities'} along the joint path, first at t = {ts[bad][0]:g} s"
            )
    return ref
