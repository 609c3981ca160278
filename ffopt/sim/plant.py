"""Forward simulation of the flexible plant driven by motor torques (verification of a plan).

The plant is ``model.plant_rhs`` (the same symbolic model every solver uses), the ODE
x' = [v; a(q, v, tau); z'] in x = [q; v; z] with the model's drive states z (armature currents of
DC-motor electrics; none for torque inputs, tau = u), integrated with CVODES (BDF, Newton, tight
tolerances) through ``casadi.integrator`` in ONE call for the whole output grid.

Inputs between grid points
--------------------------
The feed-forward torque u_ff (n, N) given on the grid t (n,) is interpolated piecewise polynomially
(``SimulationOptions.interpolation``), ``"linear"`` (default: what a controller that interpolates
the torque table linearly applies) or ``"cubic"`` (SciPy's not-a-knot cubic spline through the same
samples: the best reconstruction of a smooth plan, error O(h^4) instead of O(h^2)) or ``"zoh"``
(zero-order hold: row k applied from t_k up to t_k+1, what a controller with a sample-and-hold
output applies; the feedback references then stay linear). This is done exactly,
not by an approximation inside the integrator: on interval k, [t_k, t_k+1], the integrator
receives the local polynomial coefficients as piecewise-constant controls (CasADi's control input
``u`` holds one column per output interval) and evaluates

    u_ff(t) = c0_k + c1_k tau + c2_k tau^2 + c3_k tau^3,   tau = t - t_k

(the local form, better conditioned for t >> t_k+1 - t_k). The same holds for the PD references
qm_ref, dqm_ref. CVODES restarts at every grid point, so the kinks of the piecewise input are
handled without loss of accuracy.

The integrator depends only on the plant, the grid and the tolerances (torques, references,
gains and the start are its inputs), so it is built once per plant model and grid and reused by
every case that simulates that plant (``ffopt.cache``).

Optional feedback loop (two-degree-of-freedom structure, Thuemmel, Otter & Bals)
--------------------------------------------------------------------------------
A linear state feedback about a reference state (``StateFeedback``):

    u_total = u_ff + K (x_ref - x),   x = [q; v],   K (N, 2 nq)

The motor-side PD loop (``MotorPD``) is the special case whose K has entries only in the columns
of the motor coordinates: u_total = u_ff + Kp (qm_ref - qm) + Kd (dqm_ref - dqm), with qm the
coordinate turned by input j's motor, ``q[layout.motor_of_input[j]]`` (the motor angle qm for an
elastic gear, the joint angle itself for a direct-drive joint). Default PD gains from
``pd_gains``; the feedback laws and their gain rules are in ``ffopt.control``. The reference
x_ref is interpolated like u_ff, K is a parameter of the integrator (one integrator per plant and
grid serves every controller).
"""

from __future__ import annotations

import hashlib
import queue
import subprocess
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt import interrupt
from ffopt.cache import per_model
from ffopt.codegen import CFLAGS_QUICK, available_cores, cache_dir, compile_library, compiler_message, library_key
from ffopt.errors import VerificationError
from ffopt.models.flexible import FlexibleModel
from ffopt.progress import HEARTBEAT_S as PROGRESS_EVERY_S
from ffopt.progress import heartbeat

__all__ = ["MotorPD", "SimResult", "SimulationOptions", "StateFeedback", "pd_gains", "simulate", "simulate_all"]


@dataclass
class MotorPD:
    """Motor-side PD loop: u += kp (qm_ref - qm) + kd (dqm_ref - dqm).

    kp, kd: (N,) gains (N m/rad, N m s/rad, arm-side units); qm_ref, dqm_ref: (n, N) references
    on the simulation grid, linear between grid points.
    """

    kp: np.ndarray
    kd: np.ndarray
    qm_ref: np.ndarray
    dqm_ref: np.ndarray
    # optional motor accelerations, (n, N) or a pair (at the start, at the end of each interval: (n-1, N)
    # each, for a held input that jumps at the grid points): then qm_ref and dqm_ref are cubic Hermite
    # between grid points (qm from qm, dqm; dqm from dqm, ddqm): the planned motion on a coarse table
    ddqm_ref: np.ndarray | tuple | None = None

    def state_feedback(self, layout) -> "StateFeedback":
        """The same loop as a ``StateFeedback`` on the plant's state x = [q; v] (layout: model.layout)."""
        nq, motor = layout.nq, layout.motor_of_input
        kp, kd = np.asarray(self.kp, float).ravel(), np.asarray(self.kd, float).ravel()
        qr = np.asarray(self.qm_ref, float).reshape(-1, len(motor))
        K = np.zeros((len(motor), 2 * nq))
        x_ref = np.zeros((len(qr), 2 * nq))
        for j, m in enumerate(motor):
            K[j, m], K[j, nq + m] = kp[j], kd[j]
            x_ref[:, m] = qr[:, j]
            x_ref[:, nq + m] = np.asarray(self.dqm_ref, float).reshape(len(qr), -1)[:, j]
        return StateFeedback(K, x_ref)


