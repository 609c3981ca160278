"""Discrete-time inverse-dynamics control (Jankowski & Van Brussel, discrete-time inverse dynamics
control of flexible joint robots, sec. 4-5).

The controller solves, at every sample, the inverse dynamics of the flexible-joint robot with
DC-motor electrics as an index-3 DAE by backward Euler, from the measured state forward to the
middle of the next sampling interval, and applies the voltage found there, held constant over that
interval ("one-and-a-half-step-ahead" prediction, piecewise-constant voltages, one sample of
computation delay; the paper's sec. 5 and Fig. 1).

The DAE (the paper's eq. 6-11, written for ffopt's model so any chain with electrics works):
unknowns q, v, a (all coordinates, motor angles included), the armature currents z and the
voltages u;

    q' = v,   v' = a                                                    (6), (7)
    d/dt L(q, v, a) = L_q v + L_v a + L_a a' = 0                        (8) the link rows without u,
                                                                            differentiated once
    tau(q, v, a) + L_g(q, v, a) = i C_t z                               (9) the motor rows with the
                                                                            link row of the same joint
                                                                            added: the gear torque cancels
    L z' + R z + C_v i vm = u                                           (10)
    y''' + k2 (y'' - theta'') + k1 (y' - theta') + k0 (y - theta) = theta'''   (11)

with y = Gamma(qa) the tool outputs, y' = J va, y'' = J aa + J' va, y''' = d/dt y'' (a' enters
here and in (8)), and k0 = alpha^3, k1 = 3 alpha^2, k2 = 3 alpha: the tracking error obeys
e''' + k2 e'' + k1 e' + k0 e = 0, a triple pole at -alpha (the paper gives alpha = 15 only). The
paper writes the circuit with the torque T = C_t i (its eq. 3, 10, 18); (10) is the same equation
divided by C_t, the back EMF acting on the motor speed as in its eq. 10 (its eq. 3 writes q').

Backward Euler replaces every derivative by (X_{k+1} - X_k) / h (eq. 14-19); each step is a
nonlinear system in X = [q, v, a, z, u] solved by Newton's method. The paper eliminates q_{k+1} and
v_{k+1} by (14), (15) and iterates on the accelerations and motor speeds from their previous values
(sec. 4; at most 3 iterations, sec. 6.2). Newton on the whole X started from the same point (a, z,
u at their previous values, q and v from (14), (15): ``consistent_guess``) takes the same iterates,
the eliminated rows being linear. At sample t_n the start values are the measured plant state
[q, v, z] and the accelerations it implies (the forward dynamics, i.e. the measurement of q, v,
phi, omega, T the paper allows, end of sec. 4); after (m - 1) k + 1 = 3 steps backward Euler on an
index-3 DAE forgets inconsistent start values (Brenan), hence h <= H / 2 over the 1.5 H horizon.

The plant between samples is ffopt's forward model with the electrics (``model.plant_rhs``),
integrated by CVODES with tight tolerances over each sampling interval under the held voltage: a
simulation of the nominal model as in the paper (sec. 6.2), or of a mismatched one.
``sampled_loop_spectral_radius`` linearises the whole sampled loop (plant over one interval, held
voltage, controller) at rest: the loop is stable when the radius is below 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.errors import ProblemError, SolverError

# The paper's numbers for its two-link arm (sec. 6.2): max end-effector error for h = H/2, H/4, H/6.
PAPER_MAX_ERROR_MM = {2: 0.093, 4: 0.043, 6: 0.028}
PAPER_MAX_NEWTON = 3


@dataclass(frozen=True)
class ControllerSettings:
    sampling_s: float = 0.01  # H
    substeps: int = 2  # H / h
    alpha: float = 15.0  # triple pole of the error dynamics, 1/s
    horizon: float = 1.5  # prediction to t_n + horizon x H (the paper: t_{n+1} + H/2)
    newton_tol: float = 1e-9  # Newton stops when max |dX_j| / (1 + |X_j|) <= newton_tol
    max_newton: int = 20
    # start accelerations a_n: False computes them from the measured gear deflection with the model's
    # stiffness (the paper's measurement set q, v, phi, omega, T); True takes the plant's own (its
    # set q, v, a, omega, T: measured link accelerations)
    measured_acceleration: bool = False

    @property
    def h(self) -> float:
        return self.sampling_s / self.substeps

    @property
    def n_steps(self) -> int:
        """Backward-Euler steps per sample (3, 6, 9 for h = H/2, H/4, H/6)."""
        return int(round(self.horizon * self.substeps))

    @property
    def gains(self) -> tuple[float, float, float]:
        """(k0, k1, k2) of (s + alpha)^3."""
        a = self.alpha
        return a**3, 3 * a**2, 3 * a


class DiscreteInverseController:
    """Backward Euler on the stabilised index-3 inverse DAE of ``model`` (with DC-motor electrics)."""

    def __init__(self, model, reference, settings: ControllerSettings = ControllerSettings()):
        if model.drives is None:
            raise ProblemError("the discrete-time inverse-dynamics controller needs DC-motor electrics on every "
                               "actuated joint (the input is the armature voltage)")
        if settings.substeps < 2 or settings.n_steps < 3:
            raise ProblemError(f"substeps must be >= 2 (h <= H/2: backward Euler needs 3 steps over the 1.5 H "
                               f"horizon to forget the measured start values), got {settings.substeps}")
        if abs(settings.horizon * settings.substeps - settings.n_steps) > 1e-9:
            raise ProblemError(f"the horizon {settings.horizon:g} H is not a whole number of steps h = H/"
                               f"{settings.substeps}: with the paper's t_(n+1) + H/2 the substeps must be even")
        self.model, self.reference, self.settings = model, reference, settings
        self.L = model.layout
        self.n_x = 3 * self.L.nq + model.n_z  # [q, v, a, z] carried from step to step
        self.n_X = self.n_x + self.L.n_u  # with the voltages u
        self._step, self._forward_acc = self._build()

    # ------------------------------------------------------------------ the step equations
    def _build(self):
        m, L = self.model, self.L
        nq, N = L.nq, L.n_u
        X, Xp = ca.SX.sym("X", self.n_X), ca.SX.sym("Xp", self.n_x)
        t, h = ca.SX.sym("t"), ca.SX.sym("h")
        q, v, a, z, u = (X[:nq], X[nq:2 * nq], X[2 * nq:3 * nq], X[3 * nq:3 * nq + N], X[3 * nq + N:])
        qp, vp, ap, zp = Xp[:nq], Xp[nq:2 * nq], Xp[2 * nq:3 * nq], Xp[3 * nq:]
        jerk = (a - ap) / h
        link = m.unactuated_link_rows(q, v, a)  # L(q, v, a) = 0: the link rows without u
        d_link = ca.jtimes(link, q, v) + ca.jtimes(link, v, a) + ca.jtimes(link, a, jerk)
        rows = list(L.unactuated_link_rows)
        tau = m.input_torque(q, v, a)
        for j, joint in enumerate(L.actuated):
            if joint in L.gear:  # add the link row of the geared joint: the gear torque cancels
                tau[j] += link[rows.index(joint)]
        d = m.drives
        vm = v[L.motor_of_input]
        y = m.output(q[: L.n_link])
        y1 = ca.jtimes(y, q, v)
        y2 = ca.jtimes(y1, q, v) + ca.jtimes(y1, v, a)
        y3 = ca.jtimes(y2, q, v) + ca.jtimes(y2, v, a) + ca.jtimes(y2, a, jerk)
        k0, k1, k2 = self.settings.gains
        ref = [self.reference.expression(t, k) for k in range(4)]
        G = ca.vertcat((q - qp) / h - v, (v - vp) / h - a, d_link, tau - d.torque(z),
                       d.voltage(vm, z, (z - zp) / h) - u,
                       y3 - ref[3] + k2 * (y2 - ref[2]) + k1 * (y1 - ref[1]) + k0 * (y - ref[0]))
        assert G.numel() == self.n_X, (G.numel(), self.n_X)
        step = ca.Function("be_step", [X, Xp, t, h], [G, ca.jacobian(G, X)])
        # the accelerations of the plant at a measured state (the start values a_n)
        xs = ca.SX.sym("x", 2 * nq + N)
        acc = m.forward_dynamics(xs[:nq], xs[nq:2 * nq], d.torque(xs[2 * nq:]))
        return step, ca.Function("measured_acc", [xs], [acc])

    def start_values(self, x_plant: np.ndarray, a_measured: np.ndarray | None = None) -> np.ndarray:
        """[q, v, a, z] at a measured plant state x = [q, v, z]; a measured, or by default from the
        model's forward dynamics at x (the link accelerations from the gear deflection)."""
        nq = self.L.nq
        a = np.array(self._forward_acc(x_plant)).ravel() if a_measured is None else np.asarray(a_measured, float)
        return np.concatenate([x_plant[:2 * nq], a, x_plant[2 * nq:]])

    def solve_step(self, X_guess, x_prev, t, h) -> tuple[np.ndarray, int]:
        """One backward-Euler step: (X at t, Newton iterations). Raises SolverError if Newton fails."""
        X = np.array(X_guess, float)
        tol, scale = self.settings.newton_tol, 1.0 + np.abs(X)
        for it in range(1, self.settings.max_newton + 1):
            G, J = (np.array(v) for v in self._step(X, x_prev, t, h))
            dX = np.linalg.solve(J, G.ravel())
            X -= dX
            if np.all(np.abs(dX) <= tol * scale):
                return X, it
        raise SolverError(f"discrete inverse dynamics: Newton did not converge at t = {t:.6g} s "
                          f"(max |dX| = {np.abs(dX).max():.3g} after {self.settings.max_newton} iterations)")

    def predict(self, t_n: float, x_plant: np.ndarray, X_guess: np.ndarray,
                a_measured: np.ndarray | None = None) -> tuple[np.ndarray, list[int]]:
        """Solve from the measured state at t_n over the horizon; (X at the horizon's end, iterations
        per step). X_guess: the previous solution (its values start Newton's first step)."""
        s = self.settings
        x_prev = self.start_values(np.asarray(x_plant, float), a_measured)
        X = np.concatenate([x_prev, X_guess[self.n_x:]])
        iterations = []
        for k in range(1, s.n_steps + 1):
            X, it = self.solve_step(self.consistent_guess(X, x_prev, s.h), x_prev, t_n + k * s.h, s.h)
            iterations.append(it)
            x_prev = X[: self.n_x]
        return X, iterations

    def consistent_guess(self, X_last: np.ndarray, x_prev: np.ndarray, h: float) -> np.ndarray:
        """Newton's start for the next step: the unknowns of the paper's iteration (a, and the currents
        and voltages) at their previous values, q and v from them by eq. (14), (15), so the linear rows
        hold from the start (the paper eliminates q_{n+1}, v_{n+1} before iterating, sec. 4)."""
        nq = self.L.nq
        X = np.array(X_last, float)
        a = X[2 * nq:3 * nq]
        X[nq:2 * nq] = x_prev[nq:2 * nq] + h * a
        X[:nq] = x_prev[:nq] + h * X[nq:2 * nq]
        return X


