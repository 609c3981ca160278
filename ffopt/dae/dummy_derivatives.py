"""Automatic index reduction by the dummy-derivative method (Mattsson & Soderlind; as in Moberg &
Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 6.2).

Any inverse-dynamics DAE F(t, x, xdot) = 0 (the I3 form by default) is analysed by
ffopt.analysis.structural: Pantelides gives how often each equation is differentiated, and the
dummy-derivative selection picks one derivative per differentiated equation that becomes a new
algebraic unknown. The reduced system keeps every original equation and all its derivatives
(so there is no drift off the constraints) and has index 1:

    unknowns X = [x (n); w (one per dummy derivative)],
    rows     g_i^(l)(t, x, xdot, w) = 0,  l = 0..c_i,

where in g_i^(l) each dummy derivative x_j^(k) is replaced by its w, every other first
derivative x_j^(1) stays xdot_j, and x_j^(0) = x_j. It is an F(t, X, Xdot) for
ffopt.dae.bdf.solve_bdf (no row scaling needed: index 1). For E1 this is Moberg & Hanssen's eq. (47)
with the dummies of eq. (48)/(49) chosen automatically and the trivial rows kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.analysis.structural import analyse_dae, coordinate_preference
from ffopt.dae.bdf import solve_bdf
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import build_inverse_dae
from ffopt.dae.inverse import trajectory_from_states
from ffopt.errors import SolverError
from ffopt.models.flexible import FlexibleModel
from ffopt.trajectory import Trajectory


@dataclass
class ReducedDae:
    """InverseDae-like index-1 system made by dummy derivatives (x = [q; v] of the I3 form first)."""

    form: str
    F: ca.Function  # (t, X, Xdot) -> residual
    n_x: int
    nq: int
    dummies: list[tuple[int, int]]  # (variable j of the base form, derivative order k)
    constraint_rows: np.ndarray
    accel: ca.Function  # (X, Xdot) -> a (nq)
    variable_names: list[str]
    algebraic: list[str]
    differential: list[str]

    def row_scale(self, h: float, p: float | None = None) -> np.ndarray:
        p = 0.0 if p is None else p
        return np.where(self.constraint_rows, (1.0 / h) ** p, 1.0)

    def initial_state(self, q0: np.ndarray) -> np.ndarray:
        """At rest: q0, zero velocities and zero dummy derivatives."""
        return np.concatenate([q0, np.zeros(self.n_x - self.nq)])


def reduce_index(model: FlexibleModel, reference, q0: np.ndarray, prefer="actuated") -> ReducedDae:
    """Dummy-derivative index reduction of the I3 inverse-dynamics DAE, analysed at rest at q0."""
    base = build_inverse_dae(model, reference, "I3")
    x0 = base.initial_state(q0)
    system, dummies, _, _, _ = analyse_dae(base.F, x0, coordinate_preference(model, base.n_x, prefer))
    n, nq = base.n_x, base.nq
    w_index = {dk: n + r for r, dk in enumerate(sorted(dummies))}
    X, Xd = ca.SX.sym("X", n + len(dummies)), ca.SX.sym("Xdot", n + len(dummies))
    rows, constraint = [], []
    for i, chain in enumerate(system.eq):
        for g in chain:
            rows.append(_substitute(g, system, w_index, X, Xd))
            constraint.append(bool(base.constraint_rows[i]))
    res = ca.vertcat(*rows)
    if res.shape[0] != X.shape[0]:
        raise SolverError(f"dummy derivatives: {res.shape[0]} equations for {X.shape[0]} unknowns")
    F = ca.Function("dummy_derivative_dae", [system.t, X, Xd], [res], ["t", "x", "xdot"], ["res"])
    a = ca.vertcat(*[X[w_index[(nq + p, 1)]] if (nq + p, 1) in w_index else Xd[nq + p] for p in range(nq)])
    accel = ca.Function("accel", [X, Xd], [a], ["x", "xdot"], ["a"])
    names = base.variable_names + [f"{base.variable_names[j]}^({k})" for j, k in sorted(dummies)]
    first = {j for j, k in dummies if k == 1}
    algebraic = [base.variable_names[j] for j in range(n) if j in first or system.d[j] == 0]
    differential = [v for v in base.variable_names if v not in algebraic]
    return ReducedDae("DD", F, X.shape[0], nq, sorted(dummies), np.array(constraint), accel, names,
                      algebraic, differential)


def _substitute(g, system, w_index, X, Xd):
    """Replace x_j^(k) in g by x_j (k = 0), its dummy w, or xdot_j (k = 1, not a dummy)."""
    old, new = [], []
    n = system.n
    for k, Xk in enumerate(system.X):
        for j in range(n):
            if not ca.depends_on(g, Xk[j]):
                continue
            old.append(Xk[j])
            if k == 0:
                new.append(X[j])
            elif (j, k) in w_index:
                new.append(X[w_index[(j, k)]])
            elif k == 1:
                new.append(Xd[j])
            else:
                raise SolverError(f"dummy derivatives: derivative order {k} of variable {j} is not a dummy; "
                                  "the reduced system would need extra states (not supported)")
    if not old:
        return g
    return ca.substitute(ca.vertcat(g), ca.vertcat(*old), ca.vertcat(*new))


def solve_inverse_dd(model: FlexibleModel, reference, order: int = 6, step: float = 1e-3,
                     qa_guess=None, prefer="actuated", compile: bool = True,
                     scaling_power: float | None = None) -> Trajectory:
    """Inverse dynamics by k-step BDF on the automatically index-reduced (dummy-derivative) DAE.

    The robot starts at rest in static equilibrium; ``scaling_power`` p scales the constraint rows
    by (1/h)^p (default 0: the reduced system has index 1). Method name f"DD-bdf{order}".
    """
    tic = time.perf_counter()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    n_steps = int(round(reference.t_end / step))
    dae = reduce_index(model, reference, q0, prefer or "actuated")
    t_setup = time.perf_counter() - tic
    try:
        res = solve_bdf(dae.F, dae.initial_state(q0), 0.0, step, n_steps, order,
                        row_scale=dae.row_scale(step, scaling_power), compile=compile)
    except RuntimeError as err:  # CasADi's virtual machine stops on a singular Newton matrix
        raise SolverError(f"BDF-{order} (h = {step:g}) failed: {str(err).splitlines()[-1]}; the step equations are "
                          "singular (try another method, step or order)") from None
    nq = dae.nq
    a = np.array(dae.accel.map(len(res.t))(res.x.T, res.xdot.T)).T
    traj = trajectory_from_states(model, reference, res.t, res.x[:, :2 * nq], a, method=f"DD-bdf{order}")
    traj.stats.update({"order": order, "step": step, "form": "DD", "n_steps": n_steps,
                       "n_unknowns": dae.n_x, "compiled": res.compiled,
                       "time_setup_s": t_setup, "time_solve_s": res.wall_time_solve,
                       "dummy_derivatives": dae.variable_names[2 * nq:], "algebraic": dae.algebraic,
                       "differential": dae.differential, "variant": "DD",
                       "engine": "compiled" if compile else "vm"})
    return traj
