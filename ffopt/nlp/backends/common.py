"""What every backend returns, and the IPOPT options they share (so they solve the same NLP)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ffopt.nlp.backends.isolated import run_isolated

SUCCESS_STATUSES = ("Solve_Succeeded", "Solved_To_Acceptable_Level")
# IPOPT's ApplicationReturnStatus (IpReturnCodes_inc.h) -> the names CasADi reports
IPOPT_STATUS_NAMES = {0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
                      3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates", 5: "User_Requested_Stop",
                      6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded", -2: "Restoration_Failed",
                      -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded",
                      -5: "Maximum_WallTime_Exceeded", -10: "Not_Enough_Degrees_Of_Freedom",
                      -11: "Invalid_Problem_Definition", -12: "Invalid_Option", -13: "Invalid_Number_Detected",
                      -100: "Unrecoverable_Exception", -101: "NonIpopt_Exception_Thrown", -102: "Insufficient_Memory",
                      -199: "Internal_Error"}


@dataclass
class NlpResult:
    w: np.ndarray  # optimal scaled variables
    f: float
    status: str
    success: bool
    iterations: int
    time_total_s: float  # wall time of the solve call
    time_function_eval_s: float  # of which in NLP function evaluations
    time_build_s: float  # building the solver (and for pyomo: model, .nl file, import)
    backend: str
    g: np.ndarray | None = None  # constraint values at the solution
    lbg: np.ndarray | None = None
    ubg: np.ndarray | None = None
    method: str = "ipopt"  # or newton (square NLP, see backends/newton.py)
    note: str = ""  # what the diagnosis should know (e.g. stopped during the solver set-up)
    extra: dict = field(default_factory=dict)  # backend-specific stats (e.g. fatrop's stage structure)

    @property
    def time_ipopt_s(self) -> float:
        """Time inside IPOPT itself (linear algebra, line search), without function evaluations."""
        return max(self.time_total_s - self.time_function_eval_s, 0.0)

    def max_constraint_violation(self) -> float:
        if self.g is None:
            return float("nan")
        return float(np.max(np.concatenate([[0.0], self.lbg - self.g, self.g - self.ubg])))

    def stats(self) -> dict:
        return {"backend": self.backend, "nlp_method": self.method, "status": self.status, "success": self.success,
                "iterations": self.iterations, "objective": self.f,
                "time_solve_s": self.time_total_s, "time_ipopt_s": self.time_ipopt_s,
                "time_function_eval_s": self.time_function_eval_s, "time_build_s": self.time_build_s,
                "max_constraint_violation_scaled": self.max_constraint_violation(), **self.extra}


def constraint_violation(w, g, lbx, ubx, lbg, ubg) -> float:
    """Largest violation of the (scaled) constraints and variable bounds: the primal infeasibility."""
    parts = [np.zeros(1), lbg - g, g - ubg, lbx - w, w - ubx]
    return float(np.nanmax(np.concatenate([np.asarray(p, float).ravel() for p in parts])))


def stop_status(monitor) -> str:
    """The IPOPT status name for a run the monitor stopped."""
    return {"max_wall_time": "Maximum_WallTime_Exceeded", "max_cpu_time": "Maximum_CpuTime_Exceeded",
            "max_iter": "Maximum_Iterations_Exceeded", "diverging": "Diverging_Iterates"}.get(
        monitor.stop_reason, "User_Requested_Stop")


def not_started(w0: np.ndarray, backend: str, monitor, note: str = "", time_build_s: float = 0.0) -> NlpResult:
    """The result of a solve whose limits were used up before its solver could start."""
    monitor.expired()
    return NlpResult(w=np.asarray(w0, float), f=float("nan"), status=stop_status(monitor), success=False,
                     iterations=monitor.iterations, time_total_s=0.0, time_function_eval_s=0.0,
                     time_build_s=time_build_s, backend=backend, note=note)


def ipopt_grace_s(monitor) -> float:
    """How long after a time limit an IPOPT worker may take to end its last iteration (it stops
    itself between iterations) before it is ended: 10 % of the CPU limit (or of the wall-time
    limit if that is the smaller), at least 5 s."""
    return max(5.0, 0.1 * min(monitor.max_wall_time_s, monitor.max_cpu_time_s))


def run_ipopt_isolated(solve, w_start: np.ndarray, monitor, backend: str, what: str) -> NlpResult:
    """``solve(monitor)``, one IPOPT run, in a worker process (``isolated.run_isolated``): IPOPT checks
    its limits only between iterations, and one iteration can run on for many minutes (seen: a MUMPS
    factorisation of a diverging non-causal NLP still running 15 minutes after a 120 s limit). The
    worker is ended ``ipopt_grace_s`` after a limit (its CPU time, or the wall time); the result then
    says so, and which limit it was (``monitor.stop_reason``, the status)."""
    if monitor.expired():
        return not_started(w_start, backend, monitor)
    grace = ipopt_grace_s(monitor)
    res = run_isolated(solve, monitor, what, grace)
    if res is not None:
        return res
    which = "CPU-time" if monitor.stop_reason == "max_cpu_time" else "wall-time"
    return not_started(w_start, backend, monitor, f"IPOPT was still inside one iteration {grace:g} s after the "
                       f"{which} limit (a factorisation of its linear system that did not finish) and was ended")


def ipopt_options(warm: bool, tol: float, max_iter: int, max_wall_time: float, hessian: str = "exact",
                  max_cpu_time: float | None = None, linear_solver: str = "mumps") -> dict:
    """IPOPT options; with ``warm`` the primal start point is kept (small barrier, tiny push).

    ``linear_solver``: "mumps" or "spral" (``NlpSettings.linear_solver``).
    ``hessian``: "exact", "limited-memory" (L-BFGS; used where the NLP is square, see
    ffopt.nlp.solve.hessian_mode: the feasible set is a point and second derivatives only slow
    each iteration down) or "gauss-newton" (exact for IPOPT; the callbacks leave the constraints' curvature out).
    """
    # u = Jm * d(vm)/dt + ... is a derivative of the collocation polynomial of an algebraic-like
    # motor velocity: a residual of 1e-8 (scaled) in the gear rows moved u by ~200 N m on E12
    # (1 mm tool error), so feasibility is required much tighter than optimality.
    opts = {"tol": tol, "constr_viol_tol": 1e-3 * tol, "max_iter": int(max_iter), "print_level": 0,
            "sb": "yes", "max_wall_time": float(max_wall_time), "mu_strategy": "adaptive",
            # MUMPS's iterative row and column scaling (ICNTL(8) = 8). Without it (0, the earlier choice: the NLP
            # is scaled already) a drawn non-causal arm spent 31 s of its 48 s in IPOPT's first factorisation
            # (the least-squares multiplier system, twice re-allocated); with it 3.6 s in all. Over 16 NLPs
            # (results/nlp.md, "MUMPS scaling") the NLP time fell from 117 to 54 s, the slowest from 48 to 11 s.
            "mumps_scaling": 8,
            # No iterative refinement of the Newton steps unless asked, and no residual checks of them (MUMPS with
            # its scaling solves these KKT systems to roundoff): over 15 NLPs (results/ipopt_refinement.py) the NLP
            # CPU fell from 40.1 to 32.8 s, the slowest from 9.2 to 5.4 s, with the same verified errors.
            "min_refinement_steps": 0, "fast_step_computation": "yes",
            # gauss-newton: the exact-Hessian iteration on the Hessian the callbacks give (ffopt.nlp.solve.hessian_mode)
            "hessian_approximation": "exact" if hessian == "gauss-newton" else hessian}
    if linear_solver == "spral":  # its fastest variant on E12 (results/nlp.md): METIS order, no scaling (as MUMPS)
        del opts["mumps_scaling"]
        opts.update({"linear_solver": "spral", "spral_order": "metis", "spral_scaling": "none", "spral_use_gpu": "no"})
    if max_cpu_time is not None and max_cpu_time < 1e20:
        opts["max_cpu_time"] = float(max_cpu_time)  # IPOPT's own CPU clock, from the start of its solve
    if warm:
        opts.update({"warm_start_init_point": "yes", "mu_init": 1e-6, "warm_start_bound_push": 1e-8,
                     "warm_start_mult_bound_push": 1e-8, "warm_start_bound_frac": 1e-8,
                     "warm_start_slack_bound_push": 1e-8, "warm_start_slack_bound_frac": 1e-8})
    return opts
