"""Backend: IPOPT through cyipopt (PyPI package cyipopt-wheels), on the same CasADi functions.

f, its gradient, g, the sparse Jacobian of g and the lower triangle of the Hessian of the Lagrangian
come from the transcription's kernels (``transcription.StructuredDerivatives``: compiled C per interval
and per collocation point, ``ffopt.nlp.compiled``) when it offers them, else from CasADi (AD of the whole
graph). cyipopt drives its own bundled IPOPT with them.
"""

from __future__ import annotations

import time

import numpy as np

from ffopt import interrupt
from ffopt.errors import SolverError
from ffopt.nlp.backends.callbacks import IpoptCallbacks
from ffopt.nlp.backends.common import (IPOPT_STATUS_NAMES, SUCCESS_STATUSES, NlpResult, ipopt_options,
                                       not_started, run_ipopt_isolated)
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.problem import NlpProblem


def solve(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor,
          w0: np.ndarray | None = None) -> NlpResult:
    """IPOPT via cyipopt, in a worker process (``common.run_ipopt_isolated``)."""
    try:
        import cyipopt  # noqa: F401
    except ImportError as err:  # pragma: no cover - cyipopt-wheels is a dependency
        raise SolverError(f"nlp.backend = 'cyipopt' needs the cyipopt module (pip install cyipopt-wheels): {err}")
    w_start = problem.w0 if w0 is None else w0
    return run_ipopt_isolated(lambda mon: _solve(problem, warm, tol, mon, w_start), w_start, monitor,
                              "cyipopt", "IPOPT via cyipopt")


def _solve(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w_start: np.ndarray) -> NlpResult:
    """IPOPT via cyipopt in this process. An exception in a callback (e.g. KeyboardInterrupt from
    Ctrl-C) stops IPOPT at the next iteration and cyipopt re-raises it."""
    import cyipopt

    tic = time.perf_counter()
    cb = IpoptCallbacks(problem, monitor)
    big = 1e19  # IPOPT's infinity
    nlp = cyipopt.Problem(n=problem.n_variables, m=problem.n_constraints, problem_obj=cb,
                          lb=np.clip(problem.lbx, -big, big), ub=np.clip(problem.ubx, -big, big),
                          cl=np.clip(problem.lbg, -big, big), cu=np.clip(problem.ubg, -big, big))
    cb.ipopt = nlp
    t_build = time.perf_counter() - tic
    if monitor.expired():
        return not_started(w_start, "cyipopt", monitor, "the limit was used up while the derivatives were set up",
                           t_build)
    for key, value in ipopt_options(warm, tol, monitor.remaining_iterations(), monitor.remaining_time(),
                                    problem.info.get("hessian", "exact"), monitor.remaining_cpu_time()).items():
        nlp.add_option(key, value)
    monitor.begin("IPOPT via cyipopt")
    tic = time.perf_counter()
    with interrupt.deferred():  # never a KeyboardInterrupt inside a callback
        w, info = nlp.solve(w_start)
    wall = time.perf_counter() - tic
    status = info["status_msg"].decode() if isinstance(info["status_msg"], bytes) else str(info["status_msg"])
    status_name = IPOPT_STATUS_NAMES.get(info["status"], status)
    iters = cb.iterations
    monitor.end_run(iters)
    return NlpResult(w=np.asarray(w, float), f=float(info["obj_val"]), status=status_name,
                     success=status_name in SUCCESS_STATUSES, iterations=iters, time_total_s=wall,
                     time_function_eval_s=cb.time_eval, time_build_s=t_build, backend="cyipopt",
                     g=np.asarray(info["g"], float), lbg=problem.lbg, ubg=problem.ubg)
