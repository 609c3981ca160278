"""Random 3-D test robots as problem-file dicts, and their Pinocchio models (the independent referee).

The Pinocchio model is built from the validated ``Chain`` of the same problem: one revolute joint per
link coordinate (placement = origin and fixed rotation, axis in the joint frame), the payload as a
second body on the last joint, and optionally every rotor as its own body on its carrier (the
preceding link, or the base for the first joint), turning about the rotor axis.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from ffopt.io.problem import problem_from_dict


def _inertia(rng, scale):
    """A random full (off-diagonal) inertia tensor that satisfies the triangle inequality."""
    principal = rng.uniform(0.5, 1.0, 3) * scale
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    I = Q @ np.diag(principal) @ Q.T
    return ((I + I.T) / 2).tolist()


def random_robot(rng, coupling: str = "reduced", bearing: bool = False, kinds=None) -> dict:
    """A 6-axis arm (plus a 2-axis elastic bearing after joint 3 if ``bearing``) as a problem dict:
    arbitrary axes, rotated joint frames (rpy_deg and a rotation matrix), full inertia tensors, a
    payload, signed gear ratios and motor-side drive data, non-coaxial rotor axes."""
    kinds = kinds or ["elastic_gear", "elastic_gear", "elastic_gear", "direct", "direct", "direct"]
    joints = []
    for i, kind in enumerate(kinds):
        axis = rng.normal(size=3)
        j = {"name": f"q{i + 1}", "kind": kind, "axis": axis.tolist(),
             "origin": rng.uniform(-0.4, 0.4, 3).tolist(),
             "mass": float(rng.uniform(1.0, 20.0)), "com": rng.uniform(-0.2, 0.2, 3).tolist(),
             "inertia": _inertia(rng, 0.3),
             "gear_ratio": float(rng.choice([-1, 1]) * rng.uniform(20, 150)),
             "rotor_inertia": float(rng.uniform(2e-4, 2e-3)),
             "rotor_inertia_transverse": float(rng.uniform(1e-4, 1e-3))}
        if i % 2:
            j["rpy_deg"] = rng.uniform(-180, 180, 3).tolist()
        elif i:
            j["rotation"] = np.linalg.qr(rng.normal(size=(3, 3)))[0].tolist()
            if np.linalg.det(j["rotation"]) < 0:
                j["rotation"] = (-np.array(j["rotation"])).tolist()
        if i in (2, 4):
            j["rotor_axis"] = rng.normal(size=3).tolist()  # motor not coaxial with its joint
        if kind == "elastic_gear":
            j.update(stiffness_motor_side=float(rng.uniform(5, 50)), damping_motor_side=float(rng.uniform(1e-3, 1e-2)),
                     viscous_friction_motor_side=1e-4, coulomb_friction_motor_side=0.2)
        else:
            j.update(viscous_friction=2.0, coulomb_friction=5.0)
        joints.append(j)
        if bearing and i == 2:
            joints.append({"name": "bearing", "kind": "passive", "axes": [[1.0, 0.2, 0.0], [0.0, 0.3, 1.0]],
                           "origin": rng.uniform(-0.3, 0.3, 3).tolist(), "rpy_deg": [10.0, -20.0, 30.0],
                           "mass": 4.0, "com": [0.1, 0.0, 0.05], "inertia": _inertia(rng, 0.1),
                           "stiffness_matrix": [[4.0e4, 6.0e3], [6.0e3, 2.5e4]],
                           "damping_matrix": [[40.0, 5.0], [5.0, 30.0]]})
    return {
        "name": "random 3-D arm",
        "model": {"gravity": (rng.normal(size=3) * 5).tolist(), "outputs": [j["name"] for j in joints
                                                                              if j["kind"] != "passive"],
                  "tool_origin": [0.1, 0.05, 0.2], "tool_rpy_deg": [5.0, 10.0, -15.0],
                  "rotor_coupling": coupling,
                  "payload": {"mass": 3.0, "com": [0.05, 0.1, -0.02], "inertia": _inertia(rng, 0.02)},
                  "joints": joints},
        "reference": {"kind": "joint_ptp", "q_start_rad": [0.0] * 6, "q_end_rad": [0.3] * 6, "duration": 0.5},
    }


def random_problem(seed: int, **kw):
    return problem_from_dict(random_robot(np.random.default_rng(seed), **kw), source=f"random{seed}.toml")


def pinocchio_model(chain, rotors: bool = False):
    """Pinocchio model of the chain; with ``rotors`` each actuated joint's rotor is its own body.

    Returns (model, T): T maps ffopt coordinates [qa; qm] to Pinocchio's q, where rotor angle j =
    gear_ratio_j x (qm_j, or qa_j for a direct joint). Pinocchio needs its joints in depth-first
    order, so each rotor (a leaf on its carrier) is added just before the joint it drives.
    """
    model = pin.Model()
    n_link = chain.n_joints
    gear = [i for i, j in enumerate(chain.joints) if j.kind == "elastic_gear"]
    link_ids, rotor_ids = [], {}
    for i, jt in enumerate(chain.joints):
        carrier = link_ids[-1] if link_ids else 0
        if rotors and jt.kind != "passive":
            rotor_ids[i] = _add_rotor(model, carrier, jt, f"rotor_{jt.name}")
        placement = pin.SE3(np.asarray(jt.rotation, float), np.asarray(jt.origin, float))
        jid = model.addJoint(carrier, pin.JointModelRevoluteUnaligned(np.asarray(jt.axis, float)), placement, jt.name)
        _add_body(model, jid, jt.body)
        link_ids.append(jid)
    if chain.payload is not None:
        _add_body(model, link_ids[-1], chain.payload)
    model.gravity = pin.Motion(np.asarray(chain.gravity, float), np.zeros(3))
    T = np.zeros((model.nq, n_link + len(gear)))
    for i, jid in enumerate(link_ids):
        T[model.idx_qs[jid], i] = 1.0
    for i, rid in rotor_ids.items():
        col = n_link + gear.index(i) if i in gear else i
        T[model.idx_qs[rid], col] = chain.joints[i].gear_ratio
    return model, T


def _add_body(model, jid, b):
    model.appendBodyToJoint(jid, pin.Inertia(b.mass, np.asarray(b.com, float), np.asarray(b.inertia, float)),
                            pin.SE3.Identity())


def _add_rotor(model, carrier, jt, name):
    """A massless symmetric rotor turning about z of a frame whose z is the rotor axis; axial inertia
    J_m / ratio^2, transverse rotor_inertia_transverse. Its position on the carrier is arbitrary."""
    n = jt.rotor_axis_in_parent / np.linalg.norm(jt.rotor_axis_in_parent)
    rid = model.addJoint(carrier, pin.JointModelRZ(), pin.SE3(_frame_with_z(n), np.array([0.03, -0.02, 0.05])), name)
    Ia, It = jt.motor_inertia / jt.gear_ratio**2, jt.rotor_inertia_transverse
    model.appendBodyToJoint(rid, pin.Inertia(0.0, np.zeros(3), np.diag([It, It, Ia])), pin.SE3.Identity())
    return rid


def _frame_with_z(n):
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(a, n)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(n, x), n])


def pinocchio_terms(model, T, q, v):
    """M, c (Coriolis/centrifugal), g of the Pinocchio model mapped to ffopt coordinates."""
    data = model.createData()
    qp, vp = T @ q, T @ v
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    g = pin.computeGeneralizedGravity(model, data, qp).copy()
    c = pin.nonLinearEffects(model, data, qp, vp) - g
    return T.T @ M @ T, T.T @ c, T.T @ g


def pinocchio_decoupling(flexible_model, qa):
    """The decoupling matrix of ffopt.analysis.decoupling for an arm of direct drives and elastic gears
    (no rotor coupling), from Pinocchio: J_y (M + diag J_m of the direct drives)^-1 S C, y the tool
    coordinates of the model's outputs (x, y, z), S the columns of the actuated joints, C = diag(1 for
    a direct drive: y'' = J M^-1 u + ...; d_j / J_m,j for a damped gear: y''' = J M^-1 d_j u_j / J_m,j
    + ...; k_j / J_m,j for an undamped one, at the fourth derivative)."""
    chain = flexible_model.chain
    n_link = chain.n_joints
    model, T = pinocchio_model(chain)
    T = T[:, :n_link]
    qa = np.asarray(qa, float)
    M, _, _ = pinocchio_terms(model, T, qa, np.zeros(n_link))
    frame = model.addFrame(pin.Frame("tool", model.njoints - 1, 0, pin.SE3(np.eye(3), np.asarray(chain.tool_origin)),
                                     pin.FrameType.OP_FRAME))
    J = pin.computeFrameJacobian(model, model.createData(), T @ qa, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    act = [i for i, j in enumerate(chain.joints) if j.kind != "passive"]
    coef = []
    for i in act:
        jt = chain.joints[i]
        if jt.kind == "direct":
            M[i, i] += jt.motor_inertia
            coef.append(1.0)
        else:
            coef.append((jt.damping if jt.damping > 0 else jt.stiffness) / jt.motor_inertia)
    rows = [{"x": 0, "y": 1, "z": 2}[o] for o in flexible_model.outputs]
    return (J[:3] @ T)[rows] @ np.linalg.solve(M, np.eye(n_link)[:, act]) @ np.diag(coef)
