"""Cross-checks of ffopt.models.rigid_body against Pinocchio and an analytic planar arm."""

from dataclasses import replace

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

from _robots import pinocchio_model, pinocchio_terms, random_problem
from scipy.spatial.transform import Rotation

from ffopt.models.chain import Body, Chain, Joint, rotation_rpy
from ffopt.models.rigid_body import (
    bias_torques,
    body_poses,
    inverse_dynamics,
    mass_matrix,
    tool_position,
    tool_rotation,
)

RTOL = 1e-9  # against Pinocchio: roundoff (measured 4e-15 at most on 2026-11-27); far below any modelling error


def _close(actual, expected):
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    # absolute floor relative to the overall magnitude (entries can be ~0)
    atol = RTOL * max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol)


def _relative_error(actual, expected) -> float:
    """max |actual - expected| / max |expected| (a norm-wise relative error)."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


def _random_chain(rng, n=6) -> Chain:
    joints = []
    for i in range(n):
        axis = rng.normal(size=3)
        a = rng.normal(size=(3, 3))
        body = Body(
            mass=rng.uniform(0.5, 5.0),
            com=rng.uniform(-0.3, 0.3, size=3),
            inertia=0.05 * (a @ a.T) + 0.01 * np.eye(3),
        )
        joints.append(
            Joint(
                name=f"j{i}",
                kind="elastic_gear",
                axis=axis / np.linalg.norm(axis),
                origin=rng.uniform(-0.5, 0.5, size=3),
                body=body,
            )
        )
    return Chain(
        joints=tuple(joints),
        tool_origin=rng.uniform(-0.3, 0.3, size=3),
        gravity=rng.normal(size=3) * 5.0,
    )


def _functions(chain: Chain):
    n = chain.n_joints
    q, dq, ddq = ca.SX.sym("q", n), ca.SX.sym("dq", n), ca.SX.sym("ddq", n)
    return (
        ca.Function("id", [q, dq, ddq], [inverse_dynamics(chain, q, dq, ddq)]),
        ca.Function("M", [q], [mass_matrix(chain, q)]),
        ca.Function("b", [q, dq], [bias_torques(chain, q, dq)]),
        ca.Function("tool", [q], [tool_position(chain, q)]),
    )


def _pinocchio_model(chain: Chain):
    model = pin.Model()
    parent = 0
    for jt in chain.joints:
        b = jt.body
        placement = pin.SE3(np.eye(3), np.asarray(jt.origin, float))
        parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(jt.axis), placement, jt.name)
        model.appendBodyToJoint(parent, pin.Inertia(b.mass, b.com, b.inertia), pin.SE3.Identity())
    model.gravity = pin.Motion(np.asarray(chain.gravity, float), np.zeros(3))
    return model


@pytest.fixture(scope="module")
def random_case():
    rng = np.random.default_rng(1234)
    chain = _random_chain(rng)
    return rng, chain, _functions(chain)


def test_against_pinocchio(random_case):
    rng, chain, (f_id, f_m, f_b, f_tool) = random_case
    model = _pinocchio_model(chain)
    data = model.createData()
    n = chain.n_joints
    for _ in range(5):
        q, dq, ddq = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n) * 2, rng.normal(size=n) * 5
        _close(f_id(q, dq, ddq).full().ravel(), pin.rnea(model, data, q, dq, ddq))
        M_pin = pin.crba(model, data, q).copy()
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        M = f_m(q).full()
        _close(M, M_pin)
        assert np.array_equal(M, M.T)
        _close(f_b(q, dq).full().ravel(), pin.nonLinearEffects(model, data, q, dq))
        pin.forwardKinematics(model, data, q)
        _close(f_tool(q).full().ravel(), data.oMi[n].act(np.asarray(chain.tool_origin, float)))
        qs = ca.SX.sym("q", n)
        poses = ca.Function("p", [qs], [ca.vertcat(*[ca.vec(ca.horzcat(R, p)) for R, p in body_poses(chain, qs)])])
        expected = [np.hstack([data.oMi[i + 1].rotation, data.oMi[i + 1].translation[:, None]]).ravel("F")
                    for i in range(n)]
        _close(poses(q).full().ravel(), np.concatenate(expected))


def test_inverse_dynamics_consistent_with_mass_matrix(random_case):
    rng, chain, (f_id, f_m, f_b, _) = random_case
    n = chain.n_joints
    for _ in range(5):
        q, dq, ddq = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n) * 2, rng.normal(size=n) * 5
        lhs = f_id(q, dq, ddq).full().ravel() - f_b(q, dq).full().ravel()
        _close(lhs, f_m(q).full() @ ddq)
        # M is positive definite
        assert np.linalg.eigvalsh(f_m(q).full()).min() > 0


# Planar 2-link arm in the xz-plane, axes [0, -1, 0] (Moberg & Hanssen, E1 complete).
L1, L2, XI1, XI2, M1, M2, J1, J2, G = 0.5, 0.4, 0.22, 0.17, 3.0, 1.5, 0.04, 0.02, 9.81


def _planar_chain() -> Chain:
    def body(m, xi, j):
        # full tensor: only the yy entry (about the rotation axis) may matter
        inertia = np.array([[0.03, 0.004, -0.002], [0.004, j, 0.003], [-0.002, 0.003, 0.05]])
        return Body(mass=m, com=np.array([xi, 0.0, 0.0]), inertia=inertia)

    axis = np.array([0.0, -1.0, 0.0])
    return Chain(
        joints=(
            Joint("j1", "direct", axis, np.zeros(3), body(M1, XI1, J1)),
            Joint("j2", "elastic_gear", axis, np.array([L1, 0.0, 0.0]), body(M2, XI2, J2)),
        ),
        tool_origin=np.array([L2, 0.0, 0.0]),
        gravity=np.array([0.0, 0.0, -G]),
    )


def _planar_mass_matrix(q2):
    m11 = J1 + J2 + M1 * XI1**2 + M2 * (2 * L1 * XI2 * ca.cos(q2) + XI2**2 + L1**2)
    m12 = J2 + M2 * (L1 * XI2 * ca.cos(q2) + XI2**2)
    m22 = J2 + M2 * XI2**2
    return ca.vertcat(ca.horzcat(m11, m12), ca.horzcat(m12, m22))


def test_planar_two_link_analytic():
    chain = _planar_chain()
    f_id, f_m, f_b, f_tool = _functions(chain)
    # Coriolis/centrifugal from Christoffel symbols of the analytic M:
    # c_i = sum_jk 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) dq_j dq_k
    q, dq = ca.SX.sym("q", 2), ca.SX.sym("dq", 2)
    M = _planar_mass_matrix(q[1])
    dM = [ca.jacobian(M[:, k], q) for k in range(2)]  # dM[k][i, l] = dM_ik / dq_l
    c = ca.vertcat(*[
        sum(0.5 * (dM[j][i, k] + dM[k][i, j] - dM[k][j, i]) * dq[j] * dq[k]
            for j in range(2) for k in range(2))
        for i in range(2)
    ])
    f_c = ca.Function("c", [q, dq], [c])
    chain0 = replace(chain, gravity=np.zeros(3))
    f_b0 = _functions(chain0)[2]

    rng = np.random.default_rng(7)
    for _ in range(5):
        qv, dqv, ddqv = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2) * 3, rng.normal(size=2) * 5
        q1, q2 = qv
        Ma = ca.Function("Ma", [q], [M])(qv).full()
        _close(f_m(qv).full(), Ma)
        _close(f_tool(qv).full().ravel(),
               [L1 * np.cos(q1) + L2 * np.cos(q1 + q2), 0.0, L1 * np.sin(q1) + L2 * np.sin(q1 + q2)])
        c_ref = f_c(qv, dqv).full().ravel()
        # sanity of the Christoffel expression against the textbook form, h = -m2 l1 xi2 sin q2
        h = -M2 * L1 * XI2 * np.sin(q2)
        _close(c_ref, [h * (2 * dqv[0] * dqv[1] + dqv[1] ** 2), -h * dqv[0] ** 2])
        _close(f_b0(qv, dqv).full().ravel(), c_ref)
        g = G * np.array([M1 * XI1 * np.cos(q1) + M2 * (L1 * np.cos(q1) + XI2 * np.cos(q1 + q2)),
                          M2 * XI2 * np.cos(q1 + q2)])
        _close(f_b(qv, dqv).full().ravel(), c_ref + g)
        _close(f_id(qv, dqv, ddqv).full().ravel(), Ma @ ddqv + c_ref + g)


# ----------------------------------------------------------------------------- 3-D chains from problem files
@pytest.mark.parametrize("seed", [11, 12])
def test_random_3d_arm_from_problem_file_against_pinocchio(seed):
    """M(q), c(q, v) and g(q) of a 6-axis arm with full inertia tensors, rotated joint frames (rpy_deg
    and rotation matrices), arbitrary axes, a payload and a 2-axis elastic bearing (8 link
    coordinates), built from a problem dict, against Pinocchio built from the same Chain: 1e-9."""
    chain = random_problem(seed, bearing=True).chain
    assert chain.n_joints == 8 and len(chain.spring_groups) == 1
    f_id, f_m, f_b, f_tool = _functions(chain)
    n = chain.n_joints
    qs = ca.SX.sym("q", n)
    f_rot = ca.Function("R", [qs], [tool_rotation(chain, qs)])
    f_g = ca.Function("g", [qs], [bias_torques(chain, qs, ca.SX.zeros(n))])
    model, T = pinocchio_model(chain)
    T = T[:, :n]  # link coordinates only (no motors in a rigid-body check)
    data = model.createData()
    rng = np.random.default_rng(seed)
    tool = pin.SE3(rotation_rpy(*np.radians([5.0, 10.0, -15.0])), np.array([0.1, 0.05, 0.2]))
    for _ in range(5):
        q, v, a = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n) * 2, rng.normal(size=n) * 5
        M_pin, c_pin, g_pin = pinocchio_terms(model, T, q, v)
        g = f_g(q).full().ravel()
        c = f_b(q, v).full().ravel() - g
        assert _relative_error(f_m(q).full(), M_pin) < RTOL
        assert _relative_error(c, c_pin) < RTOL
        assert _relative_error(g, g_pin) < RTOL
        _close(f_id(q, v, a).full().ravel(), pin.rnea(model, data, q, v, a))
        assert np.linalg.eigvalsh(f_m(q).full()).min() > 0
        pin.forwardKinematics(model, data, q)
        pose = data.oMi[n] * tool
        _close(f_tool(q).full().ravel(), pose.translation)
        _close(f_rot(q).full(), pose.rotation)


def test_off_diagonal_inertia_enters_with_its_sign():
    """A single body turning about x with a product of inertia I_xy: the gyroscopic moment about y
    needs the off-diagonal term (tau_y = -I_xy w^2 for w about x, tau = w x (I w)); a test that a
    transposed or dropped off-diagonal would fail. The joint's own torque: I_xx a."""
    Ixy = 0.3
    inertia = np.array([[2.0, Ixy, 0.0], [Ixy, 1.0, 0.0], [0.0, 0.0, 1.5]])
    # two joints: x (driven), then y locked at 0 -> its torque is the reaction moment about y
    chain = Chain(joints=(Joint("jx", "direct", np.array([1.0, 0, 0]), np.zeros(3), Body(0.0, np.zeros(3), np.zeros((3, 3)))),
                          Joint("jy", "direct", np.array([0, 1.0, 0]), np.zeros(3), Body(0.0, np.zeros(3), inertia))),
                  tool_origin=np.zeros(3))
    f_id = _functions(chain)[0]
    w, acc = 3.0, 2.0
    tau = f_id([0.0, 0.0], [w, 0.0], [acc, 0.0]).full().ravel()
    # I w_dot + w x (I w) with w = (w, 0, 0), w_dot = (acc, 0, 0): y component I_xy acc + w * (I w)_z ... = I_xy acc
    # (w x I w)_y = w_z (Iw)_x - w_x (Iw)_z = -w * 0 = 0; (w x I w)_z = w_x (Iw)_y = w^2 I_xy
    assert tau[0] == pytest.approx(2.0 * acc, rel=1e-14)
    assert tau[1] == pytest.approx(Ixy * acc, rel=1e-14)
    chain_z = Chain(joints=(chain.joints[0], replace(chain.joints[1], axis=np.array([0, 0, 1.0]))),
                    tool_origin=np.zeros(3))
    tau_z = _functions(chain_z)[0]([0.0, 0.0], [w, 0.0], [0.0, 0.0]).full().ravel()
    assert tau_z[1] == pytest.approx(Ixy * w**2, rel=1e-14)


@pytest.mark.parametrize("rpy", [(0.3, -0.7, 1.9), (-2.5, 0.2, -0.4), (0.0, np.pi / 2 - 1e-3, 0.5)])
def test_rpy_is_urdf_convention(rpy):
    """URDF rpy = fixed-axis X then Y then Z (R = Rz Ry Rx), checked with SciPy's extrinsic 'xyz'."""
    np.testing.assert_allclose(rotation_rpy(*rpy), Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-15)
