"""A plan with gyroscopic rotor coupling re-simulated forward by an independent multibody model: Pinocchio's
articulated-body algorithm (ABA) with every rotor its own body, integrated by SciPy's solve_ivp.

problems/arm3d_bearing.toml (rotor_coupling = "full": each motor sits on the link before its joint and its
rotor's spin couples with that link's rotation; Hoepler & Thuemmel, symbolic inverse dynamics of elastic
joint robots) is planned with ffopt's defaults (BDF) and its feedforward_pd case re-simulated here. The
Pinocchio model is written from the numbers of the TOML file (read with tomllib, not with ffopt's model
classes or its problem parser): links by origin + rpy (pinocchio.rpy.rpyToMatrix, URDF's Rz Ry Rx), full
inertia tensors about the centres of mass, the 2-axis wrist bearing as two revolute joints at one point (a
massless body between them, the tool body on the second, as the file states: the axes turn one after the
other) with tau = -K w - D w'. Each elastic gear's rotor is a massless body on the carrier link (the base
for axis 1) turning about the joint's axis (coaxial: the file gives no rotor_axis) at the MOTOR angle th,
axial inertia the file's rotor_inertia (motor side), transverse inertia 0 (the file gives none). The gear
spring sits on the motor side (th - i q, stiffness and damping as the file gives them), the motor torque is
u / i (u the arm-side torque of ffopt's table, i the gear ratio), the bearing friction acts on th:
Rv1 th' + Rv0 tanh(th' / (|i| eps)) (eps: ffopt's Coulomb smoothing, arm side). ABA then carries every
inertial coupling of the spinning rotors with their carriers, which ffopt writes as Lagrange terms of the
coupling energy (its eq. in ffopt.models.flexible): nothing of that code is used here.

The start and hold poses are Pinocchio's own static equilibria at the path's end points, the PD gains the
default 5 Hz, zeta 1 on the rotors' J i^2; only the plan's tables (u, qm, dqm) and its tool path come from
ffopt. Each 1 ms row is integrated on its own (DOP853) with the feedforward and references linear over it,
as ffopt's CVODES runs restart at every row; after the table the arm is held for ffopt's settle window by
the static torque and the PD on the static motor angles.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import fsolve

import ffopt

pin = pytest.importorskip("pinocchio")

PROBLEM = Path(__file__).resolve().parent.parent / "problems" / "arm3d_bearing.toml"
EPS = 1e-3  # rad/s: ffopt's Coulomb smoothing (default coulomb_smoothing, arm side; the file gives none)
BANDWIDTH_HZ, DAMPING_RATIO = 5.0, 1.0  # ffopt's default motor PD ([verification] pd_bandwidth_hz, pd_damping_ratio)
RTOL, ATOL = 1e-10, 1e-10  # solve_ivp (angles up to ~100 rad on the motor side)
CASE = "feedforward_pd"


def _rotation(j: dict) -> np.ndarray:
    return pin.rpy.rpyToMatrix(*np.radians(j["rpy_deg"])) if "rpy_deg" in j else np.eye(3)


def _inertia(j: dict) -> "pin.Inertia":
    return pin.Inertia(float(j["mass"]), np.asarray(j["com"], float), np.asarray(j["inertia"], float))


class RotorArm:
    """The Pinocchio model of the file with its drive data. ffopt's coordinates are [q1, q2, q3, wrist_1,
    wrist_2, qm1, qm2, qm3] (arm-side motor angles qm = th / i); its inputs are the three arm-side torques.
    ``rotors_on_carriers=False`` puts the rotors on the base instead: no coupling with the carriers' rotation
    (Spong's reduced model), the plant a plan that ignores the coupling assumes."""

    def __init__(self, p: dict, rotors_on_carriers: bool = True):
        m = p["model"]
        model = pin.Model()
        model.gravity = pin.Motion(np.asarray(m["gravity"], float), np.zeros(3))
        parent, self.links, self.rotors, gears = 0, [], [], []
        for j in m["joints"]:
            R, origin = _rotation(j), np.asarray(j.get("origin", [0.0, 0.0, 0.0]), float)
            if j["kind"] == "elastic_gear":
                axis = R @ np.asarray(j["axis"], float)  # the joint's axis in the carrier's frame
                J = float(j["rotor_inertia"])
                rid = model.addJoint(parent if rotors_on_carriers else 0, pin.JointModelRevoluteUnaligned(axis),
                                     pin.SE3(np.eye(3), origin), f"rotor_{j['name']}")
                model.appendBodyToJoint(rid, pin.Inertia(0.0, np.zeros(3), J * np.outer(axis, axis)),
                                        pin.SE3.Identity())
                self.rotors.append(rid)
                gears.append(j)
            axes = j["axes"] if "axes" in j else [j["axis"]]
            for k, axis in enumerate(axes):  # a bearing: successive hinges at one point, the body on the last
                jid = model.addJoint(parent, pin.JointModelRevoluteUnaligned(np.asarray(axis, float)),
                                     pin.SE3(R, origin) if k == 0 else pin.SE3.Identity(), f"{j['name']}_{k}")
                if k == len(axes) - 1:
                    model.appendBodyToJoint(jid, _inertia(j), pin.SE3.Identity())
                self.links.append(jid)
                parent = jid
            if "axes" in j:
                self.bearing = (np.array(self.links[-len(axes):]), np.asarray(j["stiffness_matrix"], float),
                                np.asarray(j["damping_matrix"], float))
        self.tool_frame = model.addFrame(pin.Frame("tool", parent, 0, pin.SE3(np.eye(3), np.asarray(m["tool_origin"], float)),
                                                   pin.FrameType.OP_FRAME))
        self.model, self.data = model, model.createData()
        dof = lambda ids: np.array([model.idx_vs[int(i)] for i in ids])  # noqa: E731
        self.links, self.rotors = dof(self.links), dof(self.rotors)
        self.bearing = (dof(self.bearing[0]), *self.bearing[1:])
        self.gear_links = self.links[:3]  # the elastic gears drive q1..q3
        g = lambda key: np.array([float(j.get(key, 0.0)) for j in gears])  # noqa: E731
        self.ratio, self.stiffness, self.damping = g("gear_ratio"), g("stiffness_motor_side"), g("damping_motor_side")
        self.rotor_inertia = g("rotor_inertia")
        self.viscous, self.coulomb = g("viscous_friction_motor_side"), g("coulomb_friction_motor_side")
        self.width = EPS * np.abs(self.ratio)
        assert model.nq == model.nv == 8

    # --- ffopt's coordinates <-> Pinocchio's
    def to_pin(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.model.nq)
        out[self.links] = q[:5]
        out[self.rotors] = q[5:] * self.ratio
        return out

    def from_pin(self, Q: np.ndarray) -> np.ndarray:
        """(n, nq) Pinocchio positions (or velocities) -> (n, 8) ffopt's coordinates."""
        return np.hstack([Q[:, self.links], Q[:, self.rotors] / self.ratio])

    def tool(self, links: np.ndarray) -> np.ndarray:
        """Tool point (n, 3) for link angles (n, 5); the rotors do not move it."""
        out = np.empty((len(links), 3))
        for k, qa in enumerate(links):
            pin.framesForwardKinematics(self.model, self.data, self.to_pin(np.concatenate([qa, np.zeros(3)])))
            out[k] = self.data.oMf[self.tool_frame].translation
        return out

    # --- generalised forces other than gravity and inertia
    def forces(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Pinocchio coordinates q, v; arm-side torques u (3,): the gear springs on the motor side, the motor
        torques u / i, the rotor bearings' friction and the wrist bearing's spring-damper."""
        tau = np.zeros(self.model.nv)
        th, w = q[self.rotors], v[self.rotors]
        gear = (self.stiffness * (th - self.ratio * q[self.gear_links])
                + self.damping * (w - self.ratio * v[self.gear_links]))
        tau[self.rotors] = u / self.ratio - gear - self.viscous * w - self.coulomb * np.tanh(w / self.width)
        tau[self.gear_links] += self.ratio * gear
        idx, K, D = self.bearing
        tau[idx] -= K @ q[idx] + D @ v[idx]
        return tau

    def static_pose(self, tool: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rest with the tool at ``tool``: (ffopt coordinates (8,), arm-side torques (3,)) with the forces
        balancing gravity (Pinocchio's rnea at rest), solved on this model."""
        zero = np.zeros(self.model.nv)

        def residual(x):
            q, u = self.to_pin(x[:8]), x[8:]
            balance = self.forces(q, zero, u) - pin.rnea(self.model, self.data, q, zero, zero)
            balance[self.rotors] *= self.ratio  # arm-side units (N m)
            return np.concatenate([balance, 1000 * (self.tool(x[None, :5])[0] - tool)])
        x, info, ok, msg = fsolve(residual, np.concatenate([guess, np.zeros(3)]), full_output=True, xtol=1e-14)
        assert np.abs(residual(x)).max() < 1e-8, msg
        return x[:8], x[8:]

    def run(self, t, u, qm_ref, dqm_ref, kp, kd, q0, hold_u, hold_qm, settle_t):
        """From rest at q0 (ffopt coordinates) through the table (u and the PD references linear over each
        row, each row one solve_ivp call) and the hold (hold_u + PD on hold_qm) on the settle grid. Returns
        ffopt coordinates on the table's grid and on the settle grid."""
        model, data, r = self.model, self.model.createData(), self.ratio
        nq = model.nq

        def rhs(s, x, u0, du, qr0, slope_qr, dqr0, slope_dqr):
            q, v = x[:nq], x[nq:]
            ua = (u0 + s * du + kp * (qr0 + s * slope_qr - q[self.rotors] / r)
                  + kd * (dqr0 + s * slope_dqr - v[self.rotors] / r))
            return np.concatenate([v, pin.aba(model, data, q, v, self.forces(q, v, ua))])

        x = np.concatenate([self.to_pin(q0), np.zeros(nq)])
        out = [x]
        for k in range(len(t) - 1):
            h = t[k + 1] - t[k]  # local time s = time - t_k
            slope = lambda a: (a[k + 1] - a[k]) / h  # noqa: E731
            sol = solve_ivp(rhs, (0.0, h), x, method="DOP853", rtol=RTOL, atol=ATOL,
                            args=(u[k], slope(u), qm_ref[k], slope(qm_ref), dqm_ref[k], slope(dqm_ref)))
            assert sol.success, sol.message
            x = sol.y[:, -1]
            out.append(x)
        zero = np.zeros(len(kp))
        # the settle window: constant inputs (local time = time, the references' slopes 0)
        sol = solve_ivp(rhs, (settle_t[0], settle_t[-1]), x, method="DOP853", rtol=RTOL, atol=ATOL, t_eval=settle_t,
                        args=(hold_u, zero, hold_qm, zero, zero, zero))
        assert sol.success, sol.message
        X = np.array(out)
        return self.from_pin(X[:, :nq]), self.from_pin(sol.y[:nq].T)


@pytest.fixture(scope="module")
def problem() -> dict:
    with open(PROBLEM, "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def arm(problem) -> RotorArm:
    return RotorArm(problem)


@pytest.fixture(scope="module")
def plan():
    """The shipped plan with ffopt's defaults (BDF-5 as the file asks; the default verification)."""
    return ffopt.plan(str(PROBLEM), verify=True)


def gains(arm: RotorArm) -> tuple[np.ndarray, np.ndarray]:
    """Motor PD gains: kp = J w^2, kd = 2 zeta J w on each rotor's arm-side inertia J i^2."""
    w, J = 2 * np.pi * BANDWIDTH_HZ, arm.rotor_inertia * arm.ratio**2
    return J * w**2, 2 * DAMPING_RATIO * J * w


def pinocchio_errors(arm: RotorArm, result, case=CASE) -> dict:
    """Re-simulate one plan's case (feedforward_pd, or feedforward_open_loop: zero gains) on ``arm``: tool
    errors (mm) on ffopt's grids, during the table (against the path) and in the settle window (against the
    path's end point), and the coordinates."""
    tr, ver = result.trajectory, result.verification
    y_ref = np.asarray(tr.y_ref)  # the tool path (x, y, z), m
    q0, _ = arm.static_pose(y_ref[0], tr.q[0])
    q_end, u_hold = arm.static_pose(y_ref[-1], tr.q[-1])
    kp, kd = gains(arm) if case == CASE else (np.zeros(3), np.zeros(3))
    settle_t = ver.settle_simulations[case].t
    q_move, q_settle = arm.run(tr.t, tr.u, tr.qm, tr.dqm, kp, kd, q0, u_hold, q_end[5:], settle_t)
    return {"move_mm": 1000 * np.linalg.norm(arm.tool(q_move[:, :5]) - y_ref, axis=1),
            "settle_mm": 1000 * np.linalg.norm(arm.tool(q_settle[:, :5]) - y_ref[-1], axis=1),
            "q_move": q_move, "q_settle": q_settle}


@pytest.fixture(scope="module")
def pd_run(arm, plan):
    return pinocchio_errors(arm, plan)


def test_pinocchio_statics_and_gains_match_ffopt(arm, plan):
    tr, ver = plan.trajectory, plan.verification
    y_ref = np.asarray(tr.y_ref)
    # Pinocchio's static equilibrium with the tool at the path's start is ffopt's start state (link, bearing
    # and motor angles, rad; measured 3e-16), held by the plan's first torque (N m; 56 N m on q2)
    q0, u0 = arm.static_pose(y_ref[0], tr.q[0])
    assert np.abs(q0 - ver.simulations[CASE].q[0]).max() < 1e-10
    assert np.abs(u0 - tr.u[0]).max() < 1e-7
    # the hold after the table: the equilibrium at the path's end is ffopt's hold (torque N m, motor rad)
    q_end, u_hold = arm.static_pose(y_ref[-1], tr.q[-1])
    assert np.abs(u_hold - ver.settle["hold_input"]).max() < 1e-7
    assert np.abs(q_end[5:] - ver.settle["hold_motor_angles_rad"]).max() < 1e-10
    # the PD gains (5 Hz, zeta 1 on J i^2) are the verification's
    kp, kd = gains(arm)
    assert np.allclose(kp, ver.pd_gains["kp"], rtol=1e-12) and np.allclose(kd, ver.pd_gains["kd"], rtol=1e-12)


def test_coupled_plan_on_rotors_as_bodies_agrees_with_ffopt_verification(plan, pd_run, arm):
    ver = plan.verification
    case = ver.cases[CASE]
    # largest tool error over the table vs ffopt's max_mm: 0.0090759 vs 0.0090760 mm, measured within 1e-5;
    # in the 1 s settle window against the path's end point vs ffopt's residual_mm: 0.0010298 vs 0.0010300 mm,
    # within 2e-4 (2e-7 mm: solve_ivp at rtol 1e-12 gives the same figures to 1e-12 mm, so this is the
    # CVODES side at ffopt's rtol 1e-9)
    assert pd_run["move_mm"].max() == pytest.approx(case.max_mm, rel=1e-3)
    assert pd_run["settle_mm"].max() == pytest.approx(case.settle.residual_mm, rel=1e-3)
    # the magnitudes ffopt publishes: 0.009 mm with the PD (the file's header; tests/test_shipped_problems.py
    # 0.00908, measured 2026-11-27)
    assert pd_run["move_mm"].max() == pytest.approx(0.00908, rel=0.05)
    # the tool trajectories themselves (measured within 3.7e-6 mm) and all coordinates (rad) along the table
    # and after it (measured 5.1e-9 rad during the table, 2.4e-10 after)
    sim = ver.simulations[CASE]
    assert 1000 * np.abs(arm.tool(pd_run["q_move"][:, :5]) - sim.y).max() < 2e-5  # mm
    assert np.abs(pd_run["q_move"] - sim.q).max() < 2e-8
    assert np.abs(pd_run["q_settle"] - ver.settle_simulations[CASE].q).max() < 2e-8


def test_the_coupling_matters_at_this_precision(problem, plan, pd_run):
    # the comparison can fail: with the rotors on the base (no gyroscopic coupling, the reduced model) the same
    # plan misses by 11x more in Pinocchio (measured 0.099 mm during the move, 0.040 after the table, against
    # 0.0091 / 0.0010 mm): the agreement above is the coupling's, not a coincidence of small numbers
    reduced = pinocchio_errors(RotorArm(problem, rotors_on_carriers=False), plan)
    assert reduced["move_mm"].max() > 5 * pd_run["move_mm"].max()
    assert reduced["settle_mm"].max() > 5 * pd_run["settle_mm"].max()


@pytest.mark.slow
def test_open_loop_agrees_too(arm, plan):
    # without the PD: 0.086737 vs 0.086736 mm during the move, 0.0838633 vs 0.0838620 mm after the table
    # (measured within 2e-5), angles within 4e-8 rad
    name = "feedforward_open_loop"
    ver = plan.verification
    run = pinocchio_errors(arm, plan, case=name)
    assert run["move_mm"].max() == pytest.approx(ver.cases[name].max_mm, rel=1e-3)
    assert run["settle_mm"].max() == pytest.approx(ver.cases[name].settle.residual_mm, rel=1e-3)
    assert np.abs(run["q_move"] - ver.simulations[name].q).max() < 1e-7
