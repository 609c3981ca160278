"""Inverse dynamics by constant-step k-step BDF (seed 000, sec. 6-7): x(t), then u(t)."""

from __future__ import annotations

import time

import numpy as np

from ffopt.dae.bdf import solve_bdf
from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.forms import DEFAULT_SCALING_POWER, build_inverse_dae, choose_dummy_set
from ffopt.models.flexible import FlexibleModel
from ffopt.trajectory import Trajectory


def solve_inverse_bdf(model: FlexibleModel, reference, order: int = 6, step: float = 1e-3,
                      form: str = "I3", scaling_power: float | None = None,
                      qa_guess: np.ndarray | None = None, compile: bool = True) -> Trajectory:
    """Solve the inverse-dynamics DAE on [0, reference.t_end] and recover the motor torques.

    The robot starts at rest in static equilibrium (so a constant BDF history is exact), the
    DAE is stepped with k-step BDF and Newton, and u follows from the motor equations
    (seed 000 eq. 1f) with the accelerations of the BDF derivative.
    """
    t0 = time.perf_counter()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    dummy = choose_dummy_set(model, q0[: model.layout.n_link])
    dae = build_inverse_dae(model, reference, form, dummy)
    n_steps = int(round(reference.t_end / step))
    p = DEFAULT_SCALING_POWER[form] if scaling_power is None else scaling_power
    t_setup = time.perf_counter() - t0
    res = solve_bdf(dae.F, dae.initial_state(q0), 0.0, step, n_steps, order,
                    row_scale=dae.row_scale(step, p), compile=compile)
    traj = trajectory_from_states(model, reference, res.t, res.x, np.array(dae.accel.map(len(res.t))(res.x.T, res.xdot.T)).T,
                                  method=f"bdf{order}-{form}")
    traj.stats.update({
        "order": order, "step": step, "form": form, "scaling_power": p, "n_steps": n_steps,
        "dummy_set": [model.coordinate_names()[i] for i in dummy], "n_unknowns": dae.n_x,
        "compiled": res.compiled, "max_residual": float(np.nanmax(res.residual_norm)),
        "newton_iterations_mean": float(res.newton_iterations[1:].mean()),
        "time_setup_s": t_setup, "time_build_s": res.wall_time_build, "time_solve_s": res.wall_time_solve,
    })
    return traj


def trajectory_from_states(model: FlexibleModel, reference, t, x, a, method: str) -> Trajectory:
    """Assemble a Trajectory from states x = [q; v; ...] and accelerations a on a grid."""
    L = model.layout
    nq = L.nq
    q, v = x[:, :nq], x[:, nq:2 * nq]
    n = len(t)
    u = np.array(model.input_torque.map(n)(q.T, v.T, a.T)).T
    motor = L.motor_of_input
    tool = np.array(model.tool_position.map(n)(q[:, : L.n_link].T)).T
    return Trajectory(t=t, u=u, q=q, v=v, a=a, qm=q[:, motor], dqm=v[:, motor],
                      y_ref=np.asarray(reference.evaluate(t)), tool=tool,
                      coordinate_names=model.coordinate_names(), output_names=list(model.outputs),
                      method=method, input_names=[model.chain.joints[i].name for i in L.actuated],
                      link_names=model.coordinate_names()[: L.n_link],
                      link_units=getattr(model, "link_units", None))
