"""Structural index analysis: Pantelides' algorithm and dummy-derivative selection.

Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 5.2.3 and 6.2:
which equations of F(t, x, xdot) = 0 must be differentiated (and how often) to reach an index-1
system, which derivatives become dummy derivatives (Mattsson & Soderlind 1993), and so which
variables are algebraic and which differential.

- Incidence: sigma[i, j] = 1 if xdot_j appears in equation i, 0 if only x_j does, -1 if neither.
- Pantelides (1988): for each equation, search an augmenting path in the bipartite graph of
  equations (at their current differentiation level c_i) and highest-derivative variables
  (order d_j); when none exists, differentiate every coloured equation and variable.
  Result: c_i (differentiations per equation), d_j (highest derivative order per variable).
- Cross-check: Pryce's Sigma method (maximum transversal + fixed-point offsets) gives the
  canonical offsets independently; ``pryce_offsets`` is used by the tests.
- Structural index: max c_i, plus 1 if some variable is never differentiated (d_j = 0).
- Dummy derivatives: from the highest level down, the Jacobian of the differentiated equations
  w.r.t. the current highest derivatives (evaluated at the start point) gives one column per
  differentiated equation; the columns are picked greedily in a preference order (actuated link
  coordinates first, the paper's choice in sec. 5.2.3) while the selection stays nonsingular.
  A variable is algebraic in the reduced DAE if its first derivative is a dummy or it is never
  differentiated.
- Differential index (Definition 2, sec. 4.1): smallest nu such that the derivative array F_nu
  determines xdot uniquely: rank M_nu = rank M_nu[without the xdot columns] + n, numerically at
  the start point (robot at rest, all derivatives zero, which lies on the solution manifold).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ffopt._version import __version__
from ffopt.errors import SolverError

MAX_DIFFERENTIATIONS = 8
RANK_RTOL = 1e-9


# --- incidence, Pantelides, Pryce -------------------------------------------------------------


def incidence(F: ca.Function) -> np.ndarray:
    """sigma (m x n): 1 where xdot_j appears in row i, 0 where only x_j does, -1 elsewhere."""
    n = F.numel_in(1)
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", n), ca.SX.sym("xd", n)
    res = F(t, x, xd)
    sigma = -np.ones((res.shape[0], n), dtype=int)
    for jac, value in ((ca.jacobian(res, x), 0), (ca.jacobian(res, xd), 1)):
        sp = jac.sparsity()
        sigma[sp.row(), sp.get_col()] = np.maximum(sigma[sp.row(), sp.get_col()], value)
    return sigma


def pantelides(sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pantelides' algorithm on a first-order incidence matrix.

    Returns (c, d, match): c[i] differentiations of equation i, d[j] highest derivative order of
    variable j in the differentiated system, match[j] the equation assigned to variable j's
    highest derivative. Raises SolverError if the system is structurally singular.
    """
    m, n = sigma.shape
    if m != n:
        raise SolverError(f"structural analysis needs a square DAE; got {m} equations, {n} unknowns")
    c = np.zeros(m, dtype=int)
    d = np.maximum(sigma.max(axis=0), 0)
    match = -np.ones(n, dtype=int)
    for i0 in range(m):
        while True:
            eq_col, var_col = set(), set()
            if _augment(i0, sigma, c, d, match, eq_col, var_col):
                break
            for j in var_col:
                d[j] += 1
            for e in eq_col:
                c[e] += 1
            if c.max() > MAX_DIFFERENTIATIONS:
                raise SolverError("Pantelides' algorithm: more than "
                                  f"{MAX_DIFFERENTIATIONS} differentiations needed; the DAE is "
                                  "structurally singular (check that every output can be reached)")
    return c, d, match


def _augment(i, sigma, c, d, match, eq_col, var_col) -> bool:
    """Augmenting path from equation i over the highest derivatives (Pantelides' AUGMENTPATH)."""
    eq_col.add(i)
    highest = [j for j in np.flatnonzero(sigma[i] >= 0) if sigma[i, j] + c[i] == d[j]]
    for j in highest:
        if match[j] < 0:
            match[j] = i
            return True
    for j in highest:
        if j not in var_col:
            var_col.add(j)
            if _augment(match[j], sigma, c, d, match, eq_col, var_col):
                match[j] = i
                return True
    return False


