"""Time laws that bring a flexible arm to rest with its tool: a planning step on the BDF inverse.

Exact tracking holds the tool on the path, so while it rests after the move the internal (zero)
dynamics of the inverse are free: on a lightly damped arm they keep ringing, and when the table
ends the controller's static hold meets a moving arm (Moberg & Hanssen, inverse dynamics of
flexible manipulators (DAE methods), discuss these zero dynamics; E12's are -0.63 +- 50j rad/s).
Only the timing along the path is free: ``shape_for_rest`` chooses the shaping coefficients c of
the time law s = base + sum_i c_i phi_i (``ffopt.reference.time_laws.shaped_time_law``) so that the
exact-tracking BDF plan ends at rest at the table's last row (every speed ~0, the static torque of
the end pose), with the smallest peak torque and s monotone.

The end state and the torque table are smooth, nearly linear functions of c, so the search is a
sequential linear program with a trust region (an epigraph of the peak |u|, the end state as an L1
exact penalty, s' >= 0 on a grid as linear constraints), its Jacobians by forward differences of
2 n_shape + 1 or 2 BDF solves per iteration. The compiled BDF step takes the path as data
(``ffopt.dae.inverse.solve_inverse_bdf``), so a new law costs one path evaluation and one solve, no
recompilation. ``ends_at_rest`` is the cheap check whether a plan needs it.

Smoothness at the rests. The torque of an elastic-gear arm follows the path's 4th derivative (its relative
degree), so a law whose derivative n + 1 jumps at a rest (poly11: the 6th) leaves a jump in the torque's second
derivative there, which BDF of any order resolves only to O(h^2) (``ffopt.reference.time_laws``). The shaping
terms keep s C^n but change that jump, and the least-peak search made it 6.6x (start) and 9.4x (end) poly11's on
E12: the torque table then alternated by 1.1 % of its peak from row to row for ~80 ms after each rest. Half of
that was BDF's error there (1 % of the peak against a 0.1 ms solve, ringing on BDF-6's parasitic roots, modulus
0.86 at +-80 deg), half the torque's own rise, which the search had pushed into the first 20 ms of the move.
The searched laws therefore also have derivatives n + 1 .. n + JUNCTION_EXTRA zero at both ends
(``ffopt.reference.time_laws.junction_family``): E12's table alternates by 4.8e-4 of its peak (the BDF error near
the rests 1.9e-4 of it instead of 1 %), at a peak torque of 1.27e5 N m instead of 9.9e4 (exact tracking: 1.36e5).
"""

from __future__ import annotations

import time

import numpy as np

from ffopt._version import __version__
from ffopt.models.equilibrium import (REST_SPEED_RAD_S, REST_TORQUE_REL, ends_at_rest,
                                      not_at_rest_text)
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.errors import ProblemError
from ffopt.reference.build import reference_from_spec
from ffopt.settings.reference import DURATION_FROM_LIMIT_KEYS
from ffopt.reference.retimed import RetimedPath
from ffopt.reference.paths import time_law_peak
from ffopt.reference.time_laws import get_time_law, junction_family, monotonicity_margin, shaped_time_law

__all__ = ["ends_at_rest", "not_at_rest_text", "shape_for_rest", "shape_for_rest_cached", "rest_law_within", "with_duration_factor", "REST_SPEED_RAD_S", "REST_TORQUE_REL", "DURATION_FACTORS"]

