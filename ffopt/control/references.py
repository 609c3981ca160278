"""What feeds the feedback loop: a feedforward torque u_ff(t) and a reference state x_ref(t).

In the two-degree-of-freedom structure (Thuemmel, Otter & Bals, Fig. 5) the inverse model gives
both the feedforward torque and the desired values of every measured quantity. Four sources:

- ``from_trajectory``: ffopt's plan, the inverse of the *elastic* model (BDF or NLP): u_ff = the
  planned torques, x_ref = the planned states [q; v] (link side, motors, passive joints).
- ``rigid_model``: the industrial default, the inverse of the rigid robot (stiff gears, passive
  joints locked): u_ff = its torques, motor references = the rigid link angles.
- ``static_compensation``: PD with static gravity compensation only (Tomei, "A simple PD
  controller for robots with elastic joints"; Thuemmel, Otter & Bals eq. 3-4):
  u_ff = g(q_d), theta_d = q_d + K^-1 g(q_d). For arms with passive joints or tool-space paths
  the static part generalises to the static equilibrium with the tool on the path at each time:
  x_ref(t) = that configuration (gears and passive joints deflected by gravity), u_ff(t) = the
  torque that holds it at rest. No dynamics enter. The speed reference is the time derivative
  of that configuration (the tracking form; Tomei's set-point law damps the absolute motor
  speed, which only lags more on a moving path).
- ``no_feedforward``: u_ff = 0, the loop on the rigid references alone ("PD only").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from ffopt.cache import per_model
from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.flexible import FlexibleModel

__all__ = ["Feedforward", "from_trajectory", "no_feedforward", "rigid_model", "static_compensation"]


@dataclass
class Feedforward:
    """u_ff (n, N) and x_ref = [q; v] (n, 2 nq) of the planning model on the grid t (n,)."""

    name: str  # short label: "elastic", "rigid", "static", "none"
    description: str
    t: np.ndarray
    u: np.ndarray
    x_ref: np.ndarray
    hold: str = "linear"  # how u is applied between grid points: "linear" or "zoh" (a plan's [output] hold)

    def motor_reference(self, model: FlexibleModel) -> tuple[np.ndarray, np.ndarray]:
        """Angle and speed references (n, N) of the coordinate each input's motor turns."""
        L = model.layout
        motor = L.motor_of_input
        return self.x_ref[:, motor], self.x_ref[:, [L.nq + m for m in motor]]


def from_trajectory(model: FlexibleModel, t, u, q, v, name: str = "elastic",
                    description: str = "the plan's feedforward (inverse of the elastic model)",
                    hold: str = "linear") -> Feedforward:
    """A plan's torques u (n, N) and states q, v (n, nq) as the loop's feedforward and reference; ``hold``:
    how the plan's torques are applied between its rows (its [output] hold)."""
    L = model.layout
    q, v = np.asarray(q, float).reshape(-1, L.nq), np.asarray(v, float).reshape(-1, L.nq)
    return Feedforward(name, description, np.asarray(t, float), np.asarray(u, float).reshape(-1, L.n_u),
                       np.hstack([q, v]), hold)


def rigid_model(model: FlexibleModel, reference, t, guess=None) -> Feedforward:
    """The rigid-model feedforward (``ffopt.sim.baselines.rigid_feedforward``) and its references:
    link angles from the rigid inverse kinematics, motors = actuated link angles, passive joints 0."""
    from ffopt.sim.baselines import rigid_feedforward

    rig = rigid_feedforward(model, reference, t, guess)
    gear = list(model.layout.gear)
    x_ref = np.hstack([rig.qa, rig.qa[:, gear], rig.dqa, rig.dqa[:, gear]])
    return Feedforward("rigid", "rigid-model feedforward (stiff gears, passive joints locked)", rig.t, rig.u, x_ref)


def no_feedforward(model: FlexibleModel, reference, t, guess=None) -> Feedforward:
    """u_ff = 0 with the rigid references: the feedback loop alone moves the robot."""
    rig = rigid_model(model, reference, t, guess)
    return replace(rig, name="none", description="no feedforward, the loop on the rigid references",
                   u=np.zeros_like(rig.u))


def static_compensation(model: FlexibleModel, reference, t, guess=None) -> Feedforward:
    """PD with static gravity compensation (Tomei): the static equilibrium along the path.

    At each t the configuration q_s(t) at rest with the tool at theta(t) (continuation from the
    previous point), its rate from the implicit function theorem, G_q q_s' = [0; theta'(t)] for
    G(q, y) = [link rows at rest; output(qa) - y], and the holding torque u_s(t) = u(q_s, 0, 0).
    """
    L = model.layout
    t = np.asarray(t, float).ravel()
    y = np.asarray(reference.evaluate(t))
    dy = np.asarray(reference.evaluate(t, 1))
    qs = np.empty((len(t), L.nq))
    qa_guess = None if guess is None else np.asarray(guess, float)
    for k, (tk, yk) in enumerate(zip(t, y)):
        qs[k] = static_equilibrium(model, yk, qa_guess, where=f"t = {tk:.4g} s")
        qa_guess = qs[k, :L.n_link]
    jac = per_model(model, "static_compensation_jacobian", lambda: _static_jacobian(model))
    G_q = np.array(jac.map(len(t))(qs.T, y.T)).reshape(L.nq, len(t), L.nq).transpose(1, 0, 2)
    rhs = np.hstack([np.zeros((len(t), L.nq - y.shape[1])), dy])
    vs = np.linalg.solve(G_q, rhs[..., None])[..., 0]
    zero = np.zeros((L.nq, len(t)))
    u = np.array(model.input_torque.map(len(t))(qs.T, zero, zero)).T
    return Feedforward("static", "static gravity compensation only (Tomei): holding torque and static "
                                 "configuration along the path", t, u, np.hstack([qs, vs]))


def _static_jacobian(model: FlexibleModel) -> ca.Function:
    """d/dq of G(q, y) = [link rows without u at rest; output(qa) - y] (as ffopt.models.equilibrium)."""
    L = model.layout
    q, y = model.q, ca.SX.sym("y", model.output.size1_out(0))
    zero = ca.SX.zeros(L.nq)
    G = ca.vertcat(model.unactuated_link_rows(q, zero, zero), model.output(q[: L.n_link]) - y)
    return ca.Function("static_jacobian", [q, y], [ca.jacobian(G, q)])
