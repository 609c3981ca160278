"""The path check (rigid inverse kinematics along the whole path): singularities between samples,
workspace, branch jumps and tool-angle representation limits, named by time and configuration."""

import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import ffopt.sim.baselines as baselines
from ffopt.errors import PathError
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