@dataclass
class StateFeedback:
    """Linear state feedback about a reference: u += K (x_ref - x) with x = [q; v] of the plant.

    K: (N, 2 nq) gains (N m/rad, N m s/rad; N m/m for modal coordinates); x_ref: (n, 2 nq) the
    reference state on the simulation grid, interpolated like the feedforward torque.
    """

    K: np.ndarray
    x_ref: np.ndarray

    def state_feedback(self, layout) -> "StateFeedback":
        return self


@dataclass
class SimResult:
    """Simulated plant on the output grid.

    t (n,); q, v, a (n, nq) coordinates [qa; qm], velocities and accelerations; y (n, n_out)
    controlled tool outputs; tool (n, 3) tool position; u_applied (n, N) total input
    (feedforward + PD: torque, or armature voltage) at the grid points; z (n, n_z) drive states
    (armature currents); torque (n, N) torques at the gear outputs; stats: integrator, wall time, ...
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    y: np.ndarray
    tool: np.ndarray
    u_applied: np.ndarray
    stats: dict = field(default_factory=dict)
    z: np.ndarray | None = None
    torque: np.ndarray | None = None


def pd_gains(model: FlexibleModel, q0: np.ndarray, bandwidth_hz: float, damping_ratio: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """Default motor-side PD gains (N,), (N,) for a closed-loop bandwidth f and damping zeta.

    Each motor is tuned as a decoupled second-order loop J s^2 + Kd s + Kp with
        Kp = J (2 pi f)^2,   Kd = 2 zeta J (2 pi f),
    where J is the inertia seen by motor j:
      - elastic-gear joint: the motor inertia (the gear spring decouples the link at high
        frequency; this is the usual choice for motor-side loops of elastic-joint robots);
      - direct-drive joint: the diagonal entry of the full generalised mass matrix
        d(equations_of_motion)/da at q0 (link inertia seen by the joint plus motor inertia).
    """
    L = model.layout
    q0 = np.asarray(q0, float).ravel()
    A = per_model(model, "generalised_mass", lambda: _generalised_mass(model))
    M = np.array(A(q0, np.zeros(L.nq), np.zeros(L.nq), np.zeros(L.n_u)))
    J = np.empty(L.n_u)
    for j, link in enumerate(L.actuated):
        if link in L.gear:
            J[j] = model.chain.joints[link].motor_inertia
        else:
            J[j] = M[link, link]
    w = 2.0 * np.pi * float(bandwidth_hz)
    return J * w**2, 2.0 * float(damping_ratio) * J * w


def input_gains(model: FlexibleModel, kp: np.ndarray, kd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Torque PD gains (N m/rad, N m s/rad) as gains on the model's input: unchanged for torque inputs,
    x R / (i C_t) (V/rad, V s/rad: the drive's static torque per volt) for DC-motor electrics."""
    if model.drives is None:
        return kp, kd
    scale = model.drives.volts_per_newton_metre()
    return kp * scale, kd * scale


def _generalised_mass(model: FlexibleModel) -> ca.Function:
    return ca.Function("mass", [model.q, model.v, model.a, model.u],
                       [ca.jacobian(model.equations_of_motion(model.q, model.v, model.a, model.u), model.a)])


# --------------------------------------------------------------------------- integrator
INTERPOLATIONS = ("linear", "cubic", "zoh")
_N_COEF = 4  # local cubic per interval (linear pieces have c2 = c3 = 0)


LOOPS = ("pd", "state")  # the integrator's feedback structure: motor PD (diagonal) or full state feedback


def _closed_loop_ode(model: FlexibleModel, loop: str = "pd"):
    """(x, c, p, t, rhs) of ``_build_closed_loop_ode``, built once per model and loop (the integrators, the
    compiled plant and the stiffness check share them)."""
    return per_model(model, ("closed_loop_ode", loop), lambda: _build_closed_loop_ode(model, loop))


def _closed_loop_rhs_jacobian(model: FlexibleModel, loop: str = "pd") -> ca.SX:
    """d rhs / d x of the driven plant (SX), built once per model and loop."""
    def build():
        x, _, _, _, rhs = _closed_loop_ode(model, loop)
        return ca.jacobian(rhs, x)
    return per_model(model, ("closed_loop_rhs_jacobian", loop), build)


def _build_closed_loop_ode(model: FlexibleModel, loop: str = "pd"):
    """Symbols and right-hand side of the driven plant with polynomial inputs on one interval.

    State x = [q; v; z] (z: the model's drive states, e.g. armature currents). loop "pd": control
    vector c = [coefficients of u_ff, qm_ref, dqm_ref (4N each, power-major); t_k] (12N + 1),
    parameters p = [kp, kd] (2N). loop "state": c = [coefficients of u_ff (4N), of x_ref (8nq); t_k],
    p = K (N x 2nq, column-major) acting on [q; v]. Two structures rather than one: the PD
    integrator keeps the sparse Jacobian (and the numbers) of the plain motor loop.
    """
    L = model.layout
    N, nq = L.n_u, L.nq
    width = 3 * N if loop == "pd" else N + 2 * nq
    x = model.sym("x", 2 * nq + model.n_z)
    c = model.sym("c", _N_COEF * width + 1)
    p = model.sym("p", 2 * N if loop == "pd" else N * 2 * nq)
    t = model.sym("t", 1)
    _, u = _closed_loop_input(model, loop, x, c, p, t)
    return x, c, p, t, model.plant_rhs(x, u)