# ---------------------------------------------------------------------- closed-loop simulation
@dataclass
class ClosedLoopResult:
    t: np.ndarray  # (n,) output grid (several points per sampling interval)
    position_error_mm: np.ndarray  # (n, n_pos) tool position minus reference, per position output
    y: np.ndarray  # (n, n_out)
    t_samples: np.ndarray  # (n_s,) sampling instants
    voltage: np.ndarray  # (n_s, N) voltage held from each sampling instant on
    current: np.ndarray  # (n, N)
    newton_iterations: np.ndarray  # (n_s, n_steps) per backward-Euler step of each sample's prediction
    settings: ControllerSettings
    stats: dict = field(default_factory=dict)

    @property
    def tool_error_mm(self) -> np.ndarray:
        """(n,) Euclidean tool-position error."""
        return np.linalg.norm(self.position_error_mm, axis=1)

    @property
    def max_error_mm(self) -> float:
        return float(self.tool_error_mm.max())


def plant_interval_integrator(plant, H: float, n_out: int, rtol: float = 1e-10) -> ca.Function:
    """CVODES over one sampling interval [0, H] with the voltage as a constant parameter; outputs at
    n_out equally spaced points after 0."""
    x = ca.SX.sym("x", 2 * plant.layout.nq + plant.n_z)
    u = ca.SX.sym("u", plant.layout.n_u)
    grid = [H * (k + 1) / n_out for k in range(n_out)]
    return ca.integrator("plant_interval", "cvodes", {"x": x, "p": u, "ode": plant.plant_rhs(x, u)}, 0.0, grid,
                         {"reltol": rtol, "abstol": rtol * 1e-2, "max_num_steps": 100000})


