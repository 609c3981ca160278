"""``method = "auto"`` (the default): the zero dynamics choose the inversion; a failed one falls back.

1. The zero dynamics of the plant linearised at static equilibria along the path
   (``ffopt.analysis.linear.zero_dynamics`` at ``ZERO_DYNAMICS_POINTS`` points; ~10-25 ms).
2. Minimum phase (or the analysis not available): constant-step BDF with the problem's step and
   form, at the highest order <= solver.order that is stable on every zero along the path
   (``bdf_order_choice``, ``ffopt.analysis.stability``): the causal inverse integrates the zero
   dynamics forward, so BDF-k must be stable at h z for each zero z (every root of its
   characteristic polynomial of modulus <= 1, with a margin of a factor GROWTH_LIMIT of spurious
   growth over the path). BDF-3..6 are only A(alpha)-stable: a lightly damped zero (a stiff passive
   joint of a 7-axis arm, -182 +- 1900j rad/s at h = 1 ms) rules out BDF-4..6 (BDF-6's root 1.45
   per step), and running BDF-6 anyway meant four diverging formulations, each compiling its own C
   code. The console line and method_choice (summary.json) name the zero, h z and the order.
   Should BDF fail, the next formulation runs: the other forms (lowest index first), the
   automatic dummy-derivative system (``dd``), then the collocation NLP with its strategy chosen
   by its own, denser analysis (Radau IIA is L-stable and the NLP can go non-causal where the
   sampled analysis missed an unstable zero). A failure at an order that is unstable on the zeros
   at the failure time (between the sampled points) is not retried in another form at that order:
   the failed form and the others run at the stable order, or, where none is (an unstable zero
   there), the NLP runs next (``_unstable_order``).
3. Non-minimum phase: the causal inverse integrates the unstable zero dynamics forward and
   diverges (Moberg & Hanssen, inverse dynamics of flexible manipulators), so the non-causal
   NLP with pre- and post-actuation runs directly, started from the rigid model's feedforward (stiff
   gears, passive joints locked: on the path, bounded; a BDF warm start would diverge) rather than
   from rest (the arm with a passive forearm flexure: 3 IPOPT iterations instead of 26).
   Exact tracking first also where the grid resolves an unstable zero poorly (Re z h above
   ``poorly_resolved_per_step``): a drawn 3-link arm with an unstable zero of 8074 1/s (8 per 1 ms
   step) plans from the rigid start in 3 iterations (1 s) and verifies to 0.0049 mm, with the same
   torques, point for point, as the penalty NLP of item 4 (29 iterations, 0.0057 mm; measured
   2026-12-07). Earlier, from rest, its exact NLP took 59 s and zigzagged.
4. Last in both chains (when the problem asks for exact tracking): the same NLP, from rest, with the path as
   a penalty of weight ``PENALTY_FALLBACK_WEIGHT`` instead of a constraint. From rest, the
   exact-tracking NLP starts far from feasible, and IPOPT can diverge (seen on a planar 3-link
   arm with a soft passive elbow: objective 1e9 after 12 iterations, then the limit), while the
   penalty NLP starts feasible and only trades tracking against smoothness: the same arm plans
   in 22 s and verifies to 0.02 mm (weight 1e7: 2.6 mm, 1e11: 0.24 mm, 1e13: 0.075 mm). The
   planned tool error is reported with the plan (summary.json) as for every NLP plan. Each NLP
   attempt has the problem's whole limits (nlp.max_cpu_time_s, the wall-time guard) (a shared limit starved the penalty NLP of
   a drawn arm that needs 83 s after its exact NLP wandered for 60 s).

Each fallback prints one line (what failed, why, what runs next); ``PlanResult.method_choice``
(``summary.json``) records the choice, the reason and every attempt with its error. Bad input
(``ProblemError``, ``PathError``) is never retried: it stops at once, as does Ctrl-C.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ffopt._version import __version__
from ffopt.errors import FfoptError, SolverError

ZERO_DYNAMICS_POINTS = 21
# A zero counts as unstable above this real part relative to its size. Undamped zero dynamics (a
# passive joint without damping: zeros at +-j omega up to roundoff) keep the causal inverse
# bounded, so they go to BDF rather than to a non-causal NLP with an unbounded pre-actuation.
UNSTABLE_RTOL = 1e-8
# Unstable zeros faster than this many per step (Re z h > UNRESOLVED_PER_STEP) act within a tenth
# of a step: no grid of that step can represent the pre-actuation they ask for (~10 / Re z), and
# BDF damps such modes (|h lambda| far outside its instability region), so they do not decide the
# method (e.g. +3e5 rad/s from full rotor coupling on a passive-joint arm at h = 1 ms).
UNRESOLVED_PER_STEP = 10.0
BDF_FORMS = ("I1", "I2", "I3")  # lowest index first
ANALYSIS_ERRORS = (FfoptError, np.linalg.LinAlgError, ArithmeticError, RuntimeError, ValueError)
# The start of a non-causal NLP: the rigid model's feedforward (stiff gears, passive joints locked; item 3). The arm
# with a passive forearm flexure (problems/arm6_passive_forearm.toml): exact tracking solved in 3 IPOPT iterations
# from it, against 26 for the penalty NLP from rest (measured 2026-12-07).
NON_CAUSAL_START = "rigid"
PENALTY_FALLBACK_WEIGHT = 1e15  # tool error ~ weight^-1/4 on the arm above; 1e15: 0.02 mm
MAX_REASON_CHARS = 200


@dataclass
class Attempt:
    method: str  # bdf | dd | nlp
    label: str  # e.g. "BDF-6, h = 1 ms, form I1"
    ok: bool = False
    error: str | None = None
    time_s: float = 0.0
    cause: str | None = None  # a BDF failure explained by an unstable order (the chain moved off it)

    def to_dict(self) -> dict:
        out = {"method": self.method, "formulation": self.label, "ok": self.ok, "error": self.error,
               "time_s": self.time_s}
        if self.cause is not None:
            out["cause"] = self.cause
        return out


def solve_auto(problem, solve, say=lambda msg: None):
    """Run the chain for ``problem``; ``solve(problem)`` runs one explicit method and returns a Trajectory.

    Returns (the problem with the method that succeeded, its Trajectory, the method_choice dict).
    Raises SolverError listing every attempt if all of them fail.
    """
    analysis, minimum_phase, report = analyse_report(problem)
    stability = None
    if minimum_phase is not False and report is not None:  # BDF will run: at a stable order and step
        stability = bdf_order_choice(problem, report)
        analysis["bdf_stability"] = stability.to_dict()
        if stability.order is not None and stability.changed:
            problem = problem.with_solver(order=stability.order, step=stability.step)
    chain = _chain(problem, minimum_phase, analysis, bdf=stability is None or stability.order is not None)
    reason = _reason(analysis, minimum_phase)
    if stability is not None and stability.limiting_zero is not None:
        reason += f"; {stability.reason()}"
    say(f"method auto: {reason}: {chain[0][1]}")
    attempts = []
    k = 0
    while k < len(chain):
        candidate, label = chain[k]
        attempt = Attempt(candidate.solver.method, label)
        attempts.append(attempt)
        tic = time.perf_counter()
        try:
            traj = solve(candidate)
        except SolverError as err:
            attempt.error, attempt.time_s = str(err), time.perf_counter() - tic
            cause = _unstable_order(candidate, report, err) if candidate.solver.method in ("bdf", "dd") else None
            why = first_sentence(err)
            if cause is not None:  # the other forms would fail the same way at this order and step
                attempt.cause = cause.reason()
                chain = chain[: k + 1] + _at_stable_order(chain[k + 1:], candidate, cause)
                why += f"; {attempt.cause}"
            if k + 1 < len(chain):
                say(f"method auto: {label} failed ({why}); next: {chain[k + 1][1]}")
            k += 1
            continue
        attempt.ok, attempt.time_s = True, time.perf_counter() - tic
        choice = {"requested": "auto", "chosen": candidate.solver.method, "formulation": label, "reason": reason,
                  "zero_dynamics": analysis, "attempts": [a.to_dict() for a in attempts]}
        if candidate.solver.method in ("bdf", "dd"):
            choice["order"], choice["step_s"] = candidate.solver.order, candidate.solver.step
        return candidate, traj, choice
    tried = "; ".join(f"{a.label}: {first_sentence(a.error)}" for a in attempts)
    raise SolverError(f"method auto: every formulation failed ({tried}). Check the model and the path (ffopt "
                      "analyze), or slow the motion (reference.duration).")


def stability_margin(problem, step: float) -> float:
    """Root-modulus margin of the BDF stability check: a factor GROWTH_LIMIT of spurious growth over
    the path's steps (``ffopt.analysis.stability.growth_margin``)."""
    from ffopt.analysis.stability import growth_margin

    return growth_margin(int(np.ceil(problem.reference.t_end / step)))


