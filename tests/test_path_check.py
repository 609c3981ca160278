"""The path check (rigid inverse kinematics along the whole path): singularities between samples,
workspace, branch jumps and tool-angle representation limits, named by time and configuration."""

import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import ffopt.sim.baselines as baselines
from ffopt.errors import PathError, ProblemError
from ffopt.io.problem import problem_from_dict
from ffopt.sim.baselines import rigid_inverse_kinematics

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
N_CHECK = 401  # the grid ffopt.plan checks on


def arm(outputs=("x", "y", "z"), name="arm3d_joint_ptp.toml", **reference) -> object:
    d = tomllib.loads((PROBLEMS / name).read_text())
    d["model"]["outputs"] = list(outputs)
    d["reference"] = reference
    return problem_from_dict(d)


def check(p):
    t = np.linspace(0.0, p.reference.t_end, N_CHECK)
    return rigid_inverse_kinematics(p.model, p.reference, t, p.reference_spec.joint_guess)


def rest_after_between_samples(t_event: float, t_motion_end: float, t_end: float) -> float:
    """rest_after (about t_end - t_motion_end) that puts t_event midway between two samples of the check grid."""
    k = math.floor(t_event / (t_end / (N_CHECK - 1)))
    return t_event / (k + 0.5) * (N_CHECK - 1) - t_motion_end


def base_axis_line(offset_mm: float):
    """The 3-axis arm (z-axis base joint) on a 1 m line at 300 mm height that passes ``offset_mm`` from the
    base axis at t = 0.55 s, midway between two samples of the check grid."""
    n = np.array([0.6, 0.8]) * offset_mm
    return arm(kind="line", start_mm=[400.0 + n[0], -300.0 + n[1], 300.0], end_mm=[-400.0 + n[0], 300.0 + n[1], 300.0],
               duration=1.0, rest_before=0.05, rest_after=rest_after_between_samples(0.55, 1.05, 1.35),
               joint_guess=[-0.6, -0.5, 1.5])


def test_line_over_the_base_axis_between_samples_is_refused_with_time_and_configuration(monkeypatch):
    p = base_axis_line(0.0)
    # every sample is clear of the threshold: a check on the samples alone passes (and BDF then fails)
    monkeypatch.setattr(baselines, "REFINE_LEVELS", 0)
    check(p)
    monkeypatch.undo()
    with pytest.raises(PathError) as err:
        check(p)
    msg = str(err.value)
    t = float(re.search(r"singularity at t = ([\d.]+) s", msg).group(1))
    # the tool reaches the axis at mid-motion, t = 0.55 s by construction; found at the refined samples (measured
    # 0.5495 s on 2026-11-27)
    assert abs(t - 0.55) < 1e-3
    assert "q1 = -36.87 deg" in msg  # the line's direction: q1 stays at atan2(-3, 4) while the arm reaches over
    assert re.search(r"q2 = -?[\d.]+ deg, q3 = [\d.]+ deg, tool point \[", msg)
    assert "The tool point lies on the axis of q1" in msg and "there q1 can turn without moving the tool" in msg


def test_line_passing_near_the_base_axis_is_not_a_false_alarm(monkeypatch):
    # 20 mm from the axis: sigma_min dips to ~20 mm > 1.4 mm; the samples' tent bound is below the
    # threshold, so the check resamples those intervals and must then clear them
    levels = []
    refine = baselines._refine

    def spy(*args, **kwargs):
        levels.append(kwargs.get("level", args[-1]))
        return refine(*args, **kwargs)

    monkeypatch.setattr(baselines, "_refine", spy)
    qa = check(base_axis_line(20.0))
    assert max(levels) >= 1  # intervals were resampled
    # the base follows the tool's azimuth past the axis: pi less twice the angle the offset makes at the ends
    assert np.ptp(qa[:, 0]) == pytest.approx(math.pi - 2 * math.atan(20 / 500), abs=1e-6)


def test_line_1mm_from_the_base_axis_is_inside_the_threshold():
    with pytest.raises(PathError, match=r"singularity at t = 0\.5[45]\d* s"):
        check(base_axis_line(1.0))


def test_joint_move_through_the_stretched_elbow_is_refused_between_samples(monkeypatch):
    # q3 from -20 to +20 deg with tool outputs: the arm stretches (q3 = 0) for an instant at mid-motion
    ref = dict(kind="joint_ptp", q_start_deg=[0.0, -30.0, -20.0], q_end_deg=[20.0, -10.0, 20.0], duration=0.5,
               rest_before=0.05, rest_after=rest_after_between_samples(0.3, 0.55, 2.0))
    p = arm(**ref)
    monkeypatch.setattr(baselines, "REFINE_LEVELS", 0)
    check(p)  # the samples straddle the dip
    monkeypatch.undo()
    with pytest.raises(PathError) as err:
        check(p)
    msg = str(err.value)
    t = float(re.search(r"singularity at t = ([\d.]+) s", msg).group(1))
    assert abs(t - 0.3) < 2e-3  # q3 = 0 at mid-motion by construction; measured 0.2984 s on 2026-11-27
    q3 = float(re.search(r"q3 = (-?[\d.]+) deg", msg).group(1))
    assert abs(q3) < 1.0 and "there q2, q3 can turn without moving the tool" in msg
    # the same joint move tracked in joint space has no singularity (outputs are the joint angles)
    check(arm(outputs=("q1", "q2", "q3"), **ref))