def pryce_offsets(sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Canonical offsets (c, d) of Pryce's Sigma method (maximum transversal + fixed point)."""
    from scipy.optimize import linear_sum_assignment  # here: importing SciPy's optimize costs 0.25 s a plan

    m, n = sigma.shape
    big = -1e6
    weights = np.where(sigma >= 0, sigma, big)
    rows, cols = linear_sum_assignment(weights, maximize=True)
    if np.any(weights[rows, cols] <= big / 2):
        raise SolverError("Sigma method: no transversal; the DAE is structurally singular")
    pi = np.empty(m, dtype=int)
    pi[rows] = cols
    c = np.zeros(m, dtype=int)
    for _ in range(10 * (m + 1)):
        d = np.max(np.where(sigma >= 0, sigma + c[:, None], -10**6), axis=0)
        c_new = d[pi] - sigma[np.arange(m), pi]
        if np.array_equal(c_new, c):
            return c, d
        c = c_new
    raise SolverError("Sigma method: offsets did not converge")


def structural_index(c: np.ndarray, d: np.ndarray) -> int:
    """max c_i, plus 1 if a variable is never differentiated (Pryce 2001, Thm. 5.8)."""
    return int(c.max() + (1 if d.min() == 0 else 0))


# --- the differentiated system ----------------------------------------------------------------


class DifferentiatedSystem:
    """Equations g_i^(l), l = 0..c_i, as SX in t and the derivative levels X[0..K] (n each)."""

    def __init__(self, F: ca.Function, c: np.ndarray, d: np.ndarray):
        n = F.numel_in(1)
        self.n, self.c, self.d = n, c, d
        self.t = ca.SX.sym("t")
        self.levels = int(max(d.max(), 1))
        self.X = [ca.SX.sym(f"x{k}", n) for k in range(self.levels + 2)]
        base = F(self.t, self.X[0], self.X[1])
        self.eq = []  # eq[i][l] scalar SX
        for i in range(base.shape[0]):
            chain = [base[i]]
            for _ in range(int(c[i])):
                chain.append(self._time_derivative(chain[-1]))
            self.eq.append(chain)

    def _time_derivative(self, g):
        dg = ca.jacobian(g, self.t)
        for k in range(self.levels + 1):
            dg = dg + ca.jtimes(g, self.X[k], self.X[k + 1])
        return dg

    def jacobian(self, rows, cols, t0: float, x0: np.ndarray) -> np.ndarray:
        """d g_(i,l) / d x_j^(k) for rows [(i, l)] and cols [(j, k)] at rest at x0."""
        g = ca.vertcat(*[self.eq[i][l] for i, l in rows])
        z = ca.vertcat(*[self.X[k][j] for j, k in cols])
        fun = ca.Function("diff_system_jacobian", [self.t, *self.X], [ca.jacobian(g, z)])
        vals = [x0] + [np.zeros(self.n)] * (len(self.X) - 1)
        return np.array(fun(t0, *vals), dtype=float)


def select_dummies(system: DifferentiatedSystem, preference: list[int], t0: float,
                   x0: np.ndarray) -> list[tuple[int, int]]:
    """Mattsson-Soderlind dummy derivatives as (variable j, derivative order k), k >= 1."""
    c, d = system.c, system.d
    rows = [(i, int(c[i])) for i in range(len(c))]
    cols = [(j, int(d[j])) for j in range(system.n)]
    G = system.jacobian(rows, cols, t0, x0)
    if _rank(G) < len(rows):
        raise SolverError("dummy derivatives: the Jacobian of the differentiated system w.r.t. the highest "
                          "derivatives is singular at the start point; the DAE is not index 1 after "
                          "Pantelides' differentiations there (try another start configuration)")
    rank_of = {j: r for r, j in enumerate(preference)}
    dummies = []
    while True:
        keep = [r for r, (i, l) in enumerate(rows) if l >= 1]
        if not keep:
            return dummies
        H = G[keep]
        order = sorted((p for p, (j, k) in enumerate(cols) if k >= 1), key=lambda p: (rank_of[cols[p][0]], p))
        chosen = _greedy_columns(H, order, len(keep))
        if chosen is None:
            raise SolverError("dummy derivatives: no nonsingular choice of dummy derivatives at the start point "
                              f"for the {len(keep)} differentiated equations at this level")
        dummies += [cols[p] for p in chosen]
        rows = [(rows[r][0], rows[r][1] - 1) for r in keep]
        cols = [(cols[p][0], cols[p][1] - 1) for p in chosen]
        G = H[:, chosen]


def _greedy_columns(H: np.ndarray, order: list[int], count: int) -> list[int] | None:
    chosen: list[int] = []
    for p in order:
        trial = chosen + [p]
        if _rank(H[:, trial]) == len(trial):
            chosen = trial
            if len(chosen) == count:
                return chosen
    return None


def _equilibrated(A: np.ndarray, sweeps: int = 3) -> np.ndarray:
    """A with rows and columns scaled to max-norm 1 (alternately, a few sweeps); the rank is unchanged."""
    if A.size == 0:
        return A
    for _ in range(sweeps):
        A = A / np.maximum(np.abs(A).max(axis=1, keepdims=True), 1e-300)
        A = A / np.maximum(np.abs(A).max(axis=0, keepdims=True), 1e-300)
    return A


def _rank(A: np.ndarray, rtol: float = RANK_RTOL) -> int:
    if A.size == 0:
        return 0
    A = A / np.maximum(np.abs(A).max(axis=1, keepdims=True), 1e-300)  # row equilibration
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > rtol * max(s[0], 1e-300)))