def _analyse(problem) -> tuple[dict, bool | None]:
    """Zero dynamics along the path -> (summary for summary.json, minimum phase or None if unknown)."""
    info, verdict, _ = analyse_report(problem)
    return info, verdict


@dataclass
class _SavedZeros:
    """The part of a ZeroDynamicsReport method auto uses (the zeros along the path), read from the disk cache."""

    times: list
    zeros: list


_ANALYSIS_CACHE_VERSION = 1  # bump when what analyse_report computes changes


def analysis_cache_key(problem) -> str:
    """What the zero analysis of ``problem`` depends on: the problem as written (model, path, solver), the
    analysis settings and the ffopt version (the key of its ``ffopt.cache.on_disk`` file)."""

    return f"{__version__}\n{_ANALYSIS_CACHE_VERSION}\n{ZERO_DYNAMICS_POINTS}\n{UNSTABLE_RTOL}\n{problem.to_toml()}"


def analyse_report(problem):
    """``_analyse`` and the zeros along the path (None if the analysis failed). The analysis (0.1-0.4 s on a
    6-axis arm, with SciPy's import) is kept on disk (``ffopt.cache.on_disk``, a failed one is not): a second
    plan of the same problem reads it (info["cached"] True)."""
    from ffopt.analysis.zero_encoding import decode_zeros, encode_zeros
    from ffopt.cache import on_disk

    def encode(result):
        info, verdict, report = result
        if report is None:
            return None
        return {"info": info, "minimum_phase": verdict, **encode_zeros(report.times, report.zeros)}

    def decode(saved):
        return {**saved["info"], "cached": True}, saved["minimum_phase"], _SavedZeros(*decode_zeros(saved))

    return on_disk("zeros", analysis_cache_key(problem), lambda: _analyse_fresh(problem), encode, decode)


