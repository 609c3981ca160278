"""The seed's solver family on E1 simplified (seed 000, sec. 5.1.1 and 7.2): HI, DD, KM, DC.

Variables x = [x1, x2, x3, x4] = [q1, q2, dq1, dq2]; the torque balance of the driven joint is
removed (u eliminated); l1, l2, J, k, d from the problem. With P = l1 sin x1 + l2 sin(x1 + x2),
V = dP/dt and A = d^2P/dt^2 (along x):

- HI   eq. (40): [passive row; x1' - x3; x2' - x4; P - theta]                  (index 2)
- DD43 eq. (43): (40) + [V - theta'], dummy derivative x1' = x1^ (5 unknowns)
- DD44 eq. (44): [passive; x2' - x4; P - theta; V - theta']                       (index 1)
- DD48 eq. (48): [passive; P - theta; V - theta'; A - theta'']   x1, x2 algebraic
- DD49 eq. (49): [passive; x2' - x4; P - theta; A - theta'']
- KM   eq. (38): derivative array F_1(t, x, y) = 0 with y = (x', x'') free, plus
                 Z1^T F(t, x, D_h x) = 0 with Z1^T picking (19a) = [x1' - x3; passive row];
                 an underdetermined system per step, solved by minimum-norm Gauss-Newton.
- DC   eq. (20)-(21): x2, x4 explicit functions of (t, x1, x3) (20), substituted into (19a):
                 an implicit ODE in (x1, x3) (21), then (20) for x2, x4.

The passive row is J21 x3' + J22 x4' + k x2 + d x4 = 0. u = J11 x3' + J12 x4' afterwards.
HI, DD and DC are square and go through ffopt.dae.bdf.solve_bdf (compiled) or, for the
like-for-like cost comparison with KM, through the same Python Gauss-Newton stepper as KM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.dae.bdf import BDF_ALPHA, solve_bdf
from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.inverse import trajectory_from_states
from ffopt.errors import ProblemError, SolverError
from ffopt.trajectory import Trajectory

VARIANTS = ("HI", "DD43", "DD44", "DD48", "DD49", "KM", "DC")


@dataclass
class E1Data:
    J: np.ndarray
    k: float
    d: float
    l1: float
    l2: float


def e1_data(model) -> E1Data:
    """E1 simplified's parameters from the model (constant inertia, direct + passive joint)."""
    ch, L = model.chain, model.layout
    if ch.constant_inertia is None or L.n_link != 2 or L.direct != (0,) or L.passive != (1,):
        raise ProblemError("seed variants: need E1 simplified (constant_inertia, joint 1 direct, joint 2 passive)")
    j2 = ch.joints[1]
    return E1Data(np.asarray(ch.constant_inertia, float), j2.stiffness, j2.damping,
                  float(np.linalg.norm(j2.origin)), float(np.linalg.norm(ch.tool_origin)))


def _path_terms(p: E1Data, x, xd):
    """P, V = dP/dt and A = d2P/dt2 along x (x1' = x3, x2' = x4 substituted, seed eq. 42, 47)."""
    x1, x2, x3, x4 = x[0], x[1], x[2], x[3]
    P = p.l1 * ca.sin(x1) + p.l2 * ca.sin(x1 + x2)
    V = p.l1 * ca.cos(x1) * x3 + p.l2 * ca.cos(x1 + x2) * (x3 + x4)
    A = (-p.l1 * ca.sin(x1) * x3**2 - p.l2 * ca.sin(x1 + x2) * (x3 + x4) ** 2
         + p.l1 * ca.cos(x1) * xd[2] + p.l2 * ca.cos(x1 + x2) * (xd[2] + xd[3]))
    return P, V, A


