"""Inverse dynamics by constant-step k-step BDF (Moberg & Hanssen, inverse dynamics of flexible
manipulators (DAE methods), sec. 6-7): x(t), then u(t)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.cache import per_model
from ffopt.dae.bdf import solve_bdf
from ffopt.dae.forms import DEFAULT_SCALING_POWER, build_inverse_dae, choose_dummy_set
from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.flexible import FlexibleModel
from ffopt.settings.bdf import BdfSettings
from ffopt.trajectory import Trajectory


def solve_inverse_bdf(model: FlexibleModel, reference, settings: BdfSettings = BdfSettings(),
                      qa_guess: np.ndarray | None = None, compile: bool = True) -> Trajectory:
    """Solve the inverse-dynamics DAE on [0, reference.t_end] and recover the motor torques.

    ``settings``: order, step, form and scaling_power (``BdfSettings``, or a problem's ``SolverSettings``).
    The robot starts at rest in static equilibrium (so a constant BDF history is exact), the
    DAE is stepped with k-step BDF and Newton, and u follows from the motor equations
    (Moberg & Hanssen eq. 1f) with the accelerations of the BDF derivative.
    """
    order, step, form, scaling_power = settings.order, settings.step, settings.form, settings.scaling_power
    t0, cpu0 = time.perf_counter(), time.process_time()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    dummy = choose_dummy_set(model, q0[: model.layout.n_link])
    # The DAE with the path as data (built once per model and form): its compiled step serves
    # every path, duration and step of this model.
    dae, recovery = per_model(model, ("inverse_dae", form, dummy), lambda: inverse_dae_with_path_data(model, form, dummy))
    n_steps = int(round(reference.t_end / step))
    p = DEFAULT_SCALING_POWER[form] if scaling_power is None else scaling_power
    path = dae.path_data(reference, step * np.arange(n_steps + 1))
    t_setup = time.perf_counter() - t0
    res = solve_bdf(dae.F_path, dae.initial_state(q0), 0.0, step, n_steps, order,
                    row_scale=dae.row_scale(step, p), compile=compile, inputs=path, extra=recovery)
    nq, N = model.layout.nq, model.layout.n_u
    a, u, tau, tool = np.split(res.extra, [nq, nq + N, nq + 2 * N], axis=1)
    known = KnownColumns(y_ref=path[:, : reference.n_out].copy(), u=u, tool=tool, torque=tau)
    traj = trajectory_from_states(model, reference, res.t, res.x, a, method=f"bdf{order}-{form}", known=known)
    traj.stats.update({
        "order": order, "step": step, "form": form, "scaling_power": p, "n_steps": n_steps,
        "dummy_set": [model.coordinate_names()[i] for i in dummy], "n_unknowns": dae.n_x,
        "compiled": res.compiled, "compile_level": res.compile_level, "max_residual": float(np.nanmax(res.residual_norm)),
        "newton_iterations_mean": float(res.newton_iterations[1:].mean()),
        "time_setup_s": t_setup, "time_build_s": res.wall_time_build, "time_solve_s": res.wall_time_solve,
        "time_total_s": time.perf_counter() - t0,
        "cpu_time_solve_s": res.cpu_time_solve, "cpu_time_total_s": time.process_time() - cpu0,
    })
    return traj


def inverse_dae_with_path_data(model: FlexibleModel, form: str, dummy):
    """The form's DAE with the path as data, and recovery (x, xdot) -> [a; u; tau; tool position], which
    the BDF loop evaluates at every step in the same compiled code (u the input, tau the torques)."""
    dae = build_inverse_dae(model, None, form, dummy)
    x, xd = (ca.SX.sym(name, dae.n_x) for name in ("x", "xdot"))
    L = model.layout
    q, a = x[: L.nq], dae.accel(x, xd)
    u, tau = dae.inputs(x, xd)
    recovery = ca.Function("recovery", [x, xd], [ca.vertcat(a, u, tau, model.tool_position(q[: L.n_link]))])
    return dae, recovery


@dataclass(frozen=True)
class KnownColumns:
    """What a solver already has on its grid, so that ``trajectory_from_states`` need not compute it: the
    reference y_ref, the inputs u, the tool positions and the gear-output torques (None: computed)."""

    y_ref: np.ndarray | None = None
    u: np.ndarray | None = None
    tool: np.ndarray | None = None
    torque: np.ndarray | None = None


def trajectory_from_states(model: FlexibleModel, reference, t, x, a, method: str,
                           known: KnownColumns = KnownColumns()) -> Trajectory:
    """Assemble a Trajectory from states x = [q; v; ...; z] and accelerations a on a grid (``known``: the
    columns already known on that grid). With DC-motor electrics the drive currents z are the last entries
    of x and the voltages ``known.u`` must be given."""
    y_ref, u, tool, torque = known.y_ref, known.u, known.tool, known.torque
    L = model.layout
    nq = L.nq
    q, v = x[:, :nq], x[:, nq:2 * nq]
    n = len(t)
    current = None
    if model.n_z:
        current = x[:, x.shape[1] - model.n_z:]
        torque = model.drives.torque(current) if torque is None else torque
        if u is None:
            raise ValueError("trajectory_from_states: a model with drive electrics needs the voltages u")
    if u is None:
        u = np.array(model.input_torque.map(n)(q.T, v.T, a.T)).T
    motor = L.motor_of_input
    if tool is None:
        tool = np.array(model.tool_position.map(n)(q[:, : L.n_link].T)).T
    return Trajectory(t=t, u=u, q=q, v=v, a=a, qm=q[:, motor], dqm=v[:, motor],
                      y_ref=np.asarray(reference.evaluate(t)) if y_ref is None else y_ref, tool=tool,
                      coordinate_names=model.coordinate_names(), output_names=list(model.outputs),
                      method=method, input_names=[model.chain.joints[i].name for i in L.actuated],
                      link_names=model.coordinate_names()[: L.n_link],
                      link_units=getattr(model, "link_units", None),
                      torque=None if current is None else np.asarray(torque, float), current=current,
                      input_unit=model.input_unit)
