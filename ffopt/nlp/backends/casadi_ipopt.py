"""Backend: IPOPT through CasADi's nlpsol (the default); square NLPs by Newton (backends/newton.py).

Limits and progress: every IPOPT iteration calls ``IterationCallback`` (nlpsol's
``iteration_callback``), which reports the iterate to the ``SolveMonitor`` and stops IPOPT when
the wall time is used up; IPOPT also gets the remaining iterations and time as its own limits.
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt.nlp.backends.common import (NlpResult, constraint_violation, ipopt_options, not_started,
                                       run_ipopt_isolated)
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.problem import NlpProblem

NEWTON_MAX_ITER = 30  # a square NLP that Newton has not solved by then goes to IPOPT


class IterationCallback(ca.Callback):
    """nlpsol's per-iteration callback -> ``SolveMonitor.iteration``; returns 1 to stop the solver.

    CasADi passes no iteration number: calls are counted, and IPOPT calls once more when it
    enters its restoration phase (where CasADi also passes the last iterate of the main phase),
    so the live count may run ahead of IPOPT's by that; ``SolveMonitor.end_run`` sets IPOPT's.
    """

    def __init__(self, monitor: SolveMonitor, lbx, ubx, lbg, ubg):
        ca.Callback.__init__(self)
        self.monitor, self.calls = monitor, 0
        self.bounds = tuple(np.asarray(b, float).ravel() for b in (lbx, ubx, lbg, ubg))
        self.nx, self.ng = self.bounds[0].size, self.bounds[2].size
        self.construct("ffopt_iteration", {})

    def get_n_in(self):
        return ca.nlpsol_n_out()

    def get_n_out(self):
        return 1

    def get_name_in(self, i):
        return ca.nlpsol_out(i)

    def get_name_out(self, i):
        return "stop"

    def get_sparsity_in(self, i):
        name = ca.nlpsol_out(i)
        if name == "f":
            return ca.Sparsity.scalar()
        if name in ("x", "lam_x"):
            return ca.Sparsity.dense(self.nx)
        if name in ("g", "lam_g"):
            return ca.Sparsity.dense(self.ng)
        return ca.Sparsity(0, 0)

    def eval(self, arg):
        w, f, g = (np.array(a, float).ravel() for a in arg[:3])
        lbx, ubx, lbg, ubg = self.bounds
        go_on = self.monitor.iteration(self.calls, float(f[0]), constraint_violation(w, g, lbx, ubx, lbg, ubg))
        self.calls += 1
        return [0 if go_on else 1]


def _square_by_newton(problem: NlpProblem, tol: float, monitor: SolveMonitor, w0: np.ndarray | None) -> NlpResult | None:
    """Newton on a square NLP at IPOPT's feasibility tolerance (constr_viol_tol = 1e-3 tol). None if
    the NLP is not square, or Newton failed within the limits (the caller then runs IPOPT with
    what is left of them); a result if it succeeded or a limit stopped it."""
    from ffopt.nlp.backends.newton import solve_square

    res = solve_square(problem, 1e-3 * tol, monitor, min(NEWTON_MAX_ITER, monitor.remaining_iterations()), w0)
    if res is None or res.success or monitor.expired() or monitor.stop_reason is not None:
        return res
    return None


def solve(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w0: np.ndarray | None = None,
          square_by_newton: bool = True) -> NlpResult:
    res = _square_by_newton(problem, tol, monitor, w0) if square_by_newton else None
    return res if res is not None else solve_ipopt(problem, warm, tol, monitor, w0)


def solve_auto(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w0: np.ndarray | None = None,
               square_by_newton: bool = True) -> NlpResult:
    """The fastest path: Newton for square NLPs, else IPOPT through its C interface with the interval-wise
    derivatives (``ipopt_c``: E12 bounded, h = 2 ms: 0.65 s of CPU against 0.77 s through cyipopt and 3.0 s
    through nlpsol; results/nlp.md), else cyipopt, else nlpsol."""
    res = _square_by_newton(problem, tol, monitor, w0) if square_by_newton else None
    if res is not None:
        return res
    from ffopt.nlp.backends import ipopt_c

    linear_solver = problem.info.get("linear_solver", "mumps")
    library = ipopt_c.library_for(linear_solver)
    if ipopt_c.available(library):
        return ipopt_c.solve(problem, warm, tol, monitor, w0, library=library, linear_solver=linear_solver)
    if linear_solver != "mumps":  # cyipopt's IPOPT has MUMPS only
        return solve_ipopt(problem, warm, tol, monitor, w0)
    try:
        import cyipopt  # noqa: F401
    except ImportError:
        return solve_ipopt(problem, warm, tol, monitor, w0)
    from ffopt.nlp.backends import cyipopt_backend

    return cyipopt_backend.solve(problem, warm, tol, monitor, w0)


def solve_ipopt(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor,
                w0: np.ndarray | None = None) -> NlpResult:
    """IPOPT via nlpsol in a worker process (``common.run_ipopt_isolated``)."""
    w_start = problem.w0 if w0 is None else w0
    return run_ipopt_isolated(lambda mon: _solve_ipopt(problem, warm, tol, mon, w_start), w_start, monitor,
                              "casadi", "IPOPT via CasADi")


def _solve_ipopt(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w_start: np.ndarray) -> NlpResult:
    tic = time.perf_counter()
    callback = IterationCallback(monitor, problem.lbx, problem.ubx, problem.lbg, problem.ubg)
    ipopt = ipopt_options(warm, tol, monitor.remaining_iterations(), monitor.remaining_time(),
                          problem.info.get("hessian", "exact"), monitor.remaining_cpu_time(),
                          problem.info.get("linear_solver", "mumps"))
    solver = ca.nlpsol("ffopt_nlp", "ipopt", {"x": problem.w, "f": problem.f, "g": problem.g},
                       {"ipopt": ipopt, "print_time": False, "iteration_callback": callback})
    t_build = time.perf_counter() - tic
    if monitor.expired():
        return not_started(w_start, "casadi", monitor, "the limit was used up while CasADi set up IPOPT", t_build)
    monitor.begin("IPOPT via CasADi")
    tic = time.perf_counter()
    sol = solver(x0=w_start, lbx=problem.lbx, ubx=problem.ubx, lbg=problem.lbg, ubg=problem.ubg)
    wall = time.perf_counter() - tic
    res = result_from_nlpsol(solver, sol, "casadi", wall, t_build, problem.lbg, problem.ubg)
    monitor.end_run(res.iterations)
    return res


def result_from_nlpsol(solver: ca.Function, sol: dict, backend: str, wall: float, t_build: float,
                       lbg, ubg) -> NlpResult:
    st = solver.stats()
    t_eval = sum(v for k, v in st.items() if k.startswith("t_wall_nlp_"))
    return NlpResult(
        w=np.array(sol["x"]).ravel(), f=float(sol["f"]), status=st["return_status"],
        success=bool(st["success"]), iterations=int(st["iter_count"]), time_total_s=wall,
        time_function_eval_s=float(t_eval), time_build_s=t_build, backend=backend,
        g=np.array(sol["g"]).ravel(), lbg=np.asarray(lbg), ubg=np.asarray(ubg))
