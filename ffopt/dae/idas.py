"""The inverse dynamics by SUNDIALS IDAS (variable order, variable step): the reference solver.

IDAS needs an index-1 DAE in semi-explicit form. It is made from the I1 form F(t, x, x') = 0
(Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), eq. 34): the
differential variables x_D are those whose derivative appears in F; the algebraic unknowns are
z = [w; x_A] with w = x_D':

    x_D' = w,     0 = F(t, [x_D; x_A], [w; 0]).

dF/d(w, x_A) is nonsingular exactly when the I1 form has index 1, so IDAS's Newton iteration on
z is well posed. The robot starts at rest in static equilibrium: x_D(0) from it, and z(0) by
Newton on g(0, x_D(0), z) = 0 from [0; x_A(0)] (consistent initial values; the residual is checked,
so IDAS's own initial-condition calculation is not needed). This is the counterpart of the paper's
ode15i runs (sec. 7.4).

The torques need the derivatives of some algebraic variables too (the motor velocities of elastic
gears are algebraic in the I1 form, yet u contains the motor accelerations). They follow exactly
from differentiating the algebraic equations along the solution:
    z' = -g_z^{-1} (g_t + g_xD w).
"""

from __future__ import annotations

import time

import casadi as ca
import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import build_inverse_dae, choose_dummy_set
from ffopt.dae.inverse import trajectory_from_states
from ffopt.errors import SolverError
from ffopt.models.flexible import FlexibleModel
from ffopt.trajectory import Trajectory

IDAS_FORMS = ("I1", "DD")


def semi_explicit(F: ca.Function) -> tuple[np.ndarray, ca.SX, ca.SX, ca.SX, ca.SX, ca.SX]:
    """Split x into differential (derivative appears) and algebraic parts; build the IDAS DAE.

    Returns (is_differential mask, t, x_D, z, ode, alg) as SX.
    """
    n = F.numel_in(1)
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", n), ca.SX.sym("xd", n)
    Fxd = ca.jacobian(F(t, x, xd), xd).sparsity()
    diff = np.zeros(n, dtype=bool)
    diff[np.unique(Fxd.get_col())] = True
    iD, iA = np.flatnonzero(diff), np.flatnonzero(~diff)
    xD, w, xA = ca.SX.sym("xD", len(iD)), ca.SX.sym("w", len(iD)), ca.SX.sym("xA", len(iA))
    x_full, xd_full = ca.SX.zeros(n), ca.SX.zeros(n)
    x_full[iD.tolist()], x_full[iA.tolist()] = xD, xA
    xd_full[iD.tolist()] = w
    return diff, t, xD, ca.vertcat(w, xA), w, F(t, x_full, xd_full)


def _algebraic_projection(t, xD, z, alg) -> ca.Function:
    """(z guess, t, x_D) -> z with g(t, x_D, z) = 0 (Newton)."""
    g = ca.Function("g", [z, ca.vertcat(t, xD)], [alg])
    newton = ca.rootfinder("project", "newton", g, {"abstol": 1e-10, "error_on_fail": False})
    z0, tt, xx = ca.SX.sym("z0", z.numel()), ca.SX.sym("t"), ca.SX.sym("xD", xD.numel())
    return ca.Function("project", [z0, tt, xx], [newton(z0, ca.vertcat(tt, xx))])


def _consistent_z0(project, t, xD, z, alg, x0, diff, tol=1e-9) -> np.ndarray:
    """z(0) solving g(0, x_D(0), z) = 0 by Newton from [0; x_A(0)] (the state at rest).

    Raises SolverError at t = 0 if the residual, relative to the size of its row's terms, stays
    above ``tol`` (no consistent start near rest: e.g. an inconsistent path start).
    """
    guess = np.concatenate([np.zeros(diff.sum()), x0[~diff]])
    z0 = np.array(project(guess, 0.0, x0[diff])).ravel()
    g = ca.Function("g0", [t, xD, z], [alg, ca.jacobian(alg, z)])
    res, gz = (np.array(v) for v in g(0.0, x0[diff], z0))
    res = res.ravel()
    size = np.abs(gz) @ (1 + np.abs(z0)) + 1e-300
    if not np.all(np.isfinite(z0)) or np.max(np.abs(res) / size) > tol:
        raise SolverError(f"IDAS: no consistent initial values at t = 0 (algebraic residual {np.abs(res).max():.3g} "
                          "after Newton from the state at rest); check that the path starts at rest in a "
                          "reachable configuration (reference_spec.joint_guess)")
    return z0


