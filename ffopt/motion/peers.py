"""The rigid-robot peers of ffopt's motion design, along the problem's own path.

- TOPP-RA (Pham & Pham, a new approach to time-optimal path parameterization based on reachability analysis,
  IEEE T-RO 2018; pip ``toppra``): the time-optimal traversal of the path by the RIGID robot (stiff gears,
  passive joints locked: ``ffopt.sim.baselines.rigid_chain``) under its torque bounds and joint speed limits. Its
  duration is a lower bound for any plan of the elastic arm along that path under the same limits (the elastic
  arm needs the rigid torques and more: a gear's motor must also wind it up), which ffopt's minimum-time result
  states with the gap to it.
- Ruckig (Berscheid & Kröger, jerk-limited real-time trajectory generation with arbitrary target states, RSS
  2021; pip ``ruckig``): a jerk-limited rest-to-rest profile of the path parameter.

Both give a path-parameter law sigma(t) on [0, 1]; ``rigid_motion`` turns one into the rigid robot's joint
motion and feedforward along the path (what a rigid-model controller applies with its motor PD), and
``ffopt.reference.shaping`` convolves one with an input shaper. The path is sampled densely (``PathSamples``)
and its joint curve q(sigma) interpolated by a cubic spline, as TOPP-RA does. Both libraries are optional
(``pip install 'ffopt[peers]'``): importing this module works without them, the functions that need one say
so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.errors import ProblemError
from ffopt.reference.build import reference_from_spec
from ffopt.reference.time_laws import TimeLaw
from ffopt.sim.baselines import rigid_chain, rigid_inverse_kinematics

PATH_SAMPLES = 401  # rigid IK points along the path (TOPP-RA's grid: E12 0.2109 / 0.2093 / 0.2087 s at 101/401/1601)
IDENTITY_LAW = TimeLaw("identity", (0.0, 1.0), 0)  # sigma = tau: the reference at time rest_before + sigma T


def _require(name: str):
    try:
        return __import__(name)
    except ImportError:
        raise ProblemError(f"the peer comparison needs the package {name!r}: pip install 'ffopt[peers]'") from None


@dataclass
class PathSamples:
    """The problem's path by its geometric parameter sigma in [0, 1]: outputs y(sigma) and the rigid robot's
    actuated joint angles q(sigma) (passive joints locked at 0), with a cubic spline through them."""

    problem: object
    sigma: np.ndarray
    y: np.ndarray  # (n, outputs)
    qa: np.ndarray  # (n, n_link): every link coordinate, passive 0

    @classmethod
    def of(cls, problem, n: int = PATH_SAMPLES) -> "PathSamples":
        spec = problem.reference_spec
        if spec.kind == "prefilter":
            raise ProblemError(f"{problem.source}: reference.kind: a prefiltered move has no geometric path to "
                               "re-time; the peers need a path with a time law")
        ref = reference_from_spec(spec, problem.model, IDENTITY_LAW)
        sigma = np.linspace(0.0, 1.0, n)
        t = spec.rest_before + sigma * spec.duration
        qa = rigid_inverse_kinematics(problem.model, ref, t, spec.joint_guess)
        return cls(problem, sigma, np.asarray(ref.evaluate(t)), qa)

    @property
    def actuated(self) -> list[int]:
        return list(self.problem.model.layout.actuated)

    @cached_property
    def statics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ELASTIC arm at rest at each path point (its static equilibrium with the tool on the path): motor
        angles, input and link coordinates (n, .), so that a rigid feedforward holds the path statically (the
        peers as industry runs them: gravity compensated, no static offset)."""
        model = self.problem.model
        q, guess = [], self.qa[0]
        for y, qa in zip(self.y, self.qa):
            q.append(static_equilibrium(model, y, guess, where="the path (statics)"))
            guess = q[-1][: model.layout.n_link]
        q = np.array(q)
        u = np.array([model.rest_input(x)[0] for x in q])
        return q[:, model.layout.motor_of_input], u, q[:, : model.layout.n_link]

    @cached_property
    def spline(self):
        from scipy.interpolate import CubicSpline

        return CubicSpline(self.sigma, self.qa[:, self.actuated], axis=0)

    @cached_property
    def output_spline(self):
        from scipy.interpolate import CubicSpline

        return CubicSpline(self.sigma, self.y, axis=0)


def rigid_inverse_dynamics(problem):
    """(q, v, a) of the actuated joints -> input torques of the rigid robot (stiff gears, passive joints at 0)."""
    model = problem.model
    rigid = model.variant(rigid_chain(model.chain))
    act, n = list(model.layout.actuated), model.layout.n_link

    def torques(q, v, a):
        full = [np.zeros(n) for _ in range(3)]
        for f, x in zip(full, (q, v, a)):
            f[act] = x
        return np.array(rigid.input_torque(*full)).ravel()

    return torques