def differential_index(F: ca.Function, t0: float, x0: np.ndarray, max_nu: int = 8) -> int:
    """Smallest nu such that F_nu fixes xdot uniquely (Moberg & Hanssen, Definition 2), at rest at x0.

    The ranks are taken after equilibrating rows and columns: the derivative array mixes gear
    stiffnesses (1e5 N m/rad on the Manutec r3) with link inertias, and row scaling alone left
    no clear singular-value gap there (index 5 reported where Pantelides finds 3).
    """
    from ffopt.analysis.strangeness import derivative_array

    n = F.numel_in(1)
    for nu in range(max_nu + 1):
        t, X, Fnu = derivative_array(F, n, nu)
        M = ca.jacobian(Fnu, ca.vertcat(*X[1:]))
        fun = ca.Function("M", [t, *X], [M])
        Mv = np.array(fun(t0, x0, *[np.zeros(n)] * (nu + 1)), dtype=float)
        if _rank(_equilibrated(Mv)) == _rank(_equilibrated(Mv[:, n:])) + n:
            return nu
    raise SolverError(f"differential index > {max_nu} at the start point (or the DAE is singular there)")


# --- the report -------------------------------------------------------------------------------


@dataclass
class StructuralReport:
    form: str
    variable_names: list[str]  # ffopt names (q1, dq1, ...)
    x_names: list[str]  # x1, x2, ... as numbered by Moberg & Hanssen
    equation_names: list[str]
    differentiations: list[int]  # c_i per equation (Pantelides)
    highest_derivative: list[int]  # d_j per variable
    structural_index: int
    differential_index: int
    dummy_derivatives: list[tuple[str, int]]  # (variable, derivative order)
    algebraic: list[str]
    differential: list[str]
    pryce_agrees: bool
    point: str = "rest at the start of the path"
    extra: dict = field(default_factory=dict)

    def algebraic_x(self) -> list[str]:
        return [self.x_names[self.variable_names.index(v)] for v in self.algebraic]

    def differential_x(self) -> list[str]:
        return [self.x_names[self.variable_names.index(v)] for v in self.differential]

    def summary(self) -> str:
        return (f"structural index {self.structural_index}, differential index {self.differential_index}; "
                f"a = {len(self.algebraic)} algebraic {self.algebraic_x()}, "
                f"d = {len(self.differential)} differential {self.differential_x()}")

    def to_dict(self) -> dict:
        return {"form": self.form, "structural_index": self.structural_index,
                "differential_index": self.differential_index, "pryce_agrees": self.pryce_agrees,
                "equations": dict(zip(self.equation_names, self.differentiations)),
                "highest_derivative": dict(zip(self.variable_names, self.highest_derivative)),
                "dummy_derivatives": [f"{v}^({k})" for v, k in self.dummy_derivatives],
                "algebraic": self.algebraic, "differential": self.differential,
                "algebraic_x": self.algebraic_x(), "differential_x": self.differential_x(),
                "point": self.point}

    def table(self) -> str:
        lines = [self.summary(), "equation            differentiations"]
        lines += [f"  {e:<18s} {c}" for e, c in zip(self.equation_names, self.differentiations)]
        lines.append("variable   x      highest derivative   dummy derivatives   role")
        for j, v in enumerate(self.variable_names):
            dums = ",".join(str(k) for name, k in self.dummy_derivatives if name == v) or "-"
            role = "algebraic" if v in self.algebraic else "differential"
            lines.append(f"  {v:<9s}{self.x_names[j]:<7s}{self.highest_derivative[j]:<21d}{dums:<20s}{role}")
        return "\n".join(lines)


