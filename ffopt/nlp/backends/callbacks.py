"""The NLP's callbacks for IPOPT (f, its gradient, g, the Jacobian and Hessian values and structures, the
iteration callback): the object cyipopt expects, which the C-interface backend (``ipopt_c``) wraps too.

f, its gradient, g, the sparse Jacobian of g and the lower triangle of the Hessian of the Lagrangian come from
the transcription's kernels (``transcription.StructuredDerivatives``) when it offers them, else from CasADi (AD of
the whole graph).
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt import interrupt
from ffopt.nlp.backends.common import constraint_violation
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.problem import NlpProblem


def prepared_derivatives(problem: NlpProblem):
    """The transcription's interval-wise kernels for ``problem`` (transcription.StructuredDerivatives), or None
    (then CasADi's AD of the whole graph). Made before IPOPT's worker process starts, the worker inherits them
    (E12 bounded, 2 ms: 20 ms here against 48 ms in the freshly forked worker, which pays for its page copies)."""
    make = problem.info.get("derivatives")
    return make() if make is not None else None


class IpoptCallbacks:
    """The callback object cyipopt expects (the C-interface backend wraps the same one), timing every function
    evaluation."""

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
