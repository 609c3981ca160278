"""Rest to rest that also holds on a wrong model (``solver.robust_rest``).

The rest-to-rest plan (``ffopt.dae.rest_to_rest``) ends at rest on the planning model only. What a user
sees on a plant whose springs or payload differ is the residual vibration of that plant driven by the
nominal plan (torques and motor references) with the motor PD, held at the end pose after the table.
Making the inverse models of the perturbed plants end at rest does not bound that: the applied torque is
the nominal one, and the torque error excites the PD-closed plant to first order in the mismatch.

Which modes ring: the lowest mode of the arm held by the motor PD (E12: 0.948 Hz, damping 0.107), driven
by the torque error of a mismatch, and the zero dynamics (E12: -0.63 +- 50j rad/s), which a plan that
does not track exactly leaves free. For a mode with eigenvalue lambda and a torque error following the
path's acceleration, the excitation is lambda int s'(t) exp(lambda (T - t)) dt with s' >= 0 (a monotone
time law): a non-negative mix of phasors exp(j omega (T - t)), t in the move. Over a move shorter than
half the damped period they lie in a half plane and cannot cancel (E12: omega T = 1.8 rad in 0.3 s): no
time law of the same move makes it insensitive (measured in results/robust_rest.md: adding the mismatched
plants' end states to the rest search lowered the worst vibration from 80 to 78.6 mm, peak torque +77 %).
A move as long as a ZVD shaper (Singer & Seering, preshaping command inputs to reduce system vibration)
can: ``robust_shaper`` convolves the time law with ZVD impulses on both modes (``reference.shaper``; the
move grows by one damped period of each), whose residual and its derivative with respect to the
frequency vanish, and the rest-to-rest search then shapes the base law so that the exact-tracking plan
of the shaped path ends at rest on the nominal model. ``vibration_after_table`` measures the result on
the mismatched plants (every spring, the payload x(1 -+ scale)), as ``results/input_shaping.py`` does.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ROBUST_SCALE", "ZERO_DYNAMICS_DAMPING_MAX", "mismatched_values", "robust_shaper", "vibration_after_table"]

ROBUST_SCALE = 0.1  # the mismatch the trade-off is reported for: springs and payload x0.9 / x1.1
ZERO_DYNAMICS_DAMPING_MAX = 0.3  # a zero-dynamics pair damped less than this is shaped too (E12: 0.0126)


def mismatched_values(problem, scale: float = ROBUST_SCALE) -> dict:
    """label -> values for ``problem.with_values``: every spring (gear, passive joint) x(1 -+ scale); the
    payload's mass x(1 -+ scale), else the constant inertia matrix, else the last link's mass and inertia."""
    model = problem.to_dict()["model"]
    out = {}
    for sign in (-1, 1):
        s = 1 + sign * scale
        tag = f"{sign * 100 * scale:+.3g} %"
        springs = {f"model.joints.{j['name']}.{key}": float(j[key]) * s for j in model.get("joints", [])
                   for key in ("stiffness", "stiffness_motor_side") if key in j and np.isscalar(j[key])}
        if springs:
            out[f"stiffness {tag}"] = springs
        if "payload" in model and model["payload"].get("mass"):
            out[f"payload {tag}"] = {"model.payload.mass": float(model["payload"]["mass"]) * s}
        elif "constant_inertia" in model:
            out[f"inertia {tag}"] = {"model.constant_inertia": (np.asarray(model["constant_inertia"]) * s).tolist()}
        elif model.get("joints"):
            last = model["joints"][-1]
            vals = {f"model.joints.{last['name']}.mass": float(last["mass"]) * s}
            for key in ("inertia_diag", "inertia"):
                if key in last:
                    vals[f"model.joints.{last['name']}.{key}"] = (np.asarray(last[key], float) * s).tolist()
            out[f"last link {tag}"] = vals
    return out


class ClosedLoop:
    """The closed loop a plan is judged in: the verification's motor PD (designed at the start pose), the hold
    of the path's end pose after the table (static input, PD on the static motor angles)."""

    def __init__(self, problem):
        from ffopt.control import design
        from ffopt.models.equilibrium import static_equilibrium
        from ffopt.sim.settle import hold_pose

        m, ref = problem.model, problem.reference
        y = ref.evaluate([0.0, ref.t_end])
        self.model, self.problem = m, problem
        self.q0 = static_equilibrium(m, y[0], problem.reference_spec.joint_guess)
        self.q_end = static_equilibrium(m, y[1], self.q0[:m.layout.n_link])
        ver = problem.verification
        self.gains = design("pd", m, self.q0, ver.pd_bandwidth_hz, ver.pd_damping_ratio, None)
        self.hold = hold_pose(m, self.q_end)