def coordinate_preference(model, n_x: int, prefer: str | list[str] = "actuated") -> list[int]:
    """Variable indices of x = [q; v; ...] ordered by preference for becoming dummies.

    "actuated": actuated link coordinates first (Moberg & Hanssen sec. 5.2.3), then passive links,
    then motors; "passive": passive link coordinates first (Moberg & Hanssen sec. 5.1.1); or a list
    of coordinate names (q and dq of each named coordinate first, in that order).
    """
    L = model.layout
    names = model.coordinate_names()
    if isinstance(prefer, str):
        if prefer == "actuated":
            coords = list(L.actuated) + list(L.passive)
        elif prefer == "passive":
            coords = list(L.passive) + list(L.actuated)
        else:
            raise ValueError(f"prefer must be 'actuated', 'passive' or a list of coordinate names, got {prefer!r}")
    else:
        unknown = [p for p in prefer if p not in names]
        if unknown:
            raise ValueError(f"unknown coordinate names {unknown}; have {names}")
        coords = [names.index(p) for p in prefer]
    coords += [i for i in range(L.nq) if i not in coords]
    order = []
    for i in coords:
        order += [i, L.nq + i]
    return order + [j for j in range(n_x) if j not in order]


def equation_names(model, form: str, n_rows: int) -> list[str]:
    """Row names of ffopt.dae.forms.build_inverse_dae (kinematic, link, path rows)."""
    names = model.coordinate_names()
    L = model.layout
    if form == "I3":
        kin = [f"kin_{n}" for n in names]
    else:
        kin = [f"kin_{names[i]}" for i in range(L.nq) if i not in L.actuated]
    link = [f"link_{names[i]}" for i in L.unactuated_link_rows]
    out = list(model.outputs)
    path = [f"path_{o}" for o in out]
    if form in ("I2", "I1"):
        path += [f"path_{o}'" for o in out]
    if form == "I1":
        path += [f"path_{o}''" for o in out]
    drive = [f"drive_{n}" for n in model.drive_state_names()]  # DC-motor electrics: torque rows in the currents
    rows = kin + link + drive + path
    return rows if len(rows) == n_rows else [f"F{i + 1}" for i in range(n_rows)]


def analyse_dae(F: ca.Function, x0: np.ndarray, preference: list[int], t0: float = 0.0):
    """(c, d, dummies, structural index, differential index, pryce agrees) for any F(t, x, xdot)."""
    sigma = incidence(F)
    c, d, _ = pantelides(sigma)
    cp, dp = pryce_offsets(sigma)
    system = DifferentiatedSystem(F, c, d)
    dummies = select_dummies(system, preference, t0, x0)
    nu_s = structural_index(c, d)
    nu_d = differential_index(F, t0, x0)
    agrees = bool(np.array_equal(c, cp) and np.array_equal(d, dp))
    return system, dummies, nu_s, nu_d, agrees


def structural_analysis(model, reference, form: str = "I3", qa_guess=None,
                        prefer: str | list[str] = "actuated") -> StructuralReport:
    """Pantelides + dummy derivatives for the inverse-dynamics DAE of ``model`` at the path start."""
    from ffopt.models.equilibrium import static_equilibrium
    from ffopt.dae.forms import build_inverse_dae

    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    dae = build_inverse_dae(model, reference, form)
    x0 = dae.initial_state(q0)
    pref = coordinate_preference(model, dae.n_x, prefer)
    system, dummies, nu_s, nu_d, agrees = analyse_dae(dae.F, x0, pref)
    var = dae.variable_names
    first_dummy = {j for j, k in dummies if k == 1}
    algebraic = [var[j] for j in range(dae.n_x) if j in first_dummy or system.d[j] == 0]
    differential = [v for v in var if v not in algebraic]
    return StructuralReport(
        form=form, variable_names=var, x_names=[f"x{j + 1}" for j in range(dae.n_x)],
        equation_names=equation_names(model, form, dae.n_x),
        differentiations=[int(v) for v in system.c], highest_derivative=[int(v) for v in system.d],
        structural_index=nu_s, differential_index=nu_d,
        dummy_derivatives=[(var[j], int(k)) for j, k in sorted(dummies)],
        algebraic=algebraic, differential=differential, pryce_agrees=agrees)


