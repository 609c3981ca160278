"""Joint outputs next to the tool axes on a Cartesian path (a redundant arm: the Panda's elbow, panda_joint3).

The joint output moves reference.joint_start_deg -> joint_end_deg (default: held) by the path's time law
while the tool draws its line, arc, polyline or prefiltered line. The independent checks: the rest-to-rest
law poly11 is the regularised incomplete beta function I_tau(6, 6) (the unique degree-11 polynomial with
s(0) = 0, s(1) = 1 and derivatives 1..5 zero at both ends), and the planned link angles are put through
Pinocchio's forward kinematics of the shipped Panda URDF.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.special import betainc

import ffopt
from ffopt.errors import ProblemError
from ffopt.io.problem import problem_from_dict

ROOT = Path(__file__).resolve().parents[1]
ELBOW = ROOT / "problems" / "panda_line_elbow.toml"
MOVE_DEG = 20.0  # panda_joint3: 0 -> 20 deg in the shipped file


def elbow_dict(**reference) -> dict:
    d = tomllib.loads(ELBOW.read_text())
    d["model"]["urdf"] = str(ROOT / "problems" / d["model"]["urdf"])
    d["reference"].update(reference)
    for key in [k for k, v in d["reference"].items() if v is None]:
        del d["reference"][key]
    return d


def poly11(tau):
    return betainc(6, 6, np.clip(tau, 0.0, 1.0))


def _fail(d, needle):
    with pytest.raises(ProblemError) as err:
        problem_from_dict(d, source="p.toml")
    assert needle in str(err.value), str(err.value)


# --------------------------------------------------------------------------------- reference
def test_line_moves_the_joint_output_by_the_tools_time_law():
    p = problem_from_dict(elbow_dict())
    ref = p.reference
    t = np.linspace(0.0, ref.t_end, 301)
    y = ref.evaluate(t)
    s = poly11((t - 0.05) / 1.0)
    line = np.array([450.0, -150.0, 350.0]) + np.outer(s, [0.0, 300.0, -50.0])
    # closed forms of the file's line and law; atol: roundoff (measured 1.4e-13 mm, 1.1e-14 deg on 2026-11-27)
    np.testing.assert_allclose(1000 * y[:, :3], line, atol=1e-9)
    np.testing.assert_allclose(np.degrees(y[:, 3:6]), np.tile([0.0, 0.0, 180.0], (len(t), 1)), atol=1e-12)
    np.testing.assert_allclose(np.degrees(y[:, 6]), MOVE_DEG * s, atol=1e-9)


def test_joint_output_without_an_end_is_held():
    d = elbow_dict(joint_start_deg=[-15.0])
    del d["reference"]["joint_end_deg"]
    ref = problem_from_dict(d).reference
    q3 = ref.evaluate(np.linspace(0.0, ref.t_end, 50))[:, 6]
    np.testing.assert_allclose(np.degrees(q3), -15.0, atol=1e-12)


def test_polyline_moves_the_joint_output_over_the_whole_motion():
    d = elbow_dict(kind="polyline", points_mm=[[450.0, -150.0, 350.0], [450.0, 0.0, 300.0], [450.0, 150.0, 320.0]],
                   orientations_deg=[[0.0, 0.0, 180.0]] * 3, durations=[0.6, 0.5], blend=0.1, start_mm=None,
                   end_mm=None, orientation_start_deg=None, orientation_end_deg=None, duration=None)
    ref = problem_from_dict(d).reference
    motion = 0.6 + 0.5 - 0.1
    t = np.linspace(0.0, ref.t_end, 301)
    y = ref.evaluate(t)
    np.testing.assert_allclose(np.degrees(y[:, 6]), MOVE_DEG * poly11((t - 0.05) / motion), atol=1e-9)
    # the tool still passes its points: at rest at the start and end, near the via point (blend)
    np.testing.assert_allclose(1000 * ref.evaluate(ref.t_end)[0, :3], [450.0, 150.0, 320.0], atol=1e-9)
    # smooth (C^5) across the segment and blend boundaries, the joint row included
    rel = ref.breakpoint_jumps(5).max(axis=1) / np.array(
        [max(np.abs(ref.evaluate(t, i)).max(), 1e-300) for i in range(6)])
    assert np.all(rel < 1.6e-6), rel  # roundoff of the derivatives: measured 7.7e-7 (5th) on 2026-11-27


def test_arc_keeps_the_output_order_with_a_joint_output():
    d = elbow_dict(kind="arc", center_mm=[450.0, 0.0, 350.0], normal=[0.0, 0.0, 1.0], angle_deg=-30.0,
                   start_mm=[450.0, -150.0, 350.0], end_mm=None)
    d["model"]["outputs"] = ["panda_joint3", "x", "y", "z", "yaw", "pitch", "roll"]
    ref = problem_from_dict(d).reference
    t = np.linspace(0.0, ref.t_end, 101)
    y = ref.evaluate(t)
    s = poly11((t - 0.05) / 1.0)
    np.testing.assert_allclose(np.degrees(y[:, 0]), MOVE_DEG * s, atol=1e-9)
    phi = np.radians(-30.0) * s  # about +z from (0, -150) relative to the centre
    np.testing.assert_allclose(1000 * y[:, 2], -150.0 * np.cos(phi), atol=1e-9)
    np.testing.assert_allclose(1000 * y[:, 1], 450.0 + 150.0 * np.sin(phi), atol=1e-9)
    np.testing.assert_allclose(np.degrees(y[:, 6]), 180.0, atol=1e-12)


def test_prefiltered_line_filters_the_joint_output_with_the_tool():
    d = elbow_dict(kind="prefilter", raw="step", cutoff_hz=4.0, duration=None, time_law=None)
    ref = problem_from_dict(d).reference
    y = ref.evaluate(np.linspace(0.0, ref.t_end, 200))
    progress_tool = (1000 * y[:, 1] + 150.0) / 300.0
    np.testing.assert_allclose(np.degrees(y[:, 6]), MOVE_DEG * progress_tool, atol=1e-9)


@pytest.mark.parametrize("reference, needle", [
    (dict(joint_end_deg=[20.0, 5.0]),
     "p.toml: reference.joint_end_deg: expected 1 values (one per joint output, in model.outputs order: "
     "panda_joint3), got 2"),
    (dict(joint_start_deg=None), "p.toml: reference.joint_start_deg: missing: model.outputs names joints "
                                 "(panda_joint3)"),
    (dict(joint_start_deg=[10.0], joint_start_rad=[0.1]), "reference.joint_start_rad: give either joint_start_deg"),
    (dict(joint_end_deg=[170.0]), "p.toml: reference.joint_end_deg: panda_joint3 = 170 deg is outside its limits "
                                  "[-166, 166] deg"),
    (dict(kind="joint_ptp", start_mm=None, end_mm=None, orientation_start_deg=None, orientation_end_deg=None,
          q_start_deg=[0.0] * 7, q_end_deg=[5.0] * 7),
     "p.toml: reference.joint_start_deg: is a key of the tool paths (line / polyline / arc / prefilter), not of "
     "kind 'joint_ptp': a joint move sets every actuated joint, the joint outputs included, by q_start_deg"),
    (dict(kind="prefilter", raw="step", cutoff_hz=4.0, duration=None, time_law=None, start_mm=None, end_mm=None,
          q_start_deg=[0.0] * 7, q_end_deg=[5.0] * 7),
     "p.toml: reference.joint_start_deg: go with a tool line (start_mm, end_mm)"),
])
def test_bad_joint_outputs_name_the_file_and_field(reference, needle):
    _fail(elbow_dict(**reference), needle)


def test_joint_values_without_a_joint_output_are_refused():
    d = tomllib.loads((ROOT / "problems" / "panda_line.toml").read_text())
    d["model"]["urdf"] = str(ROOT / "problems" / d["model"]["urdf"])
    d["reference"]["joint_start_deg"] = [10.0]
    _fail(d, "p.toml: reference.joint_start_deg: model.outputs names no joint (x, y, z, yaw, pitch, roll)")


# ------------------------------------------------------------------------------------- plan
def _pinocchio_panda():
    model = pin.buildModelFromUrdf(str(ROOT / "problems" / "urdf" / "panda.urdf"))
    fingers = [model.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    model = pin.buildReducedModel(model, fingers, pin.neutral(model))
    assert [model.names[i] for i in range(1, model.njoints)] == [f"panda_joint{i}" for i in range(1, 8)]
    return model


def test_planned_link_angles_draw_the_line_and_move_the_elbow_by_its_law():
    """Pinocchio's forward kinematics of the planned link angles (not ffopt's) on the line, tool down, and
    panda_joint3 on 20 deg x I_tau(6, 6): the plan tracks exactly, so only the solver's error remains."""
    result = ffopt.plan(ffopt.load_problem(ELBOW), verify=False)
    traj = result.trajectory
    names = traj.link_names
    q = traj.q[:, [names.index(f"panda_joint{i}") for i in range(1, 8)]]
    model = _pinocchio_panda()
    data = model.createData()
    tcp = model.getFrameId("panda_hand_tcp")
    points, rotations = [], []
    for qk in q:
        pin.framesForwardKinematics(model, data, qk)
        points.append(data.oMf[tcp].translation.copy())
        rotations.append(data.oMf[tcp].rotation.copy())
    s = poly11((traj.t - 0.05) / 1.0)
    line = np.array([450.0, -150.0, 350.0]) + np.outer(s, [0.0, 300.0, -50.0])
    tool_error_mm = np.linalg.norm(1000 * np.array(points) - line, axis=1).max()
    down = np.diag([1.0, -1.0, -1.0])  # Rz(0) Ry(0) Rx(180 deg)
    angle_error = max(np.linalg.norm(pin.log3(down.T @ R)) for R in rotations)
    elbow_error_deg = np.abs(np.degrees(q[:, 2]) - MOVE_DEG * s).max()
    # measured 2026-11-27: 2.7e-11 mm, 2.9e-14 rad, 1.7e-12 deg (rounding: the BDF plan satisfies the output
    # equations exactly at every grid point, and ffopt's URDF kinematics match Pinocchio's to 1e-12,
    # tests/test_urdf.py); the bounds leave room for the Newton tolerance, and a wrong output order or a held
    # elbow would miss them by 300 mm and 20 deg
    assert tool_error_mm < 1e-6, tool_error_mm
    assert angle_error < 1e-9, angle_error
    assert elbow_error_deg < 1e-8, elbow_error_deg
    assert abs(np.degrees(q[-1, 2]) - MOVE_DEG) < 1e-8  # the law's end: measured exactly 20 deg (as elbow above)
