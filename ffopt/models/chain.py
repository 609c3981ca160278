"""Plain data describing a serial chain of rigid bodies joined by (elastic) revolute joints.

This is the model *description* (validated numbers only); ``ffopt.models.flexible`` turns it
into symbolic CasADi functions. Units: SI, radians.

Conventions (Moberg & Hanssen, inverse dynamics of flexible manipulators: the extended flexible
joint model, eq. 1):
- Link-side joints ``qa`` (N+M of them), in chain order. Each joint is one of
  ``"elastic_gear"`` (actuated through an elastic gear: a motor with its own angle qm),
  ``"direct"`` (actuated rigidly, torque u acts on the joint itself, e.g. E1's joint 1),
  ``"passive"`` (non-actuated spring-damper, rest angle 0).
- Motor angles ``qm`` are in arm-side units (gear ratio folded in: qm = motor angle / ratio), one
  per elastic_gear joint; stiffness, damping, motor inertia and friction are arm-side values
  (arm side = motor side x ratio^2; Coulomb friction x |ratio|). The input u of a joint is the
  torque at the gear output, ratio x the motor's torque.
- Frames (the URDF convention): joint i sits at ``origin`` (a point in the frame of body i-1;
  body 0 = fixed base); the joint frame is the frame of body i-1 turned by the fixed rotation
  ``rotation`` (identity unless given); body i's frame is the joint frame turned by
  ``Rot(axis_i, q_i)`` about ``axis`` (a unit vector in the joint frame, which is also fixed in body
  i's frame). So R_i = R_{i-1} rotation_i Rot(axis_i, q_i), p_i = p_{i-1} + R_{i-1} origin_i.
- Each body's ``com`` is given in its own frame, ``inertia`` is the full 3x3 tensor about the
  centre of mass in its own frame. An optional ``payload`` body is fixed to the last body.
- A multi-axis elastic bearing (two or three rotational DOF between two bodies) is a run of
  consecutive passive joints at one point whose spring-damper is coupled: a ``SpringGroup`` with a
  stiffness and a damping matrix acting on their angles (tau = -K q - D dq).
- Rotor gyroscopic coupling (Hoepler & Thuemmel, symbolic inverse dynamics of elastic joint
  robots): the motor of actuated joint i is mounted on body i-1 (the preceding link) with its
  rotor axis ``rotor_axis`` (frame of body i-1; default the joint axis) and turns ``gear_ratio``
  times as fast as the joint (direct) or the arm-side motor angle (elastic gear). ``"reduced"``
  (Spong's model, the default) keeps only the rotor's spin energy J_m qm'^2 / 2;
  ``"full"`` adds the rotor as a body on its carrier (axial inertia J_m / ratio^2, transverse
  ``rotor_inertia_transverse``) and the coupling of its spin with the carrier's rotation.
- DC-motor electrics (Jankowski & Van Brussel, discrete-time inverse dynamics control of flexible
  joint robots, eq. 3): an actuated joint with ``electrics`` is driven by an armature-controlled DC
  motor, L di/dt + R i + C_v omega_motor = V, motor torque C_t i, omega_motor = gear_ratio x the
  arm-side motor speed; the input is then the armature voltage V (``ffopt.models.drives``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

JOINT_KINDS = ("elastic_gear", "direct", "passive")
ROTOR_COUPLINGS = ("reduced", "full")


@dataclass(frozen=True)
class Body:
    mass: float
    com: np.ndarray  # (3,) in body frame, m
    inertia: np.ndarray  # (3, 3) about the centre of mass, body frame, kg m^2

    def combined(self, other: "Body") -> "Body":
        """One rigid body made of this one and ``other`` (both in the same frame)."""
        m = self.mass + other.mass
        if m == 0.0:
            return Body(0.0, np.zeros(3), self.inertia + other.inertia)
        c = (self.mass * np.asarray(self.com) + other.mass * np.asarray(other.com)) / m
        return Body(m, c, self.inertia_about(c) + other.inertia_about(c))

    def inertia_about(self, point: np.ndarray) -> np.ndarray:
        """Inertia tensor about ``point`` (parallel-axis theorem)."""
        d = np.asarray(self.com, float) - np.asarray(point, float)
        return np.asarray(self.inertia, float) + self.mass * (d @ d * np.eye(3) - np.outer(d, d))


@dataclass(frozen=True)
class MotorElectrics:
    """Armature circuit of a DC motor, motor-side constants (data-sheet values)."""

    inductance: float  # H, armature inductance L (> 0: the current is a state)
    resistance: float  # Ohm, armature resistance R
    torque_constant: float  # N m/A, C_t (motor torque = C_t i)
    back_emf_constant: float  # V s/rad, C_v (back EMF = C_v x motor speed)


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str  # one of JOINT_KINDS
    axis: np.ndarray  # (3,) unit vector in the joint frame (= parent frame turned by ``rotation``)
    origin: np.ndarray  # (3,) joint position in parent frame, m
    body: Body
    stiffness: float = 0.0  # N m/rad (gear for elastic_gear, joint spring for passive), arm side
    stiffness_cubic: float = 0.0  # N m/rad^3, nonlinear spring tau = k d + k3 d^3
    damping: float = 0.0  # N m s/rad, arm side
    motor_inertia: float = 0.0  # kg m^2, arm side (elastic_gear and direct)
    viscous_friction: float = 0.0  # N m s/rad, motor bearing, arm side
    coulomb_friction: float = 0.0  # N m, motor bearing, arm side, smoothed with tanh(dq / coulomb_smoothing)
    q_min: float = -np.inf
    q_max: float = np.inf
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # joint frame in the parent frame
    gear_ratio: float = 1.0  # motor angle / joint angle (signed), for the rotor coupling
    rotor_inertia_transverse: float = 0.0  # kg m^2, about a rotor diameter (full rotor coupling)
    rotor_axis: np.ndarray | None = None  # (3,) in the parent body frame; None: the joint axis
    electrics: MotorElectrics | None = None  # DC-motor armature circuit: the input is a voltage
    # Nonlinear spring and friction laws (ffopt.models.flexible.spring_torque / friction_torque), arm side:
    stiffness_knees: tuple[float, ...] = ()  # rad: deflections where the spring's slope changes
    stiffness_slopes: tuple[float, ...] = ()  # N m/rad: slope beyond each knee (piecewise linear, no backlash)
    knee_width: float = 0.0  # rad: each knee is rounded over this width (softplus)
    stiffness_polynomial: tuple[float, ...] = ()  # N m/rad^3, N m/rad^5, ...: odd stiffening terms d^3, d^5, ...
    coulomb_smoothing: float = 1e-3  # rad/s: width of tanh() in the Coulomb and Stribeck friction
    stribeck_friction: float = 0.0  # N m: breakaway friction above Coulomb at standstill (motor bearing)
    stribeck_velocity: float = 0.0  # rad/s: speed over which the Stribeck excess decays
    link_viscous_friction: float = 0.0  # N m s/rad: link-side bearing (elastic gear or passive joint)
    link_coulomb_friction: float = 0.0  # N m: link-side bearing, smoothed like the motor's

    @property
    def rotor_inertia(self) -> float:
        """Axial rotor inertia on the motor side, kg m^2 (motor_inertia / ratio^2)."""
        return self.motor_inertia / self.gear_ratio**2

    @property
    def rotor_axis_in_parent(self) -> np.ndarray:
        if self.rotor_axis is not None:
            return np.asarray(self.rotor_axis, float)
        return np.asarray(self.rotation, float) @ np.asarray(self.axis, float)


@dataclass(frozen=True)
class SpringGroup:
    """Coupled spring-damper on consecutive passive joints (an elastic bearing with 2-3 DOF)."""

    name: str
    joints: tuple[int, ...]  # link indices
    stiffness: np.ndarray  # (k, k) N m/rad, symmetric positive definite
    damping: np.ndarray  # (k, k) N m s/rad, symmetric positive semi-definite


@dataclass(frozen=True)
class Chain:
    joints: tuple[Joint, ...]
    tool_origin: np.ndarray  # (3,) tool point in the frame of the last body
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,) m/s^2, base frame
    # Optional override of the rigid-body dynamics by a constant inertia matrix with no
    # Coriolis, centripetal or gravity terms (Moberg & Hanssen, E1 simplified, eq. 16).
    constant_inertia: np.ndarray | None = None
    spring_groups: tuple[SpringGroup, ...] = ()
    payload: Body | None = None  # fixed to the last body, in its frame
    tool_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # tool frame in the last body frame
    rotor_coupling: str = "reduced"  # one of ROTOR_COUPLINGS

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    def indices(self, kind: str) -> list[int]:
        return [i for i, j in enumerate(self.joints) if j.kind == kind]

    @property
    def actuated(self) -> list[int]:
        """Link-side indices of actuated joints (elastic_gear and direct), chain order."""
        return [i for i, j in enumerate(self.joints) if j.kind != "passive"]

    def bodies(self) -> list[Body]:
        """The rigid body moved by each joint, the payload merged into the last one and, with
        full rotor coupling, each rotor's inertia tensor into its carrier (rotor masses belong to
        the carrier's mass data)."""
        out = [j.body for j in self.joints]
        if self.payload is not None:
            out[-1] = out[-1].combined(self.payload)
        if self.rotor_coupling == "full":
            for i in self.actuated:
                if i > 0:
                    out[i - 1] = out[i - 1].combined(Body(0.0, np.zeros(3), rotor_inertia_tensor(self.joints[i])))
        return out

    def grouped_passive(self) -> set[int]:
        return {i for g in self.spring_groups for i in g.joints}

    def with_payload_scale(self, factor: float) -> "Chain":
        """Same chain with the payload's (or, without one, the last body's) mass and inertia scaled
        (plant mismatch checks)."""
        if self.payload is not None:
            p = self.payload
            return replace(self, payload=replace(p, mass=p.mass * factor, inertia=p.inertia * factor))
        last = self.joints[-1]
        body = replace(last.body, mass=last.body.mass * factor, inertia=last.body.inertia * factor)
        return replace(self, joints=self.joints[:-1] + (replace(last, body=body),))