def _analyse_fresh(problem):
    """The zero analysis along the path: (summary, minimum phase or None, ZeroDynamicsReport or None)."""
    from ffopt.analysis.linear import zero_dynamics

    tic = time.perf_counter()
    try:
        zd = zero_dynamics(problem.model, problem.reference, problem.reference_spec.joint_guess,
                           n_points=ZERO_DYNAMICS_POINTS, cross_check=False)
    except ANALYSIS_ERRORS as err:
        return {"error": first_sentence(err), "time_s": time.perf_counter() - tic}, None, None
    z = zd.worst_zero
    step = problem.solver.step
    unstable = zd.unstable_zeros(UNSTABLE_RTOL)
    resolved = [(u, t) for u, t in unstable if u.real * step <= UNRESOLVED_PER_STEP]
    info = {"minimum_phase": not resolved, "summary": zd.summary(), "n_points": len(zd.times),
            "worst_zero": [float(z.real), float(z.imag)], "worst_time_s": float(zd.worst_time),
            "time_s": time.perf_counter() - tic}
    if resolved:
        info["fastest_unstable_zero"] = float(max(u.real for u, _ in resolved))
    if unstable and not resolved:
        fastest = max(unstable, key=lambda ut: ut[0].real)[0]
        slowest = min(unstable, key=lambda ut: ut[0].real)[0]
        info["unresolved_unstable_zeros"] = (f"unstable zeros only above {UNRESOLVED_PER_STEP:g} / h = "
                                             f"{UNRESOLVED_PER_STEP / step:.3g} 1/s ({slowest.real:.3g} .. "
                                             f"{fastest.real:.3g} 1/s): they act within a tenth of a step")
    return info, not resolved, zd


