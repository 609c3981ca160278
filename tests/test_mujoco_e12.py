"""E12 re-simulated in MuJoCo: an independent second simulator for ffopt's verification.

The MJCF model is written here from the numbers of problems/e12_line.toml (read with tomllib, not with
ffopt's model classes): the three links as bodies with hinges about +y (MuJoCo's rotation about +y turns
the body x axis to (cos q, 0, -sin q), ffopt's convention, so the joint angles are the same numbers), the
passive joint q3 as a hinge spring-damper (springref 0), and each motor as its own rotor hinge on the world
body with the arm-side inertia 100 kg m^2 about y, coupled to its link joint by a fixed tendon
(coef motor +1, link -1) with the gear's stiffness and damping (springlength 0): rotors as hinges coupled
by tendon springs. The rotors sit on the world body because in ffopt's reduced (Spong) model the motor
inertia couples to the arm only through the gear: on a link carrier their inertia would add gyroscopic
and carrier terms the model does not have. The planar inertias give only Iyy; Ixx = Izz = Iyy here (a
valid triangle; all angular velocities are along y, so they do not enter).

The start and hold poses are MuJoCo's own static equilibria at the path's end points (solved here), the
PD gains come from the problem's bandwidth and damping ratio, and only the plan's tables (u, qm, dqm) and
its reference path come from ffopt. The motor PD u += kp (qm_ref - qm) + kd (dqm_ref - dqm) is computed in
Python at every MuJoCo step (RK4); the planned torque is applied as its mean over each step (the linear
interpolation at the step's midpoint). After the table the arm is held for ffopt's settle window by the
static torque and the PD on the static motor angles.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from helpers import sample_at
from scipy.optimize import fsolve

import ffopt

mujoco = pytest.importorskip("mujoco")

PROBLEM = Path(__file__).resolve().parent.parent / "problems" / "e12_line.toml"
DT = 2.5e-5  # s: MuJoCo step (40 per 1 ms row of the plan); the convergence check halves 2 * DT to this
CASE = "feedforward_pd"


def _v(xs) -> str:
    return " ".join(repr(float(x)) for x in xs)


def e12_mjcf(p: dict) -> str:
    """MJCF of the problem dict p (the parsed TOML): a chain of hinges about y plus rotors on the world."""
    m = p["model"]
    chain, close, rotors, tendons = [], [], [], []
    for j in m["joints"]:
        n, iyy = j["name"], float(j["inertia_diag"][1])
        assert list(j["axis"]) == [0.0, 1.0, 0.0]  # this model is written for rotations about +y only
        spring = (f' stiffness="{j["stiffness"]!r}" damping="{j["damping"]!r}" springref="0"'
                  if j["kind"] == "passive" else "")
        chain.append(f'<body name="{n}" pos="{_v(j["origin"])}">'
                     f'<joint name="{n}" type="hinge" axis="0 1 0"{spring}/>'
                     f'<inertial pos="{_v(j["com"])}" mass="{j["mass"]!r}" diaginertia="{_v([iyy, iyy, iyy])}"/>')
        close.append("</body>")
        if j["kind"] == "elastic_gear":
            J = float(j["motor_inertia"])
            rotors.append(f'<body name="rotor_{n}"><joint name="qm_{n}" type="hinge" axis="0 1 0"/>'
                          f'<inertial pos="0 0 0" mass="1" diaginertia="{_v([J, J, J])}"/></body>')
            tendons.append(f'<fixed name="gear_{n}" stiffness="{j["stiffness"]!r}" damping="{j["damping"]!r}" '
                           f'springlength="0"><joint joint="qm_{n}" coef="1"/><joint joint="{n}" coef="-1"/></fixed>')
    chain.append(f'<site name="tool" pos="{_v(m["tool_origin"])}"/>')
    return (f'<mujoco model="e12"><option gravity="{_v(m["gravity"])}" integrator="RK4" timestep="{DT!r}"/>'
            f'<worldbody>{"".join(chain)}{"".join(reversed(close))}{"".join(rotors)}</worldbody>'
            f'<tendon>{"".join(tendons)}</tendon></mujoco>')


class E12:
    """The MuJoCo model with its joint indices: links q1..q3 and the rotors of q1, q2 (qpos = qvel order)."""

    def __init__(self, p: dict):
        self.p = p
        self.model = mujoco.MjModel.from_xml_string(e12_mjcf(p))
        names = [j["name"] for j in p["model"]["joints"]]
        actuated = [j["name"] for j in p["model"]["joints"] if j["kind"] == "elastic_gear"]
        adr = lambda name: int(self.model.jnt_qposadr[self.model.joint(name).id])  # noqa: E731
        # ffopt's coordinate order [q1, q2, q3, qm_q1, qm_q2]
        self.order = np.array([adr(n) for n in names] + [adr(f"qm_{n}") for n in actuated])
        self.motor = self.order[len(names):]
        self.site = self.model.site("tool").id
        self.data = mujoco.MjData(self.model)

    def tool(self, q: np.ndarray) -> np.ndarray:
        """Tool point (x, z) for coordinates q in ffopt's order, rows (n, 5) -> (n, 2)."""
        out = np.empty((len(q), 2))
        d = self.data
        for i, qi in enumerate(q):
            d.qpos[self.order] = qi
            mujoco.mj_kinematics(self.model, d)
            out[i] = d.site_xpos[self.site][[0, 2]]
        return out

    def accelerations(self, q: np.ndarray, u: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
        """MuJoCo's accelerations (ffopt's order) at q, v (default 0) with motor torques u."""
        d = self.data
        d.qpos[self.order] = q
        d.qvel[:] = 0.0
        if v is not None:
            d.qvel[self.order] = v
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[self.motor] = u
        mujoco.mj_forward(self.model, d)
        return d.qacc[self.order].copy()

    def static_pose(self, y: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rest with the tool at y: (q (5,), motor torques (2,)) with all accelerations 0 (gravity held by the
        gears' static torque, the passive joint by its spring), solved on MuJoCo's own model."""
        def residual(x):
            q, u = x[:5], x[5:]
            return np.concatenate([self.accelerations(q, u), self.tool(q[None])[0] - y])
        x0 = np.concatenate([guess[:3], guess[:2], np.zeros(2)])
        x, info, ok, msg = fsolve(residual, x0, full_output=True, xtol=1e-13)
        assert ok == 1, msg
        assert np.abs(residual(x)).max() < 1e-9
        return x[:5], x[5:]

    def run(self, t, u, qm_ref, dqm_ref, kp, kd, q0, hold_u, hold_qm, t_settle_end, dt=DT):
        """Step from rest at q0 through the table (t, u, qm_ref, dqm_ref; linear between rows), then hold
        (hold_u + PD on hold_qm, zero speed reference) until t_settle_end. Returns the step times and the
        coordinates there (ffopt's order)."""
        m, d = self.model, mujoco.MjData(self.model)
        m.opt.timestep = dt
        d.qpos[self.order] = q0
        n_move = int(round(t[-1] / dt))
        assert abs(n_move * dt - t[-1]) < 1e-9  # the table's end falls on a step
        n = n_move + int(np.ceil((t_settle_end - t[-1]) / dt - 1e-9))
        ts = np.arange(n) * dt
        # feedforward: its mean over each step (the linear interpolation at the midpoint); PD reference at
        # the step's start, where the state is read (the feedback is held over the step: an O(dt) error)
        U = np.column_stack([np.interp(ts[:n_move] + dt / 2, t, c) for c in u.T])
        QR = np.column_stack([np.interp(ts[:n_move], t, c) for c in qm_ref.T])
        DQR = np.column_stack([np.interp(ts[:n_move], t, c) for c in dqm_ref.T])
        U, QR = np.vstack([U, np.tile(hold_u, (n - n_move, 1))]), np.vstack([QR, np.tile(hold_qm, (n - n_move, 1))])
        DQR = np.vstack([DQR, np.zeros((n - n_move, len(kp)))])
        Q = np.empty((n + 1, m.nq))
        qpos, qvel, f, motor = d.qpos, d.qvel, d.qfrc_applied, self.motor
        for k in range(n):
            Q[k] = qpos
            f[motor] = U[k] + kp * (QR[k] - qpos[motor]) + kd * (DQR[k] - qvel[motor])
            mujoco.mj_step(m, d)
        Q[n] = qpos
        return np.append(ts, n * dt), Q[:, self.order]


@pytest.fixture(scope="module")
def problem() -> dict:
    with open(PROBLEM, "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def e12(problem) -> E12:
    return E12(problem)


@pytest.fixture(scope="module")
def rest_plan():
    """The shipped plan: rest-to-rest time law (solver.end_at_rest, default on)."""
    return ffopt.plan(str(PROBLEM), verify=True)


@pytest.fixture(scope="module")
def exact_plan():
    """The exact-tracking plan with the shipped poly11 time law, which ends with its zero dynamics moving."""
    return ffopt.plan(ffopt.load_problem(str(PROBLEM)).with_values({"solver.end_at_rest": False}), verify=True)


def gains(problem) -> tuple[np.ndarray, np.ndarray]:
    """Motor PD gains from the problem's numbers: a decoupled J s^2 + kd s + kp loop on the motor inertia
    with the stated bandwidth and damping ratio (kp = J w^2, kd = 2 zeta J w)."""
    w = 2 * np.pi * problem["verification"]["pd_bandwidth_hz"]
    zeta = problem["verification"]["pd_damping_ratio"]
    J = np.array([j["motor_inertia"] for j in problem["model"]["joints"] if j["kind"] == "elastic_gear"])
    return J * w**2, 2 * zeta * J * w


def mujoco_errors(e12: E12, problem, result, dt=DT) -> dict:
    """Re-simulate one plan's feedforward_pd case in MuJoCo: tool errors (mm) on ffopt's grids, during the
    table (against the path) and in the settle window (against the path's end point), and the coordinates."""
    tr, ver = result.trajectory, result.verification
    kp, kd = gains(problem)
    y_ref = np.asarray(tr.y_ref)
    q0, _ = e12.static_pose(y_ref[0], tr.q[0])
    q_end, u_hold = e12.static_pose(y_ref[-1], tr.q[-1])
    settle = ver.settle_simulations[CASE]
    ts, Q = e12.run(tr.t, tr.u, tr.qm, tr.dqm, kp, kd, q0, u_hold, q_end[3:], settle.t[-1], dt)
    q_move, q_settle = sample_at(ts, Q, tr.t), sample_at(ts, Q, settle.t)
    return {"move_mm": 1000 * np.linalg.norm(e12.tool(q_move) - y_ref, axis=1),
            "settle_mm": 1000 * np.linalg.norm(e12.tool(q_settle) - y_ref[-1], axis=1),
            "q_move": q_move, "q_settle": q_settle}


@pytest.fixture(scope="module")
def rest_runs(e12, problem, rest_plan):
    """The shipped plan in MuJoCo at DT and at 2 DT (the convergence check)."""
    return {dt: mujoco_errors(e12, problem, rest_plan, dt) for dt in (DT, 2 * DT)}


def test_mujoco_statics_and_gains_match_ffopt(e12, problem, rest_plan):
    tr, ver = rest_plan.trajectory, rest_plan.verification
    kp, kd = gains(problem)
    # the PD gains the verification used are the problem's 5 Hz, zeta 1 on the 100 kg m^2 rotors
    assert np.allclose(ver.pd_gains["kp"], kp, rtol=1e-12) and np.allclose(ver.pd_gains["kd"], kd, rtol=1e-12)
    ref = problem["reference"]
    # the plan's path runs between the problem's end points (mm)
    assert np.allclose(1000 * tr.y_ref[0], ref["start_mm"], atol=1e-9)
    assert np.allclose(1000 * tr.y_ref[-1], ref["end_mm"], atol=1e-9)
    # the tool site follows the problem's kinematics: x = l1 c1 + l2 c12 + l3 c123, z = -(l1 s1 + l2 s12 + l3 s123)
    q = np.array([[0.3, -0.7, 1.1, 0.0, 0.0]])
    l1, l2, l3 = (problem["model"]["joints"][1]["origin"][0], problem["model"]["joints"][2]["origin"][0],
                  problem["model"]["tool_origin"][0])
    c = np.cumsum(q[0, :3])
    assert np.allclose(e12.tool(q)[0], [l1 * np.cos(c[0]) + l2 * np.cos(c[1]) + l3 * np.cos(c[2]),
                                        -(l1 * np.sin(c[0]) + l2 * np.sin(c[1]) + l3 * np.sin(c[2]))], atol=1e-12)
    # MuJoCo's static equilibrium at the path's start is ffopt's start state (link and motor angles, rad),
    # held by the plan's first torque: the same gravity, gear and passive-spring statics in both models
    q0, u0 = e12.static_pose(tr.y_ref[0], tr.q[0])
    assert np.abs(q0 - ver.simulations[CASE].q[0]).max() < 1e-9
    assert np.allclose(u0, tr.u[0], rtol=1e-7)
    # ... and the plan's first row (state and torque) is at rest in MuJoCo (rad/s^2)
    assert np.abs(e12.accelerations(tr.q[0], tr.u[0], tr.v[0])).max() < 1e-6
    # the hold after the table: MuJoCo's equilibrium at the path's end is ffopt's hold (torque N m, motor rad)
    q_end, u_hold = e12.static_pose(tr.y_ref[-1], tr.q[-1])
    assert np.allclose(u_hold, ver.settle["hold_input"], rtol=1e-7)
    assert np.abs(q_end[3:] - ver.settle["hold_motor_angles_rad"]).max() < 1e-9


def test_rest_to_rest_plan_in_mujoco_agrees_with_ffopt_verification(rest_plan, rest_runs):
    ver = rest_plan.verification
    case = ver.cases[CASE]
    fine, coarse = rest_runs[DT], rest_runs[2 * DT]
    # step convergence: halving MuJoCo's step moves both figures by < 1e-4 mm, under 1/3 of the 5 % band
    # below (measured: 1.2e-5 mm during the move, 2.5e-5 mm after the table)
    assert abs(fine["move_mm"].max() - coarse["move_mm"].max()) < 1e-4
    assert abs(fine["settle_mm"].max() - coarse["settle_mm"].max()) < 1e-4
    # largest tool error over the table (the move and its rests), vs ffopt's verification max_mm (CVODES):
    # 0.02998 mm both, measured within 0.05 % (2026-11-28)
    assert fine["move_mm"].max() == pytest.approx(case.max_mm, rel=0.05)
    # largest tool error in the settle window against the path's end point, vs ffopt's settle.residual_mm:
    # 0.00820 vs 0.00820 mm, measured within 0.2 % (2026-11-28); the two simulators' tool points differ by < 3e-5 mm
    assert fine["settle_mm"].max() == pytest.approx(case.settle.residual_mm, rel=0.05)
    # link and motor angles along the table and in the settle window agree with ffopt's simulation:
    # < 1e-6 rad (measured 7e-8 rad during the table, 6e-9 after; 1e-6 rad is ~2e-3 mm at the 2.2 m
    # reach, under 10 % of the move error)
    assert np.abs(fine["q_move"] - ver.simulations[CASE].q).max() < 1e-6
    assert np.abs(fine["q_settle"] - ver.settle_simulations[CASE].q).max() < 1e-6


def test_exact_tracking_plan_rings_in_mujoco_too(e12, problem, exact_plan):
    # the comparison can fail: the exact-tracking plan ends with its passive joint moving, and MuJoCo sees
    # the same ~85 mm ringing after the table that ffopt's verification reports (84.94 mm; 84.97 when the
    # rest-to-rest shaping was introduced), and the same 0.043 mm during the move
    case = exact_plan.verification.cases[CASE]
    run = mujoco_errors(e12, problem, exact_plan, dt=2 * DT)  # step error < 1e-3 mm against 85 mm
    assert run["settle_mm"].max() == pytest.approx(case.settle.residual_mm, rel=0.05)
    assert run["settle_mm"].max() == pytest.approx(84.97, rel=0.05)
    assert run["move_mm"].max() == pytest.approx(case.max_mm, rel=0.05)
