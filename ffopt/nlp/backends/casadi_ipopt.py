"""Backend: IPOPT through CasADi's nlpsol (the default); square NLPs by Newton (backends/newton.py)."""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt.nlp.backends.common import NlpResult, ipopt_options
from ffopt.nlp.transcription import NlpProblem

def _square_by_newton(problem: NlpProblem, tol: float, max_iter: int, max_wall_time: float,
                      w0: np.ndarray | None) -> NlpResult | None:
    """Newton on a square NLP at IPOPT's feasibility tolerance (constr_viol_tol = 1e-3 tol); None if
    the NLP is not square or Newton fails (the caller then runs IPOPT)."""
    from ffopt.nlp.backends.newton import solve_square

    return solve_square(problem, 1e-3 * tol, min(max_iter, 30), max_wall_time, w0)


def solve(problem: NlpProblem, warm: bool, tol: float, max_iter: int, max_wall_time: float,
          w0: np.ndarray | None = None, square_by_newton: bool = True) -> NlpResult:
    res = _square_by_newton(problem, tol, max_iter, max_wall_time, w0) if square_by_newton else None
    return res if res is not None else solve_ipopt(problem, warm, tol, max_iter, max_wall_time, w0)


def solve_auto(problem: NlpProblem, warm: bool, tol: float, max_iter: int, max_wall_time: float,
               w0: np.ndarray | None = None, square_by_newton: bool = True) -> NlpResult:
    """The fastest path: Newton for square NLPs, else IPOPT through cyipopt with the interval-wise
    derivatives (E12 bounded, h = 2 ms: 2.1 s vs 4.8 s through nlpsol; results/nlp.md), else nlpsol."""
    res = _square_by_newton(problem, tol, max_iter, max_wall_time, w0) if square_by_newton else None
    if res is not None:
        return res
    try:
        import cyipopt  # noqa: F401
    except ImportError:
        return solve_ipopt(problem, warm, tol, max_iter, max_wall_time, w0)
    from ffopt.nlp.backends import cyipopt_backend

    return cyipopt_backend.solve(problem, warm, tol, max_iter, max_wall_time, w0)


def solve_ipopt(problem: NlpProblem, warm: bool, tol: float, max_iter: int, max_wall_time: float,
                w0: np.ndarray | None = None) -> NlpResult:
    tic = time.perf_counter()
    opts = {"ipopt": ipopt_options(warm, tol, max_iter, max_wall_time, problem.info.get("hessian", "exact")), "print_time": False}
    solver = ca.nlpsol("ffopt_nlp", "ipopt", {"x": problem.w, "f": problem.f, "g": problem.g}, opts)
    t_build = time.perf_counter() - tic
    tic = time.perf_counter()
    sol = solver(x0=problem.w0 if w0 is None else w0, lbx=problem.lbx, ubx=problem.ubx,
                 lbg=problem.lbg, ubg=problem.ubg)
    wall = time.perf_counter() - tic
    st = solver.stats()
    t_eval = sum(v for k, v in st.items() if k.startswith("t_wall_nlp_"))
    return NlpResult(
        w=np.array(sol["x"]).ravel(), f=float(sol["f"]), status=st["return_status"],
        success=bool(st["success"]), iterations=int(st["iter_count"]), time_total_s=wall,
        time_function_eval_s=float(t_eval), time_build_s=t_build, backend="casadi",
        g=np.array(sol["g"]).ravel(), lbg=problem.lbg, ubg=problem.ubg)
