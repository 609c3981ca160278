"""Forced simulation: the flexible plant driven open loop by the torques of its RIGID model along a
joint motion, the experiment of Mohan & Saha (simulation of serial robots with flexible links,
sec. 7.1, the Canadarm), and its power balance as a check of the simulation (their sec. 7.2).

The plant is integrated by ``ffopt.sim.plant.simulate`` (CVODES, the model's own forward dynamics)
with the torque table as a cubic spline, so the plant sees the rigid torques, not their
interpolation error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import cumulative_simpson

from ffopt.models.flexible import FlexibleModel
from ffopt.sim.baselines import rigid_chain
from ffopt.sim.plant import SimResult, SimulationOptions, simulate


def rigid_model_torques(model: FlexibleModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(n, N) torques that drive the RIGID robot along the actuated-joint motion q, dq, ddq (n, N).

    Rigid: stiff gears (motor inertia on the joint), passive joints locked at 0 and, for a
    ``FlexibleLinkModel``, every link rigid with its beam's mass (``rigid_chain()``); the torques
    come from the recursive Newton-Euler algorithm of ``ffopt.models.rigid_body``.
    """
    links_rigid = model.rigid_chain() if hasattr(model, "rigid_chain") else model.chain
    chain = rigid_chain(links_rigid)
    act = list(model.layout.actuated)
    rigid = FlexibleModel(chain, tuple(chain.joints[i].name for i in act), f"{model.name} (rigid)")
    n_joints = chain.n_joints
    full = [np.zeros((len(q), n_joints)) for _ in range(3)]
    for f, x in zip(full, (q, dq, ddq)):
        f[:, act] = x
    return np.array(rigid.input_torque.map(len(q))(*[f.T for f in full])).T


@dataclass
class ForcedRun:
    """A forced simulation: the rigid torques u (n, N) and the simulated plant."""

    u: np.ndarray
    sim: SimResult


def simulate_rigid_torques(model: FlexibleModel, t, q, dq, ddq, rtol: float = 1e-8, q0=None) -> ForcedRun:
    """Simulate ``model`` from rest at q0 (default: the joint motion's start, elastic coordinates 0)
    driven open loop by ``rigid_model_torques`` along the joint motion on the grid t."""
    u = rigid_model_torques(model, q, dq, ddq)
    if q0 is None:
        q0 = np.zeros(model.layout.nq)
        q0[list(model.layout.actuated)] = q[0]
        q0[model.layout.motor_of_input] = q[0]
    sim = simulate(model, t, u, q0, options=SimulationOptions(rtol=rtol, atol=rtol * 1e-2, interpolation="cubic"))
    return ForcedRun(u, sim)


def power_balance(model, sim: SimResult) -> dict:
    """Energy E(t) = T + V against E(0) + the work of the applied torques (Simpson on the grid).

    Needs ``model.energy`` (``FlexibleLinkModel``). With damping and friction off, the difference
    is the simulation's (and the work quadrature's) error. Returns arrays energy, work, error and
    the maximum error relative to the largest kinetic energy.
    """
    n = len(sim.t)
    kinetic, potential = (np.array(x).ravel() for x in model.energy.map(n)(sim.q.T, sim.v.T))
    speeds = sim.v[:, model.layout.motor_of_input]
    work = cumulative_simpson(np.sum(sim.u_applied * speeds, axis=1), x=sim.t, initial=0.0)
    energy = kinetic + potential
    error = energy - energy[0] - work
    return {"energy": energy, "kinetic": kinetic, "work": work, "error": error,
            "relative_error": float(np.abs(error).max() / max(np.abs(kinetic).max(), 1e-300))}
