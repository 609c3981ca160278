"""Backend: fatrop (CasADi's nlpsol plugin, in the casadi wheel) on the stage-ordered NLP.

fatrop is an interior point that factorises its KKT system by a Riccati recursion over stages
(``ffopt.nlp.stages`` builds the stage ordering); the structure is given explicitly (N, nx, nu,
ng per stage). Same NLP, scaling and tolerances as the IPOPT backends; the solution is mapped
back to the transcription's layout.

Limits: fatrop takes ``max_iter`` (the monitor's remaining iterations) but has no wall-time
limit and nlpsol's iteration callback is not called by this plugin, so there is no live
progress per iteration; the monitor sees one run with fatrop's iteration count. CasADi's set-up
and the solve are long native calls (600 s without a line on a 6-axis arm, deaf to SIGTERM), so
they run in a worker process (``backends/isolated.py``): the parent says that it waits at the
live interval, ends the worker at the CPU or wall-time limit and on Ctrl-C or SIGTERM.

Measured (results/nlp.md, results/nlp_solvers.py): correct (same optimum as IPOPT), fast linear
algebra per iteration, but CasADi's interface spends seconds setting up its block patterns
(quadratic in the number of stages) and its AD of the mapped graph costs ~0.1 s per Hessian, so
it is not the default.
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt.nlp.backends.common import NlpResult, not_started
from ffopt.nlp.backends.isolated import run_isolated
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.stages import build_stages
from ffopt.nlp.problem import NlpProblem
from ffopt.nlp.transcription import Transcription


def fatrop_options(warm: bool, tol: float, max_iter: int) -> dict:
    """fatrop's options, matching the IPOPT ones where fatrop has them (no warm_start_* options:
    a warm start is a small initial barrier parameter and bound push)."""
    opts = {"tol": tol, "constr_viol_tol": 1e-3 * tol, "max_iter": int(max_iter), "print_level": 0}
    if warm:
        opts.update({"mu_init": 1e-6, "bound_push": 1e-8, "bound_frac": 1e-8})
    return opts


def solve(tr: Transcription, problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor,
          intervals: int = 1) -> NlpResult:
    """fatrop on the stage-ordered NLP, in a worker process (module docstring)."""
    if monitor.expired():
        return not_started(problem.w0, "fatrop", monitor)
    res = run_isolated(lambda mon: _solve(tr, problem, warm, tol, mon, intervals), monitor, "fatrop (CasADi set-up "
                       "and solve)")
    if res is not None:
        return res
    note = ("the limit was reached while CasADi set up fatrop (its set-up grows with the square of the stages)"
            if not monitor.history else "the fatrop worker was ended at the limit")
    return not_started(problem.w0, "fatrop", monitor, note)


def _solve(tr: Transcription, problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor,
           intervals: int) -> NlpResult:
    tic = time.perf_counter()
    st = build_stages(tr, problem, intervals)
    opts = {"print_time": False, "fatrop": fatrop_options(warm, tol, monitor.remaining_iterations())}
    opts.update(st.structure_options())
    solver = ca.nlpsol("ffopt_fatrop", "fatrop", {"x": st.w, "f": st.f, "g": st.g}, opts)
    t_build = time.perf_counter() - tic
    if monitor.expired():
        return not_started(problem.w0, "fatrop", monitor, "the limit was used up while CasADi set up fatrop", t_build)
    monitor.begin("fatrop via CasADi")
    tic = time.perf_counter()
    sol = solver(x0=st.w0, lbx=st.lbx, ubx=st.ubx, lbg=st.lbg, ubg=st.ubg)
    wall = time.perf_counter() - tic
    stats = solver.stats()
    iterations = int(stats["iter_count"])
    fat = stats.get("fatrop", {})
    t_eval = sum(float(fat.get(k, 0.0)) for k in ("eval_hess_time", "eval_jac_time", "eval_cv_time",
                                                      "eval_grad_time", "eval_obj_time"))
    success = bool(stats["success"])
    if success:
        status = "Solve_Succeeded"
    elif iterations >= monitor.remaining_iterations():
        status = "Maximum_Iterations_Exceeded"
    else:
        status = f"fatrop_failed ({stats.get('unified_return_status', stats['return_status'])})"
    w = st.layout.to_transcription(np.array(sol["x"]).ravel())
    res = NlpResult(w=w, f=float(sol["f"]), status=status, success=success, iterations=iterations,
                    time_total_s=wall, time_function_eval_s=t_eval, time_build_s=t_build, backend="fatrop",
                    g=np.array(sol["g"]).ravel(), lbg=st.lbg, ubg=st.ubg, method="fatrop",
                    note="" if success else "fatrop has no restoration phase and no acceptable-level exit",
                    extra={"n_stages": st.n_stages, "stage_nx": st.nx[0], "stage_nu": st.nu[0], "stage_ng": st.ng[0],
                           "time_riccati_s": float(fat.get("compute_sd_time", float("nan")))})
    monitor.end_run(iterations)
    return res
