"""ffopt.control: gain rules (closed forms), the state-feedback loop, Tomei's static compensation."""

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.control import design, from_trajectory, rigid_model, static_compensation
from ffopt.control import mismatch as mm
from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.chain import Body, Chain, Joint
from ffopt.models.flexible import FlexibleModel
from ffopt.sim.plant import MotorPD, StateFeedback, simulate

ROOT = Path(__file__).resolve().parents[1]
Y_AXIS = np.array([0.0, 1.0, 0.0])


@pytest.fixture(scope="module")
def e12():
    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    result = ffopt.plan(problem, verify=False)
    tr = result.trajectory
    L = problem.model.layout
    q0 = static_equilibrium(problem.model, problem.reference.evaluate(tr.t[:1])[0], tr.q[0, :L.n_link])
    return problem, result, q0


def one_joint_model(J=2.0):
    """A direct-drive joint with constant inertia J (J q'' = u), tool 1 m out; output z = -sin q."""
    joint = Joint("q1", "direct", Y_AXIS, np.zeros(3), Body(0.0, np.zeros(3), np.zeros((3, 3))))
    return FlexibleModel(Chain((joint,), np.array([1.0, 0, 0]), constant_inertia=np.array([[J]])), ("z",))


def test_pd_rule_is_pole_placement_on_the_motor_inertia(e12):
    problem, _, q0 = e12
    g = design("pd", problem.model, q0, bandwidth_hz=5.0, damping_ratio=1.0)
    w = 2 * np.pi * 5.0
    # closed form Kp = J w^2, Kd = 2 zeta J w with E12's motor inertia J = 100 kg m^2 (problems/e12_line.toml)
    np.testing.assert_allclose(g.kp, [100.0 * w**2] * 2, rtol=1e-12)
    np.testing.assert_allclose(g.kd, [2 * 100.0 * w] * 2, rtol=1e-12)
    nq = problem.model.layout.nq
    assert g.K.shape == (2, 2 * nq) and np.count_nonzero(g.K) == 4  # motor columns only
    np.testing.assert_allclose(g.K[0, [3, nq + 3]], [100.0 * w**2, 200.0 * w])  # qm_q1 is coordinate 3


@pytest.mark.parametrize("zeta", [1.0, 1.5])
def test_lqr_rule_reduces_to_the_pd_rule_on_a_rigid_motor(zeta):
    # J s^2 = u with Q = diag(1, (4 zeta^2 - 2)/w^2), R = 1/Kp^2 has the closed-form LQR gain
    # [sqrt(q1/r), sqrt(q2/r + 2 J sqrt(q1/r))] = [J w^2, 2 zeta J w]: the PD rule (tool weight 0).
    J, f = 2.0, 3.0
    w = 2 * np.pi * f
    g = design("pd+state", one_joint_model(J), np.zeros(1), f, zeta, tool_weight=0.0)
    # rtol: the Riccati solution against the closed form, roundoff (measured 1.9e-14 on 2026-11-27)
    np.testing.assert_allclose(g.K, [[J * w**2, 2 * zeta * J * w]], rtol=1e-12)
    # with the tool term the position gain grows: the tool is the joint angle times 1 m (reach 1 m)
    stiffer = design("pd+state", one_joint_model(J), np.zeros(1), f, zeta, tool_weight=100.0)
    np.testing.assert_allclose(stiffer.K[0, 0], np.sqrt(101.0) * J * w**2, rtol=1e-12)


def test_lqr_state_feedback_stabilises_e12_and_is_stored(e12):
    problem, _, q0 = e12
    g = design("pd+state", problem.model, q0, 5.0, 1.0)
    poles = np.array(g.details["closed_loop_poles"])
    assert poles[:, 0].max() < 0  # stable on the linearisation
    assert g.details["least_damping"] > g.details["pd_least_damping"]  # the link modes are damped better
    assert np.abs(g.K[:, :3]).max() > 0  # link-side columns (q1, q2, q3) are used
    d = g.to_dict()
    assert d["controller"] == "pd+state" and np.array(d["K"]).shape == (2, 10) and "LQR" in d["rule"]
    assert "q3" in g.text(problem.model) and "Kp" in g.text(problem.model)


