"""Square NLPs (causal exact tracking without bounds): Newton on g(w) = 0, its step by block forward
substitution in stage order (``Transcription.newton_step``), else by a sparse LU.

When the free variables are exactly determined by the equality constraints (as many free
variables as equations, no inequalities, no finite bounds on free variables) the feasible set
is a single point and the NLP's solution is the root of g. IPOPT then only adds cost: its
symmetric indefinite KKT factorisation (MUMPS LDL^T of [[W, J^T], [J, 0]]) needs delayed
2x2 pivots and took ~1.5 s per factorisation on E12 at h = 1 ms, whereas an unsymmetric sparse
LU of J alone (SuperLU, COLAMD ordering: fill 1.6x) takes ~0.05 s (results/nlp.md).

Ordered by stage, the Jacobian of the collocation NLP is block lower bidiagonal, so the step is a
forward substitution over the intervals (E12, h = 1 ms: 820 blocks of 42 x 42; ~25 ms per step against
~37 ms for assembling J and SuperLU, results/nlp.md); SuperLU remains for the other square NLPs and
takes over an iteration whose stage-wise step is not finite.

The iteration is damped Newton (backtracking on ||g||_inf); it stops when the scaled residual
is below ``feas_tol`` (the same constr_viol_tol the IPOPT backends use). Returns None when the
NLP is not square; if Newton fails, the caller falls back to IPOPT.
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from ffopt.nlp.backends.common import NlpResult, not_started, stop_status
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.problem import NlpProblem


def free_variables(problem: NlpProblem) -> np.ndarray | None:
    """Indices of the free variables if the NLP is square, else None."""
    fixed = problem.lbx == problem.ubx
    free = np.nonzero(~fixed)[0]
    if not np.array_equal(problem.lbg, problem.ubg) or free.size != problem.n_constraints:
        return None
    if np.any(np.isfinite(problem.lbx[free])) or np.any(np.isfinite(problem.ubx[free])):
        return None
    return free


def stage_solver(problem: NlpProblem, free: np.ndarray):
    """The transcription's Newton step by block forward substitution (stage order), where it has one and the
    free variables are all but the fixed start state; None otherwise (SuperLU). A singular block gives a
    non-finite step, and that iteration then takes SuperLU's."""
    step = problem.info.get("newton_step")
    n_fixed = problem.n_variables - free.size
    if step is None or not np.array_equal(free, np.arange(n_fixed, problem.n_variables)):
        return None

    def solve(w, r):
        with np.errstate(all="ignore"):
            try:
                return step(w, r)
            except np.linalg.LinAlgError:
                return None
    return solve


def solve_square(problem: NlpProblem, feas_tol: float, monitor: SolveMonitor, max_iter: int = 30,
                 w0: np.ndarray | None = None) -> NlpResult | None:
    """Damped Newton with SuperLU (COLAMD); None if the NLP is not square.

    Every iteration is reported to ``monitor`` (objective, max-norm of the residual), which stops
    the iteration when the wall time is used up. The result says whether Newton succeeded; its
    status otherwise: Maximum_Iterations_Exceeded, Maximum_WallTime_Exceeded, Singular_Jacobian,
    Newton_Stalled, Newton_Diverged (non-finite residual) or User_Requested_Stop.
    """
    free = free_variables(problem)
    if free is None:
        return None
    w = np.array(problem.w0 if w0 is None else w0, float).copy()
    if monitor.expired():
        return not_started(w, "casadi", monitor)
    tic = time.perf_counter()
    w_sym = problem.w
    g_fun = problem.info.get("g")  # the transcription's interval kernels, if it has them
    if g_fun is None:
        g_mx = ca.Function("g", [w_sym], [problem.g])
        g_fun = lambda x: np.array(g_mx(x)).ravel()  # noqa: E731
    jac_fun = problem.info.get("jac_g")  # the transcription's interval-wise assembly, if it has one
    if jac_fun is None:
        jac_mx = ca.Function("jac_g", [w_sym], [ca.jacobian(problem.g, w_sym)])
        jac_fun = lambda x: scipy.sparse.csc_matrix(jac_mx(x).sparse())  # noqa: E731
    f_fun = ca.Function("f", [w_sym], [problem.f])
    by_stages = stage_solver(problem, free)
    t_build = time.perf_counter() - tic

    monitor.begin("Newton (square NLP)")
    tic = time.perf_counter()
    t_eval = 0.0
    fixed = problem.lbx == problem.ubx
    w[fixed] = problem.lbx[fixed]
    target = problem.lbg

    def evaluate(fun, x):
        nonlocal t_eval
        t = time.perf_counter()
        out = fun(x)
        t_eval += time.perf_counter() - t
        return out

    def residual(x):
        return evaluate(g_fun, x) - target

    r = residual(w)
    norm = np.abs(r).max()
    iters, status, used_lu = 0, "Maximum_Iterations_Exceeded", by_stages is None
    while True:
        go_on = monitor.iteration(iters, float(evaluate(f_fun, w)), norm)
        if norm <= feas_tol:
            status = "Solve_Succeeded"
            break
        if not go_on:
            status = stop_status(monitor)
            break
        if not np.isfinite(norm):
            status = "Newton_Diverged"
            break
        if iters >= max_iter:
            break
        step = by_stages(w, r) if by_stages is not None else None
        if step is None or not np.all(np.isfinite(step)):
            used_lu = True
            J = evaluate(jac_fun, w)[:, free]
            try:
                step = scipy.sparse.linalg.splu(J.tocsc(), permc_spec="COLAMD").solve(-r)
            except RuntimeError:  # exactly singular Jacobian
                status = "Singular_Jacobian"
                break
        iters += 1
        alpha, accepted = 1.0, False
        while alpha >= 1e-4:  # backtracking on the max-norm of the residual
            trial = w.copy()
            trial[free] += alpha * step
            r_trial = residual(trial)
            n_trial = np.abs(r_trial).max()
            if n_trial < norm or n_trial <= feas_tol:
                w, r, norm, accepted = trial, r_trial, n_trial, True
                break
            alpha *= 0.5
        if not accepted:
            status = "Newton_Stalled"
            break
    monitor.end_run(iters)
    return NlpResult(w=w, f=float(evaluate(f_fun, w)), status=status, success=status == "Solve_Succeeded",
                     iterations=iters, time_total_s=time.perf_counter() - tic, time_function_eval_s=t_eval,
                     time_build_s=t_build, backend="casadi", g=r + target, lbg=problem.lbg, ubg=problem.ubg,
                     method="newton (square NLP, " + ("SuperLU)" if used_lu else "block forward substitution)"))
