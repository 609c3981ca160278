"""KM: k-step BDF on Kunkel & Mehrmann's underdetermined system, as replicated from Moberg & Hanssen,
inverse dynamics of flexible manipulators (DAE methods), sec. 6.3, eq. 38; sec. 7.2.3.

At each t_i the unknowns are x_i (n) and y_i = [x', ..., x^(mu+1)] ((mu+1) n, independent
algebraic variables), and the equations are

    F_mu(t_i, x_i, y_i) = 0                     (derivative array, eq. 10; (mu+1) n rows)  (38a)
    Z1^T F(t_i, x_i, D_h x_i) = 0               (d rows)                                   (38b)

with mu, d and Z1 from Hypothesis 1 (sec. 4.2) at the start point (robot at rest): Z1 spans
the range of F_xdot T2. The system is underdetermined in y but, by the hypothesis, determines
x_i; it is solved by Gauss-Newton with minimum-norm steps dz = -J^T (J J^T + eps I)^{-1} r
(solved as the KKT system [I J^T; J -eps I], condition ~ cond(J) rather than its square) (rows
equilibrated once at the start), a fixed number of iterations per step. The step function is
built in CasADi (MX, sparse QR) and iterated with ``mapaccum``, like ffopt.dae.bdf, so its cost
can be compared with DD/HI in the same machinery (Moberg & Hanssen: KM ~6x slower than DD).
The accelerations for u are the BDF derivative D_h v_i (y is not unique in x'' for mu = 1).
"""

from __future__ import annotations

import time
from math import comb

import casadi as ca
import numpy as np

from ffopt.analysis.strangeness import StrangenessReport, derivative_array, strangeness_index
from ffopt.dae.bdf import BDF_ALPHA
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import build_inverse_dae
from ffopt.models.flexible import FlexibleModel
from ffopt.replication.python_bdf import GaussNewtonStop, gauss_newton_march, least_squares_march
from ffopt.trajectory import Trajectory

GN_ITERATIONS = 4
REGULARIZATION = 1e-12  # rows are equilibrated to max |entry| = 1
RESIDUAL_TOL = 1e-7  # on the equilibrated residual
PYTHON_RESIDUAL_TOL = 1e-10  # Python engine: stop Gauss-Newton at this equilibrated residual


def km_matrices(F: ca.Function, n: int, mu: int, d: int, t0: float, x0: np.ndarray):
    """(Z1 (n x d), row weights of [F_mu; Z1^T F]) at rest at x0 (Hypothesis 1 steps 1-3)."""
    t, X, Fmu = derivative_array(F, n, mu)
    y = ca.vertcat(*X[1:])
    fun = ca.Function("km_jacobians", [t, *X], [ca.jacobian(Fmu, X[0]), ca.jacobian(Fmu, y),
                                               ca.jacobian(F(t, X[0], X[1]), X[1])])
    vals = [x0] + [np.zeros(n)] * (mu + 1)
    Nx, M, Fxd = (np.array(v, dtype=float) for v in fun(t0, *vals))
    u, s, _ = np.linalg.svd(M)
    rank_M = int(np.sum(s > 1e-9 * s[0]))
    Z2 = u[:, rank_M:]
    _, s2, vt = np.linalg.svd(Z2.T @ Nx)
    rank_A2 = int(np.sum(s2 > 1e-9 * max(s2[0], 1e-300))) if s2.size else 0
    T2 = vt[rank_A2:].T
    uf, _, _ = np.linalg.svd(Fxd @ T2)
    Z1 = uf[:, :d]
    size = np.concatenate([np.abs(np.hstack([Nx, M])).max(axis=1),
                           np.abs(Z1.T @ np.hstack([Nx[:n], Fxd])).max(axis=1)])
    weights = 1.0 / np.maximum(size, 1e-300)
    return Z1, weights