DURATION_FACTORS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)  # longer moves tried when none rests in time
_MONOTONE_MARGIN = 1e-3  # s' >= this share of the base law's smallest s' / (tau (1 - tau))^n
PROGRESS_EVERY_S = 1.0  # a progress line at most this often (no stage silent for more than 2 s)
_FD_STEP = 1e-4  # central-difference step of the shaping coefficients (|phi_i| <= 1)
# The end state lies on the zero dynamics' rest manifold (dimension 2 for one lightly damped pair): its
# Jacobian has that rank; singular values below this share of the largest are difference errors
# (E12: 8e6, 2e6, then 0.1 with central differences of 1e-4, ~3e3 with forward differences of 1e-3).
_RANK_TOL = 1e-6
_GAIN_TOL = 1e-6  # the search stops when the linear model promises less than this share of the peak
_REST_GAIN = 1e-3  # ... plus this share of the rest tolerances (closer to rest than that is noise)
# The searched laws are C^(n + JUNCTION_EXTRA) across the rests (n: the base law's zero derivatives, 5 for poly11),
# with N_SHAPE free terms: see ``LawPlans``. E12 (BDF-6, 1 ms): the old family (C^5, 6 terms) left the torque table
# alternating by 1.1 % of its peak for ~80 ms after each rest; C^7 with 8 free terms: 4.8e-4, peak 1.27e5 N m.
JUNCTION_EXTRA = 2
N_SHAPE = 8


class LawPlans:
    """Exact-tracking BDF plans of one problem for the search variables w (counts the solves): the law's
    shaping coefficients are c = c0 + N w (``junction_family``: n_shape free terms, 2 JUNCTION_EXTRA more
    coefficients that keep the law C^(n + JUNCTION_EXTRA) at the rests). peak_rows: the plan's rows whose
    largest magnitude the search minimises (default: the input table over its peak; ``ffopt.motion.min_time``
    gives every limited quantity over its limit, so that a peak of 1 is at the limits)."""

    def __init__(self, problem, n_shape: int, speed_tol: float, torque_rel: float, peak_rows=None):
        spec = problem.reference_spec
        if spec.kind == "prefilter":
            raise ProblemError(f"{problem.source}: reference.kind: a prefiltered move has no time law to shape")
        self.problem, self.spec, self.model, self.n = problem, spec, problem.model, n_shape
        shaped_time_law(spec.time_law, [0.0] * n_shape)  # a polynomial base (ProblemError for cinf)
        self.c0, self.N = junction_family(spec.time_law, n_shape, JUNCTION_EXTRA)
        self.n_zero = get_time_law(spec.time_law).n_zero_derivs + JUNCTION_EXTRA
        self.speed_tol, self.torque_rel = speed_tol, torque_rel
        self.solves, self.peak_rows = 0, peak_rows
        self.retimed = RetimedPath(spec, self.model) if RetimedPath.separable(spec) else None  # one path, many laws
        self.progress, self.last_line, self.iteration = None, time.perf_counter(), 0
        self.G, self.g0 = self._monotonicity_rows()
        self.base = self.solve(np.zeros(n_shape))
        self.u_scale = float(np.abs(self.base.u).max())
        self.u_static = np.asarray(ends_at_rest(self.model, self.base)[1]["static_input"])

    def coefficients(self, w) -> np.ndarray:
        """The shaping coefficients (``reference.time_law_shape``) of the search variables w."""
        return self.c0 + self.N @ np.asarray(w, float)

    def variables(self, c) -> np.ndarray:
        """The search variables of the law in the family closest to coefficients c (zero-padded)."""
        full = np.zeros(len(self.c0))
        c = np.asarray(c, float)[: full.size]
        full[: c.size] = c
        return self.N.T @ (full - self.c0)

    def law(self, w):
        return shaped_time_law(self.spec.time_law, self.coefficients(w), check=False)

    def solve(self, c):
        s = self.problem.solver
        ref = (self.retimed.reference(self.law(c)) if self.retimed is not None else
               reference_from_spec(self.spec, self.model, self.law(c)))
        self.solves += 1
        self._heartbeat()
        return solve_inverse_bdf(self.model, ref, s, qa_guess=self.spec.joint_guess)

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)
        self.last_line = time.perf_counter()

    def _heartbeat(self) -> None:
        """A line within an iteration when the last is PROGRESS_EVERY_S old (an iteration is 13+ BDF solves:
        2 s on a long path on a loaded machine)."""
        if self.progress is not None and time.perf_counter() - self.last_line >= PROGRESS_EVERY_S:
            self.say(f"rest-to-rest: iteration {self.iteration}, {self.solves} BDF solves")

    def measure(self, c) -> tuple[np.ndarray, np.ndarray]:
        """(peak rows: u table flattened / u_scale or ``peak_rows``, end residual scaled by the rest tolerances:
        |r| < 1 is at rest)."""
        tr = self.solve(c)
        r = np.concatenate([tr.v[-1] / self.speed_tol,
                            (tr.u[-1] - self.u_static) / (self.torque_rel * self.u_scale)])
        return (tr.u.ravel() / self.u_scale if self.peak_rows is None else self.peak_rows(tr)), r

    def jacobians(self, c) -> tuple[np.ndarray, np.ndarray]:
        """d(U, r)/dc by central differences (2 n_shape solves)."""
        plus = [self.measure(c + _FD_STEP * e) for e in np.eye(self.n)]
        minus = [self.measure(c - _FD_STEP * e) for e in np.eye(self.n)]
        return (np.column_stack([(p[0] - m[0]) / (2 * _FD_STEP) for p, m in zip(plus, minus)]),
                np.column_stack([(p[1] - m[1]) / (2 * _FD_STEP) for p, m in zip(plus, minus)]))

    def _monotonicity_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """g(c) = g0 + G c on the grid of ``monotonicity_margin`` (s' / (tau (1 - tau))^n, linear in c)."""
        _, g0 = monotonicity_margin(self.law(np.zeros(self.n)), n_zero=self.n_zero)
        G = np.column_stack([monotonicity_margin(self.law(e), n_zero=self.n_zero)[1] - g0 for e in np.eye(self.n)])
        return G, g0