def bdf_zeros(times, zeros, step: float) -> tuple[list, list]:
    """(times, zeros per time) that decide the BDF order: every finite zero but the resolved unstable
    ones (Re z > 0, Re z h <= UNRESOLVED_PER_STEP), which grow in the arm itself, so no order helps
    (they send the plan to the non-causal NLP); an unresolved one counts (BDF must damp it)."""
    keep = []
    for zs in zeros:
        zs = np.asarray(zs, complex)
        zs = zs[np.isfinite(zs)]
        unstable = zs.real > UNSTABLE_RTOL * np.maximum(1.0, np.abs(zs))
        keep.append(zs[~(unstable & (zs.real * step <= UNRESOLVED_PER_STEP))])
    return list(times), keep


def bdf_order_choice(problem, report, order: int | None = None):
    """The highest BDF order <= solver.order stable on the zeros along the path at solver.step (order
    None: none is; a smaller step would not help, ``ffopt.analysis.stability.choose_order``)."""
    from ffopt.analysis.stability import choose_order

    s = problem.solver
    times, zeros = bdf_zeros(report.times, report.zeros, s.step)
    return choose_order(times, zeros, s.order if order is None else order, s.step,
                        stability_margin(problem, s.step))


def _unstable_order(candidate, report, err: SolverError):
    """Was a failed BDF run's order unstable on the zero dynamics at its step? The zeros along the path
    (the auto analysis) and at the failure time; an OrderChoice with a lower order (order None: none
    is stable, e.g. a zero in the right half plane there: only the NLP is left) if so, else None
    (another form may fare better)."""
    from ffopt.analysis.linear import path_times, zeros_along

    s = candidate.solver
    times, zeros = (list(report.times), list(report.zeros)) if report is not None else ([], [])
    t_fail = err.failed_time_s
    if t_fail is not None and 0.0 <= t_fail <= candidate.reference.t_end:
        ref = candidate.reference
        path = path_times(ref, ZERO_DYNAMICS_POINTS)
        at = [t for t in path if t < t_fail] + [min(max(t_fail, ref.t_motion_start), ref.t_motion_end)]
        try:
            found, _ = zeros_along(candidate.model, ref, at, candidate.reference_spec.joint_guess)
            times, zeros = times + [t_fail], zeros + [found[-1]]
        except ANALYSIS_ERRORS:
            pass
    if not times:
        return None
    from ffopt.analysis.stability import choose_order

    # every zero counts here, an unstable one too: it makes every BDF formulation diverge
    choice = choose_order(times, zeros, s.order, s.step, stability_margin(candidate, s.step))
    return choice if choice.changed or choice.order is None else None


def _at_stable_order(rest: list, failed, choice) -> list:
    """The rest of the chain after a BDF failure at an unstable order: the failed formulation and the
    remaining BDF ones at the stable order and step (none if no order is stable), then the NLPs."""
    bdf = [c for c, _ in rest if c.solver.method in ("bdf", "dd")]
    others = [(c, label) for c, label in rest if c.solver.method not in ("bdf", "dd")]
    if choice.order is None:
        return others
    out = []
    for c in [failed] + bdf:
        moved = c.with_solver(order=choice.order, step=choice.step)
        if all(_bdf_label(moved) != label for _, label in out):
            out.append((moved, _bdf_label(moved)))
    return out + others