def _km_step_function(F: ca.Function, n: int, mu: int, order: int, Z1: np.ndarray, weights: np.ndarray):
    """(state [x_{i-1..i-k}; y_{i-1}], t_i, 1/h) -> (new state, [x_i; max |weighted residual|])."""
    t, X, Fmu = derivative_array(F, n, mu)
    y = ca.vertcat(*X[1:])
    hist, inv_h = ca.SX.sym("hist", n * order), ca.SX.sym("inv_h")
    alpha = BDF_ALPHA[order]
    xdot = (alpha[0] * X[0] + ca.mtimes(ca.reshape(hist, n, order), ca.DM(alpha[1:]))) * inv_h
    r = ca.diag(ca.DM(weights)) @ ca.vertcat(Fmu, ca.DM(Z1).T @ F(t, X[0], xdot))
    z = ca.vertcat(X[0], y)
    G = ca.Function("km_residual", [z, t, hist, inv_h], [r, ca.jacobian(r, z)])

    ny = y.numel()
    state = ca.MX.sym("state", n * order + ny)
    tm, ih = ca.MX.sym("t"), ca.MX.sym("inv_h")
    h_m, y_prev = state[: n * order], state[n * order:]
    weights_ex = [(-1) ** (j + 1) * comb(order, j) for j in range(1, order + 1)]
    zk = ca.vertcat(ca.mtimes(ca.reshape(h_m, n, order), ca.DM(weights_ex)), y_prev)
    for _ in range(GN_ITERATIONS):  # Gauss-Newton, minimum-norm steps
        rk, Jk = G(zk, tm, h_m, ih)
        m, nz = Jk.shape  # min-norm step from the KKT system [I J^T; J -eps I] (eps: dependent rows)
        K = ca.blockcat([[ca.MX.eye(nz), Jk.T], [Jk, -REGULARIZATION * ca.MX.eye(m)]])
        zk = zk + ca.solve(K, ca.vertcat(ca.MX.zeros(nz), -rk), "qr")[:nz]
    r_end, _ = G(zk, tm, h_m, ih)
    x_new = zk[:n]
    shifted = ca.vertcat(x_new, h_m[: n * (order - 1)]) if order > 1 else x_new
    return ca.Function("km_step", [state, tm, ih], [ca.vertcat(shifted, zk[n:]),
                                                      ca.vertcat(x_new, ca.mmax(ca.fabs(r_end)))])


def _km_python_residual(F: ca.Function, n: int, mu: int, order: int, Z1: np.ndarray, weights: np.ndarray):
    """(z = [x; y], t, past = sum_j alpha_j x_(i-j), 1/h) -> (R, dR/dz) for the Python stepper."""
    t, X, Fmu = derivative_array(F, n, mu)
    past, inv_h = ca.SX.sym("past", n), ca.SX.sym("inv_h")
    xdot = (BDF_ALPHA[order][0] * X[0] + past) * inv_h
    r = ca.diag(ca.DM(weights)) @ ca.vertcat(Fmu, ca.DM(Z1).T @ F(t, X[0], xdot))
    z = ca.vertcat(*X)
    return ca.Function("km_python_step", [z, t, past, inv_h], [r, ca.jacobian(r, z)])


def solve_km(F: ca.Function, x0: np.ndarray, h: float, n_steps: int, order: int, index: StrangenessReport,
             engine: str = "compiled", counts: dict | None = None):
    """(t, x (n_steps+1, n), residual (n_steps+1,), build s, solve s) by KM from rest at x0.

    index: F's strangeness index mu and number of differential equations d at x0 (``strangeness_index``).
    engine "compiled" / "vm": the CasADi step function iterated by mapaccum (compiled to C when
    possible); "python": the Python Gauss-Newton stepper of ffopt.replication.python_bdf (lstsq);
    "scipy": its scipy least_squares stepper (finite-difference Jacobians, like the paper's lsqnonlin).
    counts (optional dict, Python engines): residual evaluations, unknowns, equations per step.
    """
    n = F.numel_in(1)
    mu = index.mu
    tic = time.perf_counter()
    Z1, weights = km_matrices(F, n, mu, index.d, 0.0, x0)
    if engine in ("python", "scipy"):
        R = _km_python_residual(F, n, mu, order, Z1, weights)
        t_build = time.perf_counter() - tic
        tic = time.perf_counter()
        t = h * np.arange(n_steps + 1)
        z0 = np.concatenate([x0, np.zeros((mu + 1) * n)])
        if engine == "scipy":
            Z = least_squares_march(R, z0, n, t, order, h, counts=counts)
        else:
            Z = gauss_newton_march(R, z0, n, t, order, h, counts, GaussNewtonStop(residual_tol=PYTHON_RESIDUAL_TOL))
        return t, Z[:, :n], np.zeros(len(t)), t_build, time.perf_counter() - tic
    step = _km_step_function(F, n, mu, order, Z1, weights)
    if engine == "compiled":
        step = _compiled(step)
    march = step.mapaccum("km_march", n_steps)
    t_build = time.perf_counter() - tic
    tic = time.perf_counter()
    t = h * np.arange(n_steps + 1)
    start = np.concatenate([np.tile(x0, order), np.zeros((mu + 1) * n)])
    _, out = march(start, t[1:][None, :], 1.0 / h)
    out = np.array(out).T
    x = np.vstack([x0, out[:, :n]])
    res = np.concatenate([[0.0], out[:, n]])
    return t, x, res, t_build, time.perf_counter() - tic