def _closed_loop_input(model: FlexibleModel, loop: str, x, c, p, t):
    """(feedforward, total input) of the driven plant at state x and time t on one interval (see
    ``_build_closed_loop_ode`` for c and p)."""
    L = model.layout
    N, nq = L.n_u, L.nq
    q, v = x[:nq], x[nq:2 * nq]
    tau = t - c[-1]

    def signal(start, n):  # Horner on the coefficients of the table of n columns starting at c[start]
        block = c[start:start + _N_COEF * n]
        val = block[(_N_COEF - 1) * n:]
        for power in range(_N_COEF - 2, -1, -1):
            val = block[power * n:(power + 1) * n] + tau * val
        return val

    uff = signal(0, N)
    if loop == "pd":
        qr, dqr = signal(_N_COEF * N, N), signal(2 * _N_COEF * N, N)
        motor = L.motor_of_input
        return uff, uff + p[:N] * (qr - q[motor]) + p[N:] * (dqr - v[motor])
    return uff, uff + ca.reshape(p, N, 2 * nq) @ (signal(_N_COEF * N, 2 * nq) - x[:2 * nq])


def _piece_coefficients(t: np.ndarray, table: np.ndarray, interpolation: str) -> np.ndarray:
    """Local polynomial coefficients (4, n-1, N) of the interpolant of table (n, N) on t."""
    n, N = table.shape
    coef = np.zeros((_N_COEF, n - 1, N))
    if interpolation == "zoh":  # row k applied from t_k up to t_k+1 (the last row is never applied)
        coef[0] = table[:-1]
    elif interpolation == "linear" or n < 4:  # a not-a-knot spline needs 4 points
        coef[0] = table[:-1]
        coef[1] = np.diff(table, axis=0) / np.diff(t)[:, None]
    else:
        from scipy.interpolate import CubicSpline  # ~0.3-1 s to import: only when a spline is asked for

        coef[::-1] = CubicSpline(t, table, axis=0, bc_type="not-a-knot").c  # SciPy: highest power first
    return coef


def _hermite_coefficients(t: np.ndarray, y: np.ndarray, dy) -> np.ndarray:
    """Local coefficients (4, n-1, N) of the cubic Hermite interpolant of values y (n, N) and slopes dy:
    (n, N), or a pair (slopes at the start, at the end of each interval), (n-1, N) each."""
    h = np.diff(t)[:, None]
    slope = np.diff(y, axis=0) / h
    d0, d1 = (dy[:-1], dy[1:]) if not isinstance(dy, tuple) else dy
    coef = np.zeros((_N_COEF, len(t) - 1, y.shape[1]))
    coef[0], coef[1] = y[:-1], d0
    coef[2] = (3.0 * slope - 2.0 * d0 - d1) / h
    coef[3] = (d0 + d1 - 2.0 * slope) / h**2
    return coef


def _interval_controls(t: np.ndarray, interpolation: str, *tables: np.ndarray, hermite=None) -> np.ndarray:
    """Columns of the integrator's control input, one per interval: (4 x table columns + 1, n-1).

    The first table is the input; the others are feedback references. With a zero-order hold only the
    input is held: the references stay linear (a held motor-angle reference would make the continuous
    PD fight the motion by kp * speed * period / 2)."""
    ref_interpolation = "linear" if interpolation == "zoh" else interpolation
    coefs = [_piece_coefficients(t, tab, interpolation if i == 0 else ref_interpolation)
             for i, tab in enumerate(tables)]
    if hermite is not None:  # the references from values and derivatives: [(y, dy), ...]
        coefs = coefs[:1] + [_hermite_coefficients(t, y, dy) for y, dy in hermite]
    cols = [c.transpose(0, 2, 1).reshape(-1, len(t) - 1) for c in coefs]
    cols.append(t[None, :-1])
    return np.vstack(cols)


def _integrator_options(rtol, atol, method: str = "bdf"):
    """CVODES's options: "bdf" with Newton's method on the Jacobian (stiff plants), or "adams" (Adams-Moulton)
    with functional iteration, no Jacobian, at ADAMS_TOLERANCE x the tolerances (``integration_method``)."""
    scale = ADAMS_TOLERANCE if method == "adams" else 1.0
    opts = {"reltol": scale * float(rtol), "abstol": scale * float(atol), "max_num_steps": 100000,
            "disable_internal_warnings": True}
    if method == "adams":
        return {**opts, "linear_multistep_method": "adams", "nonlinear_solver_iteration": "functional"}
    return {**opts, "linear_multistep_method": "bdf", "newton_scheme": "direct"}


# Which CVODES method a simulation takes, from the plant's stiffness against its table. The input is linear
# between the table's rows, so its slope jumps at every row and CVODES's steps stay far below a row (Manutec r3,
# rtol 1e-9: 16 steps a 1 ms row). At such steps a plant whose Jacobian's spectral radius rho (closed loop, at the
# start) satisfies rho h_row < STIFF_RHO_H is not stiff: Adams with functional iteration needs no Jacobian and
# fewer steps. Adams runs at a tenth of the tolerances: then its tool positions are as close to a BDF run at rtol
# 1e-12 as BDF's at the given rtol, or closer (rtol 1e-9, open loop / PD, um: Manutec r3 0.010 / 0.0004 against
# 0.024 / 0.0019; E12 0.12 / 0.001 against 0.17 / 0.008; UR5 0.037 / 0.0001 against 0.036 / 0.001), and it is
# still 1.7-5x faster (one case, compiled plant, CPU: r3 0.34 -> 0.17 s, E12 0.052 -> 0.022 s, UR5 0.19 -> 0.052
# s; E12 with its gear damping x1e3 (rho h = 3.8) and x1e4 (rho h = 38) at the same tolerance: 0.10 -> 0.043 s,
# 0.101 -> 0.077 s). A run Adams gives up on is run again by BDF.
STIFF_RHO_H = 30.0
ADAMS_TOLERANCE = 0.1


