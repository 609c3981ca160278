"""Constructors of references: straight lines in output space, joint-space point-to-point moves.

Time line (both constructors): rest for ``rest_before`` s, motion for ``duration`` s, rest for
``rest_after`` s; t_end = rest_before + duration + rest_after. With s the time law,

    line:       theta(t) = start + (end - start) s((t - rest_before) / duration)
    joint_ptp:  q(t) = q_start + (q_end - q_start) s((t - rest_before) / duration),
                theta(t) = forward_kinematics(q(t))
"""

from __future__ import annotations

import math
from typing import Sequence

import casadi as ca
import numpy as np

from ffopt.errors import PathError, ProblemError
from ffopt.reference.reference import Reference, _apply
from ffopt.reference.time_laws import TimeLaw, get_time_law

__all__ = ["line", "joint_ptp"]


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


def _straight(start: np.ndarray, end: np.ndarray, law: TimeLaw, rb: float, d: float):
    t = ca.SX.sym("t")
    s = law.expression((t - rb) / d)
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
    return Reference(
        t, motion, t_motion_start=rb, t_motion_end=rb + d, t_end=rb + d + ra, names=nm, time_law=law.name
    )


def _endpoints(a, b, field_a: str, field_b: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of a move as vectors of equal length (ProblemError naming the fields)."""
    p0, p1 = _vector(a, field_a), _vector(b, field_b)
    if p0.size != p1.size:
        raise ProblemError(f"{field_a} and {field_b} must have the same length, got {p0.size} and {p1.size}")
    return p0, p1


def joint_ptp(
    q_start,
    q_end,
    duration: float,
    forward_kinematics: ca.Function,
    time_law: str | TimeLaw = "poly11",
    rest_before: float = 0.0,
    rest_after: float = 0.0,
    names: Sequence[str] | None = None,
    joint_names: Sequence[str] | None = None,
    n_check: int = 201,
) -> Reference:
    """Joint-space point-to-point move mapped through ``forward_kinematics`` (q -> output).

    ``forward_kinematics``: casadi.Function with one input of len(q_start) entries; its first
    output (flattened) is theta. The joint path is kept as ``ref.joint`` (``ref.joint_function``).
    The output path is sampled at ``n_check`` points (values and first derivative) and a
    non-finite value raises PathError.
    """
    q0, q1 = _endpoints(q_start, q_end, "reference.q_start", "reference.q_end")
    d, rb, ra = _time_line(duration, rest_before, rest_after)
    law = get_time_law(time_law)
    jn = _names(joint_names, q0.size, "reference.joint_names", "q")
    t, qm = _straight(q0, q1, law, rb, d)
    joint = Reference(
        t, qm, t_motion_start=rb, t_motion_end=rb + d, t_end=rb + d + ra, names=jn, time_law=law.name
    )
    out = _apply(forward_kinematics, qm, q0.size, "reference.forward_kinematics")
    nm = _names(names, out.numel(), "reference.names", "theta")
    ref = Reference(
        t, out, t_motion_start=rb, t_motion_end=rb + d, t_end=rb + d + ra, names=nm, joint=joint,
        time_law=law.name,
    )
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
