"""The [model] schema for 3-D chains: joint frames, multi-axis bearings, motor-side drive data with
gear ratios, payload, rotor coupling; each checked against an independent formulation, and bad
input named by file and field."""

import copy
from dataclasses import replace

import casadi as ca
import numpy as np
import pytest
from _robots import random_robot

from ffopt.errors import ProblemError
from ffopt.io.problem import problem_from_dict
from ffopt.models.chain import SpringGroup, rotation_rpy

G = 9.81


def _one_axis(ratio: float, **drive) -> dict:
    """A single elastic-gear axis about z carrying an arm in gravity along -y."""
    joint = {"name": "q1", "kind": "elastic_gear", "axis": [0.0, 0.0, 1.0], "mass": 12.0, "com": [0.4, 0.0, 0.0],
             "inertia_diag": [0.1, 0.5, 0.6], "gear_ratio": ratio, **drive}
    return {"name": "one axis", "model": {"gravity": [0.0, -G, 0.0], "outputs": ["q1"], "tool_origin": [0.8, 0, 0],
                                          "joints": [joint]},
            "reference": {"kind": "joint_ptp", "q_start_rad": [0.0], "q_end_rad": [0.5], "duration": 0.5}}


MOTOR_SIDE = dict(stiffness_motor_side=43.0, damping_motor_side=0.005, rotor_inertia=0.0013,
                  viscous_friction_motor_side=0.13 / 160, coulomb_friction_motor_side=0.4)


@pytest.mark.parametrize("ratio", [-105.0, 60.0])
def test_motor_side_data_match_a_motor_side_model(ratio):
    """Motor-side data sheet values with a (signed) gear ratio give the accelerations of the two-mass
    model written in motor coordinates (MSL GearType1: motor, bearing friction, spring-damper on the
    motor side, ideal gear):
        J th'' = tau - fv th' - fc tanh(th' / (|i| eps)) - [c (th - i q) + d (th' - i q')]
        J_l q'' + m g x_c cos q = i [c (th - i q) + d (th' - i q')]
    with ffopt's qm = th / i and u = i tau (arm side = motor side x i^2, Coulomb x |i|)."""
    model = problem_from_dict(_one_axis(ratio, **MOTOR_SIDE)).model
    jt = model.chain.joints[0]
    assert jt.stiffness == pytest.approx(43.0 * ratio**2, rel=1e-15)
    assert jt.motor_inertia == pytest.approx(0.0013 * ratio**2, rel=1e-15)
    assert jt.coulomb_friction == pytest.approx(0.4 * abs(ratio), rel=1e-15)
    c, d, J, fv, fc = (MOTOR_SIDE[k] for k in ("stiffness_motor_side", "damping_motor_side", "rotor_inertia",
                                               "viscous_friction_motor_side", "coulomb_friction_motor_side"))
    J_l, m_xc = 0.6 + 12.0 * 0.4**2, 12.0 * 0.4
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, dq = rng.uniform(-1, 1), rng.uniform(-2, 2)
        th, dth, tau = ratio * (q + rng.uniform(-1e-3, 1e-3)), ratio * (dq + rng.uniform(-0.1, 0.1)), rng.uniform(-5, 5)
        spring = c * (th - ratio * q) + d * (dth - ratio * dq)
        ddth = (tau - fv * dth - fc * np.tanh(dth / (abs(ratio) * 1e-3)) - spring) / J
        ddq = (ratio * spring - m_xc * G * np.cos(q)) / J_l
        a = np.array(model.forward_dynamics([q, th / ratio], [dq, dth / ratio], [ratio * tau])).ravel()
        np.testing.assert_allclose([a[0], ratio * a[1]], [ddq, ddth], rtol=1e-9)


def test_motor_side_and_arm_side_give_the_same_chain():
    ratio = -105.0
    arm = {"stiffness": 43.0 * ratio**2, "damping": 0.005 * ratio**2, "motor_inertia": 0.0013 * ratio**2,
           "viscous_friction": 0.13 / 160 * ratio**2, "coulomb_friction": 0.4 * abs(ratio)}
    a = problem_from_dict(_one_axis(ratio, **MOTOR_SIDE)).chain.joints[0]
    b = problem_from_dict(_one_axis(ratio, **arm)).chain.joints[0]
    for key in arm:
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-14)


def test_bearing_spring_is_the_coupled_matrix():
    """A 2-axis elastic bearing adds exactly tau = -K q_b - D q_b' on its two rows (nothing else), K
    and D full matrices; its axes are successive revolute joints named bearing_1, bearing_2."""
    problem = problem_from_dict(random_robot(np.random.default_rng(3), bearing=True))
    chain, model = problem.chain, problem.model
    names = [j.name for j in chain.joints]
    b = [names.index("bearing_1"), names.index("bearing_2")]
    assert b == [3, 4] and model.layout.passive == (3, 4)
    assert chain.joints[3].body.mass == 0.0 and chain.joints[4].body.mass == 4.0
    no_spring = model.variant(replace(chain, spring_groups=(SpringGroup("bearing", (3, 4), np.zeros((2, 2)),
                                                                        np.zeros((2, 2))),)))
    rng = np.random.default_rng(1)
    K = np.array([[4.0e4, 6.0e3], [6.0e3, 2.5e4]])
    D = np.array([[40.0, 5.0], [5.0, 30.0]])
    L = model.layout
    for _ in range(3):
        q, v, a, u = rng.normal(size=L.nq), rng.normal(size=L.nq), rng.normal(size=L.nq), rng.normal(size=L.n_u)
        diff = np.array(model.equations_of_motion(q, v, a, u) - no_spring.equations_of_motion(q, v, a, u)).ravel()
        expected = np.zeros(L.nq)
        expected[b] = K @ q[b] + D @ v[b]
        np.testing.assert_allclose(diff, expected, rtol=1e-12, atol=1e-9)