def integration_method(model: FlexibleModel, loop: str, x0, C, p, t0: float, h_row: float,
                       interpolation: str = "linear") -> str:
    """"adams" if the input is continuous and changes from row to row (its interval controls C differ) and the
    closed-loop plant's spectral radius at the start (x0, the first row's controls, gains p) times the shortest
    row h_row is below STIFF_RHO_H, else "bdf". A constant input (the settle window after the table) has no kinks
    to keep the steps short: BDF then steps a row at a time where Adams would be held to 1 / rho (Manutec r3's
    1 s window: 0.011 s against 0.13 s). A held input ("zoh") jumps at every row: CVODES's error estimate does
    not see a jump it steps over, and Adams carried on through them to a wrong answer (E12 planned for a 2 ms
    hold: 37 um open loop against 0.04 um), where BDF fails and the interval-by-interval retry is exact."""
    C = np.asarray(C, float)
    if interpolation == "zoh" or C.shape[1] < 2 or not np.any(np.ptp(C[:-1], axis=1) > 0):  # C[-1]: row times
        return "bdf"
    J = per_model(model, ("closed_loop_jacobian", loop), lambda: _closed_loop_jacobian(model, loop))
    try:
        lam = np.linalg.eigvals(np.array(J(x0, C[:, 0], p, t0), float))
    except (np.linalg.LinAlgError, ValueError):
        return "bdf"
    rho = float(np.abs(lam).max(initial=0.0))
    return "adams" if np.isfinite(rho) and rho * h_row < STIFF_RHO_H else "bdf"


def _closed_loop_jacobian(model: FlexibleModel, loop: str) -> ca.Function:
    x, c, p, tt, _ = _closed_loop_ode(model, loop)
    return ca.Function("closed_loop_jacobian", [x, c, p, tt], [_closed_loop_rhs_jacobian(model, loop)])


def _simulate_stepwise(model, t, x0, C, P, rtol, atol, loop="pd"):
    """Fallback / failure locator: one interval at a time in scaled time s in [0, 1].

    Returns (X (n, 2nq), None) on success or (partial X, index k of the failing interval).
    """
    x, c, p, tt, rhs = _closed_loop_ode(model, loop)
    tk, h, s = model.sym("tk", 1), model.sym("h", 1), model.sym("s", 1)
    f = ca.Function("f", [x, c, p, tt], [rhs])
    ode = h * f(x, c, p, tk + h * s)
    F = ca.integrator("plant_step", "cvodes", {"x": x, "p": ca.vertcat(c, p, tk, h), "t": s, "ode": ode},
                      0.0, 1.0, _integrator_options(rtol, atol))
    X = np.full((len(t), x.numel()), np.nan)
    X[0] = x0
    for k in range(len(t) - 1):
        try:
            xf = np.array(F(x0=X[k], p=np.concatenate([C[:, k], P, [t[k], t[k + 1] - t[k]]]))["xf"]).ravel()
        except RuntimeError:
            interrupt.check()  # CasADi reports a Ctrl-C inside CVODES as a RuntimeError
            return X, k
        if not np.all(np.isfinite(xf)):
            return X, k
        X[k + 1] = xf
    return X, None


def plant_integrator(model: FlexibleModel, t: np.ndarray, rtol: float, atol: float, loop: str = "pd",
                     compile: bool = True, copy: int = 0, method: str = "bdf") -> ca.Function:
    """The CVODES integrator of the driven plant with outputs on the grid t, built once per plant
    model, grid, tolerances, loop structure, compilation and method (x0, interval controls and gains are its
    inputs). ``compile``: the right-hand side and its Jacobian as compiled C (``compiled_plant``).
    ``copy``: a second, third, ... instance for simulations that run at the same time (each keeps its own
    statistics). ``method``: "bdf" or "adams" (``integration_method``)."""
    grid = hashlib.sha256(np.ascontiguousarray(t, dtype=float).tobytes()).hexdigest()
    key = ("cvodes", grid, float(rtol), float(atol), bool(compile)) + (() if loop == "pd" else (loop,)) \
        + (() if copy == 0 else ("copy", int(copy))) + (() if method == "bdf" else (method,))
    return per_model(model, key, lambda: _integrator(model, t, rtol, atol, loop, compile, method))