def plant_accelerations(plant) -> ca.Function:
    """x = [q, v, z] -> the plant's accelerations (what accelerometers on the links would measure)."""
    nq = plant.layout.nq
    x = ca.SX.sym("x", 2 * nq + plant.n_z)
    a = plant.forward_dynamics(x[:nq], x[nq:2 * nq], plant.drives.torque(x[2 * nq:]))
    return ca.Function("plant_acc", [x], [a])


def _at_rest(model, plant, ctrl, reference, t: float, guess):
    """(plant state, controller guess X, holding voltage) with both robots at rest in static
    equilibrium where they hold the tool on the reference at time t."""
    nq = model.layout.nq
    y = np.asarray(reference.evaluate(np.array([t]))).ravel()
    q_model = static_equilibrium(model, y, guess)
    u_rest, z_rest = model.rest_input(q_model)
    q_plant = static_equilibrium(plant, y, guess)  # the real robot at rest where it holds the tool
    x = np.concatenate([q_plant, np.zeros(nq), plant.rest_input(q_plant)[1]])
    X_guess = np.concatenate([ctrl.start_values(np.concatenate([q_model, np.zeros(nq), z_rest])), u_rest])
    return x, X_guess, u_rest


def run_closed_loop(model, reference, settings: ControllerSettings = ControllerSettings(), plant=None,
                    guess=None, t_end: float | None = None, points_per_sample: int = 10) -> ClosedLoopResult:
    """The controller of ``model`` on ``plant`` (default: the model itself) from rest in static equilibrium
    at the start of the path, up to ``t_end`` (default: the reference's end). The voltage computed from
    the state measured at t_n is applied over [t_{n+1}, t_{n+2}]; over the first interval the robot
    is held by the voltage that holds the model at rest."""
    plant = model if plant is None else plant
    ctrl = DiscreteInverseController(model, reference, settings)
    H, nq = settings.sampling_s, model.layout.nq
    t_end = reference.t_end if t_end is None else t_end
    n_samples = int(round(t_end / H))
    x, X_guess, u_now = _at_rest(model, plant, ctrl, reference, 0.0, guess)  # u_now: held over [t_n, t_{n+1}]
    F = plant_interval_integrator(plant, H, points_per_sample)
    accelerometer = plant_accelerations(plant) if settings.measured_acceleration else None
    ts, xs, volts, iters = [0.0], [x], [], []
    tic = time.perf_counter()
    for n in range(n_samples):
        t_n = n * H
        a_n = None if accelerometer is None else np.array(accelerometer(x)).ravel()
        X_guess, it = ctrl.predict(t_n, x, X_guess, a_n)  # computed during [t_n, t_{n+1}]
        iters.append(it)
        volts.append(u_now)
        out = np.array(F(x0=x, p=u_now)["xf"]).T
        ts += list(t_n + H * (np.arange(points_per_sample) + 1) / points_per_sample)
        xs += list(out)
        x = out[-1]
        u_now = X_guess[ctrl.n_x:]  # the prediction's voltage, held over the next interval
    wall = time.perf_counter() - tic
    X = np.array(xs)
    t = np.array(ts)
    y = np.array(plant.output.map(len(t))(X[:, : plant.layout.n_link].T)).T
    y_ref = np.asarray(reference.evaluate(t))
    pos = [i for i, unit in enumerate(model.output_units) if unit == "m"]
    return ClosedLoopResult(t, 1000.0 * (y[:, pos] - y_ref[:, pos]), y, H * np.arange(n_samples), np.array(volts),
                            X[:, 2 * nq:], np.array(iters), settings, {"wall_time_s": wall, "n_samples": n_samples})


