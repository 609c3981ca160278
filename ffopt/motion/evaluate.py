"""What the elastic arm does with a torque table: the tool error during the move, the residual after the table and
the settled cycle time, for tables that are not ffopt plans (the rigid-robot peers of ``ffopt.motion.peers``).

The same protocol as ffopt's verification: the arm starts at rest in its static equilibrium at the path's start,
the table's torques (linear between rows) with the motor PD on its motor references, then a settle window with
the PD holding the static motor angles of the final pose and the static torque
(``ffopt.sim.settle``). The settled cycle time is from the motion's start until the tool stays within the
tolerance of the path's end point for good (``settled_cycle_time``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.sim.cases import tool_errors
from ffopt.sim.plant import MotorPD, SimulationOptions, simulate
from ffopt.sim.settle import hold_pose, settle_duration, settle_grid, settled_cycle_time


@dataclass
class TableRun:
    """A table run on the elastic arm: errors in mm (outputs in m: their distance, angles ignored; a joint-space
    path: the tool point's distance from the rigid tool path)."""

    move_s: float  # the motion's duration (start to end of the path)
    max_mm: float  # largest tool error during the table, against the timed path
    residual_mm: float  # largest distance from the end point in the settle window
    settled_cycle_s: float | None  # motion start until within the tolerance of the end point for good
    peak_torque: np.ndarray  # per input, the table's

    def to_dict(self) -> dict:
        return {"move_s": self.move_s, "max_mm": self.max_mm, "residual_mm": self.residual_mm,
                "settled_cycle_s": self.settled_cycle_s, "peak_torque_Nm": self.peak_torque.tolist()}


@dataclass(frozen=True)
class MotorTable:
    """A table for the motors: t (s, from the table's first row); per input the torque u, the motor references qm
    and their rates dqm; the outputs y_ref the path asks for on t; the motion's start and end (s); for a path in
    joint space (no output in m), tool_ref: the rigid tool point along it on t (``rigid_tool_path``), which the tool
    is measured against, as the verification does."""

    t: np.ndarray
    u: np.ndarray
    qm: np.ndarray
    dqm: np.ndarray
    y_ref: np.ndarray
    t_start: float
    t_motion_end: float
    tool_ref: np.ndarray | None = None


def rigid_tool_path(model, q_actuated) -> np.ndarray:
    """The rigid robot's tool point (n, 3) at the actuated link angles q_actuated (n, inputs), passive joints at 0."""
    from ffopt.reference.build import rigid_forward_kinematics

    q = np.atleast_2d(np.asarray(q_actuated, float))
    return np.array(rigid_forward_kinematics(model, "tool").map(len(q))(q.T)).T


def run_table(problem, table: MotorTable, tol_mm: float, *, kp=None, kd=None, settle_s: float | None = None,
              rtol: float = 1e-8, end_guess=None) -> TableRun:
    """Simulate ``problem``'s elastic arm with the table and the motor PD (gains kp, kd: the verification's by
    default), then the settle window; errors against table.y_ref and the end point y_ref[-1]. end_guess: link
    coordinates near the final pose's static equilibrium (default: the planned start's branch; a table that leaves
    the arm swinging must not pick the hold on another branch)."""
    from ffopt.sim.plant import input_gains, pd_gains

    t, u, qm, dqm, y_ref = table.t, table.u, table.qm, table.dqm, table.y_ref
    t_start, t_motion_end = table.t_start, table.t_motion_end
    model = problem.model
    settings = problem.verification
    n_link = model.layout.n_link
    guess = problem.reference_spec.joint_guess
    q0 = static_equilibrium(model, y_ref[0], guess)
    if kp is None:
        kp, kd = input_gains(model, *pd_gains(model, q0, settings.pd_bandwidth_hz, settings.pd_damping_ratio))
    options = SimulationOptions(rtol=rtol, atol=rtol * 1e-2)
    sim = simulate(model, t, u, q0, None, pd=MotorPD(kp, kd, qm, dqm), options=options)
    units, tool_ref = model.output_units, table.tool_ref
    if "m" not in units and tool_ref is None:
        raise ValueError("run_table: the path is in joint space (no output in m): give the table's tool_ref (the "
                         "rigid tool path, rigid_tool_path), else no tool error can be measured")
    e_move = tool_errors(sim, y_ref, tool_ref, units)[0]
    q_end = static_equilibrium(model, y_ref[-1], q0[:n_link] if end_guess is None else end_guess,
                               where="the end of the path")
    hold = hold_pose(model, q_end)
    window, _ = settle_duration(model, q_end, *pd_gains(model, q_end, settings.pd_bandwidth_hz,
                                                        settings.pd_damping_ratio), settle_s)
    ts = settle_grid(t[-1], window, np.diff(t).min())
    n = len(ts)
    after = simulate(model, ts, np.tile(hold.u, (n, 1)), sim.q[-1], sim.v[-1],
                     pd=MotorPD(kp, kd, np.tile(hold.qm, (n, 1)), np.zeros((n, len(hold.qm)))), options=options)
    end_tool = None if tool_ref is None else tool_ref[-1:]
    d_table = tool_errors(sim, y_ref[-1:], end_tool, units)[0]
    d_settle = tool_errors(after, y_ref[-1:], end_tool, units)[0]
    cycle = settled_cycle_time(np.concatenate([t, ts[1:]]), np.concatenate([d_table, d_settle[1:]]) > tol_mm,
                               t_start, t_motion_end)
    return TableRun(t_motion_end - t_start, float(e_move.max()), float(d_settle.max()), cycle,
                    np.abs(np.asarray(u)).max(axis=0))