def _integrator(model: FlexibleModel, t: np.ndarray, rtol: float, atol: float, loop: str = "pd",
                compile: bool = True, method: str = "bdf") -> ca.Function:
    dae = compiled_plant(model, loop, len(t)) if compile else None
    if dae is None and not model.symbolic_solve and model.n_z == 0:
        dae = _large_plant_dae(model, loop)
    if dae is None:  # CasADi's virtual machine evaluates the right-hand side and its Jacobian
        x, c, p, tt, rhs = _closed_loop_ode(model, loop)
        dae = {"x": x, "u": c, "p": p, "t": tt, "ode": rhs}
    return ca.integrator("plant", "cvodes", dae, float(t[0]), [float(ti) for ti in t[1:]],
                         _integrator_options(rtol, atol, method))


def _large_plant_dae(model: FlexibleModel, loop: str) -> ca.Function:
    """The driven plant of a large model (``model.symbolic_solve`` false: its mass matrix factorised at run time)
    as CVODES's DAE function, with its Jacobian from ``model.forward_dynamics_jacobian`` (CasADi would
    differentiate the factorisation instead, 3x slower at nq = 75). CasADi takes a function's own Jacobian only
    where it cannot differentiate it otherwise: the plant is called through a wrapper that has no forward or
    reverse derivatives."""
    x, c, p, tt, rhs = _closed_loop_ode(model, loop)
    nq = model.layout.nq
    q, v = x[:nq], x[nq:]
    _, u = _closed_loop_input(model, loop, x, c, p, tt)
    a_q, a_v, a_u = model.forward_dynamics_jacobian(q, v, u)
    u_x = ca.jacobian(u, x)
    jac_ode_x = ca.vertcat(ca.horzcat(ca.MX(nq, nq), ca.MX.eye(nq)), ca.horzcat(a_q, a_v) + a_u @ u_x)
    z, none = ca.MX.sym("z", 0), ca.MX(0, 1)
    ins, outs = [tt, x, z, p, c], [rhs, none, none, none]
    nominal = [ca.MX.sym(f"out_{o}", e.sparsity()) for o, e in zip(ca.dyn_out(), outs)]
    blocks = [jac_ode_x if (o, i) == (0, 1) else ca.MX(outs[o].numel(), ins[i].numel())
              for o in range(len(outs)) for i in range(len(ins))]
    jac = ca.Function("jac_large_plant", ins + nominal, blocks, ca.dyn_in() + [f"out_{o}" for o in ca.dyn_out()],
                      [f"jac_{a}_{b}" for a in ca.dyn_out() for b in ca.dyn_in()])
    inner = ca.Function("large_plant", ins, outs, ca.dyn_in(), ca.dyn_out(),
                        {"custom_jacobian": jac, "jac_penalty": 0, "enable_forward": False, "enable_reverse": False,
                         "enable_fd": False, "never_inline": True})
    args = [ca.MX.sym(n, e.sparsity()) for n, e in zip(ca.dyn_in(), ins)]
    return ca.Function("plant", args, inner(*args), ca.dyn_in(), ca.dyn_out(), {"max_num_dir": 2 * x.numel()})


# --------------------------------------------------------------------------- compiled plant
# CVODES spends its time in the plant's right-hand side and its Jacobian (Manutec r3, 1707 rows: 27.6k steps,
# 38k right-hand sides at 10 us and 9.5k Jacobians at 95 us in CasADi's virtual machine: 1.4 s of 1.4 s). Both
# are generated as C (ffopt.codegen, cached on disk) and given to CVODES as an external DAE function
# (t, x, z, p, u) -> (ode, alg, quad, zero) with its Jacobian "jac_<name>" in the same library, where CasADi's
# External looks for it. The numbers are those of the virtual machine to the last bit (the same expressions).
# Measured on the r3 (2026-11-27): a 1707-row case takes 1.40 s in the virtual machine, 0.33 s compiled with
# gcc -O0 and 0.25 s with -O2, but -O2 costs 15 s of gcc against 0.8 s: the plant is built with -O0 only.
# gcc -O0 costs ~25 us per instruction of the generated code, the virtual machine ~27 ns per instruction and
# table row: compiling pays from ~1000 simulated rows (a verification simulates >= 2 cases), so a grid of
# fewer rows than COMPILE_MIN_ROWS runs in the virtual machine unless the library is already built.
_PLANT_CODE_VERSION = "plant-1"
COMPILE_MIN_ROWS = 500
_COMPILED: dict[str, ca.Function] = {}  # key -> loaded external
_COMPILE_FAILED: set[str] = set()


def compiled_plant(model: FlexibleModel, loop: str = "pd", n_rows: int | None = None) -> ca.Function | None:
    """The driven plant's DAE function for CVODES as compiled C, or None: not worth compiling for a grid of
    ``n_rows`` (< COMPILE_MIN_ROWS and not built yet), or it cannot be compiled (a warning says why)."""
    if not model.symbolic_solve:  # a large model's plant factorises its mass matrix at run time: not compiled
        return None
    key, functions = per_model(model, ("plant_code", loop), lambda: _plant_functions(model, loop))
    if key is None or key in _COMPILE_FAILED:
        return None
    if key in _COMPILED:
        return _COMPILED[key]
    so = _plant_so(key)
    if not so.exists() and n_rows is not None and n_rows < COMPILE_MIN_ROWS:
        return None
    try:
        if not so.exists():
            compile_library(functions, so, flags=CFLAGS_QUICK)
        ext = ca.external(functions[0].name(), str(so))
    except (OSError, RuntimeError, AttributeError, subprocess.SubprocessError) as err:
        _COMPILE_FAILED.add(key)
        warnings.warn(f"compiling the plant for the verification failed ({compiler_message(err)}); "
                      "the simulation runs in CasADi's virtual machine (slower, same numbers)", RuntimeWarning)
        return None
    _COMPILED[key] = ext
    return ext


