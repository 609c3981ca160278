"""The controllers as loops the plant simulator runs, and one closed-loop run with its tool error.

u = u_ff + K (x_ref - x): ``none`` (K = 0, open loop), ``pd`` (the motor-side PD, run as
``ffopt.sim.plant.MotorPD`` on the same integrator as the plan's verification, so the numbers
agree bit for bit), ``pd+state`` (``StateFeedback`` with the LQR gain of ``ffopt.control.gains``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffopt.control.gains import CONTROLLERS, Gains
from ffopt.control.references import Feedforward
from ffopt.models.flexible import FlexibleModel

__all__ = ["CONTROLLERS", "ClosedLoopRun", "ClosedLoopSetup", "feedback_loop", "run_closed_loop"]


@dataclass
class ClosedLoopRun:
    """One simulated case: which feedforward, which controller, which plant; the tool error."""

    name: str
    feedforward: str
    controller: str
    plant: str
    error: object  # ffopt.sim.verify.CaseError
    simulation: object  # ffopt.sim.plant.SimResult

    def to_dict(self) -> dict:
        return {"feedforward": self.feedforward, "controller": self.controller, "plant": self.plant,
                **self.error.to_dict()}


@dataclass(frozen=True)
class ClosedLoopSetup:
    """What the closed-loop runs of one comparison share: the simulated ``plant`` (named ``plant_label`` in the
    reports), the planning ``model`` whose coordinates it shares and on which the ``gains`` were designed, the
    references the tool error is measured against on the grid (y_ref (n, n_out); tool_ref (n, 3) or None) and
    CVODES's relative tolerance."""

    plant: FlexibleModel
    model: FlexibleModel
    gains: Gains
    y_ref: np.ndarray
    tool_ref: np.ndarray | None
    rtol: float
    plant_label: str = "nominal"


def feedback_loop(gains: Gains, model: FlexibleModel, ff: Feedforward):
    """The simulator's loop object for ``gains`` around the references of ``ff`` (None: open loop)."""
    from ffopt.sim.plant import MotorPD, StateFeedback

    if gains.controller == "none":
        return None
    if gains.controller == "pd":
        qm, dqm = ff.motor_reference(model)
        return MotorPD(gains.kp, gains.kd, qm, dqm)
    return StateFeedback(np.asarray(gains.K, float), ff.x_ref)


def run_closed_loop(name: str, ff: Feedforward, setup: ClosedLoopSetup, q_start=None, q_guess=None) -> ClosedLoopRun:
    """Simulate ``setup.plant`` driven by ``ff`` and the loop of ``setup.gains``; tool error against the setup's
    references in mm.

    q_start: the start configuration (at rest); None: where the loop holds the plant at rest under
    the first feedforward torque and reference (a plant that differs from the model sags there).
    """
    from ffopt.sim.cases import Case, Integration, case_error, rest_state, run_case

    plant, model, gains, plant_label = setup.plant, setup.model, setup.gains, setup.plant_label
    if gains.controller not in CONTROLLERS:
        raise ValueError(f"unknown controller {gains.controller!r}")
    loop = feedback_loop(gains, model, ff)
    if q_start is None:
        guess = ff.x_ref[0, :model.layout.nq] if q_guess is None else q_guess
        q_start = rest_state(plant, ff.u[0], loop, guess)
    sim = run_case(name, Case(plant, ff.u, loop, q_start, ff.hold), ff.t, Integration(setup.rtol))
    text = f"{ff.description} + {gains.controller} on the {plant_label} plant"
    return ClosedLoopRun(name, ff.name, gains.controller, plant_label,
                         case_error(name, sim, setup.y_ref, setup.tool_ref, plant.output_units, text), sim)