def sampled_loop_spectral_radius(model, reference, settings: ControllerSettings = ControllerSettings(),
                                 plant=None, guess=None, t: float | None = None) -> tuple[float, np.ndarray]:
    """Spectral radius and eigenvalues of the sampled loop linearised at rest at time t (default: the
    end of the reference). The loop state is w_n = (x_n, u_n), the plant state at t_n and the
    voltage held over [t_n, t_{n+1}]; one sample maps it to (plant over H under u_n, the controller's
    voltage from x_n). Its Jacobian by central differences; the loop is stable when the radius is
    below 1 (the radius of the error dynamics alone is exp(-alpha H))."""
    plant = model if plant is None else plant
    ctrl = DiscreteInverseController(model, reference, settings)
    t = reference.t_end if t is None else t
    x0, X_guess, u0 = _at_rest(model, plant, ctrl, reference, t, guess)
    F = plant_interval_integrator(plant, settings.sampling_s, 1)
    accelerometer = plant_accelerations(plant) if settings.measured_acceleration else None
    nx = len(x0)

    def sample(w):
        x, u = w[:nx], w[nx:]
        a = None if accelerometer is None else np.array(accelerometer(x)).ravel()
        return np.concatenate([np.array(F(x0=x, p=u)["xf"]).ravel(), ctrl.predict(t, x, X_guess, a)[0][ctrl.n_x:]])

    w0 = np.concatenate([x0, u0])
    jac = np.empty((len(w0), len(w0)))
    for i in range(len(w0)):
        dw = np.zeros_like(w0)
        dw[i] = 1e-6 * max(1.0, abs(w0[i]))
        jac[:, i] = (sample(w0 + dw) - sample(w0 - dw)) / (2 * dw[i])
    eig = np.linalg.eigvals(jac)
    return float(np.abs(eig).max()), eig