def plant_needs_compiling(model: FlexibleModel, loop: str = "pd", n_rows: int | None = None) -> bool:
    """Whether ``compiled_plant`` would compile now for a grid of ``n_rows`` (none of this plant in memory or
    on disk yet)."""
    if (n_rows is not None and n_rows < COMPILE_MIN_ROWS) or not model.symbolic_solve:
        return False
    key, _ = per_model(model, ("plant_code", loop), lambda: _plant_functions(model, loop))
    if key is None or key in _COMPILE_FAILED or key in _COMPILED:
        return False
    return not _plant_so(key).exists()


def _plant_functions(model: FlexibleModel, loop: str) -> tuple[str | None, tuple[ca.Function, ca.Function]]:
    """(hash key, (dae, jac_dae)) of the plant with ``loop``; the key None if it cannot be serialized.

    The Jacobian function has the signature CasADi's External expects (inputs, then nominal outputs;
    every output block) but only d ode / d x is computed: the other blocks are declared structurally zero,
    which is all CVODES asks for (no sensitivities): not a function to differentiate otherwise."""
    x, c, p, tt, rhs = _closed_loop_ode(model, loop)
    z, none = ca.SX.sym("z", 0), ca.SX(0, 1)
    ins, outs = [tt, x, z, p, c], [rhs, none, none, none]
    key = library_key([ca.Function("plant", ins, outs, ca.dyn_in(), ca.dyn_out())], _PLANT_CODE_VERSION,
                      CFLAGS_QUICK, loop)
    if key is None:
        return None, ()
    name = f"plant_{key[:16]}"
    dae = ca.Function(name, ins, outs, ca.dyn_in(), ca.dyn_out())
    blocks = [_closed_loop_rhs_jacobian(model, loop) if (o, i) == (0, 1) else ca.SX(outs[o].numel(), ins[i].numel())
              for o in range(len(outs)) for i in range(len(ins))]
    jac_names = [f"jac_{a}_{b}" for a in ca.dyn_out() for b in ca.dyn_in()]
    nominal = [ca.SX.sym(f"out_{o}", e.sparsity()) for o, e in zip(ca.dyn_out(), outs)]
    jac = ca.Function(f"jac_{name}", ins + nominal, blocks, ca.dyn_in() + [f"out_{o}" for o in ca.dyn_out()],
                      jac_names)
    return key, (dae, jac)


def _plant_so(key: str) -> Path:
    return cache_dir() / f"plant_{key[:32]}.so"


@dataclass(frozen=True)
class SimulationOptions:
    """How ``simulate`` integrates: CVODES's tolerances (relative, absolute on x = [q; v] in rad and rad/s); how u
    and the references are applied between grid points, "linear", "cubic" (spline) or "zoh" (u held over each
    interval; the references stay linear); compile: the plant's right-hand side and Jacobian as compiled C (cached
    on disk; the same numbers as CasADi's virtual machine, which runs without a C compiler)."""

    rtol: float = 1e-9
    atol: float = 1e-11
    interpolation: str = "linear"
    compile: bool = True


def simulate(model: FlexibleModel, t, u, q0, v0=None, pd: MotorPD | StateFeedback | None = None, z0=None,
             options: SimulationOptions = SimulationOptions()) -> SimResult:
    """Simulate the plant on the grid t (n,) driven by u (n, N) given on that grid.

    q0, v0: initial coordinates and velocities (nq,), v0 = 0 by default (at rest). pd: optional
    feedback loop, a motor-side PD (``MotorPD``) or any linear state feedback on [q; v]
    (``StateFeedback``). z0: initial drive states (armature currents), by default their steady state
    under the input at t[0]. options: tolerances, interpolation and compiled plant (``SimulationOptions``).
    Raises VerificationError if the integration fails.
    """
    run = _prepare(model, t, u, q0, v0, pd, z0, options)
    return _finish(run, *_integrate(run))


def simulate_all(requests: dict, workers: int | None = None, progress=None) -> dict:
    """Several simulations at once: {label: keyword arguments of ``simulate``} -> {label: SimResult, or the
    VerificationError that simulation raised}. The integrations run side by side on up to ``workers``
    threads (None: one per core this process may use; CasADi releases the GIL inside CVODES), everything
    else in the calling thread; the numbers are those of ``simulate`` to the last bit. The first request
    runs in the calling thread, so a Ctrl-C stops it as it stops ``simulate``. progress: called every
    HEARTBEAT_S while they run (how many are done), so that a long verification is not silent."""
    results, runs = {}, {}
    for label, kwargs in requests.items():
        try:
            runs[label] = results[label] = _prepare(**kwargs)
        except VerificationError as err:
            results[label] = err
    with _heartbeat(progress, len(runs)) as done:
        outcomes = _integrate_side_by_side(list(runs.values()), workers, done) if runs else []
    for (label, run), outcome in zip(runs.items(), outcomes):
        try:
            results[label] = _finish(run, *outcome)
        except VerificationError as err:
            results[label] = err
    return results