def test_e12_path_check_passes_and_returns_the_rigid_solution():
    d = tomllib.loads((PROBLEMS / "e12_line.toml").read_text())
    p = problem_from_dict(d)
    t = np.linspace(0.0, p.reference.t_end, N_CHECK)
    qa = rigid_inverse_kinematics(p.model, p.reference, t, p.reference_spec.joint_guess)
    y = np.array(p.model.output.map(N_CHECK)(qa.T)).T
    np.testing.assert_allclose(y, p.reference.evaluate(t), atol=1e-9)
    assert np.all(qa[:, 2] == 0.0)  # passive joint at rest


def test_wrist_singularity_names_the_aligned_axes():
    with pytest.raises(PathError) as err:
        check(arm(outputs=("x", "y", "z", "yaw", "pitch", "roll"), name="arm6_orientation.toml", kind="joint_ptp",
                  q_start_deg=[10.0, -40.0, 80.0, 10.0, -20.0, 5.0], q_end_deg=[20.0, -45.0, 85.0, -10.0, 20.0, 15.0],
                  duration=1.0))
    msg = str(err.value)
    assert "there q4, q6 can turn without moving the tool outputs" in msg
    assert abs(float(re.search(r"q5 = (-?[\d.]+) deg", msg).group(1))) < 1.0


def test_gimbal_lock_of_a_joint_move_is_a_path_error():
    p = arm(outputs=("x", "y", "z", "yaw", "pitch", "roll"), name="arm6_orientation.toml", kind="joint_ptp",
            q_start_deg=[10.0, -40.0, 80.0, 0.0, -20.0, 5.0], q_end_deg=[20.0, -45.0, 85.0, 0.0, -150.0, 15.0],
            duration=1.0)
    with pytest.raises(PathError, match=r"tool angle pitch = -89\.\d+ deg at t = .*\(gimbal lock\)"):
        check(p)


def test_workspace_exit_is_named_before_a_later_singularity():
    p = arm(kind="line", start_mm=[600.0, 0.0, 400.0], end_mm=[1300.0, 0.0, 400.0], duration=1.0,
            joint_guess=[0.0, -0.5, 1.2])
    with pytest.raises(PathError, match=r"(singularity|leaves the workspace) at t = 0\.\d+ s"):
        check(p)


# ------------------------------------------------------------------ the start pose: several starts, q_start_deg
def _ur5_dict() -> dict:
    d = tomllib.loads((PROBLEMS / "ur5_line.toml").read_text())
    d["model"]["urdf"] = str(PROBLEMS / d["model"]["urdf"])
    return d


def _pinocchio_tool_pose(problem, qa):
    """Tool point (m) and rotation of the UR5 at qa by Pinocchio's forward kinematics of the URDF itself (tool0's
    frame, the problem's tool_origin in it): independent of ffopt's reading of the URDF."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(PROBLEMS / "urdf" / "ur5.urdf"))
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.asarray(qa, float))
    M = data.oMf[model.getFrameId("tool0")]
    return M.translation + M.rotation @ np.array([0.0, 0.0, 0.1]), M.rotation


def _ypr(R) -> np.ndarray:
    """Z-Y-X angles of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return np.array([math.atan2(R[1, 0], R[0, 0]), math.atan2(-R[2, 0], math.hypot(R[2, 1], R[2, 2])),
                     math.atan2(R[2, 1], R[2, 2])])


def test_a_reachable_start_is_found_without_a_joint_guess():
    """UR5 line without joint_guess: the zero pose is a singular stretched arm from which Newton does not reach the
    start (it said "the path leaves the workspace at t = 0 s"); several starts find a configuration within the joint
    limits whose tool pose, by Pinocchio, is the start."""
    d = _ur5_dict()
    del d["reference"]["joint_guess"]
    p = problem_from_dict(d, "ur5_line.toml")
    qa = check(p)[0]
    assert all(j.q_min <= q <= j.q_max for j, q in zip(p.chain.joints, qa))
    point, R = _pinocchio_tool_pose(p, qa)
    ref = d["reference"]
    assert np.abs(1000 * point - ref["start_mm"]).max() < 1e-6  # mm
    yaw, pitch, roll = np.degrees(_ypr(R))
    target = np.array(ref["orientation_start_deg"], float)
    assert abs(yaw - target[0]) < 1e-7 and abs(pitch - target[1]) < 1e-7 and abs(abs(roll) - abs(target[2])) < 1e-7