def _lp_step(U, JU, r, Jr, G, g, radius: float, weight: float):
    """The trust-region LP: min z + weight sum t s.t. |U + JU d| <= z, |r + Jr d| <= t, g + G d >= 0,
    |d| <= radius. Returns (d, predicted merit z + weight sum t)."""
    n, m, k = JU.shape[1], len(r), len(U)
    # variables [d (n), z, t (m)]
    cost = np.concatenate([np.zeros(n), [1.0], np.full(m, weight)])
    A = [np.hstack([JU, -np.ones((k, 1)), np.zeros((k, m))]), np.hstack([-JU, -np.ones((k, 1)), np.zeros((k, m))]),
         np.hstack([Jr, np.zeros((m, 1)), -np.eye(m)]), np.hstack([-Jr, np.zeros((m, 1)), -np.eye(m)]),
         np.hstack([-G, np.zeros((len(g), 1 + m))])]
    b = np.concatenate([-U, U, -r, r, g])
    bounds = [(-radius, radius)] * n + [(0, None)] * (1 + m)
    from scipy.optimize import linprog  # ~0.3 s to import: only when a plan is shaped

    res = linprog(cost, A_ub=np.vstack(A), b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        return None, np.inf
    return res.x[:n], float(res.fun)


def _merit(U, r, weight):
    return float(np.abs(U).max() + weight * np.abs(r).sum())


def search_law(plans: LawPlans, c0, max_iter: int, weight: float = 1.0, progress=None, n_rest_rows: int | None = None,
            ) -> tuple[np.ndarray, dict]:
    """Sequential LP with a trust region on the merit peak |u| / u_scale + weight |r|_1 (an exact
    penalty: near rest the peak's sensitivity to the end state is far below ``weight``). A step the
    curvature of the end state spoils gets a second-order correction back onto the rest manifold
    (a minimum-norm Gauss-Newton step; the Maratos effect of exact penalties). n_rest_rows: only the
    first rows are the rest conditions, projected on the range of their Jacobian (difference noise
    outside it); the rows after them (``ffopt.plan.robust``) enter as they are."""
    c = np.asarray(c0, float)
    plans.progress = progress
    U, r = plans.measure(c)
    margin = _MONOTONE_MARGIN * plans.g0.min()
    radius, it = 0.05, 0
    for it in range(1, max_iter + 1):
        plans.iteration = it
        JU, Jr = plans.jacobians(c)
        g = plans.g0 + plans.G @ c - margin
        B = _row_map(Jr, n_rest_rows)
        d, predicted = _lp_step(U, JU, B @ r, B @ Jr, plans.G, g, radius, weight)
        gain = _merit(U, B @ r, weight) - predicted  # (r outside the range: difference noise)
        if d is None or gain <= _GAIN_TOL * np.abs(U).max() + _REST_GAIN * weight:
            break  # the linear model has nothing left to gain
        trial = _trial(plans, c, d, Jr, g, weight, n_rest_rows)
        ratio = (_merit(U, r, weight) - trial[0]) / gain
        if ratio > 0.1:
            c, U, r = trial[1:]
        radius = 2.0 * radius if ratio > 0.75 and np.abs(d).max() > 0.99 * radius else (
            radius if ratio > 0.25 else 0.25 * radius)
        if radius < 1e-9:
            break
        if progress is not None and time.perf_counter() - plans.last_line >= PROGRESS_EVERY_S:
            plans.say(f"rest-to-rest: iteration {it}, end residual {np.abs(r).max():.3g}, peak input "
                      f"{np.abs(U).max() * plans.u_scale:.4g}, {plans.solves} BDF solves")
    return c, {"iterations": it, "end_residual_max": float(np.abs(r).max()), "peak_rel": float(np.abs(U).max())}


def _row_map(Jr, n_rest_rows: int | None) -> np.ndarray:
    """The rows the LP sees: the rest rows on the numerical range of their Jacobian (``_range``), the rows
    after the first n_rest_rows unchanged (None: all rows are rest rows)."""
    if n_rest_rows is None:
        return _range(Jr).T
    P = _range(Jr[:n_rest_rows]).T
    n_more = Jr.shape[0] - n_rest_rows
    return np.block([[P, np.zeros((P.shape[0], n_more))], [np.zeros((n_more, n_rest_rows)), np.eye(n_more)]])


def _range(J) -> np.ndarray:
    """Orthonormal basis of the numerical range of J (singular values above _RANK_TOL of the largest)."""
    u, sv, _ = np.linalg.svd(J, full_matrices=False)
    return u[:, sv > _RANK_TOL * sv[0]]


def _trial(plans: LawPlans, c, d, Jr, g, weight, n_rest_rows: int | None = None):
    """(merit, c, U, r) of the step d, or of d with a second-order correction back onto the rest manifold
    (the first n_rest_rows rows; None: all) if that is better."""
    U, r = plans.measure(c + d)
    best = (_merit(U, r, weight), c + d, U, r)
    n = len(r) if n_rest_rows is None else n_rest_rows
    basis = _range(Jr[:n])
    correction = -np.linalg.lstsq(basis.T @ Jr[:n], basis.T @ r[:n], rcond=None)[0]
    if np.all(g + plans.G @ (d + correction) >= 0.0):
        U2, r2 = plans.measure(c + d + correction)
        if _merit(U2, r2, weight) < best[0]:
            best = (_merit(U2, r2, weight), c + d + correction, U2, r2)
    return best


def shape_for_rest(problem, n_shape: int = N_SHAPE, max_iter: int = 30, speed_tol: float = REST_SPEED_RAD_S,
                   torque_rel: float = REST_TORQUE_REL, duration_factors=DURATION_FACTORS,
                   progress=None) -> tuple[np.ndarray, dict]:
    """Shaping coefficients (``reference.time_law_shape``, n_shape + 2 JUNCTION_EXTRA of them: n_shape free)
    with which the exact-tracking BDF plan of ``problem`` (its solver's order, step and form) ends at rest
    (``ends_at_rest``) with the least peak |u|, s monotone and C^(n + JUNCTION_EXTRA) at the rests. Returns
    (c, info); info["at_rest"] says whether it rests.

    Where no monotone law of n_shape terms rests within the move, info says so with the best end
    residual reached, and the move is lengthened by ``duration_factors`` until one does:
    info["duration_needed_s"] (None if none of them), with its coefficients
    info["shape_for_duration_needed"]. info also holds the iterations, BDF solves, the end states and
    peak inputs before and after, and the wall time. progress: called with a line at most every
    PROGRESS_EVERY_S seconds of the search."""
    tic = time.perf_counter()
    c, info = _shape_one(problem, n_shape, max_iter, speed_tol, torque_rel, progress)
    if not info["at_rest"]:
        info.update(_longer_move(problem, n_shape, max_iter, speed_tol, torque_rel, duration_factors, progress))
    info["wall_time_s"] = time.perf_counter() - tic
    return c, info


def rest_law_within(problem, peak_rows, n_shape: int = N_SHAPE, max_iter: int = 30, progress=None,
                    ) -> tuple[np.ndarray, dict]:
    """Shaping coefficients with which the exact-tracking BDF plan of ``problem``'s move (its duration) ends at
    rest with the least largest ``peak_rows(traj)`` (the limited quantities over their limits: at most 1 is
    within them), s monotone; (c, info) as ``shape_for_rest`` without longer moves, info["peak_rows_max"] the
    largest row reached. The step of ``ffopt.motion.min_time``'s duration search."""
    return _shape_one(problem, n_shape, max_iter, REST_SPEED_RAD_S, REST_TORQUE_REL, progress, peak_rows)


def shape_for_rest_cached(problem, n_shape: int = N_SHAPE, progress=None) -> tuple[np.ndarray, dict]:
    """``shape_for_rest`` with its result kept on disk beside the compiled BDF code ($FFOPT_CACHE_DIR, default
    ~/.cache/ffopt) under a hash of the problem as written (``problem.to_toml()``), n_shape and the ffopt
    version: a second plan of the same problem skips the search (info["cached"]: the file read, else False)."""
    from ffopt.cache import on_disk, on_disk_path

    key = f"{__version__}\n{n_shape}\njunction+{JUNCTION_EXTRA}\n{problem.to_toml()}"

    def compute():
        c, info = shape_for_rest(problem, n_shape, progress=progress)
        return c, {**info, "cached": False}

    def encode(result):
        c, info = result
        return {"c": c.tolist(), "info": _plain({k: v for k, v in info.items() if k != "cached"})}

    def decode(saved):
        return np.asarray(saved["c"], float), {**saved["info"], "cached": str(on_disk_path("rest", key))}

    return on_disk("rest", key, compute, encode, decode)


def _plain(x):
    """``x`` with numpy arrays and scalars as JSON's lists and numbers (TypeError for anything else JSON has not)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _shape_one(problem, n_shape, max_iter, speed_tol, torque_rel, progress=None, peak_rows=None,
               ) -> tuple[np.ndarray, dict]:
    """The search on the problem's own move; info as in ``shape_for_rest`` (without the longer moves)."""
    tic = time.perf_counter()
    plans = LawPlans(problem, n_shape, speed_tol, torque_rel, peak_rows)
    rest0, end0 = ends_at_rest(plans.model, plans.base, speed_tol, torque_rel)
    if peak_rows is not None:  # the start law may rest but exceed the limits: searched all the same
        rest0 = False
    info = {"n_shape": n_shape, "duration_s": problem.reference_spec.duration, "end_before": end0,
            "peak_input_before": end0["peak_input"]}
    if rest0:
        info.update(at_rest=True, needed=False, iterations=0, bdf_solves=plans.solves, end_after=end0,
                    peak_input_after=end0["peak_input"], search_time_s=time.perf_counter() - tic)
        return plans.coefficients(np.zeros(n_shape)), info
    w, search = search_law(plans, plans.variables(problem.reference_spec.time_law_shape), max_iter, progress=progress)
    info["peak_rows_max"] = search["peak_rel"]
    law, c = plans.law(w), plans.coefficients(w)
    rest, end = ends_at_rest(plans.model, plans.solve(w), speed_tol, torque_rel)
    info.update(at_rest=rest, needed=True, iterations=search["iterations"], bdf_solves=plans.solves, end_after=end,
                peak_input_after=end["peak_input"], end_residual_max=search["end_residual_max"],
                time_law=law.name, monotone_margin_min=float(monotonicity_margin(law, n_zero=plans.n_zero)[1].min()),
                law_peak_ratio=_peak_ratios(law, get_time_law(problem.reference_spec.time_law)),
                search_time_s=time.perf_counter() - tic)
    if not rest:
        info["message"] = (f"no monotone rest-to-rest law of {n_shape} shaping terms in the "
                           f"{info['duration_s']:.4g} s move: best end speed {_speed(end):.3g} rad/s, input "
                           f"{end['input_offset_max']:.3g} from static")
    return c, info


def _peak_ratios(law, base) -> dict[int, float]:
    """Peak |s^(k)| of the shaped law over the base law's, k = 1..4: a law that nearly dwells has larger
    high derivatives, which a coarse table resolves worse (E1 at h = 5 ms: the shaped plan rests, but
    the tool misses by 0.6 mm during the move with the motor PD, 0.2 mm with poly11; 0.016 mm at 1 ms)."""
    return {k: time_law_peak(law, k) / time_law_peak(base, k) for k in range(1, 5)}


def _speed(end: dict) -> float:
    return max(end["link_speed_max_rad_s"], end["motor_speed_max_rad_s"])


def _longer_move(problem, n_shape, max_iter, speed_tol, torque_rel, factors, progress=None) -> dict:
    """The shortest of the moves lengthened by ``factors`` with a monotone rest-to-rest law, by bisection over
    the factors: a longer move excites the arm less and rests at least as easily, so 3 searches settle 7
    factors (E1 complete, the 2.5x move: 3 searches instead of 5; a failed search runs all its iterations)."""
    factors = sorted(factors)
    tried, best = [], None
    lo, hi = 0, len(factors) - 1
    while lo <= hi:
        k = (lo + hi) // 2
        f = factors[k]
        if progress is not None:
            progress(f"rest-to-rest: no law rests in the move; trying a {f:g}x longer move")
        c, info = _shape_one(with_duration_factor(problem, f), n_shape, max_iter, speed_tol, torque_rel, progress)
        tried.append({"factor": f, "duration_s": info["duration_s"], "at_rest": info["at_rest"],
                      "end_speed_max_rad_s": _speed(info["end_after"]), "bdf_solves": info["bdf_solves"]})
        if info["at_rest"]:
            best, hi = (f, c, info), k - 1
        else:
            lo = k + 1
    if best is None:
        return {"duration_tried": tried, "duration_factor": None, "duration_needed_s": None}
    f, c, info = best
    return {"duration_tried": tried, "duration_factor": f, "duration_needed_s": info["duration_s"],
            "shape_for_duration_needed": c.tolist(), "peak_input_for_duration_needed": info["peak_input_after"]}


def with_duration_factor(problem, factor: float):
    """The problem with its move (each segment or joint duration) ``factor`` times longer, given as
    durations (a speed or acceleration limit that set them is dropped; polyline blends scale along)."""
    data = problem.to_dict()
    ref = data["reference"]
    spec = problem.reference_spec
    for key in (*DURATION_FROM_LIMIT_KEYS, "duration_max"):  # duration_max: a minimum-time search's, now decided
        ref.pop(key, None)
    if spec.kind == "polyline":
        ref["durations"] = (factor * np.asarray(spec.params["durations"], float)).tolist()
        ref["blend"] = (factor * np.asarray(spec.params["blends"], float)).tolist()
    elif spec.kind == "joint_ptp":
        ref["duration"] = (factor * np.asarray(spec.params["durations"], float)).tolist()
    else:
        ref["duration"] = factor * spec.duration
    return problem.from_dict(data, problem.source).with_model_of(problem)  # the same robot: its built model