@dataclass
class PathLaw:
    """A path-parameter law sigma(t) on a grid (t from 0): sigma, its rate and acceleration."""

    name: str
    t: np.ndarray
    sigma: np.ndarray
    rate: np.ndarray
    acceleration: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.t[-1])

    def resampled(self, t: np.ndarray) -> "PathLaw":
        """On another grid (linear in the acceleration, which TOPP-RA's and Ruckig's laws are piecewise)."""
        t = np.clip(np.asarray(t, float), 0.0, self.duration)
        return PathLaw(self.name, t, np.interp(t, self.t, self.sigma), np.interp(t, self.t, self.rate),
                       np.interp(t, self.t, self.acceleration))


def topp_ra_law(path: PathSamples, torque_max, speed_max=None, grid: int | None = None) -> PathLaw:
    """TOPP-RA's time-optimal law of the rigid robot along ``path`` under |u_j| <= torque_max_j and
    |q_j'| <= speed_max_j (per actuated joint; None: no speed limit), at rest at both ends."""
    ta = _require("toppra")
    import toppra.algorithm
    import toppra.constraint as tc

    torque_max = np.asarray(torque_max, float)
    constraints = [tc.JointTorqueConstraint(rigid_inverse_dynamics(path.problem),
                                            np.column_stack([-torque_max, torque_max]), np.zeros(len(torque_max)),
                                            discretization_scheme=tc.DiscretizationType.Interpolation)]
    if speed_max is not None:
        vm = np.asarray(speed_max, float)
        constraints.append(tc.JointVelocityConstraint(np.column_stack([-vm, vm])))
    spline = ta.SplineInterpolator(path.sigma, path.qa[:, path.actuated])
    gridpoints = np.linspace(0.0, 1.0, (grid or len(path.sigma) - 1) + 1)
    algo = toppra.algorithm.TOPPRA(constraints, spline, gridpoints=gridpoints)
    sdd, sd, _, _ = algo.compute_parameterization(0.0, 0.0, return_data=True)
    if sd is None or not np.all(np.isfinite(sd)):
        raise ProblemError(f"{path.problem.source}: TOPP-RA found no parameterisation of the path under the limits "
                           "(a torque bound below what holding the arm against gravity needs?)")
    return _constant_acceleration_law("TOPP-RA", gridpoints, np.maximum(sd, 0.0), sdd)


def _constant_acceleration_law(name: str, s: np.ndarray, sd: np.ndarray, sdd: np.ndarray, n: int = 4001) -> PathLaw:
    """sigma(t) of a parameterisation with rate sd at the grid points s and constant acceleration sdd between them
    (Delta t = 2 Delta s / (sd_i + sd_i+1)), sampled on n points in time."""
    dt = 2 * np.diff(s) / np.maximum(sd[:-1] + sd[1:], 1e-300)
    knots = np.concatenate([[0.0], np.cumsum(dt)])
    t = np.linspace(0.0, knots[-1], n)
    k = np.clip(np.searchsorted(knots, t, side="right") - 1, 0, len(dt) - 1)
    tau = t - knots[k]
    acc = sdd[k]
    sigma, rate = np.clip(s[k] + sd[k] * tau + acc * tau**2 / 2, 0.0, 1.0), np.maximum(sd[k] + acc * tau, 0.0)
    acc = acc.copy()
    acc[0] = acc[-1] = 0.0  # at rest before and after: a table padded with its end rows holds, it does not brake
    return PathLaw(name, t, sigma, rate, acc)


def ruckig_law(speed_max: float, acceleration_max: float, jerk_max: float, n: int = 4001) -> PathLaw:
    """Ruckig's jerk-limited rest-to-rest profile of the path parameter from 0 to 1 (limits in 1/s, 1/s^2,
    1/s^3 of sigma)."""
    rk = _require("ruckig")
    inp = rk.InputParameter(1)
    inp.current_position, inp.current_velocity, inp.current_acceleration = [0.0], [0.0], [0.0]
    inp.target_position, inp.target_velocity, inp.target_acceleration = [1.0], [0.0], [0.0]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [speed_max], [acceleration_max], [jerk_max]
    traj = rk.Trajectory(1)
    result = rk.Ruckig(1).calculate(inp, traj)
    if result not in (rk.Result.Working, rk.Result.Finished):
        raise ProblemError(f"Ruckig found no profile ({result})")
    t = np.linspace(0.0, traj.duration, n)
    states = np.array([[x[0] for x in traj.at_time(ti)] for ti in t])  # position, velocity, acceleration
    return PathLaw("Ruckig", t, states[:, 0], states[:, 1], states[:, 2])


