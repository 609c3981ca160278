"""The controller: feedback laws around a feedforward plan (one stage of the data flow).

The two-degree-of-freedom structure of Thuemmel, Otter & Bals (control of robots with elastic
joints from generated inverse models, 2001, Fig. 5):

    reference -> inverse model (ffopt's plan) -> feedforward torque u_ff(t) and reference state x_ref(t)
                                                  |                      |
                                                  v                      v
                          u = u_ff + K (x_ref - x_measured)  ->  plant (ffopt.sim)

If the plant equals the inverse model and starts where the plan starts, x = x_ref and the
feedback is idle; it acts only on what the model got wrong. Here:

- ``references``: what feeds the loop (``Feedforward``): ffopt's plan (elastic inverse model),
  the rigid-model feedforward, PD with static gravity compensation only (Tomei, "A simple PD
  controller for robots with elastic joints"; Thuemmel, Otter & Bals eq. 3-4), no feedforward.
- ``gains``: the feedback gains by documented rules: the motor-side PD by pole placement on the
  motor inertia (bandwidth, damping), and PD plus link-side state feedback by LQR on the model
  linearised at the start of the path (``Gains``, printed and stored).
- ``laws``: the controllers by name (``none``, ``pd``, ``pd+state``) as loops the plant simulator
  runs (``ffopt.sim.plant.MotorPD`` / ``StateFeedback``), and one closed-loop run with its tool error.

``ffopt simulate`` (``ffopt.closed_loop``) runs a saved plan through these on any plant.
``discrete_inverse``: the discrete-time inverse-dynamics controller of Jankowski & Van Brussel, which
solves the inverse model on line every sample instead of feeding a precomputed plan.
"""

from ffopt.control.gains import Gains, design
from ffopt.control.laws import CONTROLLERS, ClosedLoopRun, ClosedLoopSetup, feedback_loop, run_closed_loop
from ffopt.control.references import Feedforward, from_trajectory, no_feedforward, rigid_model, static_compensation

__all__ = ["CONTROLLERS", "ClosedLoopRun", "ClosedLoopSetup", "Feedforward", "Gains", "design", "feedback_loop",
           "from_trajectory", "no_feedforward", "rigid_model", "run_closed_loop", "static_compensation"]