def _compiled(step: ca.Function) -> ca.Function:
    """The step function as compiled C code (cached like ffopt.dae.bdf), or itself on failure."""
    import hashlib
    import warnings

    from ffopt.codegen import cache_dir as _cache_dir, compile_library as _compile_to

    key = hashlib.sha256(("km-1" + ca.__version__ + step.serialize()).encode()).hexdigest()[:32]
    so_path = _cache_dir(None) / f"km_{key}.so"
    try:
        if not so_path.exists():
            _compile_to((step,), so_path)
        return ca.external(step.name(), str(so_path))
    except (OSError, RuntimeError) as err:
        warnings.warn(f"compiling the KM step failed ({err}); using CasADi's virtual machine", RuntimeWarning)
        return step


def solve_inverse_km(model: FlexibleModel, reference, order: int = 6, step: float = 5e-3,
                     qa_guess=None, engine: str = "compiled") -> Trajectory:
    """Inverse dynamics by KM (Moberg & Hanssen eq. 38) on the I3 DAE; u from the BDF accelerations."""
    from ffopt.dae.inverse import trajectory_from_states

    tic = time.perf_counter()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    dae = build_inverse_dae(model, reference, "I3")
    x0 = dae.initial_state(q0)
    rep = strangeness_index(dae.F, dae.n_x, 0.0, [x0])
    n_steps = int(round(reference.t_end / step))
    t_setup = time.perf_counter() - tic
    counts, fallback = {}, None
    t, x, res, t_build, t_solve = solve_km(dae.F, x0, step, n_steps, order, rep, engine, counts)
    bad = np.flatnonzero(~np.isfinite(res) | (res > RESIDUAL_TOL))  # only the CasADi engines report res
    if bad.size:
        # The fixed-iteration regularised march (E12: stalls at ~4e-7 where the motion starts) is
        # retried by the Python Gauss-Newton stepper (SVD least squares, iterated to the residual),
        # which raises SolverError itself if it fails.
        i = bad[0]
        fallback = (f"{engine} march: weighted residual {res[i]:.3g} at t = {t[i]:.4g} after {GN_ITERATIONS} "
                    "regularised Gauss-Newton iterations; solved by the Python engine instead")
        engine = "python"
        t, x, res, t_build_python, t_solve = solve_km(dae.F, x0, step, n_steps, order, rep, engine, counts)
        t_build += t_build_python
    alpha = BDF_ALPHA[order]
    padded = np.vstack([np.tile(x0, (order, 1)), x])
    xdot = sum(alpha[l] * padded[order - l: order - l + len(t)] for l in range(order + 1)) / step
    nq = dae.nq
    traj = trajectory_from_states(model, reference, t, x, xdot[:, nq:2 * nq], method=f"KM-bdf{order}")
    traj.stats.update({"order": order, "step": step, "form": "KM", "mu": rep.mu, "d": rep.d, "a": rep.a,
                       "n_steps": n_steps, "max_residual": float(res.max()),
                       "gauss_newton_iterations": GN_ITERATIONS if engine in ("compiled", "vm") else "to the residual",
                       "engine": engine, "time_setup_s": t_setup, "time_build_s": t_build, "time_solve_s": t_solve,
                       "n_unknowns": (rep.mu + 2) * dae.n_x, **counts})
    if fallback:
        traj.stats["engine_fallback"] = fallback
    return traj
