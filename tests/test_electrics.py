"""DC-motor electrics (Jankowski & Van Brussel, eq. 3) against independent formulations.

- The planned voltage of one elastic link (Spong's model, undamped gear, gravity) against its
  closed form: V = L u' / (i C_t) + R u / (i C_t) + C_v i qm', with u = J qm'' + F qm' + G and
  qm = q + G / K written out by hand (G''' needs the fifth derivative of the path).
- ffopt's plant with the currents as states against a hand-written two-mass + RL-circuit model
  integrated by SciPy's solve_ivp, driven by the same voltage table.
- Bad combinations fail in validation with the field named.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ffopt.analysis.elastic_link import ElasticLink
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.errors import ProblemError
from ffopt.io.problem import problem_from_dict
from ffopt.models.chain import MotorElectrics
from ffopt.models.flexible import FlexibleModel
from ffopt.sim.plant import simulate

RATIO, L, R, CT, CV = 50.0, 3e-3, 0.8, 0.06, 0.06


def electric_link(**kw) -> tuple[ElasticLink, FlexibleModel]:
    link = ElasticLink(time_law="poly11", **kw)
    chain = link.chain()
    joint = replace(chain.joints[0], gear_ratio=RATIO, electrics=MotorElectrics(L, R, CT, CV))
    return link, FlexibleModel(replace(chain, joints=(joint,)), ("z",), "electric link")


def closed_form_voltage(link: ElasticLink, t: np.ndarray):
    """(V, i, qm) of the undamped elastic link with an RL armature, all derivatives by hand."""
    q = [link.joint_path(t, k) for k in range(6)]
    mgc = link.mass * link.gravity * link.com
    s, c = np.sin(q[0]), np.cos(q[0])
    g = [mgc * s, mgc * c * q[1], mgc * (c * q[2] - s * q[1] ** 2),
         mgc * (c * q[3] - 3 * s * q[1] * q[2] - c * q[1] ** 3)]
    G = [link.inertia * q[k + 2] + g[k] for k in range(4)]  # gear torque and its derivatives
    K = link.stiffness
    qm = [q[k] + G[k] / K for k in range(4)]
    J, F = link.motor_inertia, link.viscous_friction
    u, du = J * qm[2] + F * qm[1] + G[0], J * qm[3] + F * qm[2] + G[1]
    i, di = u / (RATIO * CT), du / (RATIO * CT)
    return L * di + R * i + CV * RATIO * qm[1], i, qm[0]


# (form, h, bound inside the motion, bound near the junctions) relative to the peak voltage. Measured
# (BDF-4): I1 at 0.5 ms 3.9e-7 / 3.2e-4, I2 5.9e-6 / 1.6e-3; I3 at 2 ms 6.5e-3 / 1.3e-2 (the voltage
# raises I3's index to 4: at 0.5 ms roundoff alone reaches 16 % of the peak in the rest before the
# motion). poly11's sixth derivative jumps at the junctions; the voltage needs the fifth.
@pytest.mark.parametrize("form, h, inside, near", [("I1", 5e-4, 5e-6, 2e-3), ("I2", 5e-4, 5e-5, 5e-3),
                                                   ("I3", 2e-3, 2e-2, 5e-2)])
def test_planned_voltage_matches_closed_form_of_one_elastic_link(form, h, inside, near):
    link, model = electric_link()
    traj = solve_inverse_bdf(model, link.reference(model), order=4, step=h, form=form)
    V, i, qm = closed_form_voltage(link, traj.t)
    assert traj.input_unit == "V" and traj.electric
    peak = np.abs(V).max()
    interior = np.min([np.abs(traj.t - tj) for tj in link.junctions], axis=0) > 0.02
    err = np.abs(traj.u[:, 0] - V)
    assert err[interior].max() < inside * peak
    assert err.max() < near * peak
    assert np.abs(traj.current[:, 0] - i).max() < 3e-3 * np.abs(i).max()  # I3 at 2 ms: 1.1e-3
    assert np.abs(traj.torques[:, 0] - RATIO * CT * traj.current[:, 0]).max() < 1e-12 * np.abs(traj.torques).max()
    assert np.abs(traj.qm[:, 0] - qm).max() < 1e-5


def two_mass_rl_rhs(link: ElasticLink, t_grid, V_grid):
    """x = [q, qm, q', qm', i]: link, motor (arm side) and armature written out by hand."""
    I, mgc = link.inertia, link.mass * link.gravity * link.com
    K, J, F = link.stiffness, link.motor_inertia, link.viscous_friction

    def rhs(t, x):
        q, qm, dq, dqm, i = x
        V = np.interp(t, t_grid, V_grid)
        tau_g = K * (qm - q)
        return [dq, dqm, (tau_g - mgc * np.sin(q)) / I, (RATIO * CT * i - F * dqm - tau_g) / J,
                (V - R * i - CV * RATIO * dqm) / L]
    return rhs


def test_plant_with_currents_matches_hand_written_two_mass_rl_model():
    from scipy.integrate import solve_ivp

    link, model = electric_link()
    t = np.linspace(0.0, link.t_end, 401)
    V = closed_form_voltage(link, t)[0][:, None]
    q0 = np.array([link.q_start, link.q_start + link.gear_torque(0.0) / link.stiffness])
    sim = simulate(model, t, V, q0)
    i0 = (V[0, 0]) / R
    assert sim.z[0, 0] == pytest.approx(i0, rel=1e-12)  # default start: the steady current
    ref = solve_ivp(two_mass_rl_rhs(link, t, V[:, 0]), (0.0, t[-1]), [*q0, 0.0, 0.0, i0], t_eval=t,
                    method="LSODA", rtol=1e-11, atol=1e-12, max_step=1e-3)
    assert ref.success
    assert np.abs(sim.q - ref.y[:2].T).max() < 1e-7
    assert np.abs(sim.z[:, 0] - ref.y[4]).max() < 1e-6 * np.abs(ref.y[4]).max()
    # the closed-form voltage tracks the path: the simulated link follows q(t) closely
    assert np.abs(sim.q[:, 0] - link.joint_path(t, 0)).max() < 1e-4


# ----------------------------------------------------------------------------- bad input
def electric_problem(**joint_changes) -> dict:
    joint = {"name": "q1", "kind": "elastic_gear", "axis": [0, 0, 1], "mass": 2.0, "com": [0.25, 0, 0],
             "stiffness": 500.0, "rotor_inertia": 2e-5, "gear_ratio": 50.0,
             "electrics": {"inductance": 1e-3, "resistance": 1.0, "torque_constant": 0.05, "back_emf_constant": 0.05}}
    joint.update(joint_changes)
    return {"name": "e", "model": {"outputs": ["q1"], "tool_origin": [0.5, 0, 0], "joints": [joint]},
            "reference": {"kind": "joint_ptp", "q_start_rad": [0.0], "q_end_rad": [1.0], "duration": 0.5}}


@pytest.mark.parametrize("change, field, words", [
    ({"kind": "passive", "rotor_inertia": None, "gear_ratio": None}, "model.joints[1].electrics", "passive joint"),
    ({"gear_ratio": None, "rotor_inertia": None, "motor_inertia": 0.05}, "model.joints[1].gear_ratio",
     "gear ratio"),
    ({"electrics": {"inductance": 1e-3, "resistance": 1.0, "torque_constant": 0.05}},
     "model.joints[1].electrics.back_emf_constant", "missing required key"),
    ({"electrics": {"inductance": 0.0, "resistance": 1.0, "torque_constant": 0.05, "back_emf_constant": 0.05}},
     "model.joints[1].electrics.inductance", "must be > 0"),
    ({"electrics": {"inductance": 1e-3, "resistence": 1.0, "torque_constant": 0.05, "back_emf_constant": 0.05}},
     "model.joints[1].electrics.resistence", "did you mean 'resistance'"),
])
def test_bad_electrics_name_the_field(change, field, words):
    d = electric_problem(**{k: v for k, v in change.items()})
    d["model"]["joints"][0] = {k: v for k, v in d["model"]["joints"][0].items() if v is not None}
    if d["model"]["joints"][0]["kind"] == "passive":
        d["model"]["outputs"] = ["x"]
    with pytest.raises(ProblemError) as err:
        problem_from_dict(d, "e.toml")
    assert f"e.toml: {field}" in str(err.value) and words in str(err.value)


def test_electrics_on_some_motors_only_is_an_error():
    d = electric_problem()
    second = {k: v for k, v in d["model"]["joints"][0].items() if k != "electrics"}
    d["model"]["joints"].append({**second, "name": "q2", "origin": [0.5, 0, 0]})
    d["model"]["outputs"] = ["q1", "q2"]
    d["reference"].update(q_start_rad=[0.0, 0.0], q_end_rad=[1.0, 0.5])
    with pytest.raises(ProblemError, match=r"model.joints: electrics on q1 but not on q2"):
        problem_from_dict(d, "e.toml")


def test_voltage_bound_needs_electrics_and_torque_rate_bound_is_refused_with_them():
    d = electric_problem()
    d["nlp"] = {"torque_rate_max": [100.0]}
    with pytest.raises(ProblemError, match=r"nlp.torque_rate_max: not available with DC-motor electrics"):
        problem_from_dict(d, "e.toml")
    d = electric_problem(electrics=None)
    d["model"]["joints"][0].pop("electrics")
    d["nlp"] = {"voltage_max": [24.0]}
    with pytest.raises(ProblemError, match=r"nlp.voltage_max: the drives have no electrics"):
        problem_from_dict(d, "e.toml")