# --- how smooth the reference must be ---------------------------------------------------------


@dataclass(frozen=True)
class ReferenceSmoothness:
    """How many derivatives of the output path theta(t) the inverse model needs.

    ``damped``: Pantelides' differentiation count of the path rows Gamma(qa) = theta(t) in the complete
    inverse model (states and motor torques u unknown): the exact inverse contains theta^(damped)
    (3 through a damped elastic gear, 2 for direct drives). ``undamped``: the same count with every
    spring's damper left out (4 through an elastic gear). ``derivatives``: the larger of the two, the
    one ffopt asks the reference for. A damper D in parallel with a spring K smooths the torque only
    on its own time scale D/K (0.1-1.3 ms on the Manutec r3's gears): a jump of the path's derivative
    ``undamped`` still becomes a torque step within D/K, which a BDF step of 1 ms cannot resolve.
    """

    damped: int
    undamped: int

    @property
    def derivatives(self) -> int:
        return max(self.damped, self.undamped)

    def explain(self) -> str:
        if self.damped == self.undamped:
            return f"the inverse model contains the {_ordinal(self.derivatives)} derivative of the path (Pantelides)"
        return (f"the motor torque follows the {_ordinal(self.undamped)} derivative of the path (Pantelides: "
                f"{self.undamped} without the spring dampers, {self.damped} with them, but a damper smooths only on "
                "its time scale D/K, far below a BDF step)")


def _ordinal(k: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def reference_smoothness(model) -> ReferenceSmoothness:
    """Pantelides on the inverse model with u unknown, with and without the spring dampers."""
    from dataclasses import replace

    chain = model.chain
    undamped = replace(chain, joints=tuple(replace(j, damping=0.0) for j in chain.joints),
                       spring_groups=tuple(replace(g, damping=np.zeros_like(g.damping)) for g in chain.spring_groups))
    return ReferenceSmoothness(_path_differentiations(model), _path_differentiations(model.variant(undamped)))


def reference_smoothness_cached(model) -> ReferenceSmoothness:
    """``reference_smoothness`` kept on disk (``ffopt.cache.on_disk``): the analysis builds the model's expressions
    twice (0.13 s of a 1 s Manutec r3 plan). Its result depends on which terms of the chain are zero, so the key
    is the whole chain written out (every value), the outputs and the version."""
    import sys

    from ffopt.cache import on_disk

    with np.printoptions(threshold=sys.maxsize):
        key = f"{__version__}\n{model.outputs}\n{model.chain!r}"
    return on_disk("structure", key, lambda: reference_smoothness(model),
                   encode=lambda r: {"damped": r.damped, "undamped": r.undamped},
                   decode=lambda d: ReferenceSmoothness(int(d["damped"]), int(d["undamped"])))


def _path_differentiations(model) -> int:
    """Pantelides on x = [q; v; u] with rows q' - v, the link rows without u, u - input_torque(q, v, v')
    and the path rows Gamma(qa) (theta(t) does not change the incidence): the path rows' count."""
    L = model.layout
    nq, nu = L.nq, L.n_u
    x, xd = ca.SX.sym("x", 2 * nq + nu), ca.SX.sym("xd", 2 * nq + nu)
    q, v, u = x[:nq], x[nq:2 * nq], x[2 * nq:]
    a = xd[nq:2 * nq]
    rows = [xd[:nq] - v, model.unactuated_link_rows(q, v, a), u - model.input_torque(q, v, a),
            model.output(q[: L.n_link])]
    F = ca.Function("inverse_model", [ca.SX.sym("t"), x, xd], [ca.vertcat(*rows)])
    c, _, _ = pantelides(incidence(F))
    return int(c[-nu:].max())