def rotor_inertia_tensor(joint: Joint) -> np.ndarray:
    """Inertia tensor (3, 3) of joint's rotor in its carrier's frame: axial J_m / ratio^2 along the
    rotor axis, ``rotor_inertia_transverse`` across it (a rotor symmetric about its axis)."""
    n = joint.rotor_axis_in_parent
    nn = np.outer(n, n)
    return joint.rotor_inertia * nn + joint.rotor_inertia_transverse * (np.eye(3) - nn)


def rotation_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF ``rpy``: R = Rz(yaw) Ry(pitch) Rx(roll) (roll about x, then pitch about the fixed y,
    then yaw about the fixed z)."""
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


IK_START_SEED = 20261128  # fixed: the same pseudo-random starts in every run


def configuration_starts(chain: Chain, n_random: int = 16) -> list[tuple[str, np.ndarray]]:
    """Link-angle vectors to start an inverse-kinematics or equilibrium Newton iteration from when no guess is
    given, with what each is: the zero pose, the joint-limit midpoints (if a joint has limits) and ``n_random``
    pseudo-random configurations uniform within the limits (+-pi where a joint has none), the same in every run."""
    n = chain.n_joints
    lo = np.array([j.q_min if np.isfinite(j.q_min) else -np.pi for j in chain.joints])
    hi = np.array([j.q_max if np.isfinite(j.q_max) else np.pi for j in chain.joints])
    starts = [("the zero pose", np.zeros(n))]
    limited = np.array([np.isfinite(j.q_min) and np.isfinite(j.q_max) for j in chain.joints])
    if limited.any():
        starts.append(("the joint-limit midpoints", np.where(limited, 0.5 * (lo + hi), 0.0)))
    rng = np.random.default_rng(IK_START_SEED)
    starts += [("a pseudo-random configuration within the joint limits", lo + (hi - lo) * rng.random(n))
               for _ in range(n_random)]
    return starts
