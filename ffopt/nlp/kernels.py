"""The collocation NLP's small functions: the model at one collocation point, one interval of the collocation
equations, and the kernels the NLP's derivatives are assembled from.

- ``PointModel``: the residual rows eq(t, x, xdot, u), the output error err(t, x) = Gamma(q) - theta(t), the
  accelerations and the input recovered from (x, xdot), at one point (SX; ``ffopt.nlp.transcription`` chooses
  the formulation). ``interval_function``: the d points of one interval with the rule's derivative weights.
- ``Kernels``: built on first use and compiled if asked (``ffopt.nlp.compiled``), each as a ``KernelSet``, the
  functions with the sparsity patterns of their outputs: ``jacobian()`` the row-scaled residual of one interval
  and its Jacobian w.r.t. the scaled [xs; vec(X); vec(U)], ``hessian()`` the lower triangle of the Hessian of
  lam' vec(diag(rs) G), ``point()`` one point's output error with its Jacobian, the gradient of a |E|^2 and the
  Hessian of a |E|^2 + mu' E. Assembling the NLP's derivatives from K evaluations of these small functions
  avoids CasADi's AD of the whole MX graph (0.5 s to build at h = 1 ms on E12, and 0.2 s per evaluation).
  They depend on the model, the path (the output error) and the formulation only, so they are kept per model
  and reference: a replan pays only for the numbers.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.cache import per_model
from ffopt.nlp.collocation import CollocationRule
from ffopt.nlp.compiled import IntervalKernel, compile_kernels

Pattern = tuple[np.ndarray, np.ndarray]  # (rows, columns) of a sparse output's nonzeros, in their order

_WHAT = {"jac": "interval Jacobians", "hess": "interval Hessians", "pt": "point output errors"}


@dataclass(frozen=True, eq=False)
class PointModel:
    """The model at one collocation point: eq(t, x, xd, u) -> residual rows, err(t, x) -> output error,
    accel(x, xd) -> accelerations, input(x, xd) -> the input the states imply (SX functions)."""

    eq: ca.Function
    err: ca.Function
    accel: ca.Function
    input: ca.Function

    @property
    def n_x(self) -> int:
        return int(self.eq.numel_in(1))

    @property
    def n_u(self) -> int:
        return int(self.eq.numel_in(3))

    @property
    def n_eq(self) -> int:
        return int(self.eq.size1_out(0))

    @property
    def n_out(self) -> int:
        return int(self.err.size1_out(0))

    def interval_function(self, rule: CollocationRule) -> ca.Function:
        """(x_start, X (n_x, d), U (n_u, d), t_k, h) -> (G (n_eq, d), E (n_out, d)) of one interval."""
        d = rule.degree
        xs = ca.SX.sym("xs", self.n_x)
        X = ca.SX.sym("X", self.n_x, d)
        U = ca.SX.sym("U", self.n_u, d)
        tk, h = ca.SX.sym("tk"), ca.SX.sym("h")
        P = ca.horzcat(xs, X)
        G, E = [], []
        for j in range(d):
            xd = P @ ca.DM(rule.deriv[:, j]) / h
            tj = tk + rule.tau[j] * h
            G.append(self.eq(tj, X[:, j], xd, U[:, j]))
            E.append(self.err(tj, X[:, j]))
        return ca.Function("interval", [xs, X, U, tk, h], [ca.horzcat(*G), ca.horzcat(*E)],
                           ["xs", "X", "U", "tk", "h"], ["G", "E"])


@dataclass(frozen=True, eq=False)
class KernelSet:
    """Kernels (``ffopt.nlp.compiled.IntervalKernel``) by name, and the sparsity pattern of each sparse output by
    name (local rows and columns of its nonzeros, in the order the kernel returns them)."""

    functions: dict[str, IntervalKernel]
    patterns: dict[str, Pattern]

    def __getitem__(self, name: str) -> IntervalKernel:
        return self.functions[name]


class Kernels:
    """The interval and point kernels of one formulation (module text), made on first use and shared per model and
    reference. compile: as C (``ffopt.nlp.compiled.compile_kernels``); after one failed build the rest run in
    CasADi's virtual machine (one warning). say: told before a compilation (seconds)."""

    def __init__(self, points: PointModel, rule: CollocationRule, model, reference, formulation: tuple,
                 compile: bool = True, say=None):
        self.points, self.rule = points, rule
        self.model, self.reference, self.formulation = model, reference, formulation
        self.compile = compile
        self.say = say or (lambda msg: None)
        self._sets: dict[str, KernelSet] = {}  # this transcription's, by kind

    def jacobian(self) -> KernelSet:
        """"res": vec(diag(rs) G) of one interval, "jac": its Jacobian w.r.t. the scaled [xs; vec(X); vec(U)]."""
        return self._get("jac")

    def hessian(self) -> KernelSet:
        """"hess": the lower triangle of the Hessian of lam' vec(diag(rs) G) of one interval."""
        return self._get("hess")

    def point(self) -> KernelSet:
        """One point's output error "err", its Jacobian "err_jac", the gradient "err_grad" of a |E|^2 and the lower
        triangle "err_hess" of the Hessian of a |E|^2 + mu' E (inputs t, scaled x, sx[, a[, mu]])."""
        return self._get("pt")

    def _get(self, which: str) -> KernelSet:
        if which in self._sets:
            return self._sets[which]
        # per model and reference (the path enters the output error): a replan pays only for the numbers
        key = ("nlp_kernels", which, *self.formulation, self.compile)
        by_reference = per_model(self.model, key, weakref.WeakKeyDictionary)
        hit = by_reference.get(self.reference)
        if hit is None:
            build = {"jac": self._jacobian_functions, "hess": self._hessian_functions, "pt": self._point_functions}
            functions, patterns = build[which]()
            kernels = {name: IntervalKernel(f) for name, f in functions.items()}
            if self.compile:  # one warning if it fails, then the VM for the rest
                self.compile = compile_kernels(kernels, which, lambda: self.say(
                    f"compiling the NLP's {_WHAT[which]} to C (once per model; cached)"), self.say)
            hit = by_reference[self.reference] = KernelSet(kernels, patterns)
        self._sets[which] = hit
        return hit

    def _scaled_interval(self):
        """One interval in the NLP's scaled variables: the inputs (xs, X, U, tk, h, sx, su, rs) of the kernels
        (``ffopt.nlp.compiled``), the row-scaled residual vec(diag(rs) G) and the variables [xs; X; U] (SX)."""
        d, nx, N = self.rule.degree, self.points.n_x, self.points.n_u
        xs, X, U = ca.SX.sym("xs", nx), ca.SX.sym("X", nx * d), ca.SX.sym("U", N * d)
        tk, h = ca.SX.sym("tk"), ca.SX.sym("h")
        sx, su, rs = ca.SX.sym("sx", nx), ca.SX.sym("su", N), ca.SX.sym("rs", self.points.n_eq)
        G, _ = self.points.interval_function(self.rule)(sx * xs, ca.reshape(X, nx, d) * ca.repmat(sx, 1, d),
                                                        ca.reshape(U, N, d) * ca.repmat(su, 1, d), tk, h)
        return [xs, X, U, tk, h, sx, su, rs], ca.vec(G * ca.repmat(rs, 1, d)), ca.vertcat(xs, X, U)

    def _jacobian_functions(self):
        ins, Gs, v = self._scaled_interval()
        J = ca.jacobian(Gs, v)
        return ({"res": ca.Function("nlp_res", ins, [Gs]), "jac": ca.Function("nlp_jac", ins, [ca.vertcat(*J.nonzeros())])},
                {"jac": _pattern(J)})

    def _hessian_functions(self):
        ins, Gs, v = self._scaled_interval()
        lam = ca.SX.sym("lam", Gs.numel())
        H = ca.tril(ca.hessian(ca.dot(lam, Gs), v)[0])
        return {"hess": ca.Function("nlp_hess", ins + [lam], [ca.vertcat(*H.nonzeros())])}, {"hess": _pattern(H)}

    def _point_functions(self):
        nx = self.points.n_x
        t, xs, sx = ca.SX.sym("t"), ca.SX.sym("xs", nx), ca.SX.sym("sx", nx)
        a, mu = ca.SX.sym("a"), ca.SX.sym("mu", self.points.n_out)
        E = self.points.err(t, sx * xs)
        J = ca.jacobian(E, xs)
        H = ca.tril(ca.hessian(a * ca.sumsqr(E) + ca.dot(mu, E), xs)[0])
        return ({"err": ca.Function("nlp_err", [t, xs, sx], [E]),
                 "err_jac": ca.Function("nlp_err_jac", [t, xs, sx], [ca.vertcat(*J.nonzeros())]),
                 "err_grad": ca.Function("nlp_err_grad", [t, xs, sx, a], [ca.gradient(a * ca.sumsqr(E), xs)]),
                 "err_hess": ca.Function("nlp_err_hess", [t, xs, sx, a, mu], [ca.vertcat(*H.nonzeros())])},
                {"err_jac": _pattern(J), "err_hess": _pattern(H)})


def _pattern(expr) -> Pattern:
    return tuple(np.array(i) for i in expr.sparsity().get_triplet())
