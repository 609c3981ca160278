"""Forward simulation of the flexible plant and the verification of plans.

- ``plant``: ``simulate`` (CVODES, torques linear or cubic-spline between grid points, optional
  motor-side PD loop ``MotorPD`` with ``pd_gains``).
- ``baselines``: rigid inverse kinematics (the path check), rigid-model feedforward, PD only.
- ``verify``: the verification protocol of DESIGN.md (open loop, feedforward + PD, baselines,
  payload mismatch), tool-path errors in mm.
"""

from ffopt.sim.baselines import pd_only, rigid_feedforward, rigid_inverse_kinematics
from ffopt.sim.plant import MotorPD, SimResult, pd_gains, simulate
from ffopt.sim.verify import VerificationReport, verify

__all__ = ["MotorPD", "SimResult", "VerificationReport", "pd_gains", "pd_only", "rigid_feedforward",
           "rigid_inverse_kinematics", "simulate", "verify"]
