"""Symbolic rigid-body kinematics and dynamics of a ``Chain`` (CasADi SX).

Pure functions of a ``Chain`` and SX vectors; conventions are those of ``ffopt.models.chain``.
Body frame i sits at joint i (``origin`` in the frame of body i-1) and equals the frame of
body i-1 turned by the fixed ``rotation_i`` and then by ``Rot(axis_i, q_i)``. The bodies are
``chain.bodies()`` (payload and, with full rotor coupling, the rotors' inertia merged in).
``chain.constant_inertia`` is not handled here.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ffopt.models.chain import Chain


def _skew(v) -> ca.SX | ca.DM:
    return ca.vertcat(
        ca.horzcat(0, -v[2], v[1]),
        ca.horzcat(v[2], 0, -v[0]),
        ca.horzcat(-v[1], v[0], 0),
    )


def axis_rotation(axis: np.ndarray, angle) -> ca.SX:
    """Rodrigues: rotation by ``angle`` about the unit vector ``axis``."""
    k = ca.DM(_skew(np.asarray(axis, dtype=float)))
    return ca.DM.eye(3) + ca.sin(angle) * k + (1 - ca.cos(angle)) * (k @ k)


def joint_rotation(joint, angle) -> ca.SX:
    """Rotation of a body frame relative to its parent: fixed joint-frame rotation, then Rot(axis, q)."""
    return ca.DM(np.asarray(joint.rotation, float)) @ axis_rotation(joint.axis, angle)


def body_poses(chain: Chain, q: ca.SX) -> list[tuple[ca.SX, ca.SX]]:
    """World rotation R_i and position p_i of each body frame i = 1..n (list index i-1)."""
    R, p = ca.SX.eye(3), ca.SX.zeros(3, 1)
    poses = []
    for i, jt in enumerate(chain.joints):
        p = p + R @ ca.DM(jt.origin)
        R = R @ joint_rotation(jt, q[i])
        poses.append((R, p))
    return poses


def body_angular_velocities(chain: Chain, q: ca.SX, dq: ca.SX) -> list[ca.SX]:
    """Angular velocity of each body i = 1..n in its own frame (list index i-1)."""
    w, out = ca.SX.zeros(3, 1), []
    for i, jt in enumerate(chain.joints):
        w = joint_rotation(jt, q[i]).T @ w + ca.DM(jt.axis) * dq[i]
        out.append(w)
    return out


def tool_position(chain: Chain, q: ca.SX) -> ca.SX:
    """World position (3, 1) of ``chain.tool_origin`` (given in the last body frame)."""
    R, p = body_poses(chain, q)[-1]
    return p + R @ ca.DM(chain.tool_origin)


def tool_rotation(chain: Chain, q: ca.SX) -> ca.SX:
    """World rotation (3, 3) of the tool frame: the last body's frame turned by ``chain.tool_rotation``."""
    return body_poses(chain, q)[-1][0] @ ca.DM(np.asarray(chain.tool_rotation, float))


def inverse_dynamics(chain: Chain, q: ca.SX, dq: ca.SX, ddq: ca.SX) -> ca.SX:
    """Joint torques tau = M(q) ddq + c(q, dq) + g(q), shape (n, 1).

    Recursive Newton-Euler in body coordinates (Featherstone, Rigid Body Dynamics
    Algorithms, RNEA), with vectors instead of spatial vectors. Moments are taken
    about each body frame origin (the joint point). Gravity enters as the base
    acceleration -chain.gravity.
    """
    n = chain.n_joints
    # Forward pass: angular velocity w, angular acceleration dw, frame-origin acceleration a.
    w, dw, a = ca.SX.zeros(3, 1), ca.SX.zeros(3, 1), -ca.SX(ca.DM(chain.gravity))
    E, f, m = [], [], []  # E[i]: body i -> parent rotation; f, m: inertial force, moment
    for i, (jt, b) in enumerate(zip(chain.joints, chain.bodies())):
        ax, r = ca.DM(jt.axis), ca.DM(jt.origin)
        Ei = joint_rotation(jt, q[i])
        a = Ei.T @ (a + ca.cross(dw, r) + ca.cross(w, ca.cross(w, r)))
        w_in = Ei.T @ w  # parent velocity in body i coordinates
        w = w_in + ax * dq[i]
        dw = Ei.T @ dw + ax * ddq[i] + ca.cross(w_in, ax * dq[i])
        c, inertia = ca.DM(b.com), ca.DM(b.inertia)
        F = b.mass * (a + ca.cross(dw, c) + ca.cross(w, ca.cross(w, c)))
        E.append(Ei)
        f.append(F)
        m.append(inertia @ dw + ca.cross(w, inertia @ w) + ca.cross(c, F))
    # Backward pass: accumulate child forces/moments, project on the joint axes.
    tau = [None] * n
    fc, mc = ca.SX.zeros(3, 1), ca.SX.zeros(3, 1)  # force/moment from child, parent coords
    for i in reversed(range(n)):
        fi, mi = f[i] + fc, m[i] + mc
        tau[i] = ca.dot(ca.DM(chain.joints[i].axis), mi)
        r = ca.DM(chain.joints[i].origin)
        fc = E[i] @ fi
        mc = E[i] @ mi + ca.cross(r, fc)
    return ca.vertcat(*tau)


def mass_matrix(chain: Chain, q: ca.SX) -> ca.SX:
    """Joint-space inertia matrix M(q), (n, n), exactly symmetric.

    Composite rigid body algorithm (Featherstone, Rigid Body Dynamics Algorithms, CRBA)
    in world coordinates: M_ij (i <= j) is the torque about joint axis i needed
    to give the composite body j..n a unit angular acceleration about joint axis j.
    """
    n = chain.n_joints
    poses = body_poses(chain, q)
    z = [R @ ca.DM(jt.axis) for (R, _), jt in zip(poses, chain.joints)]  # world axes
    o = [p for _, p in poses]  # world joint points
    M = ca.SX.zeros(n, n)
    # Composite j..n: mass, first moment and second moment about the world origin.
    mass, h, J = 0.0, ca.SX.zeros(3, 1), ca.SX.zeros(3, 3)
    bodies = chain.bodies()
    for j in reversed(range(n)):
        (R, p), b = poses[j], bodies[j]
        c = p + R @ ca.DM(b.com)
        mass += b.mass
        h = h + b.mass * c
        J = J + R @ ca.DM(b.inertia) @ R.T - b.mass * (_skew(c) @ _skew(c))
        so, sh = _skew(o[j]), _skew(h)
        moment = (J + sh @ so + so @ sh - mass * (so @ so)) @ z[j]  # about o_j
        force = ca.cross(z[j], h - mass * o[j])
        for i in range(j + 1):
            M[i, j] = ca.dot(z[i], moment + ca.cross(o[j] - o[i], force))
            M[j, i] = M[i, j]
    return M


def bias_torques(chain: Chain, q: ca.SX, dq: ca.SX) -> ca.SX:
    """c(q, dq) + g(q), (n, 1): inverse dynamics with zero joint acceleration."""
    return inverse_dynamics(chain, q, dq, ca.SX.zeros(chain.n_joints, 1))