def _reason(analysis: dict, minimum_phase: bool | None) -> str:
    if minimum_phase is None:
        return f"zero dynamics not available ({analysis['error']}), so the causal inverse first"
    if not np.isfinite(analysis["worst_zero"][0]):
        return "no finite zeros (minimum phase)"
    z = complex(*analysis["worst_zero"])
    where = f"worst zero {z.real:.4g}{z.imag:+.4g}j rad/s at t = {analysis['worst_time_s']:.3g} s"
    if not minimum_phase:
        return f"non-minimum phase ({where})"
    if "unresolved_unstable_zeros" in analysis:
        return f"minimum phase on this grid ({analysis['unresolved_unstable_zeros']})"
    return f"minimum phase ({where})" if z.real < 0 else f"marginally minimum phase, undamped zero dynamics ({where})"


def _chain(problem, minimum_phase: bool | None, analysis: dict | None = None, bdf: bool = True) -> list:
    """[(problem with one explicit method, label)] in the order they are tried. bdf=False: no BDF
    formulation (no order is stable on the zero dynamics at the step or a fraction of it)."""
    s = problem.solver
    if minimum_phase is False:
        nlp = problem.with_solver(method="nlp").with_nlp(strategy="auto", warm_start=NON_CAUSAL_START)
        return [(nlp, _nlp_label(nlp, "non-causal"))] + _penalty_fallback(problem, "non-causal")
    forms = [s.form] + [f for f in BDF_FORMS if f != s.form]
    chain = [(problem.with_solver(method="bdf", form=f), "") for f in forms]
    if problem.model.drives is None:  # dd does not model DC-motor electrics
        chain.append((problem.with_solver(method="dd"), ""))
    chain = [(c, _bdf_label(c)) for c, _ in chain] if bdf else []
    nlp = problem.with_solver(method="nlp").with_nlp(strategy="auto")
    chain.append((nlp, _nlp_label(nlp, "strategy from the zero dynamics")))
    return chain + _penalty_fallback(problem, "strategy from the zero dynamics")


def _bdf_label(candidate) -> str:
    s = candidate.solver
    head = f"BDF-{s.order}, h = {s.step * 1e3:g} ms"
    return f"{head}, automatic dummy derivatives (dd)" if s.method == "dd" else f"{head}, form {s.form}"


def _penalty_fallback(problem, strategy: str) -> list:
    """The NLP with the path as a heavy penalty, from rest (item 4 of the module docstring: from the rigid
    model's feedforward the fast-zero 3-link arm's penalty NLP stalled at IPOPT's step computation after 112
    iterations); none where the problem already asks for band or penalty tracking."""
    if problem.nlp.tracking != "exact":
        return []
    nlp = problem.with_solver(method="nlp").with_nlp(strategy="auto", warm_start="none", tracking="penalty",
                                                     penalty_weight=PENALTY_FALLBACK_WEIGHT)
    return [(nlp, _nlp_label(nlp, f"{strategy}, path as a penalty of weight {PENALTY_FALLBACK_WEIGHT:g}"))]


def _nlp_label(problem, strategy: str) -> str:
    n = problem.nlp
    return f"collocation NLP ({strategy}, Radau degree {n.degree}, h = {n.step * 1e3:g} ms)" if n.scheme == "radau" \
        else f"collocation NLP ({strategy}, implicit Euler, h = {n.step * 1e3:g} ms)"


def first_sentence(err) -> str:
    """The diagnosis of an error message without its advice, on one line."""
    text = " ".join(str(err).split())
    for marker in (". Try ", ". Set ", ". Check ", ". Use ", "; try "):
        text = text.split(marker)[0]
    text = text.rstrip(".")
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."