def _algebraic_rates(t, xD, z, ode, alg, grid, xf, zf) -> np.ndarray:
    """z' (n, nz) from d/dt g(t, x_D, z) = 0 with x_D' = ode (index 1: g_z invertible).

    The linear solves are numerical (LAPACK, pivoting): a symbolic SX solve has no pivoting.
    """
    rhs = ca.jacobian(alg, t) + ca.jacobian(alg, xD) @ ode
    f = ca.Function("zdot_parts", [t, xD, z], [ca.densify(ca.jacobian(alg, z)), rhs]).map(len(grid))
    gz, r = f(grid[None, :], xf.T, zf.T)
    nz = z.numel()
    gz = np.asarray(gz).reshape(nz, len(grid), nz).transpose(1, 0, 2)
    return -np.linalg.solve(gz, np.asarray(r).T[:, :, None])[:, :, 0]


def _failure_interval(integrator, start, grid) -> tuple[float, float]:
    """(last output time IDAS reaches, first it does not), by bisection over the output grid.

    Runs that end earlier take slightly different internal steps, so this brackets a failure of
    IDAS on this path and tolerance, not necessarily the exact step where the full run failed.
    """
    ok, bad = 0, len(grid) - 1
    while bad - ok > 1:
        mid = (ok + bad) // 2
        try:
            integrator(grid[1:mid + 1])(**start)
            ok = mid
        except RuntimeError:
            bad = mid
    return float(grid[ok]), float(grid[bad])


def solve_inverse_idas(model: FlexibleModel, reference, step: float = 1e-3, rtol: float = 1e-10,
                       atol: float = 1e-12, qa_guess=None, form: str = "I1") -> Trajectory:
    """Solve an index-1 inverse DAE with IDAS; output on the grid of ``step``; u from the motor rows.

    form: "I1" (the differentiated form of ffopt.dae.forms, Moberg & Hanssen eq. 34) or "DD" (the automatic
    dummy-derivative reduction of ffopt.dae.dummy_derivatives, for any model).
    """
    if form not in IDAS_FORMS:
        raise SolverError(f"IDAS: form must be one of {', '.join(IDAS_FORMS)} (index 1), got {form!r}")
    tic = time.perf_counter()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    if form == "DD":
        from ffopt.dae.dummy_derivatives import reduce_index

        dae = reduce_index(model, reference, q0)
    else:
        dae = build_inverse_dae(model, reference, "I1", choose_dummy_set(model, q0[: model.layout.n_link]))
    diff, t, xD, z, ode, alg = semi_explicit(dae.F)
    n_steps = int(round(reference.t_end / step))
    grid = step * np.arange(n_steps + 1)
    opts = {"reltol": rtol, "abstol": atol, "max_num_steps": 100000, "calc_ic": False,
            "disable_internal_warnings": True, "suppress_algebraic": True}

    def integrator(times):
        return ca.integrator("inverse_idas", "idas", {"t": t, "x": xD, "z": z, "ode": ode, "alg": alg},
                             0.0, list(times), opts)

    integ = integrator(grid[1:])
    x0 = dae.initial_state(q0)
    project = _algebraic_projection(t, xD, z, alg)
    start = {"x0": x0[diff], "z0": _consistent_z0(project, t, xD, z, alg, x0, diff)}
    t_build = time.perf_counter() - tic
    tic = time.perf_counter()
    try:
        sol = integ(**start)
    except RuntimeError as err:
        t_ok, t_fail = _failure_interval(integrator, start, grid)
        raise SolverError(f"IDAS failed on the {form} inverse DAE: it reaches t = {t_ok:.6g} but not t = {t_fail:.6g} "
                          f"({str(err).strip().splitlines()[-1]}); try looser tolerances (rtol = {rtol:g} "
                          "now) or check the path there with the BDF solver") from None
    t_solve = time.perf_counter() - tic
    xf = np.array(sol["xf"]).T
    # IDAS interpolates z at the output times without error control on it (suppress_algebraic):
    # project, i.e. solve g(t, x_D, z) = 0 for z at each output time from IDAS's z.
    zf = np.array(project.map(n_steps)(np.array(sol["zf"]), grid[None, 1:], xf.T)).T
    nD = int(diff.sum())
    x = np.zeros((n_steps + 1, dae.n_x))
    xdot = np.zeros_like(x)
    x[0] = x0
    x[1:, diff], x[1:, ~diff] = xf, zf[:, nD:]
    xdot[1:, diff] = zf[:, :nD]
    zdot = _algebraic_rates(t, xD, z, ode, alg, grid[1:], xf, zf)
    xdot[1:, ~diff] = zdot[:, nD:]
    a = np.array(dae.accel.map(len(grid))(x.T, xdot.T)).T
    traj = trajectory_from_states(model, reference, grid, x, a, method=f"idas-{form}")
    stats = integ.stats()
    traj.stats.update({"step": step, "form": form, "rtol": rtol, "atol": atol, "n_steps_idas": stats.get("nsteps"),
                       "time_build_s": t_build, "time_solve_s": t_solve, "compiled": False})
    return traj