def test_an_unreachable_start_names_its_field_and_the_starts_tried(tmp_path, capsys):
    from ffopt.cli.main import main

    d = tomllib.loads((PROBLEMS / "e12_line.toml").read_text())
    d["reference"]["start_mm"] = [2600.0, -345.0]  # beyond E12's 2.2 m reach
    del d["reference"]["joint_guess"]
    path = tmp_path / "far.toml"
    from helpers import toml_text

    path.write_text(toml_text(d))
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert ("reference.start_mm: no inverse kinematics solution found from 17 starts (the zero pose, 16 pseudo-random "
            "configurations within the joint limits) for the start of the path, t = 0 s (target x = 2600.00 mm") in err
    assert "leaves the workspace" not in err and err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_line_starts_from_a_joint_configuration_q_start_deg():
    """E12 (planar, passive joint at rest): the start of a line from q_start_deg is the closed-form forward
    kinematics x = l1 c1 + l2 c12 + l3 c123, z = -(l1 s1 + l2 s12 + l3 s123) with q3 = 0, and the inverse
    kinematics starts there (the default joint_guess)."""
    d = tomllib.loads((PROBLEMS / "e12_line.toml").read_text())
    for key in ("start_mm", "joint_guess"):
        del d["reference"][key]
    d["reference"]["q_start_deg"] = [-10.0, 35.0]
    p = problem_from_dict(d, "e12_q.toml")
    q1, q2 = np.radians([-10.0, 35.0])
    x = 1.0 * math.cos(q1) + 1.0 * math.cos(q1 + q2) + 0.2 * math.cos(q1 + q2)
    z = -(1.0 * math.sin(q1) + 1.0 * math.sin(q1 + q2) + 0.2 * math.sin(q1 + q2))
    assert np.abs(p.reference_spec.start - [x, z]).max() < 1e-15
    assert np.array_equal(p.reference_spec.joint_guess, [q1, q2, 0.0])
    assert p.reference_spec.start_field == "reference.q_start_deg"
    assert np.abs(check(p)[0] - [q1, q2, 0.0]).max() < 1e-12  # the IK's start is the configuration itself


def test_q_start_deg_on_a_6_axis_line_gives_the_pose_pinocchio_gives():
    d = _ur5_dict()
    ref = d["reference"]
    for key in ("start_mm", "orientation_start_deg", "joint_guess"):
        del ref[key]
    ref["q_start_deg"] = [-36.768, -90.847, 88.19, -87.342, -90.0, -36.768]
    p = problem_from_dict(d, "ur5_q.toml")
    qa = np.radians(ref["q_start_deg"])
    point, R = _pinocchio_tool_pose(p, qa)
    start = p.reference_spec.start
    assert np.abs(start[:3] - point).max() < 1e-12
    yaw, pitch, roll = _ypr(R)
    assert abs(start[3] - yaw) < 1e-12 and abs(start[4] - pitch) < 1e-12
    assert abs(start[5] - (roll + 2 * np.pi * round((math.pi - roll) / (2 * np.pi)))) < 1e-12  # roll on the end's side
    assert abs(start[5] - math.pi) < math.pi  # within half a turn of the end's 180 deg


def test_q_start_deg_with_the_pose_too_or_on_a_polyline():
    d = tomllib.loads((PROBLEMS / "e12_line.toml").read_text())
    d["reference"]["q_start_deg"] = [0.0, 20.0]
    with pytest.raises(ProblemError, match=r"reference\.start_mm: the start is given by reference\.q_start_deg"):
        problem_from_dict(d, "both.toml")
    poly = tomllib.loads((PROBLEMS / "e12_polyline.toml").read_text())
    rows = poly["reference"]["points_mm"]
    plain = problem_from_dict(poly, "poly.toml")
    q = np.degrees(check(plain)[0][:2])
    poly["reference"]["points_mm"] = rows[1:]  # the points after the start
    poly["reference"]["q_start_deg"] = q.tolist()
    poly["reference"].pop("joint_guess", None)
    from_q = problem_from_dict(poly, "poly_q.toml")
    assert np.abs(from_q.reference_spec.params["points"] - plain.reference_spec.params["points"]).max() < 1e-12


def test_a_plan_without_joint_guess_starts_every_stage_at_the_start_found():
    """The path check's start configuration becomes the plan's reference.joint_guess (the equilibrium, the BDF
    and the verification start there, and problem.toml records it), the same as the file's own guess on E12."""
    import ffopt

    d = tomllib.loads((PROBLEMS / "e12_line.toml").read_text())
    guess = d["reference"].pop("joint_guess")
    result = ffopt.plan(problem_from_dict(d, "e12_no_guess.toml"), verify=False)
    found = result.problem.reference_spec.joint_guess
    assert result.problem.to_dict()["reference"]["joint_guess"] == found.tolist()
    planned = ffopt.plan(ffopt.load_problem(PROBLEMS / "e12_line.toml"), verify=False)
    q0 = planned.trajectory.q[0, :3]
    assert np.abs(result.trajectory.q[0, :3] - q0).max() < 1e-12  # the same equilibrium as with the file's guess
    assert np.abs(found[:2] - q0[:2]).max() < 0.2 and abs(found[1] - guess[1]) < 0.2  # the same elbow branch
