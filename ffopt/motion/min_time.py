"""Minimum-time rest-to-rest moves along a fixed path under the robot's limits.

The decision is the move's duration T and its time law s(t) along the user's path; the tool tracks the path
exactly (the BDF inverse of Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods)) and the
arm ends at rest (``ffopt.dae.rest_to_rest``). For a fixed T, ``rest_law_within`` finds the rest-to-rest law
with the least largest ratio p(T) of a limited quantity to its limit (motor torque, torque rate, link and motor
speeds); the shortest feasible move is the root of p(T) = 1. Each quantity falls like a power of 1/T along the
path (speeds ~T^-1, rigid torques ~T^-2, an elastic gear's torque also through the path's 4th derivative ~T^-4),
so log p is nearly linear in log T: a secant in (log T, log p) safeguarded by a bracket [feasible, infeasible]
finds the root in a few searches (the classic reduction of minimum time to a sequence of fixed-time
feasibility problems, p being quasi-convex in T along a family of laws).

A lower bound on any plan: the rigid robot's time-optimal move along the same path under the same torque and
speed bounds (TOPP-RA, Pham & Pham, a new approach to time-optimal path parameterization based on reachability
analysis, IEEE T-RO 2018; ``ffopt.motion.peers``), which ignores elasticity and rest.

Two families of time laws. A time-optimal law is bang-bang in the path acceleration, which a polynomial of a few
terms approximates poorly (the UR5 and the Panda along their lines: 1.25x and 1.27x TOPP-RA's duration with 8-16
terms). Where TOPP-RA's law is at hand, the search first smooths it: its acceleration convolved with a B-spline
kernel of width w (``smoothed_time_optimal``: a ``SplineLaw``, C^8, so the elastic gears' torques, which follow the
path's 4th derivative, stay smooth and bounded), stretched in time by the secant above; w is searched too (a wider
kernel lowers the gears' extra torque ~ w^-2 but lengthens the move by ~w). Exact tracking of such a law ends at rest
where the arm has no internal (zero) dynamics left moving: the UR5, the Panda, the Manutec r3 (1.08x, 1.09x, 1.10x
of TOPP-RA). An arm whose zero dynamics ring after the move (E12's passive-body mode) does not rest with it, and
the search falls back to the polynomial family, whose shaping terms also bring those dynamics to rest. A
non-minimum-phase arm plans each move by the non-causal NLP, whose pre- and post-actuation start and end it at rest:
the smoothed law is tried at two widths there (an NLP per move; the 6-axis arm with a passive forearm flexure under
its own peak torques: 0.611 s = 1.16x TOPP-RA in 57 s, where its own polynomial law needs 0.803 s, 1.53x).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.dae.rest_to_rest import N_SHAPE, rest_law_within, with_duration_factor
from ffopt.errors import ProblemError, SolverError
from ffopt.models.equilibrium import ends_at_rest
from ffopt.reference.build import reference_from_spec
from ffopt.reference.retimed import RetimedPath
from ffopt.reference.time_laws import SPLINE_DEGREE, SplineLaw

__all__ = ["MotionLimits", "MinimumTime", "minimum_time", "joint_speed_limits", "smoothed_time_optimal", "LIMIT_KINDS"]

LIMIT_KINDS = ("torque", "torque_rate", "link_speed", "motor_speed")
FEASIBLE = 1.0 - 1e-3  # p(T) at most this: within every limit with a margin of the rest residual's effect
REL_TOL = 0.01  # the search stops when the bracket [infeasible, feasible] is this narrow (relative)
MAX_SEARCHES = 12
# The smoothed time-optimal family: kernel widths w searched between these shares of TOPP-RA's duration, the
# B-spline cells at least CELL_STEPS solver steps long and at most MAX_SPLINE_CELLS of them over the move.
SMOOTHING_RANGE = (0.005, 0.4)
CELL_STEPS = 2
MAX_SPLINE_CELLS = 1000
WIDTH_GRID = 5  # widths tried on a geometric grid, then refined at log-midpoints around the best
WIDTH_REFINEMENTS = 3
# Above this ratio to TOPP-RA's duration the polynomial family is searched too (the smoothed move on the UR5, the
# Panda, the r3 and 12 of 13 drawn arms that rest with it: 1.01-1.10x; the polynomial family's best there 1.18-1.27x)
POLYNOMIALS_ABOVE_GAP = 1.2
NLP_WIDTHS = (0.05, 0.15)  # on the NLP route (non-minimum-phase arms): these two widths (x TOPP-RA's duration)


@dataclass(frozen=True)
class MotionLimits:
    """Per-joint limits of a move (None: not limited): |u| <= torque_max (N m, per motor in the order of the
    actuated joints), |du/dt| <= torque_rate_max (N m/s), link speed |dq/dt| <= link_speed_max (rad/s, per
    chain joint; inf: unlimited), motor speed on the link side <= motor_speed_max (rad/s, per gear motor)."""

    torque_max: np.ndarray | None = None
    torque_rate_max: np.ndarray | None = None
    link_speed_max: np.ndarray | None = None
    motor_speed_max: np.ndarray | None = None
    n_link: int = 0  # link coordinates before the motor angles in q (the model's layout)

    @classmethod
    def of(cls, problem) -> "MotionLimits":
        """The problem's limits: nlp.torque_max (without it, a URDF model's effort limits: what the drives allow),
        nlp.torque_rate_max, and the joints' speed limits (model.joints' speed_max_rad_s, else the URDF's velocity
        limits) for the link speeds and, on the link side, the speeds of the motors that drive them."""
        nlp = problem.nlp
        speed = joint_speed_limits(problem)
        layout = problem.model.layout
        motor = None if speed is None else speed[list(layout.gear)]
        torque = _array(nlp.torque_max) if nlp.torque_max is not None else _urdf_effort_limits(problem)
        return cls(torque, _array(nlp.torque_rate_max), speed,
                   None if motor is None or not np.isfinite(motor).any() else motor, layout.n_link)

    def is_empty(self) -> bool:
        return all(v is None for v in (self.torque_max, self.torque_rate_max, self.link_speed_max,
                                       self.motor_speed_max))

    def ratio_blocks(self, traj) -> dict[str, np.ndarray]:
        """Each limited quantity of the plan ``traj`` over its limit, (rows, joints) per kind."""
        blocks = {}
        if self.torque_max is not None:
            blocks["torque"] = traj.u / self.torque_max
        if self.torque_rate_max is not None:
            blocks["torque_rate"] = np.diff(traj.u, axis=0) / np.diff(traj.t)[:, None] / self.torque_rate_max
        if self.link_speed_max is not None:
            blocks["link_speed"] = traj.v[:, : len(self.link_speed_max)] / self.link_speed_max
        if self.motor_speed_max is not None:
            blocks["motor_speed"] = traj.v[:, self.n_link: self.n_link + len(self.motor_speed_max)] / self.motor_speed_max
        return blocks

    def ratios(self, traj) -> np.ndarray:
        """All ratios flattened (the search's peak rows; at most 1 is within the limits)."""
        return np.concatenate([b.ravel() for b in self.ratio_blocks(traj).values()])

    def active(self, traj, input_names, link_names=None, threshold: float = 0.98) -> list[dict]:
        """Where a limit is active (the ratio above ``threshold``): kind, joint (``input_names`` for the motors'
        limits, ``link_names`` for the link speeds), peak ratio and the times it is at least ``threshold``, as
        intervals (s)."""
        found = []
        for kind, block in self.ratio_blocks(traj).items():
            t = traj.t[: block.shape[0]]
            names = _names(kind, link_names if kind == "link_speed" and link_names else input_names, block.shape[1])
            for j in range(block.shape[1]):
                r = np.abs(block[:, j])
                if r.max() >= threshold:
                    found.append({"limit": kind, "joint": names[j], "peak_ratio": float(r.max()),
                                  "active_s": _intervals(t, r >= threshold)})
        return found


def _names(kind: str, joint_names, n: int) -> list[str]:
    return list(joint_names[:n]) if len(joint_names) >= n else [f"{kind}[{j + 1}]" for j in range(n)]


def _intervals(t: np.ndarray, mask: np.ndarray) -> list[list[float]]:
    """[start, end] times of the runs where mask holds."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    return [[float(t[a]), float(t[b - 1])] for a, b in zip(edges[::2], edges[1::2])]


def _array(values) -> np.ndarray | None:
    return None if values is None else np.atleast_1d(np.asarray(values, float))


def _urdf_effort_limits(problem) -> np.ndarray | None:
    """The URDF's <limit effort> of the actuated joints, None without a URDF or where one is missing."""
    if problem.urdf is None:
        return None
    given = {j.name: j.effort for j in problem.urdf.joints}
    effort = [given.get(problem.chain.joints[i].name) for i in problem.model.layout.actuated]
    return None if any(e is None or not np.isfinite(e) or e <= 0 for e in effort) else np.array(effort, float)


def joint_speed_limits(problem) -> np.ndarray | None:
    """Per chain joint: model.joints' speed_max_rad_s, else the URDF's <limit velocity>, else inf; None without any."""
    given = {} if problem.urdf is None else {j.name: j.velocity for j in problem.urdf.joints if j.velocity is not None}
    raw = problem.to_dict().get("model", {}).get("joints") or [] if getattr(problem, "raw", None) is not None else []
    given.update({j["name"]: j["speed_max_rad_s"] for j in raw if j.get("speed_max_rad_s") is not None})
    limits = np.array([given.get(j.name, np.inf) for j in problem.chain.joints], float)
    return limits if np.isfinite(limits).any() else None


class LowerBound(NamedTuple):
    """TOPP-RA's rigid time-optimal move: its duration (None where there is none), what it is or why there is none,
    and its law (``ffopt.motion.peers.PathLaw``; None with no duration)."""

    duration_s: float | None
    method: str
    law: object = None


@dataclass
class MinimumTime:
    """The shortest rest-to-rest move found: its duration and time law (reference.duration and
    reference.time_law_shape of ``problem``), the largest limit ratio at it, the searches made (duration,
    ratio, at rest, BDF solves, seconds), and the rigid time-optimal lower bound when known."""

    problem: object
    duration_s: float
    time_law_shape: list[float]
    peak_ratio: float
    searches: list[dict] = field(default_factory=list)
    lower_bound_s: float | None = None
    lower_bound_method: str | None = None
    bracket_s: tuple[float, float] | None = None  # (infeasible, feasible) durations at the end
    wall_time_s: float = 0.0
    time_law: str = "poly11"  # the law family found: the problem's polynomial (shaped), or "spline"
    smoothing_s: float | None = None  # the spline family's kernel width w (s)
    family_note: str | None = None  # why the smoothed time-optimal family was not used, when it was not

    @property
    def gap(self) -> float | None:
        """duration / lower bound (1: the rigid robot's time-optimal move)."""
        return None if self.lower_bound_s is None else self.duration_s / self.lower_bound_s

    def to_dict(self) -> dict:
        return {"duration_s": self.duration_s, "time_law_shape": self.time_law_shape,
                "peak_limit_ratio": self.peak_ratio, "lower_bound_s": self.lower_bound_s,
                "lower_bound_method": self.lower_bound_method, "duration_over_lower_bound": self.gap,
                "bracket_s": None if self.bracket_s is None else list(self.bracket_s),
                "time_law": self.time_law, "smoothing_s": self.smoothing_s, "family_note": self.family_note,
                "searches": self.searches, "wall_time_s": self.wall_time_s}


def minimum_time(problem, limits: MotionLimits | None = None, duration_max: float | None = None,
                 n_shape: int = N_SHAPE, lower_bound: bool = True, progress=None, planner=None) -> MinimumTime:
    """The shortest move along ``problem``'s path (its time law family, solver order/step/form) that tracks the
    path exactly, stays within ``limits`` (default ``MotionLimits.of(problem)``) and ends at rest. ``planner``:
    problem -> Trajectory, a plan without verification (``ffopt.plan.minimum_time`` passes the planner's
    ``make_plan``): it decides the route (method auto) and makes the non-causal NLP moves of a non-minimum-phase
    arm; without it the route is BDF unless the problem's method is nlp, which then needs it. Raises
    ProblemError without any limit (minimum time is unbounded) or when no move up to ``duration_max``
    (default: reference.duration_max for a problem with duration = "min", else 8x the problem's duration) is
    feasible."""
    tic = time.perf_counter()
    limits = MotionLimits.of(problem) if limits is None else limits
    if limits.is_empty():
        raise ProblemError(f"{problem.source}: minimum time needs a limit (nlp.torque_max, nlp.torque_rate_max or "
                           "the URDF's velocity limits): without one any move is feasible")
    say = progress or (lambda line: None)
    bound = _rigid_lower_bound(problem, limits, say) if lower_bound else None
    spec = problem.reference_spec
    base_T = spec.duration  # with duration = "min": duration_max, the longest move searched
    T_max = duration_max if duration_max is not None else base_T if spec.minimum_time else 8.0 * base_T
    search = _DurationSearch(problem, limits, n_shape, say, planner,
                             route_at=min(T_max, 2.0 * bound.duration_s) if bound and bound.duration_s else None)
    smoothed, note = _smoothed_minimum(search, bound, T_max, say)
    if smoothed is not None:
        why = _polynomials_too(smoothed, search.history)
        if why is None:
            smoothed.wall_time_s = time.perf_counter() - tic
            return smoothed
        say(f"minimum time: {why}; the polynomial family (with rest shaping) too")
        T_max, note = smoothed.duration_s, (f"the polynomial family's move is shorter than the smoothed law's "
                                            f"{smoothed.duration_s:.4g} s ({why})")
    T = min(T_max, 1.2 * bound.duration_s) if bound and bound.duration_s else base_T
    feasible, infeasible = _shortest_feasible(search.at, T, T_max, search.history, stop_when_static=True)
    if smoothed is not None and (feasible is None or feasible[0] >= smoothed.duration_s):
        smoothed.wall_time_s = time.perf_counter() - tic
        return smoothed
    if feasible is None:
        static = _static_bound(search.history)
        raise ProblemError(f"{problem.source}: no rest-to-rest move within the limits up to {T_max:.4g} s "
                           f"(searched {[round(h['duration_s'], 4) for h in search.history]} s; largest ratio "
                           f"{search.history[-1]['peak_ratio']:.3g})" + (
                               ": a longer move no longer lowers it, so holding the arm against gravity along the path "
                               "needs more than a limit allows; raise that limit" if static else
                               "; raise the limits or reference.duration_max"))
    T, p, c = feasible
    return MinimumTime(search.problem_at(T, c), T, [float(x) for x in c], p, search.history,
                       bound.duration_s if bound else None, bound.method if bound else None,
                       None if infeasible is None else (infeasible[0], T), time.perf_counter() - tic,
                       spec.time_law, None, note)


def _polynomials_too(smoothed: MinimumTime, history: list[dict]) -> str | None:
    """Why the polynomial family may beat the smoothed law's move (it is searched too, up to that move), or None:
    some smoothed moves ended moving (internal dynamics that exact tracking leaves ringing, which the polynomials'
    shaping brings to rest), or the smoothed move is far above TOPP-RA's (soft gears, whose torque follows the
    path's 4th derivative, want a smoother law than a bang-bang one smoothed: a drawn arm 1.50x, its polynomial
    move 0.87x of that)."""
    if any(h.get("law") == "spline" and not h["at_rest"] for h in history):
        return "some smoothed moves did not end at rest"
    if smoothed.gap is not None and smoothed.gap > POLYNOMIALS_ABOVE_GAP:
        return f"the smoothed move is {smoothed.gap:.2f}x TOPP-RA's"
    return None


def _smoothed_minimum(search, bound, T_max: float, say) -> tuple[MinimumTime | None, str | None]:
    """The smoothed family's shortest move as a MinimumTime (its wall time still to set), or (None, why not)."""
    if not bound or bound.law is None:  # no TOPP-RA law: not asked for (lower_bound=False), or why not (said)
        return None, ("the smoothed time-optimal family needs TOPP-RA's law" + (f" ({bound.method})" if bound else ""))
    found, note = _smoothed_family(search, bound.law, T_max)
    if found is None:
        say(f"minimum time: {note}")
        return None, note
    moved, T, p, bracket, width = found
    return MinimumTime(moved, T, [], p, search.history, lower_bound_s=bound.duration_s, lower_bound_method=bound.method,
                       bracket_s=bracket, time_law="spline", smoothing_s=width), None


def _shortest_feasible(at, T: float, T_max: float, history: list[dict], stop_when_static: bool = False):
    """The root of p(T) = 1 by the safeguarded secant (``_next_duration``): ((T, p, c) of the shortest feasible
    duration, (T, p, c) of the longest infeasible one), each None when none was found. at: T -> (p, c, at rest),
    appending its search to ``history``."""
    feasible, infeasible = None, None
    for _ in range(MAX_SEARCHES):
        p, c, rest = at(T)
        if rest and p <= FEASIBLE:
            feasible = (T, p, c) if feasible is None or T < feasible[0] else feasible
        elif infeasible is None or T > infeasible[0]:
            infeasible = (T, p if rest else np.inf, c)
        if feasible and infeasible and feasible[0] / infeasible[0] - 1 <= REL_TOL:
            break
        if stop_when_static and feasible is None and _static_bound(history):
            break  # a longer move no longer lowers the ratio: the holding torque, not the motion, exceeds a limit
        T = _next_duration(history, feasible, infeasible, T_max)
        if T is None:
            break
    return feasible, infeasible


def smoothed_time_optimal(t: np.ndarray, rate: np.ndarray, width: float, min_cell: float = 0.0
                          ) -> tuple[SplineLaw, float]:
    """A time-optimal law sigma(t) on [0, T0] (its rate sigma' on the grid t, at rest at both ends) with its
    acceleration convolved with a B-spline kernel of degree SPLINE_DEGREE and width ``width`` (s): (the law as a
    ``SplineLaw`` of the normalised time, its duration T0 + SPLINE_DEGREE w / (SPLINE_DEGREE + 1)). The acceleration's
    mean over cells of width w / (SPLINE_DEGREE + 1) (rate differences: exact for any law) become the B-spline's
    coefficients, which is the cells' piecewise-constant acceleration convolved with the degree SPLINE_DEGREE - 1
    kernel: a convex combination, so the smoothed rate stays within the law's rate bounds (the speed limits). Cells
    no shorter than ``min_cell`` (s) and at most MAX_SPLINE_CELLS of them."""
    T0 = float(t[-1])
    cells = int(np.clip(np.ceil(T0 * (SPLINE_DEGREE + 1) / width), 2, MAX_SPLINE_CELLS))
    if min_cell > 0:
        cells = max(2, min(cells, int(T0 / min_cell)))
    delta = T0 / cells
    edges = delta * np.arange(cells + 1)
    acceleration = np.diff(np.interp(edges, t, rate)) / delta  # 1/s^2 per cell
    duration = (cells + SPLINE_DEGREE) * delta
    return SplineLaw(acceleration * duration**2, check=False), duration


class _DurationSearch:
    """p(T): the least largest limit ratio of a rest-to-rest law of a T-second move, warm-started from the law
    found at the nearest duration searched (the shaping coefficients live on the normalised time tau).

    A non-minimum-phase arm has no BDF plan: its moves are the non-causal NLP's (pre- and post-actuation, which
    start and end at rest), of the problem's own time law, without limits, and p(T) their largest limit ratio;
    the route is the one method auto takes at the problem's duration."""

    def __init__(self, problem, limits: MotionLimits, n_shape: int, say, planner, route_at: float | None = None):
        self.problem, self.limits, self.n_shape, self.say, self.planner = problem, limits, n_shape, say, planner
        self.history: list[dict] = []
        self.laws: list[tuple[float, np.ndarray]] = []
        # the route at a move near the one sought (duration = "min" stands for duration_max, 10 s: a BDF plan of
        # that length took 4 s without a line on the UR5), and the BDF order and form method auto chose there
        self.route, self.bdf = _route(problem if route_at is None else self.problem_at(route_at), planner, say)

    def searching(self, problem):
        """``problem`` with the BDF settings method auto chose (a passive joint's lightly damped zero makes BDF-4..6
        unstable: the Panda with one ran BDF-6 and crashed); the problems returned keep the user's settings."""
        return problem.with_solver(**self.bdf) if self.bdf else problem

    def problem_at(self, T: float, c=None):
        moved = with_duration_factor(self.problem, T / self.problem.reference_spec.duration)
        if isinstance(c, SplineLaw):
            return moved.with_values({"reference.time_law": "spline", "reference.time_law_shape": [],
                                      "reference.time_law_spline": list(c.acceleration)})
        return moved if c is None else moved.with_values({"reference.time_law_shape": [float(x) for x in c]})

    def with_law(self, law: SplineLaw, T: float, width: float) -> tuple[float, SplineLaw, bool]:
        """p(T) of the plan of ``law`` over T seconds (no search within the family): the exact-tracking BDF plan, or
        on the NLP route the non-causal NLP's (pre- and post-actuation, without the limits)."""
        tic = time.perf_counter()
        try:
            traj, model = self._law_plan(law, T)
        except (ProblemError, SolverError) as err:  # a law the planner cannot follow is infeasible, said
            self.say(f"minimum time: {T:.4g} s smoothed move (w = {1e3 * width:.3g} ms): no plan ({err})")
            p, rest = np.inf, False
        else:
            p, rest = float(np.abs(self.limits.ratios(traj)).max()), bool(ends_at_rest(model, traj)[0])
        self.history.append({"duration_s": T, "peak_ratio": p, "at_rest": rest, "route": self.route,
                             "law": "spline", "smoothing_s": width, "seconds": time.perf_counter() - tic})
        self.say(f"minimum time: {T:.4g} s smoothed time-optimal move (w = {1e3 * width:.3g} ms): largest limit "
                 f"ratio {p:.4g}, {'at rest' if rest else 'not at rest'}")
        return p, law, rest

    def _law_plan(self, law: SplineLaw, T: float):
        if self.route == "nlp":
            problem = _unbounded(self.problem_at(T, law))
            return self.planner(problem), problem.model
        problem = self.searching(self.problem_at(T))
        spec = problem.reference_spec
        ref = (RetimedPath(spec, problem.model).reference(law) if RetimedPath.separable(spec) else
               reference_from_spec(spec, problem.model, law))
        return solve_inverse_bdf(problem.model, ref, problem.solver, qa_guess=spec.joint_guess), problem.model

    def at(self, T: float) -> tuple[float, np.ndarray, bool]:
        if self.route == "nlp":
            return self._nlp_at(T)
        tic = time.perf_counter()
        start = min(self.laws, key=lambda law: abs(np.log(law[0] / T)))[1] if self.laws else None
        c, info = rest_law_within(self.searching(self.problem_at(T, start)), self.limits.ratios, self.n_shape,
                                  progress=self.say)
        p, rest, solves = float(info.get("peak_rows_max", np.inf)), bool(info["at_rest"]), info["bdf_solves"]
        if start is not None and not (rest and p <= FEASIBLE):
            # the search is local: a warm start that misses is tried again from the base law (a drawn arm's 1.118 s
            # move missed from the 1.135 s law's start, p 1.01, and met the bound from the base law)
            c2, info2 = rest_law_within(self.searching(self.problem_at(T, None)), self.limits.ratios, self.n_shape,
                                        progress=self.say)
            p2, rest2 = float(info2.get("peak_rows_max", np.inf)), bool(info2["at_rest"])
            solves += info2["bdf_solves"]
            if (rest2, -p2) > (rest, -p):
                c, p, rest = c2, p2, rest2
        self.laws.append((T, c))
        self.history.append({"duration_s": T, "peak_ratio": p, "at_rest": rest, "bdf_solves": solves,
                             "iterations": info.get("iterations", 0), "seconds": time.perf_counter() - tic})
        self.say(f"minimum time: {T:.4g} s move: largest limit ratio {p:.4g}, "
                 f"{'at rest' if rest else 'not at rest'} ({solves} BDF solves)")
        return p, c, rest


    def _nlp_at(self, T: float) -> tuple[float, np.ndarray, bool]:
        tic = time.perf_counter()
        traj = self.planner(_unbounded(self.problem_at(T)))
        p = float(np.abs(self.limits.ratios(traj)).max())
        rest = bool(ends_at_rest(self.problem.model, traj)[0])
        self.history.append({"duration_s": T, "peak_ratio": p, "at_rest": rest, "route": traj.method,
                             "seconds": time.perf_counter() - tic})
        self.say(f"minimum time: {T:.4g} s move ({traj.method}): largest limit ratio {p:.4g}, "
                 f"{'at rest' if rest else 'not at rest'}")
        return p, np.zeros(0), rest


def _smoothed_family(search: _DurationSearch, topp, T_max: float):
    """The shortest move of the smoothed time-optimal family (module docstring): ((problem, T, p, bracket, w),
    None), or (None, why not). Kernel widths on a geometric grid over SMOOTHING_RANGE x TOPP-RA's duration, then
    the log-midpoints between the best width and its neighbours, WIDTH_REFINEMENTS times; each width's duration by
    the secant, started from the best stretch found so far."""
    T0, h = topp.duration, search.problem.solver.step
    lo = max(SMOOTHING_RANGE[0] * T0, (SPLINE_DEGREE + 1) * max(CELL_STEPS * h, T0 / MAX_SPLINE_CELLS))
    hi = max(SMOOTHING_RANGE[1] * T0, 2 * lo)
    grid, refinements = WIDTH_GRID, WIDTH_REFINEMENTS
    if search.route == "nlp":  # an NLP plan per move (seconds each): two widths, about where the BDF arms' best lie
        lo = max(lo, NLP_WIDTHS[0] * T0)
        hi, grid, refinements = max(NLP_WIDTHS[1] * T0, 2 * lo), 2, 0
    results: dict[float, tuple] = {}  # width -> (feasible (T, p, law) or None, infeasible (T, p, law) or None)
    stretch = [1.05]  # the last feasible duration over its law's own (T0 + 7/8 w)

    def search_width(width: float) -> None:
        law, E = smoothed_time_optimal(topp.t, topp.rate, width, CELL_STEPS * h)
        at = lambda T: search.with_law(law, T, width)  # noqa: E731
        results[width] = _shortest_feasible(at, min(T_max, stretch[0] * E), T_max, search.history,
                                            stop_when_static=True)
        if results[width][0] is not None:
            stretch[0] = results[width][0][0] / E

    def best() -> float | None:
        done = [w for w in results if results[w][0] is not None]
        return min(done, key=lambda w: results[w][0][0]) if done else None

    first = float(np.sqrt(lo * hi))
    law, E = smoothed_time_optimal(topp.t, topp.rate, first, CELL_STEPS * h)
    long = min(T_max, 2.0 * E)
    if search.route == "bdf" and not search.with_law(law, long, first)[2]:  # (the NLP's post-actuation rests)
        return None, (f"the smoothed time-optimal law does not end at rest even over {long:.3g} s (internal dynamics "
                      "ringing after the move): the polynomial family with rest shaping instead")
    for w in np.geomspace(lo, hi, grid):
        search_width(float(w))
    for _ in range(refinements):
        w = best()
        if w is None:
            break
        tried = sorted(results)
        k = tried.index(w)
        for other in {tried[max(k - 1, 0)], tried[min(k + 1, len(tried) - 1)]} - {w}:
            search_width(float(np.sqrt(w * other)))
    w = best()
    if w is None:
        return None, f"no smoothed time-optimal move within the limits up to {T_max:.4g} s"
    (T, p, law), infeasible = results[w]
    return (search.problem_at(T, law), T, p, None if infeasible is None else (infeasible[0], T), w), None


def _unbounded(problem):
    """The problem without torque and rate bounds (its exact-tracking inverse)."""
    data = problem.to_dict()
    for key in ("torque_max", "torque_rate_max"):
        data.get("nlp", {}).pop(key, None)
    return problem.from_dict(data, problem.source).with_model_of(problem)


def _route(problem, planner, say) -> tuple[str, dict]:
    """("bdf", {}) where the problem says bdf; where method auto plans it by BDF (minimum phase) ("bdf", the order,
    form and step it chose); else ("nlp", {})."""
    method = problem.solver.method
    if method == "bdf" or (planner is None and method != "nlp"):
        return "bdf", {}
    if planner is None:
        raise ProblemError(f"{problem.source}: minimum time with solver.method = \"nlp\" plans each move by the NLP: "
                           "call ffopt.plan.minimum_time (it passes the planner), or set solver.method = \"bdf\"")
    say(f"minimum time: which route plans this arm (method auto over a {problem.reference_spec.duration:.3g} s move)")
    first = planner(_unbounded(problem).with_values({"solver.end_at_rest": False, "solver.method": "auto"}))
    if not first.method.startswith("bdf"):
        return "nlp", {}
    chosen = {key: first.stats.get(key) for key in ("order", "form", "step")}
    return "bdf", (chosen if chosen["form"] in ("I1", "I2", "I3") else {})


def _static_bound(history: list[dict]) -> bool:
    """Whether the last two searches, at durations at least 1.4x apart, both at rest and infeasible, differ in their
    ratio by less than 1 %: what exceeds the limit does not scale with the move's speed (a holding torque)."""
    done = [h for h in history if h["at_rest"] and np.isfinite(h["peak_ratio"])]
    if len(done) < 2:
        return False
    a, b = sorted(done[-2:], key=lambda h: h["duration_s"])
    return (b["duration_s"] >= 1.4 * a["duration_s"] and b["peak_ratio"] > FEASIBLE
            and a["peak_ratio"] - b["peak_ratio"] < 0.01 * b["peak_ratio"])


def _next_duration(history: list[dict], feasible, infeasible, T_max: float) -> float | None:
    """Secant on log p(T) = 0 through the last two finite searches, kept inside the bracket (bisection in log
    T where it leaves it); 1.5x longer while nothing is feasible, 0.8x shorter while nothing is infeasible."""
    pts = [(np.log(h["duration_s"]), np.log(h["peak_ratio"])) for h in history
           if h["at_rest"] and np.isfinite(h["peak_ratio"]) and h["peak_ratio"] > 0]
    guess = None
    if len(pts) >= 2 and pts[-1][0] != pts[-2][0]:
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        slope = (y1 - y0) / (x1 - x0)
        if slope < 0:  # p falls with a longer move
            guess = np.exp(x1 - (y1 - np.log(FEASIBLE * 0.999)) / slope)
    elif len(pts) == 1:
        guess = np.exp(pts[0][0] + (pts[0][1] - np.log(FEASIBLE * 0.999)) / 5.0)  # p ~ T^-5 to start (an elastic gear: T^-4 to T^-6)
    lo = infeasible[0] if infeasible else None
    hi = feasible[0] if feasible else None
    if lo is not None and hi is not None:
        if guess is None or not lo < guess < hi:
            guess = np.sqrt(lo * hi)
        # not closer than a quarter of the bracket to its ends (a secant creeping along one side)
        a, b = np.log(lo), np.log(hi)
        guess = float(np.exp(np.clip(np.log(guess), a + 0.25 * (b - a), b - 0.25 * (b - a))))
    elif hi is None:  # only infeasible durations so far
        if lo >= T_max:
            return None
        guess = min(guess, 3 * lo) if guess is not None and guess > lo else 1.5 * lo
        guess = min(T_max, guess)
    else:  # only feasible durations so far; at most halved (a ratio flat in T, a holding torque's, has a secant
        # root at T ~ 0: a drawn arm's search asked for a 0 s move)
        guess = float(np.clip(guess, 0.5 * hi, 0.95 * hi)) if guess is not None and guess < hi else 0.8 * hi
    return float(guess)


def _rigid_lower_bound(problem, limits: MotionLimits, say) -> LowerBound:
    """TOPP-RA's time-optimal duration of the rigid robot along the path under the torque and link speed limits,
    what it is, and its law; no duration (and why) without toppra or a torque limit, or where TOPP-RA finds no
    parameterisation, said on the console too."""
    try:
        from ffopt.motion.peers import PathSamples, topp_ra_law  # toppra is an optional extra (.[peers])
        import toppra  # noqa: F401
    except ImportError:
        why = ("no lower bound: toppra is not installed (pip install 'ffopt[peers]'), and without it no smoothed "
               "time-optimal law: polynomial laws only")
        say(f"minimum time: {why}")
        return LowerBound(None, why)
    if limits.torque_max is None:
        why = "no lower bound: TOPP-RA's rigid bound needs a torque limit"
        say(f"minimum time: {why}")
        return LowerBound(None, why)
    say("minimum time: the rigid robot's time-optimal move (TOPP-RA) as a lower bound")
    path = PathSamples.of(problem)
    speed = None if limits.link_speed_max is None else limits.link_speed_max[path.actuated]
    try:
        law = topp_ra_law(path, limits.torque_max, speed_max=speed)
    except ProblemError as err:  # the rigid robot (passive joints locked) may need more holding torque than allowed
        why = f"no lower bound: {str(err).split(': ', 1)[-1]}"
        say(f"minimum time: {why}")
        return LowerBound(None, why)
    return LowerBound(float(law.duration), "TOPP-RA, rigid model, same torque and link speed limits", law)


def minimum_time_record(found: MinimumTime, traj, problem) -> dict:
    """summary.json's ``method_choice.minimum_time``: the search (``MinimumTime.to_dict``) with the limits active in
    the plan as made (kind, joint, peak ratio, when) and its largest ratio per kind."""
    limits = MotionLimits.of(problem)
    names = [problem.chain.joints[i].name for i in problem.model.layout.actuated]
    active = limits.active(traj, names, [j.name for j in problem.chain.joints])
    peaks = {kind: float(np.abs(block).max()) for kind, block in limits.ratio_blocks(traj).items()}
    return {**found.to_dict(), "active_limits": active, "peak_ratio_by_limit": peaks}


def minimum_time_text(record: dict) -> str:
    """One console line: the duration found, the lower bound and the gap, the active limits."""
    bound, method = record.get("lower_bound_s"), record.get("lower_bound_method")
    gap = f" ({record['duration_over_lower_bound']:.2f}x TOPP-RA's rigid {bound:.4g} s)" if bound is not None \
        else f" ({method})" if method else ""
    active = ", ".join(sorted({f"{a['limit']} {a['joint']}" for a in record.get("active_limits", [])})) or "none"
    return (f"minimum time: {record['duration_s']:.4g} s{gap}, {len(record['searches'])} searches; "
            f"active limits: {active}")