def variant_dae(variant: str, p: E1Data, reference) -> ca.Function:
    """F(t, x, xdot) of the variant (5 unknowns for DD43: x and the dummy x1^)."""
    n = 5 if variant == "DD43" else 4
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", n), ca.SX.sym("xd", n)
    th = [reference.expression(t, o)[0] for o in range(3)]
    passive = p.J[1, 0] * xd[2] + p.J[1, 1] * xd[3] + p.k * x[1] + p.d * x[3]
    P, V, A = _path_terms(p, x, xd)
    rows = {
        "HI": lambda: [passive, xd[0] - x[2], xd[1] - x[3], P - th[0]],
        "DD43": lambda: [passive, x[4] - x[2], xd[1] - x[3], P - th[0], V - th[1]],
        "DD44": lambda: [passive, xd[1] - x[3], P - th[0], V - th[1]],
        "DD48": lambda: [passive, P - th[0], V - th[1], A - th[2]],
        "DD49": lambda: [passive, xd[1] - x[3], P - th[0], A - th[2]],
    }[variant]()
    return ca.Function(f"e1_{variant}", [t, x, xd], [ca.vertcat(*rows)])


def decoupled_ode(p: E1Data, reference):
    """DC: (G(t, xd, xd'), x_a(t, xd), x_a'(t, xd, xd')) for xd = [x1, x3], x_a = [x2, x4] (eq. 20-21)."""
    t, xd, xdd = ca.SX.sym("t"), ca.SX.sym("xd", 2), ca.SX.sym("xdd", 2)
    th = [reference.expression(t, o)[0] for o in range(2)]
    x1, x3 = xd[0], xd[1]
    x2 = -x1 + ca.asin((th[0] - p.l1 * ca.sin(x1)) / p.l2)  # (20a)
    x4 = (th[1] - p.l1 * ca.cos(x1) * x3) / (p.l2 * ca.cos(x1 + x2)) - x3  # (20b), from V = theta'
    xa = ca.vertcat(x2, x4)
    xa_dot = ca.jacobian(xa, t) + ca.jacobian(xa, xd) @ xdd
    G = ca.vertcat(xdd[0] - x3, p.J[1, 0] * xdd[1] + p.J[1, 1] * xa_dot[1] + p.k * x2 + p.d * x4)  # (21)
    return (ca.Function("dc_G", [t, xd, xdd], [G]), ca.Function("dc_xa", [t, xd], [xa]),
            ca.Function("dc_xa_dot", [t, xd, xdd], [xa_dot]))


# --- a plain Python Gauss-Newton BDF stepper (shared by KM and the like-for-like timings) -----


def _python_bdf(residual: ca.Function, z0: np.ndarray, n_x: int, t: np.ndarray, order: int, h: float,
                tol: float = 1e-10, max_iter: int = 20) -> np.ndarray:
    """March R(z_i, t_i, history) = 0 over t; z_i[:n_x] is the BDF state. Minimum-norm steps."""
    alpha = BDF_ALPHA[order]
    Z = np.zeros((len(t), len(z0)))
    Z[0] = z0
    hist = np.tile(z0[:n_x], (order, 1))  # at rest before t0
    for i in range(1, len(t)):
        past = alpha[1:] @ hist  # sum_j alpha_j x_{i-j}
        z = Z[i - 1].copy()
        for _ in range(max_iter):
            r, J = residual(z, t[i], past / h)
            r, J = np.asarray(r).ravel(), np.asarray(J)
            dz = np.linalg.lstsq(J, -r, rcond=None)[0]
            z += dz
            if np.abs(dz).max() <= tol * (1 + np.abs(z).max()):
                break
        else:
            raise SolverError(f"Gauss-Newton did not converge at t = {t[i]:.4g} (|R| = {np.abs(r).max():.3g})")
        Z[i] = z
        hist = np.vstack([z[:n_x], hist[:-1]])
    return Z


def _step_residual(F: ca.Function, n: int, order: int, h_alpha0: float) -> ca.Function:
    """(z = x_i, t, past) -> (F(t, x, alpha0/h x + past), Jacobian): one BDF step, square."""
    z, t, past = ca.SX.sym("z", n), ca.SX.sym("t"), ca.SX.sym("past", n)
    r = F(t, z, h_alpha0 * z + past)
    return ca.Function("step", [z, t, past], [r, ca.jacobian(r, z)])


