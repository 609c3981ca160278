"""Numerical strangeness index (Kunkel-Mehrmann Hypothesis 1, as in Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), sec. 4.2, eq. 10-13).

For F(t, x, xdot) = 0 with n unknowns, the derivative array F_mu = [F; dF/dt; ...; d^mu F/dt^mu]
(eq. 10) is built symbolically with CasADi in the variables (t, x, x^(1), ..., x^(mu+1)). At a
point of L_mu (eq. 11), for mu = 0, 1, 2, ...:
  1. a = (mu+1) n - rank M_mu,  M_mu = dF_mu / d(x^(1) ... x^(mu+1))  (eq. 12); Z2 spans the
     left null space of M_mu;
  2. A2 = Z2^T F_mu;x must have rank a; T2 spans its null space (d = n - a columns);
  3. F_xdot T2 must have rank d.
The smallest mu for which 1-3 hold is the strangeness index. Ranks by SVD after row
equilibration (each row of [F_mu;x, M_mu] scaled to unit max-norm), with a relative tolerance.

The DAE analysed by default is the paper's: the inverse dynamics with the motor equations
(1f) and the rows of directly driven joints removed, so u is eliminated (Moberg & Hanssen
eq. 15/17 for E1, eq. 31 for E12), i.e. ffopt.dae.forms.build_inverse_dae(form="I3").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ffopt.errors import SolverError

RANK_RTOL = 1e-9


@dataclass
class StrangenessStep:
    """Ranks found for one trial mu."""

    mu: int
    rank_M: int
    a: int
    rank_A2: int
    d: int
    rank_FxdT2: int
    satisfied: bool
    gap_M: float  # sigma_r / sigma_(r+1) at the rank decision of M_mu (large = clear-cut)


@dataclass
class StrangenessReport:
    mu: int  # strangeness index
    a: int  # number of algebraic variables
    d: int  # number of differential variables
    n: int
    steps: list = field(default_factory=list)
    point: str = ""
    variable_names: list = field(default_factory=list)

    def summary(self) -> str:
        return f"strangeness index mu = {self.mu}, a = {self.a} algebraic, d = {self.d} differential (n = {self.n})"

    def to_dict(self) -> dict:
        return {"mu": self.mu, "a": self.a, "d": self.d, "n": self.n, "point": self.point,
                "steps": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                           for k, v in s.__dict__.items()} for s in self.steps]}


def derivative_array(F: ca.Function, n: int, mu: int):
    """(t, [x, x1, ..., x_(mu+1)], F_mu) symbolic, F_mu stacked as in Moberg & Hanssen eq. (10)."""
    t = ca.SX.sym("t")
    X = [ca.SX.sym(f"x{k}", n) for k in range(mu + 2)]
    rows = [F(t, X[0], X[1])]
    for _ in range(mu):
        g = rows[-1]
        dg = ca.jacobian(g, t)
        for k in range(mu + 1):
            dg = dg + ca.jtimes(g, X[k], X[k + 1])
        rows.append(dg)
    return t, X, ca.vertcat(*rows)


def _rank(mat: np.ndarray, rtol: float = RANK_RTOL) -> tuple[int, np.ndarray, float]:
    """Numerical rank, singular values and the gap ratio at the decision."""
    if mat.size == 0:
        return 0, np.zeros(0), np.inf
    s = np.linalg.svd(mat, compute_uv=False)
    if s[0] == 0:
        return 0, s, np.inf
    r = int(np.sum(s > rtol * s[0]))
    gap = s[r - 1] / s[r] if 0 < r < len(s) and s[r] > 0 else np.inf
    return r, s, float(gap)


def _null(mat: np.ndarray, rank: int) -> np.ndarray:
    """Orthonormal basis of the right null space for a given numerical rank."""
    _, _, vt = np.linalg.svd(mat)
    return vt[rank:].T


def strangeness_index(F: ca.Function, n: int, t: float, derivatives, max_mu: int = 4,
                      rtol: float = RANK_RTOL, point: str = "") -> StrangenessReport:
    """Strangeness index of F(t, x, xdot) = 0 at (t, x, x^(1), ..., ) per Hypothesis 1.

    derivatives: list [x, x^(1), x^(2), ...] (each length n); missing higher ones are taken as 0
    (exact at rest). The point must lie on L_mu for the result to be the paper's mu.
    """
    steps = []
    for mu in range(max_mu + 1):
        ts, X, Fmu = derivative_array(F, n, mu)
        jac = ca.Function("derivative_array_jacobians", [ts, *X], [ca.jacobian(Fmu, X[0]), ca.jacobian(Fmu, ca.vertcat(*X[1:])),
                                           ca.jacobian(F(ts, X[0], X[1]), X[1])])
        vals = [np.asarray(derivatives[k], float) if k < len(derivatives) else np.zeros(n) for k in range(mu + 2)]
        N, M, Fxd = (np.array(m, dtype=float) for m in jac(t, *vals))
        scale = np.maximum(np.abs(np.hstack([N, M])).max(axis=1), 1e-300)[:, None]
        N, M = N / scale, M / scale
        rank_M, _, gap = _rank(M, rtol)
        a = (mu + 1) * n - rank_M
        u, _, _ = np.linalg.svd(M)
        Z2 = u[:, rank_M:]
        A2 = Z2.T @ N
        rank_A2, _, _ = _rank(A2, rtol) if a else (0, None, np.inf)
        d = n - a
        T2 = _null(A2, rank_A2) if a else np.eye(n)
        Fxd_s = Fxd / np.maximum(np.abs(Fxd).max(axis=1), 1e-300)[:, None]
        rank_FT, _, _ = _rank(Fxd_s @ T2, rtol) if d else (0, None, np.inf)
        ok = rank_A2 == a and T2.shape[1] == d and rank_FT == d
        steps.append(StrangenessStep(mu, rank_M, a, rank_A2, d, rank_FT, ok, gap))
        if ok:
            return StrangenessReport(mu, a, d, n, steps, point)
    raise SolverError(f"Hypothesis 1 not satisfied for mu <= {max_mu} at {point or f't = {t}'}: the DAE may be "
                      "singular there (check the configuration) or have a higher index; try max_mu larger")


def strangeness_analysis(model, reference, form: str = "I3", qa_guess=None, max_mu: int = 4,
                         rtol: float = RANK_RTOL) -> StrangenessReport:
    """Strangeness index of the inverse-dynamics DAE at the start of the path (robot at rest).

    The rest point (static equilibrium, all derivatives of x and of theta zero) lies exactly on
    L_mu for every mu, as Hypothesis 1 requires.
    """
    from ffopt.models.equilibrium import static_equilibrium
    from ffopt.dae.forms import build_inverse_dae

    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    dae = build_inverse_dae(model, reference, form)
    x0 = dae.initial_state(q0)
    rep = strangeness_index(dae.F, dae.n_x, 0.0, [x0], max_mu, rtol, point="rest at the start of the path")
    rep.variable_names = dae.variable_names
    return rep
