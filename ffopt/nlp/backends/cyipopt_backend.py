"""Backend: IPOPT through cyipopt (PyPI package cyipopt-wheels), on the same CasADi functions.

f, its gradient, g, the sparse Jacobian of g and the lower triangle of the Hessian of the Lagrangian
come from the transcription's kernels (``transcription.StructuredDerivatives``: compiled C per interval
and per collocation point, ``ffopt.nlp.compiled``) when it offers them, else from CasADi (AD of the whole
graph). cyipopt drives its own bundled IPOPT with them.
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt import interrupt
from ffopt.errors import SolverError
from ffopt.nlp.backends.common import (SUCCESS_STATUSES, NlpResult, constraint_violation, ipopt_options,
                                       not_started, run_ipopt_isolated)
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.transcription import NlpProblem


def prepared_derivatives(problem: NlpProblem):
    """The transcription's interval-wise kernels for ``problem`` (transcription.StructuredDerivatives), or None
    (then CasADi's AD of the whole graph). Made before IPOPT's worker process starts, the worker inherits them
    (E12 bounded, 2 ms: 20 ms here against 48 ms in the freshly forked worker, which pays for its page copies)."""
    make = problem.info.get("derivatives")
    return make() if make is not None else None


class _CasadiCallbacks:
    """The callback object cyipopt expects, timing every function evaluation."""

    def __init__(self, problem: NlpProblem, monitor: SolveMonitor, derivatives=None):
        """derivatives: the transcription's kernels if already made (``prepared_derivatives``)."""
        w, f, g = problem.w, problem.f, problem.g
        self.time_eval = 0.0
        self.iterations = 0
        self.monitor = monitor
        self.ipopt = None  # the cyipopt.Problem, for the current iterate
        self.bounds = (problem.lbx, problem.ubx, problem.lbg, problem.ubg)
        self._der = derivatives if derivatives is not None else prepared_derivatives(problem)
        if self._der is not None:
            self._f, self._grad, self._g = self._der.objective, self._der.gradient, self._der.constraints
            return
        f_fun, grad_fun, g_fun = (ca.Function(name, [w], [expr]) for name, expr in
                                  (("f", f), ("grad_f", ca.gradient(f, w)), ("g", g)))
        self._f = lambda x: float(f_fun(x))  # noqa: E731
        self._grad = lambda x: np.array(grad_fun(x)).ravel()  # noqa: E731
        self._g = lambda x: np.array(g_fun(x)).ravel()  # noqa: E731
        sigma, lam = ca.MX.sym("sigma"), ca.MX.sym("lam", g.numel())
        jac = ca.jacobian(g, w)
        hess = ca.tril(ca.hessian(sigma * f + ca.dot(lam, g), w)[0])
        self._jac = ca.Function("jac_g", [w], [jac])
        self._hess = ca.Function("hess_l", [w, sigma, lam], [hess])
        self._jac_sp = jac.sparsity()
        self._hess_sp = self._hess.sparsity_out(0)

    def _timed(self, fun, *args):
        tic = time.perf_counter()
        out = fun(*args)
        self.time_eval += time.perf_counter() - tic
        return out

    def objective(self, w):
        return self._timed(self._f, w)

    def gradient(self, w):
        return self._timed(self._grad, w)

    def constraints(self, w):
        return self._timed(self._g, w)

    def jacobianstructure(self):
        if self._der is not None:
            return self._der.jac.rows, self._der.jac.cols
        return self._jac_sp.get_triplet()

    def jacobian(self, w):
        if self._der is not None:
            return self._timed(self._der.jacobian_values, w)
        return np.array(self._timed(self._jac, w).nonzeros())

    def hessianstructure(self):
        if self._der is not None:
            return self._der.hess.rows, self._der.hess.cols
        return self._hess_sp.get_triplet()

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, *args):
        """Once per IPOPT iteration: report it; False stops IPOPT (wall time used up, or interrupted).
        The infeasibility is the one every backend reports (``constraint_violation`` of the NLP as
        ffopt scales it); IPOPT's own inf_pr (slack-based, in IPOPT's scaling) only where the
        iterate is not available (restoration phase)."""
        self.iterations = int(iter_count)
        if interrupt.received():  # Ctrl-C held by interrupt.deferred(): stop IPOPT between iterations
            return False
        it = self.ipopt.get_current_iterate() if self.ipopt is not None else None
        infeasibility = inf_pr if it is None else constraint_violation(it["x"], it["g"], *self.bounds)
        return self.monitor.iteration(iter_count, obj_value, infeasibility)

    def hessian(self, w, lam, sigma):
        if self._der is not None:
            return self._timed(self._der.hessian_values, w, lam, sigma)
        return np.array(self._timed(self._hess, w, sigma, lam).nonzeros())


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
    cb = _CasadiCallbacks(problem, monitor)
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
    status_name = _STATUS_NAMES.get(info["status"], status)
    iters = cb.iterations
    monitor.end_run(iters)
    return NlpResult(w=np.asarray(w, float), f=float(info["obj_val"]), status=status_name,
                     success=status_name in SUCCESS_STATUSES, iterations=iters, time_total_s=wall,
                     time_function_eval_s=cb.time_eval, time_build_s=t_build, backend="cyipopt",
                     g=np.asarray(info["g"], float), lbg=problem.lbg, ubg=problem.ubg)


# IPOPT ApplicationReturnStatus codes -> the names CasADi reports
_STATUS_NAMES = {0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
                 3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates",
                 5: "User_Requested_Stop", 6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded",
                 -2: "Restoration_Failed", -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded",
                 -5: "Maximum_WallTime_Exceeded", -10: "Not_Enough_Degrees_Of_Freedom",
                 -11: "Invalid_Problem_Definition", -13: "Invalid_Number_Detected"}