HEARTBEAT_S = PROGRESS_EVERY_S  # a line at least this often while simulations run (no stage silent for 2 s)


@contextmanager
def _heartbeat(progress, total: int):
    """A list the simulations append to when one is done; while the block runs, every HEARTBEAT_S a line says how
    many are (``ffopt.progress.heartbeat``)."""
    done: list = []
    with heartbeat(None if total == 0 else progress,
                   lambda elapsed: f"simulating: {len(done)} of {total} done, {elapsed:.1f} s", HEARTBEAT_S):
        yield done


def _integrate_side_by_side(runs: list, workers: int | None, done: list | None = None) -> list:
    """_integrate for every run: the first in this thread, the others on daemon threads (abandoned, not
    waited for, if a Ctrl-C ends the process). Only the CasADi call runs off this thread: building
    CasADi functions is not thread-safe, so every integrator was built by ``_prepare``. done: appended to
    as each run finishes."""
    done = [] if done is None else done
    workers = min(len(runs), available_cores() if workers is None else max(1, int(workers)))
    outcomes: list = [None] * len(runs)
    if workers <= 1:
        for k, run in enumerate(runs):
            outcomes[k] = _integrate(run)
            done.append(k)
        return outcomes
    shared: dict[int, int] = {}
    for run in runs:  # runs on the same integrator: each its own instance (and statistics)
        copy = shared[id(run.F)] = shared.get(id(run.F), -1) + 1
        if copy:
            run.F = plant_integrator(run.model, run.t, run.rtol, run.atol, run.loop, run.compile, copy=copy,
                                     method=run.method)
    pending = queue.SimpleQueue()
    for k in range(1, len(runs)):
        pending.put(k)

    def work():
        while True:
            try:
                k = pending.get_nowait()
            except queue.Empty:
                return
            outcomes[k] = _integrate(runs[k], in_main_thread=False)
            done.append(k)

    threads = [threading.Thread(target=work, name=f"ffopt-simulate-{i}", daemon=True) for i in range(workers - 1)]
    for th in threads:
        th.start()
    outcomes[0] = _integrate(runs[0])
    done.append(0)
    work()  # then help with what is left
    for th in threads:
        while th.is_alive():
            th.join(0.1)  # in steps: a Ctrl-C is seen while the others finish
    return outcomes


@dataclass
class _Run:
    """One simulation made ready for the integrator (``_prepare``): its inputs and what ``_finish`` needs."""

    model: FlexibleModel
    t: np.ndarray
    u: np.ndarray
    loop: str  # "pd" or "state"
    gains: tuple  # (kp, kd, qm_ref, dqm_ref) for "pd", (K, x_ref) for "state"
    C: np.ndarray
    P: np.ndarray
    x0: np.ndarray
    rtol: float
    atol: float
    interpolation: str
    F: ca.Function
    t_build: float
    compile: bool
    method: str = "bdf"  # CVODES's: "bdf" or "adams" (integration_method)


