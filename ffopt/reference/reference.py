"""The reference output path theta(t) as an exact CasADi expression of time.

A ``Reference`` is built from a *motion* expression m(t) (an SX column vector of the scalar SX
symbol t) that is valid on [t_motion_start, t_motion_end]. The reference is

    theta(t) = m(clamp(t)),   clamp(t) = t_motion_start  for t < t_motion_start,
                                         t               on the motion interval,
                                         t_motion_end    for t > t_motion_end,

with the clamp written with ``casadi.if_else``. So theta is constant (at rest) before and after
the motion, every derivative of any order is exact (repeated ``casadi.jacobian``; outside the
motion the chain rule multiplies by d clamp/dt = 0), and m is never evaluated outside its
interval (no overflow of high-degree polynomials). theta is defined for all real t; the problem
horizon is [0, t_end] with t_end = t_motion_end + rest_after.

At the two junctions the derivatives of order k of theta jump from 0 (rest) to m^(k)(t_j);
``junction_jumps`` / ``check_smoothness`` report those jumps. A motion built from pieces
(polyline segments, blends, per-joint moves) also lists its inner ``breakpoints``;
``breakpoint_jumps`` measures the jumps of every derivative at all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import casadi as ca
import numpy as np

from ffopt.errors import ProblemError

__all__ = ["Reference", "TimeLine"]


@dataclass(frozen=True)
class TimeLine:
    """When a reference moves: its motion on [t_motion_start, t_motion_end] (0 <= t_motion_start <
    t_motion_end), the end of the horizon t_end >= t_motion_end, the name of its time law (for reports) and the
    times where the motion switches between pieces (None: the motion's start and end)."""

    t_motion_start: float
    t_motion_end: float
    t_end: float
    time_law: str | None = None
    breakpoints: Sequence[float] | None = None


def _check_order(order) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ProblemError(f"reference derivative order must be an integer >= 0, got {order!r}")
    return int(order)


class Reference:
    """A vector output path theta(t) in R^n_out, exact to any derivative order.

    Parameters
    ----------
    t : casadi.SX scalar symbol
    motion : casadi.SX (n_out x 1 or 1 x n_out), the motion expression m(t), a function of t only
    timeline : ``TimeLine``, the motion interval, the end of the horizon, the time law's name and the breakpoints
    names : output names, length n_out
    joint : optional Reference of the joint path this one was mapped from (``joint_ptp``)

    ``tool_path`` (attribute, default None): for a reference given in joint space, the rigid
    tool-point path it implies (a Reference of the 3 world coordinates), used by verification.
    ``prefilter`` (attribute, default None): for a Butterworth-prefiltered reference, the filter's
    order (and why), cutoff, delay and settling time, for reports.

    Use the constructors ``line`` and ``joint_ptp`` (``ffopt.reference``) rather than this
    class directly.
    """

    def __init__(self, t: ca.SX, motion: ca.SX, timeline: TimeLine, names: Sequence[str],
                 joint: "Reference | None" = None):
        t_motion_start, t_motion_end, t_end = timeline.t_motion_start, timeline.t_motion_end, timeline.t_end
        if not isinstance(t, ca.SX) or not t.is_symbolic() or not t.is_scalar():
            raise ProblemError("reference t must be a scalar casadi.SX symbol")
        motion = ca.SX(motion)
        if motion.is_empty() or not (motion.is_column() or motion.is_row()):
            raise ProblemError(f"reference motion must be a non-empty vector, got shape {motion.shape}")
        motion = ca.vec(motion)
        free = ca.symvar(motion)
        if any(not ca.is_equal(v, t) for v in free):
            raise ProblemError("reference motion must depend on the time symbol t only")
        if not (0.0 <= t_motion_start < t_motion_end <= t_end):
            raise ProblemError(
                "reference times must satisfy 0 <= t_motion_start < t_motion_end <= t_end, got "
                f"{t_motion_start}, {t_motion_end}, {t_end}"
            )
        names = list(names)
        if len(names) != motion.numel():
            raise ProblemError(
                f"reference.names must have {motion.numel()} entries (one per output), got {len(names)}"
            )
        self.n_out: int = motion.numel()
        self.t_motion_start = float(t_motion_start)
        self.t_motion_end = float(t_motion_end)
        self.t_end = float(t_end)
        self.names: list[str] = names
        self.joint = joint
        self.time_law = timeline.time_law
        inner = [float(b) for b in (timeline.breakpoints or ()) if t_motion_start < b < t_motion_end]
        self.breakpoints: tuple[float, ...] = tuple(sorted({self.t_motion_start, self.t_motion_end, *inner}))
        self.tool_path: "Reference | None" = None
        self.prefilter: dict | None = None  # a prefiltered reference: filter order, cutoff, why (reports)

        self._t = t
        self._motion = motion
        t0, t1 = self.t_motion_start, self.t_motion_end
        t_clamped = ca.if_else(t < t0, t0, ca.if_else(t > t1, t1, t))
        self._theta = ca.substitute(motion, t, t_clamped)
        self._derivs: list[ca.SX] = [self._theta]  # d^k theta / dt^k, built lazily
        self._motion_derivs: list[ca.SX] = [self._motion]
        self._functions: dict[int, ca.Function] = {}
        self._motion_functions: dict[int, ca.Function] = {}

    # ------------------------------------------------------------------ derivatives
    @property
    def duration(self) -> float:
        return self.t_motion_end - self.t_motion_start

    @property
    def timeline(self) -> TimeLine:
        """This reference's time line (another reference built with it has the same times and breakpoints)."""
        return TimeLine(self.t_motion_start, self.t_motion_end, self.t_end, self.time_law, self.breakpoints)

    @property
    def t(self) -> ca.SX:
        """The internal time symbol (the expressions below are functions of it)."""
        return self._t

    def _derivative(self, order: int) -> ca.SX:
        while len(self._derivs) <= order:
            self._derivs.append(ca.jacobian(self._derivs[-1], self._t))
        return self._derivs[order]

    def _motion_derivative(self, order: int) -> ca.SX:
        while len(self._motion_derivs) <= order:
            self._motion_derivs.append(ca.jacobian(self._motion_derivs[-1], self._t))
        return self._motion_derivs[order]

    def symbolic(self, order: int = 0) -> ca.SX:
        """d^order theta / dt^order as an SX expression of the internal symbol ``self.t``."""
        return self._derivative(_check_order(order))

    def function(self, order: int = 0) -> ca.Function:
        """casadi.Function t (1x1) -> d^order theta / dt^order (n_out x 1); cached."""
        order = _check_order(order)
        f = self._functions.get(order)
        if f is None:
            f = ca.Function(
                f"theta_d{order}", [self._t], [self._derivative(order)], ["t"], [f"theta_d{order}"]
            )
            self._functions[order] = f
        return f

    def expression(self, t_sym, order: int = 0):
        """d^order theta / dt^order as an expression of the caller's scalar SX/MX symbol/expression.

        Calls the cached Function, so SX arguments give an inlined SX expression and MX
        arguments a call node; a number gives a DM.
        """
        f = self.function(order)
        shape = t_sym.shape if hasattr(t_sym, "shape") else (1, 1)
        if tuple(shape) not in ((1, 1), ()):
            raise ProblemError(f"reference.expression needs a scalar time, got shape {tuple(shape)}")
        return f(t_sym)

    def evaluate(self, t, order: int = 0) -> np.ndarray:
        """d^order theta / dt^order at the times ``t`` (scalar or 1-D), shape (len(t), n_out)."""
        f = self.function(order)
        ts = np.atleast_1d(np.asarray(t, dtype=float)).ravel()
        if ts.size == 0:
            return np.zeros((0, self.n_out))
        out = f.map(ts.size)(ts.reshape(1, -1))
        return np.array(out, dtype=float).reshape(self.n_out, ts.size).T

    __call__ = evaluate

    # ------------------------------------------------------------------ smoothness
    def motion_function(self, order: int = 0) -> ca.Function:
        """The unclamped motion derivative m^(order)(t) as a Function (for one-sided limits)."""
        order = _check_order(order)
        f = self._motion_functions.get(order)
        if f is None:
            f = ca.Function(f"motion_d{order}", [self._t], [self._motion_derivative(order)])
            self._motion_functions[order] = f
        return f

    def junction_jumps(self, k: int) -> np.ndarray:
        """Jumps of the derivatives 0..k at the junctions (motion start, motion end).

        Returns an array (k+1, 2): entry [i, j] is the max over outputs of
        |lim from the motion side - lim from the rest side| of d^i theta/dt^i at junction j.
        The rest side is constant, so for i >= 1 this is |m^(i)(t_j)|; for i = 0 it is
        |m(t_j) - theta_rest| (zero by construction). The junctions exist even when a rest
        duration is 0: theta is held constant outside the motion.
        """
        k = _check_order(k)
        junctions = (self.t_motion_start, self.t_motion_end)
        rest = (self.evaluate(self.t_motion_start - 1.0)[0], self.evaluate(self.t_motion_end + 1.0)[0])
        jumps = np.zeros((k + 1, 2))
        for i in range(k + 1):
            f = self.motion_function(i)
            for j, tj in enumerate(junctions):
                inside = np.array(f(tj), dtype=float).ravel()
                outside = rest[j] if i == 0 else 0.0
                jumps[i, j] = float(np.max(np.abs(inside - outside)))
        return jumps

    def breakpoint_jumps(self, k: int, rel_step: float = 1e-8) -> np.ndarray:
        """Jumps of the derivatives 0..k at every breakpoint, measured from both sides.

        Returns (k+1, n_breakpoints): entry [i, j] is max over outputs of |d^i theta/dt^i (b_j + e) -
        d^i theta/dt^i (b_j - e)| with e = rel_step x duration. For a C^i reference this is e times the
        next derivative (relative size ~1e-7 for poly11); a jump shows at its full size.
        """
        k = _check_order(k)
        e = rel_step * self.duration
        b = np.array(self.breakpoints)
        out = np.zeros((k + 1, b.size))
        for i in range(k + 1):
            left, right = self.evaluate(b - e, i), self.evaluate(b + e, i)
            out[i] = np.abs(right - left).max(axis=1)
        return out

    def check_smoothness(self, k: int) -> float:
        """Largest jump of the derivatives 0..k of theta at the rest/motion junctions.

        ~0 (rounding only) when theta is C^k, e.g. k <= 5 for the time law ``poly11``.
        """
        return float(np.max(self.junction_jumps(k)))

    # ------------------------------------------------------------------ joints
    def joint_function(self, order: int = 0) -> ca.Function:
        """For a ``joint_ptp`` reference: t -> d^order q / dt^order (n_joint x 1)."""
        if self.joint is None:
            raise ProblemError("this reference has no joint path (it was not built by joint_ptp)")
        return self.joint.function(order)

    @property
    def motion(self) -> ca.SX:
        """The unclamped motion expression m(t) of the symbol ``self.t``."""
        return self._motion

    def with_motion(self, motion: ca.SX) -> "Reference":
        """A reference with another motion expression of ``self.t`` (same outputs, time line, joint and tool paths)."""
        ref = Reference(self._t, motion, self.timeline, self.names, self.joint)
        ref.tool_path = self.tool_path
        return ref

    def select(self, rows: Sequence[int], names: Sequence[str]) -> "Reference":
        """The outputs ``rows`` of this reference (in that order) under new ``names``; same time line."""
        rows = [int(i) for i in rows]
        ref = Reference(self._t, self._motion[rows], self.timeline, names, self.joint)
        ref.tool_path = self.tool_path
        return ref

    def map(self, function: ca.Function, names: Sequence[str] | None = None, *, field: str = "function") -> "Reference":
        """theta'(t) = function(theta(t)); the result keeps ``self`` as its ``joint`` path."""
        out = apply_function(function, self._motion, self.n_out, field)
        if names is None:
            names = [f"theta{i}" for i in range(out.numel())]
        return Reference(self._t, out, self.timeline, names, joint=self)

    def __repr__(self) -> str:
        return (
            f"Reference(names={self.names}, time_law={self.time_law!r}, "
            f"motion=[{self.t_motion_start:g}, {self.t_motion_end:g}], t_end={self.t_end:g})"
        )


def apply_function(function, arg: ca.SX, n_arg: int, field: str) -> ca.SX:
    """function(arg) as an SX column vector, with errors naming ``field``."""
    if not isinstance(function, ca.Function):
        raise ProblemError(f"{field} must be a casadi.Function, got {type(function).__name__}")
    if function.n_in() != 1 or function.n_out() < 1:
        raise ProblemError(
            f"{field} must have exactly 1 input and at least 1 output, "
            f"got {function.n_in()} inputs and {function.n_out()} outputs"
        )
    if function.numel_in(0) != n_arg:
        raise ProblemError(
            f"{field} input must have {n_arg} entries (one per joint), got shape {function.size_in(0)}"
        )
    arg = ca.reshape(arg, function.size1_in(0), function.size2_in(0))
    try:
        out = function.call([arg])[0]
    except Exception as exc:  # casadi raises RuntimeError/NotImplementedError
        raise ProblemError(f"{field} could not be evaluated symbolically: {exc}") from exc
    out = ca.vec(ca.SX(out))
    if out.numel() == 0:
        raise ProblemError(f"{field} output is empty")
    return out