def test_state_feedback_form_of_the_pd_gives_the_pd_result(e12):
    # The same loop through the full-state integrator (K with motor columns only) and the PD one.
    problem, result, q0 = e12
    tr, model = result.trajectory, problem.model
    g = design("pd", model, q0, 5.0, 1.0)
    pd = MotorPD(g.kp, g.kd, tr.qm, tr.dqm)
    payload = model.variant(mm.scaled_last_body(model.chain, 1.5))  # a plant the loop has to work on
    a = simulate(payload, tr.t, tr.u, q0, pd=pd)
    b = simulate(payload, tr.t, tr.u, q0, pd=pd.state_feedback(model.layout))
    # regression values measured on 2026-11-27: the two loops 1.8e-8 m apart (CVODES at rtol 1e-9, another step
    # sequence), inputs 5.7e-8 of the peak; the tool misses the plan by 0.48 m on this plant; bounds ~2x
    assert np.abs(a.tool - b.tool).max() < 4e-8  # m
    assert np.abs(a.tool - tr.tool).max() > 0.2
    np.testing.assert_allclose(a.u_applied, b.u_applied, atol=1.2e-7 * np.abs(a.u_applied).max())


def test_static_compensation_is_the_rest_pose_and_holding_torque(e12):
    problem, result, _ = e12
    tr, model = result.trajectory, problem.model
    ff = static_compensation(model, problem.reference, tr.t, tr.q[0, :3])
    rest = (tr.t < 0.02) | (tr.t > 0.32 + 0.3)  # before the motion; and once the plan's rest vibration died out
    # regression values measured on 2026-11-27: the static pose equals the BDF's rest to 1.0e-13 rad (Newton
    # tolerances: bound 1e-12), the holding torque to 5.0e-8 relative; speeds at rest exactly 0
    np.testing.assert_allclose(ff.x_ref[tr.t < 0.02, :5], tr.q[tr.t < 0.02], atol=1e-12)
    np.testing.assert_allclose(ff.u[tr.t < 0.02], tr.u[tr.t < 0.02], rtol=1e-7)
    assert np.abs(ff.x_ref[rest, 5:]).max() < 1e-9  # no speed at rest
    # the rate from the implicit function theorem against central differences of the angles (O(h^2)): measured
    # 1.2e-4 of the largest rate on 2026-11-27, bound ~2x
    fd = np.gradient(ff.x_ref[:, :5], tr.t, axis=0)[1:-1]
    assert np.abs(fd - ff.x_ref[1:-1, 5:]).max() < 2.5e-4 * np.abs(ff.x_ref[:, 5:]).max()


def test_static_compensation_without_gravity_is_the_rigid_path_with_no_torque():
    # E1 complete has g = 0: at rest the passive joint is undeflected, so the static configuration is
    # the rigid inverse kinematics and the holding torque is zero.
    problem = ffopt.load_problem(ROOT / "problems" / "e1_complete.toml")
    t = np.linspace(0.0, problem.reference.t_end, 61)
    guess = problem.reference_spec.joint_guess
    ff = static_compensation(problem.model, problem.reference, t, guess)
    rig = rigid_model(problem.model, problem.reference, t, guess)
    assert np.abs(ff.u).max() < 1e-12  # g = 0: exactly 0 (measured)
    np.testing.assert_allclose(ff.x_ref, rig.x_ref, atol=1e-12)  # two Newton solves: measured 4.3e-13 on 2026-11-27


def test_tool_payload_adds_a_point_mass_at_the_tool():
    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    chain = mm.tool_payload(problem.chain, 0.1)
    # problems/e12_line.toml (Moberg & Hanssen, Table 1): bodies of 100 + 100 + 200 kg, gear stiffness 1e5 N m/rad;
    # the payload is 10 % of the moving mass
    assert mm.moving_mass(problem.chain) == 400.0
    assert chain.payload.mass == pytest.approx(40.0) and np.allclose(chain.payload.com, problem.chain.tool_origin)
    assert mm.moving_mass(chain) == pytest.approx(440.0)
    soft = mm.scaled_stiffness(problem.chain, 0.8)
    assert [j.stiffness for j in soft.joints] == [0.8e5, 0.8e5, 0.8e5]


def test_feedforward_from_a_plan_holds_its_states(e12):
    problem, result, _ = e12
    tr = result.trajectory
    ff = from_trajectory(problem.model, tr.t, tr.u, tr.q, tr.v)
    qm, dqm = ff.motor_reference(problem.model)
    np.testing.assert_array_equal(qm, tr.qm)
    np.testing.assert_array_equal(dqm, tr.dqm)
    assert isinstance(StateFeedback(np.zeros((2, 10)), ff.x_ref).state_feedback(None), StateFeedback)