@dataclass
class RigidMotion:
    """The rigid robot moved along the path by a law: joint angles, speeds, accelerations and torques of the
    actuated joints, the outputs' reference, on the law's grid; and the table a rigid-model controller applies to
    the elastic arm: the rigid torques with the gravity share replaced by the elastic arm's static input, the
    motor references its static motor angles (``PathSamples.statics``)."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    u: np.ndarray
    y: np.ndarray
    u_table: np.ndarray
    qm: np.ndarray
    dqm: np.ndarray


def rigid_motion(path: PathSamples, law: PathLaw) -> RigidMotion:
    """q(t) = q(sigma(t)), q' = q_s sigma', q'' = q_s sigma'' + q_ss sigma'^2, and the rigid torques along it."""
    s = np.clip(law.sigma, 0.0, 1.0)
    q, qs, qss = path.spline(s), path.spline(s, 1), path.spline(s, 2)
    dq = qs * law.rate[:, None]
    ddq = qs * law.acceleration[:, None] + qss * law.rate[:, None] ** 2
    inv = rigid_inverse_dynamics(path.problem)
    u = np.array([inv(a, b, c) for a, b, c in zip(q, dq, ddq)])
    gravity = np.array([inv(a, 0 * a, 0 * a) for a in q])
    qm_s, u_s, _ = path.statics
    from scipy.interpolate import CubicSpline

    qm_spline, u_static = CubicSpline(path.sigma, qm_s, axis=0), CubicSpline(path.sigma, u_s, axis=0)(s)
    return RigidMotion(law.t, q, dq, ddq, u, path.output_spline(s), u - gravity + u_static, qm_spline(s),
                       qm_spline(s, 1) * law.rate[:, None])


def topp_ra_within_bounds(path: PathSamples, torque_max, speed_max=None, step: float = 1e-3) -> tuple[PathLaw, float]:
    """TOPP-RA's law under the bounds lam torque_max, lam the largest (bisection to 0.1 %, at most 1) whose applied
    table (``rigid_motion``'s u_table: the gravity share swapped for the elastic arm's static input) stays within
    |u| <= torque_max; (law, lam). The rigid time-optimal law itself (lam = 1) is the lower bound; this is what a
    rigid-model controller can run on the elastic arm without exceeding its drives (the Manutec r3: its axis 3 at
    1.07x the bound with lam = 1)."""
    torque_max = np.asarray(torque_max, float)

    def peak(lam):
        law = topp_ra_law(path, lam * torque_max, speed_max)
        motion = rigid_motion(path, law.resampled(np.arange(0.0, law.duration + step / 2, step)))
        return float((np.abs(motion.u_table).max(0) / torque_max).max()), law

    full, law = peak(1.0)
    if full <= 1.0 + 1e-3:
        return law, 1.0
    lam = _largest_within(lambda lam: peak(lam)[0], 0.5, 1.0)
    return peak(lam)[1], lam


def ruckig_within_bounds(path: PathSamples, torque_max, speed_max=None, a_ref: float | None = None,
                         step: float = 1e-3) -> PathLaw:
    """Ruckig's profile of the path parameter with acceleration lam a_ref and jerk lam^1.5 a_ref / 0.02 s, lam the
    largest (bisection to 0.1 %) whose applied table (``rigid_motion``'s u_table) stays within |u| <= torque_max;
    the parameter's speed limit from the joint speed limits (|dq/dsigma| sigma' <= v_max). a_ref: default TOPP-RA's
    peak path acceleration under the same bounds."""
    torque_max = np.asarray(torque_max, float)
    if a_ref is None:
        a_ref = float(np.abs(topp_ra_law(path, torque_max, speed_max).acceleration).max())
    dq = np.abs(np.gradient(path.qa[:, path.actuated], path.sigma, axis=0)).max(0)
    sigma_speed = 1e3 if speed_max is None else float(np.min(np.asarray(speed_max) / np.maximum(dq, 1e-12)))

    def peak(lam):
        law = ruckig_law(sigma_speed, lam * a_ref, lam ** 1.5 * a_ref / 0.02)
        motion = rigid_motion(path, law.resampled(np.arange(0.0, law.duration + step / 2, step)))
        return float((np.abs(motion.u_table).max(0) / torque_max).max()), law

    return peak(_largest_within(lambda lam: peak(lam)[0], 0.05, 2.0))[1]


def _largest_within(peak, lo: float, hi: float) -> float:
    """The largest scale in [lo, hi] with peak(scale) <= 1, by bisection in log to 0.1 % (peak growing with it)."""
    while hi / lo > 1.001:
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if peak(mid) <= 1.0 else (lo, mid)
    return lo