def test_rpy_deg_and_rotation_matrix_are_the_same_frame():
    d = random_robot(np.random.default_rng(4))
    j = d["model"]["joints"][1]
    rpy = j["rpy_deg"]
    d2 = copy.deepcopy(d)
    del d2["model"]["joints"][1]["rpy_deg"]
    d2["model"]["joints"][1]["rotation"] = rotation_rpy(*np.radians(rpy)).tolist()
    m1, m2 = problem_from_dict(d).model, problem_from_dict(d2).model
    q = np.random.default_rng(0).normal(size=m1.layout.n_link)
    np.testing.assert_allclose(np.array(m1.tool_position(q)), np.array(m2.tool_position(q)), atol=1e-14)


def test_payload_is_scaled_not_the_last_body():
    chain = problem_from_dict(random_robot(np.random.default_rng(5))).chain
    scaled = chain.with_payload_scale(2.0)
    assert scaled.payload.mass == 2 * chain.payload.mass
    assert scaled.joints[-1].body.mass == chain.joints[-1].body.mass
    # the payload's mass moves the gravity torque of the last joints
    f = [ca.Function("g", [m.q], [m.equations_of_motion(m.q, 0 * m.q, 0 * m.q, np.zeros(m.layout.n_u))])
         for m in (problem_from_dict(random_robot(np.random.default_rng(5))).model.variant(c) for c in (chain, scaled))]
    q = np.zeros(f[0].size1_in(0))
    assert not np.allclose(np.array(f[0](q)), np.array(f[1](q)))


def _fails(mutate, field, match=None):
    d = random_robot(np.random.default_rng(7), bearing=True)
    mutate(d["model"])
    with pytest.raises(ProblemError) as err:
        problem_from_dict(d, source="arm.toml")
    assert f"arm.toml: {field}" in str(err.value)
    if match:
        assert match in str(err.value)


J1, BEARING = 0, 3  # indices in model.joints of the dict (the bearing is the 4th entry)


@pytest.mark.parametrize("mutate, field, match", [
    (lambda m: m["joints"][J1].update(axes=[[1, 0, 0], [0, 1, 0]]), "model.joints[1].axes", "only a passive joint"),
    (lambda m: m["joints"][BEARING].update(axis=[1, 0, 0]), "model.joints[4].axes", "either axis or axes"),
    (lambda m: m["joints"][BEARING].update(axes=[[1, 0, 0], [2, 0, 0]]), "model.joints[4].axes", "independent"),
    (lambda m: m["joints"][BEARING].update(stiffness_matrix=[[1e4, 1e3], [0.0, 1e4]]),
     "model.joints[4].stiffness_matrix", "symmetric"),
    (lambda m: m["joints"][BEARING].update(stiffness_matrix=[[1e4, 2e4], [2e4, 1e4]]),
     "model.joints[4].stiffness_matrix", "positive definite"),
    (lambda m: m["joints"][BEARING].update(damping_matrix=[[1.0]]), "model.joints[4].damping_matrix", "2x2"),
    (lambda m: m["joints"][BEARING].pop("stiffness_matrix"), "model.joints[4].stiffness_matrix", "missing"),
    (lambda m: m["joints"][BEARING].update(stiffness=1e4), "model.joints[4].stiffness", "stiffness_matrix"),
    (lambda m: m["joints"][J1].pop("gear_ratio"), "model.joints[1].stiffness_motor_side", "need gear_ratio"),
    (lambda m: m["joints"][J1].update(stiffness=1e5), "model.joints[1].stiffness_motor_side", "not both"),
    (lambda m: m["joints"][J1].update(gear_ratio=0.0), "model.joints[1].gear_ratio", "non-zero"),
    (lambda m: m["joints"][2].update(rotation=[[1, 0, 0], [0, 1, 0.1], [0, 0, 1]]), "model.joints[3].rotation",
     "proper rotation"),
    (lambda m: m["joints"][2].update(rotation=[[-1, 0, 0], [0, 1, 0], [0, 0, 1]]), "model.joints[3].rotation",
     "det = +1"),
    (lambda m: m["joints"][1].update(rotation=np.eye(3).tolist()), "model.joints[2].rotation", "not both"),
    (lambda m: m["joints"][J1].update(gear_ration=3.0), "model.joints[1].gear_ration", "did you mean 'gear_ratio'"),
    (lambda m: m.update(rotor_coupling="gyro"), "model.rotor_coupling", "reduced, full"),
    (lambda m: m["payload"].update(mas=1.0), "model.payload.mas", "did you mean 'mass'"),
    (lambda m: m["joints"][BEARING].update(gear_ratio=10.0), "model.joints[4].gear_ratio", "no motor"),
])
def test_bad_model_fields_are_named(mutate, field, match):
    _fails(mutate, field, match)


def test_full_coupling_needs_every_gear_ratio():
    d = random_robot(np.random.default_rng(8), coupling="full")
    j = d["model"]["joints"][4]
    ratio = j.pop("gear_ratio")
    j["motor_inertia"] = j.pop("rotor_inertia") * ratio**2
    with pytest.raises(ProblemError, match=r"model.joints\[5\].gear_ratio: rotor_coupling = \"full\" needs"):
        problem_from_dict(d)