def robust_shaper(problem) -> tuple[str, list[tuple[float, float]]]:
    """("zvd", modes): the lowest mode of the arm held at the path's end by the verification's motor PD and
    the least damped pair of the zero dynamics there if its damping ratio is below ZERO_DYNAMICS_DAMPING_MAX
    (natural frequency Hz, damping ratio)."""
    from ffopt.analysis.linear import path_times, zeros_along
    from ffopt.sim.shaping import lowest_modes

    loop = ClosedLoop(problem)
    modes = [lowest_modes(problem.model, loop.q_end, loop.gains.kp, loop.gains.kd, 1)[0]]
    ref = problem.reference
    times = path_times(ref, 11)  # continuation along the path to its end pose
    zeros = np.asarray(zeros_along(problem.model, ref, times, problem.reference_spec.joint_guess)[0][-1])
    pairs = [z for z in zeros if z.imag > 1e-9 * max(1.0, abs(z)) and z.real < 0]
    if pairs:
        z = min(pairs, key=lambda z: -z.real / abs(z))
        if -z.real / abs(z) < ZERO_DYNAMICS_DAMPING_MAX:
            modes.append((float(abs(z) / (2 * np.pi)), float(-z.real / abs(z))))
    return "zvd", [(float(f), float(d)) for f, d in modes]


def vibration_after_table(problem, traj, scale: float = ROBUST_SCALE) -> dict:
    """label -> {vibration_mm, residual_mm} of the nominal plant and each mismatched plant
    (``mismatched_values``) driven by the plan ``traj`` with the verification's motor PD through its table
    and held at the end pose for the settle window (3 periods of the held arm's slowest mode, at least 1 s):
    vibration = the tool's largest distance from a straight line in time fitted per coordinate over the
    window (the static offset a mismatch leaves taken out), residual = the largest tool error against the
    path's end point. Each plant starts where the loop holds it at rest under the plan's first row."""
    from ffopt.control import from_trajectory
    from ffopt.control.laws import feedback_loop
    from ffopt.sim.plant import pd_gains
    from ffopt.sim.settle import SettleWindow, settle_duration, settle_grid
    from ffopt.sim.cases import Case, Integration, motor_hold, settle_case, simulate_cases

    lp = ClosedLoop(problem)
    m, ver, ref = lp.model, problem.verification, problem.reference
    kp, kd = pd_gains(m, lp.q_end, ver.pd_bandwidth_hz, ver.pd_damping_ratio)
    window, _ = settle_duration(m, lp.q_end, kp, kd, ver.settle_s)
    ff = from_trajectory(m, traj.t, traj.u, traj.q, traj.v, hold=traj.stats.get("hold", "linear"))
    loop = feedback_loop(lp.gains, m, ff)
    y_ref = np.asarray(ref.evaluate(ff.t))
    tool_ref = None if ref.tool_path is None else np.asarray(ref.tool_path.evaluate(ff.t))
    t_settle = settle_grid(ff.t[-1], window, problem.solver.step)
    hold_loop = motor_hold(lp.gains.kp, lp.gains.kd, lp.hold.qm, len(t_settle))
    plants = {"nominal": m, **{k: problem.with_values(v).model for k, v in mismatched_values(problem, scale).items()}}
    sims = simulate_cases({label: Case(plant, ff.u, loop, None, ff.hold).at_rest(lp.q0) for label, plant in plants.items()},
                          ff.t, ver.rtol)  # side by side, one thread per core
    out = {}
    for label, plant in plants.items():
        s, metrics = settle_case(label, plant, sims[label], lp.hold, hold_loop,
                                 SettleWindow(t_settle, y_ref, tool_ref, m, 1.0, 1.0), Integration(ver.rtol))
        tt = s.t - s.t[0]
        X = np.column_stack([np.ones_like(tt), tt])
        coef, *_ = np.linalg.lstsq(X, s.tool, rcond=None)
        out[label] = {"vibration_mm": float(1000.0 * np.linalg.norm(s.tool - X @ coef, axis=1).max()),
                      "residual_mm": float(metrics.residual_mm)}
    return out
