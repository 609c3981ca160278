"""Forward simulation of the flexible plant and the verification of plans.

- ``plant``: ``simulate`` (CVODES, torques linear or cubic-spline between grid points, optional
  motor-side PD loop ``MotorPD`` with ``pd_gains``).
- ``baselines``: rigid inverse kinematics (the path check), rigid-model feedforward, PD only.
- ``verify``: the verification protocol (open loop, feedforward + PD, baselines,
  payload mismatch), tool-path errors in mm.

The names below are imported on first use, so the path check (``baselines``) does not pay for
the simulator's SciPy imports. The verification entry point is ``ffopt.sim.verify.verify`` (a
package attribute ``verify`` would be shadowed by the submodule of that name once it is imported).
"""

import importlib

_WHERE = {"pd_only": "baselines", "rigid_feedforward": "baselines", "rigid_inverse_kinematics": "baselines",
          "MotorPD": "plant", "SimResult": "plant", "SimulationOptions": "plant", "StateFeedback": "plant",
          "pd_gains": "plant", "simulate": "plant",
          "VerificationReport": "verify"}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ffopt.sim.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ffopt.sim' has no attribute {name!r}")