def _km_residual(F: ca.Function, order: int, h: float) -> ca.Function:
    """KM step (38): z = [x, x', x''] (12), R = [F_1(t, x, x', x''); Z1^T F(t, x, D_h x)]."""
    from ffopt.analysis.strangeness import derivative_array

    t, X, F1 = derivative_array(F, 4, 1)
    z = ca.vertcat(*X)
    past = ca.SX.sym("past", 4)
    bdf_rows = F(t, X[0], BDF_ALPHA[order][0] / h * X[0] + past)[[1, 0]]  # (19a): x1' - x3, passive
    r = ca.vertcat(F1, bdf_rows)
    return ca.Function("km_step", [z, t, past], [r, ca.jacobian(r, z)])


# --- public entry point --------------------------------------------------------------------


def solve_inverse_variant(model, reference, variant: str, order: int = 6, step: float = 5e-3,
                          qa_guess=None, engine: str = "compiled") -> Trajectory:
    """Solve E1 simplified's inverse dynamics with one of the seed's formulations (VARIANTS).

    engine: "compiled" (ffopt.dae.bdf, C code) or "python" (the plain Gauss-Newton stepper used
    for KM, for like-for-like timings). KM always uses the Python stepper.
    """
    if variant not in VARIANTS:
        raise ProblemError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    p = e1_data(model)
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    n_steps = int(round(reference.t_end / step))
    t = step * np.arange(n_steps + 1)
    tic = time.perf_counter()
    if variant == "DC":
        x, xdot = _solve_dc(p, reference, q0, t, order, step, engine)
    elif variant == "KM":
        R = _km_residual(variant_dae("HI", p, reference), order, step)
        z0 = np.concatenate([q0, np.zeros(10)])
        Z = _python_bdf(R, z0, 4, t, order, step)
        # y = (x', x'') is not unique (only x is, Hypothesis 1): x' from the BDF difference, as HI
        x = Z[:, :4]
        xdot = _bdf_derivative(x, order, step)
    else:
        F = variant_dae(variant, p, reference)
        n = F.numel_in(1)
        x0 = np.concatenate([q0, np.zeros(n - 2)])
        if engine == "python":
            R = _step_residual(F, n, order, BDF_ALPHA[order][0] / step)
            x = _python_bdf(R, x0, n, t, order, step)
            xdot = _bdf_derivative(x, order, step)
        else:
            res = solve_bdf(F, x0, 0.0, step, n_steps, order)
            x, xdot = res.x, res.xdot
    wall = time.perf_counter() - tic
    q, v, a = x[:, :2], x[:, 2:4], xdot[:, 2:4]
    traj = trajectory_from_states(model, reference, t, np.hstack([q, v]), a, method=f"{variant}-bdf{order}")
    traj.stats.update({"variant": variant, "order": order, "step": step, "engine": engine if variant != "KM"
                       else "python", "time_solve_s": wall})
    return traj


def _bdf_derivative(x: np.ndarray, order: int, h: float) -> np.ndarray:
    """D_h x on the grid with the at-rest history before t0."""
    alpha = BDF_ALPHA[order]
    padded = np.vstack([np.tile(x[0], (order, 1)), x])
    return sum(alpha[j] * padded[order - j: len(padded) - j] for j in range(order + 1)) / h


def _solve_dc(p, reference, q0, t, order, h, engine):
    G, xa_fun, xa_dot_fun = decoupled_ode(p, reference)
    xd0 = np.array([q0[0], 0.0])
    if engine == "python":
        R = _step_residual(G, 2, order, BDF_ALPHA[order][0] / h)
        xd = _python_bdf(R, xd0, 2, t, order, h)
        xdd = _bdf_derivative(xd, order, h)
    else:
        res = solve_bdf(G, xd0, 0.0, h, len(t) - 1, order)
        xd, xdd = res.x, res.xdot
    n = len(t)
    xa = np.array(xa_fun.map(n)(t[None, :], xd.T)).T
    xa_dot = np.array(xa_dot_fun.map(n)(t[None, :], xd.T, xdd.T)).T
    x = np.column_stack([xd[:, 0], xa[:, 0], xd[:, 1], xa[:, 1]])
    xdot = np.column_stack([xdd[:, 0], xa_dot[:, 0], xdd[:, 1], xa_dot[:, 1]])
    return x, xdot