def _prepare(model: FlexibleModel, t, u, q0, v0=None, pd: MotorPD | StateFeedback | None = None, z0=None,
             options: SimulationOptions = SimulationOptions()) -> _Run:
    rtol, atol, interpolation, compile = options.rtol, options.atol, options.interpolation, options.compile
    L = model.layout
    nq, N = L.nq, L.n_u
    t = np.asarray(t, float).ravel()
    u = np.asarray(u, float).reshape(len(t), N)
    if interpolation not in INTERPOLATIONS:
        raise VerificationError(f"simulate: interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
    if len(t) < 2 or np.any(np.diff(t) <= 0):
        raise VerificationError("simulate: t must be a strictly increasing grid with at least 2 points")
    q0 = np.asarray(q0, float).ravel()
    v0 = np.zeros(nq) if v0 is None else np.asarray(v0, float).ravel()
    if q0.size != nq or v0.size != nq:
        raise VerificationError(f"simulate: q0 and v0 need {nq} entries, got {q0.size} and {v0.size}")
    loop = "state" if isinstance(pd, StateFeedback) else "pd"
    if loop == "pd":
        if pd is None:
            kp = kd = np.zeros(N)
            qr = dqr = np.zeros((len(t), N))
        else:
            kp, kd = np.asarray(pd.kp, float).ravel(), np.asarray(pd.kd, float).ravel()
            qr = np.asarray(pd.qm_ref, float).reshape(len(t), N)
            dqr = np.asarray(pd.dqm_ref, float).reshape(len(t), N)
        hermite = None
        if pd is not None and pd.ddqm_ref is not None:
            dd = pd.ddqm_ref
            dd = tuple(np.asarray(x, float).reshape(len(t) - 1, N) for x in dd) if isinstance(dd, tuple) \
                else np.asarray(dd, float).reshape(len(t), N)
            hermite = [(qr, dqr), (dqr, dd)]
        C, P = _interval_controls(t, interpolation, u, qr, dqr, hermite=hermite), np.concatenate([kp, kd])
        gains = (kp, kd, qr, dqr)
    else:
        K = np.asarray(pd.K, float).reshape(N, 2 * nq)
        x_ref = np.asarray(pd.x_ref, float).reshape(len(t), 2 * nq)
        C, P = _interval_controls(t, interpolation, u, x_ref), K.ravel(order="F")
        gains = (K, x_ref)
    motor = L.motor_of_input
    if z0 is None:
        u0 = u[0] + (kp * (qr[0] - q0[motor]) + kd * (dqr[0] - v0[motor]) if loop == "pd"
                     else K @ (x_ref[0] - np.concatenate([q0, v0])))
        z0 = steady_drive_states(model, q0, v0, u0)
    z0 = np.asarray(z0, float).ravel()
    if z0.size != model.n_z:
        raise VerificationError(f"simulate: z0 needs {model.n_z} entries (drive states), got {z0.size}")
    wall = time.perf_counter()
    x0 = np.concatenate([q0, v0, z0])
    method = integration_method(model, loop, x0, C, P, float(t[0]), float(np.diff(t).min()), interpolation)
    F = plant_integrator(model, t, rtol, atol, loop, compile, method=method)
    return _Run(model, t, u, loop, gains, C, P, x0, rtol, atol, interpolation, F, time.perf_counter() - wall,
                compile, method)


def _integrate(run: _Run, in_main_thread: bool = True) -> tuple:
    """(X (n, nx) or None, CVODES's error or None, wall time, the integrator's statistics): the one call
    into CVODES, safe off the main thread."""
    wall = time.perf_counter()
    try:
        X = np.array(run.F(x0=run.x0, u=run.C, p=run.P)["xf"]).T
        if not np.all(np.isfinite(X)):
            raise RuntimeError("non-finite state")
        X, error = np.vstack([run.x0, X]), None
    except RuntimeError as err:
        if in_main_thread:
            interrupt.check()  # a Ctrl-C, not a CVODES failure: no step-wise retry
        X, error = None, str(err).strip().splitlines()[-1]
    try:
        steps = int(run.F.stats().get("nsteps", -1))
    except Exception:  # stats layout differs between CasADi versions
        steps = None
    return X, error, time.perf_counter() - wall, steps


def _finish(run: _Run, X, error, t_solve: float, steps) -> SimResult:
    """The SimResult of an integration (after the step-wise retry that locates a failure)."""
    model, t, u, L = run.model, run.t, run.u, run.model.layout
    nq = L.nq
    method = "cvodes"
    if X is None and run.method != "bdf":  # Adams gave up (a stiff stretch the start did not show): BDF
        interrupt.check()
        first_error = error
        run.method, run.F = "bdf", plant_integrator(model, t, run.rtol, run.atol, run.loop, run.compile)
        X, error, t_more, steps = _integrate(run)
        t_solve += t_more
        error = error or first_error
    if X is None:
        interrupt.check()
        wall = time.perf_counter()
        X, k = _simulate_stepwise(model, t, run.x0, run.C, run.P, run.rtol, run.atol, run.loop)
        t_solve += time.perf_counter() - wall
        method, steps = "cvodes-stepwise", None
        if k is not None:
            raise VerificationError(
                f"plant simulation failed between t = {t[k]:.6g} s and {t[k + 1]:.6g} s ({error}): "
                "the motion may be unstable or the torques unbounded there; check u for spikes near "
                "that time, lower the PD bandwidth or the payload mismatch, or loosen "
                "verification.rtol") from None

    q, v, z = X[:, :nq], X[:, nq:2 * nq], X[:, 2 * nq:]
    if run.loop == "pd":
        kp, kd, qr, dqr = run.gains
        motor = L.motor_of_input
        u_applied = u + kp * (qr - q[:, motor]) + kd * (dqr - v[:, motor])
    else:
        K, x_ref = run.gains
        u_applied = u + (x_ref - X[:, :2 * nq]) @ K.T
    n = len(t)
    torque = u_applied if model.drives is None else model.drives.torque(z)
    a = np.array(model.forward_dynamics.map(n)(q.T, v.T, torque.T)).T
    qa = q[:, : L.n_link].T
    y = np.array(model.output.map(n)(qa)).T
    tool = np.array(model.tool_position.map(n)(qa)).T
    stats = {"integrator": method, "method": run.method, "compiled": _is_compiled(run.F), "rtol": run.rtol,
             "atol": run.atol,
             "n_points": n, "interpolation": run.interpolation,
             "time_build_s": run.t_build, "time_solve_s": t_solve}
    if error is not None:
        stats["first_attempt_error"] = error
    if steps is not None or method != "cvodes":
        stats["n_steps"] = steps
    return SimResult(t=t, q=q, v=v, a=a, y=y, tool=tool, u_applied=u_applied, stats=stats, z=z, torque=torque)


def _is_compiled(F: ca.Function) -> bool:
    """Whether the integrator F evaluates a compiled plant."""
    try:
        return F.oracle().is_a("External")
    except Exception:  # an older CasADi without Function.oracle
        return False


def steady_drive_states(model: FlexibleModel, q, v, u) -> np.ndarray:
    """Drive states with dz/dt = 0 under input u at (q, v): the armature currents (u - C_v omega) / R;
    empty for torque inputs."""
    if model.drives is None:
        return np.zeros(0)
    vm = np.asarray(v, float).ravel()[model.layout.motor_of_input]
    return np.asarray(model.drives.steady_current(vm, np.asarray(u, float).ravel()), float)
