"""Python BDF steppers for like-for-like timings of the replicated solver variants.

k-step BDF stepped in a Python loop, the same for every variant (the Kunkel-Mehrmann system
included): "python" takes minimum-norm Gauss-Newton steps with exact Jacobians (numpy lstsq);
"scipy" solves each step by scipy.optimize.least_squares with finite-difference Jacobians, the
analogue of the Matlab fsolve / lsqnonlin solver of Moberg & Hanssen, inverse dynamics of
flexible manipulators (sec. 7.2.5), so its cost can be set beside their timings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.dae.bdf import BDF_ALPHA
from ffopt.errors import SolverError


def python_bdf(F: ca.Function, x0: np.ndarray, h: float, n_steps: int, order: int, row_scale=None,
               engine: str = "python", counts: dict | None = None):
    """(t, x, xdot, wall s): k-step BDF in a Python loop over the steps (counts: see the marches).

    engine "python": minimum-norm Gauss-Newton steps with exact Jacobians (numpy lstsq);
    "scipy": scipy.optimize.least_squares per step with finite-difference Jacobians, the analogue of
    the paper's Matlab fsolve / lsqnonlin (see least_squares_march).
    """
    n = F.numel_in(1)
    alpha = BDF_ALPHA[order]
    scale = np.ones(n) if row_scale is None else np.asarray(row_scale, float)
    z, t_s, past = ca.SX.sym("z", n), ca.SX.sym("t"), ca.SX.sym("past", n)
    inv_h = ca.SX.sym("inv_h")
    r = ca.DM(scale) * F(t_s, z, (alpha[0] * z + past) * inv_h)
    R = ca.Function("python_bdf_step", [z, t_s, past, inv_h], [r, ca.jacobian(r, z)])
    t = h * np.arange(n_steps + 1)
    tic = time.perf_counter()
    march = least_squares_march if engine == "scipy" else gauss_newton_march
    x = march(R, x0, n, t, order, h, counts=counts)
    return t, x, bdf_derivative(x, order, h), time.perf_counter() - tic


@dataclass(frozen=True)
class GaussNewtonStop:
    """When ``gauss_newton_march`` ends a step: the update below ``tol`` (relative) or, if given, max |R| <=
    ``residual_tol`` (underdetermined systems (KM) need the latter, as their minimum-norm updates in the
    non-unique directions are roundoff-driven and need not shrink); failed after ``max_iter`` iterations."""

    tol: float = 1e-10
    max_iter: int = 20
    residual_tol: float | None = None


def gauss_newton_march(R: ca.Function, z0: np.ndarray, n_x: int, t: np.ndarray, order: int, h: float,
                       counts: dict | None = None, stop: GaussNewtonStop = GaussNewtonStop()) -> np.ndarray:
    """March R(z_i, t_i, sum_j alpha_j x_(i-j), 1/h) = 0; z_i[:n_x] is the BDF state, at rest before t0.

    Each step by Gauss-Newton iterations until ``stop`` (``GaussNewtonStop``).
    counts (optional dict) receives residual_evaluations (each with its exact Jacobian) and unknowns.
    """
    tol, max_iter, residual_tol = stop.tol, stop.max_iter, stop.residual_tol
    n_eval = 0
    alpha = BDF_ALPHA[order]
    Z = np.zeros((len(t), len(z0)))
    Z[0] = z0
    hist = np.tile(z0[:n_x], (order, 1))
    for i in range(1, len(t)):
        past = alpha[1:] @ hist
        z = Z[i - 1].copy()
        for _ in range(max_iter):
            r, J = R(z, t[i], past, 1.0 / h)
            n_eval += 1
            r, J = np.asarray(r).ravel(), np.asarray(J)
            if residual_tol is not None and np.abs(r).max() <= residual_tol:
                break
            dz = np.linalg.lstsq(J, -r, rcond=None)[0]
            z += dz
            if not np.all(np.isfinite(z)):
                break
            if np.abs(dz).max() <= tol * (1 + np.abs(z).max()):
                break
        else:
            z[:] = np.nan
        if not np.all(np.isfinite(z)):
            raise SolverError(f"Gauss-Newton (BDF-{order}, h = {h:g}) did not converge at t = {t[i]:.4g} "
                              f"(step {i}, |R| = {np.abs(r).max():.3g}); try another step or variant")
        Z[i] = z
        hist = np.vstack([z[:n_x], hist[:-1]])
    if counts is not None:
        counts.update(residual_evaluations=n_eval, unknowns=len(z0), equations=R.size1_out(0))
    return Z


LSQ_TOL = 1e-12  # scipy least_squares ftol / xtol / gtol
LSQ_RESIDUAL_TOL = 1e-6  # max |scaled residual| accepted after least_squares
# Moberg & Hanssen sec. 7.2.5: "solved using lsqnonlin or fsolve". Square step systems: dogleg trust region
# (Matlab fsolve's default); underdetermined (KM): trust-region reflective (lsqnonlin's default).
LSQ_METHOD_SQUARE = "dogbox"
LSQ_METHOD_UNDERDETERMINED = "trf"


def least_squares_march(R: ca.Function, z0: np.ndarray, n_x: int, t: np.ndarray, order: int, h: float,
                        counts: dict | None = None) -> np.ndarray:
    """As gauss_newton_march, but each step by scipy.optimize.least_squares with a 2-point
    finite-difference Jacobian: the paper's Matlab set-up (fsolve / lsqnonlin per BDF step, sec.
    7.2.5), whose cost grows with the number of unknowns (one residual call per unknown per
    Jacobian). Note: trf on the square E1 systems fails (DD) or jumps to the mirrored elbow (49).
    counts (optional dict) receives residual_evaluations (finite differences included), unknowns.
    """
    from scipy.optimize import least_squares

    res = R.slice("residual_only", list(range(R.n_in())), [0])
    m = R.size1_out(0)
    method = LSQ_METHOD_UNDERDETERMINED if m < len(z0) else LSQ_METHOD_SQUARE
    alpha = BDF_ALPHA[order]
    Z = np.zeros((len(t), len(z0)))
    Z[0] = z0
    hist = np.tile(z0[:n_x], (order, 1))
    n_eval = 0
    for i in range(1, len(t)):
        past = alpha[1:] @ hist
        fun = lambda z: np.asarray(res(z, t[i], past, 1.0 / h)).ravel()  # noqa: E731
        sol = least_squares(fun, Z[i - 1], method=method, jac="2-point", ftol=LSQ_TOL, xtol=LSQ_TOL, gtol=LSQ_TOL)
        n_eval += sol.nfev + sol.njev * len(z0)  # '2-point': one call per unknown per Jacobian
        r_max = np.abs(sol.fun).max()
        if not (np.all(np.isfinite(sol.x)) and r_max <= LSQ_RESIDUAL_TOL):
            raise SolverError(f"least_squares (BDF-{order}, h = {h:g}) did not converge at t = {t[i]:.4g} "
                              f"(step {i}, |R| = {r_max:.3g}: no consistent solution); try another step or variant")
        Z[i] = sol.x
        hist = np.vstack([sol.x[:n_x], hist[:-1]])
    if counts is not None:
        counts.update(residual_evaluations=n_eval, unknowns=len(z0), equations=m)
    return Z


def bdf_derivative(x: np.ndarray, order: int, h: float) -> np.ndarray:
    """D_h x on the grid, with the at-rest history x_0 before t0."""
    alpha = BDF_ALPHA[order]
    padded = np.vstack([np.tile(x[0], (order, 1)), x])
    return sum(alpha[j] * padded[order - j: len(padded) - j] for j in range(order + 1)) / h
