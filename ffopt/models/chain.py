"""Plain data describing a serial chain of rigid bodies joined by (elastic) revolute joints.

This is the model *description* (validated numbers only); ``ffopt.models.flexible`` turns it
into symbolic CasADi functions. Units: SI, radians.

Conventions (seed 000, eq. 1):
- Link-side joints ``qa`` (N+M of them), in chain order. Each joint is one of
  ``"elastic_gear"`` (actuated through an elastic gear: a motor with its own angle qm),
  ``"direct"`` (actuated rigidly, torque u acts on the joint itself, e.g. E1's joint 1),
  ``"passive"`` (non-actuated spring-damper, rest angle 0).
- Motor angles ``qm`` are in arm-side units (gear ratio folded in), one per elastic_gear joint.
- Joint i rotates body i relative to body i-1 (body 0 = fixed base) about ``axis`` (a unit
  vector in the frame of body i-1 at the joint), located at ``origin`` (a point in the frame
  of body i-1). At q = 0 the frame of body i is parallel to that of body i-1.
- Each body's ``com`` is given in its own frame, ``inertia`` is the 3x3 tensor about the
  centre of mass in its own frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

JOINT_KINDS = ("elastic_gear", "direct", "passive")


@dataclass(frozen=True)
class Body:
    mass: float
    com: np.ndarray  # (3,) in body frame, m
    inertia: np.ndarray  # (3, 3) about the centre of mass, body frame, kg m^2


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str  # one of JOINT_KINDS
    axis: np.ndarray  # (3,) unit vector in parent frame
    origin: np.ndarray  # (3,) joint position in parent frame, m
    body: Body
    stiffness: float = 0.0  # N m/rad (gear for elastic_gear, joint spring for passive)
    stiffness_cubic: float = 0.0  # N m/rad^3, nonlinear spring tau = k d + k3 d^3
    damping: float = 0.0  # N m s/rad
    motor_inertia: float = 0.0  # kg m^2, arm side (elastic_gear and direct)
    viscous_friction: float = 0.0  # N m s/rad, motor side
    coulomb_friction: float = 0.0  # N m, motor side, smoothed with tanh(dq / 1e-3)
    q_min: float = -np.inf
    q_max: float = np.inf


@dataclass(frozen=True)
class Chain:
    joints: tuple[Joint, ...]
    tool_origin: np.ndarray  # (3,) tool point in the frame of the last body
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,) m/s^2, base frame
    # Optional override of the rigid-body dynamics by a constant inertia matrix with no
    # Coriolis, centripetal or gravity terms (seed 000, E1 simplified, eq. 16).
    constant_inertia: np.ndarray | None = None

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    def indices(self, kind: str) -> list[int]:
        return [i for i, j in enumerate(self.joints) if j.kind == kind]

    @property
    def actuated(self) -> list[int]:
        """Link-side indices of actuated joints (elastic_gear and direct), chain order."""
        return [i for i, j in enumerate(self.joints) if j.kind != "passive"]

    def with_payload_scale(self, factor: float) -> "Chain":
        """Same chain with the last body's mass and inertia scaled (plant mismatch checks)."""
        last = self.joints[-1]
        body = replace(last.body, mass=last.body.mass * factor, inertia=last.body.inertia * factor)
        return replace(self, joints=self.joints[:-1] + (replace(last, body=body),))
