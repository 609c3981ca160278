"""The rigid-robot peers of the motion design (ffopt.motion.peers): TOPP-RA and Ruckig along a problem's path.

Independent references: the bang-bang time of a rigid link under a torque bound, 2 sqrt(theta J / tau_max)
(accelerate at the bound half way, brake the other half), and with a speed limit the trapezoid's
theta / v_max + v_max J / tau_max.
"""

from __future__ import annotations

import numpy as np
import pytest

from ffopt.io.problem import problem_from_dict
from ffopt.motion.peers import PathSamples, rigid_motion, ruckig_law, topp_ra_law

pytest.importorskip("toppra")
pytest.importorskip("ruckig")

J = 1.0  # kg m^2 about the axis: 0.1 + 2 * 0.5^2 + 0.4 (link, its mass at 0.5 m, the motor)
THETA = np.pi / 2
TORQUE = 10.0


def one_link(kind: str = "direct", stiffness: float | None = None) -> dict:
    joint = {"name": "j1", "kind": kind, "axis": [0.0, 0.0, 1.0], "mass": 2.0, "com": [0.5, 0.0, 0.0],
             "inertia_diag": [0.0, 0.0, 0.1], "motor_inertia": 0.4}
    if stiffness is not None:
        joint.update(stiffness=stiffness, damping=0.0)
    return {"name": "one rigid link", "model": {"gravity": [0.0, 0.0, 0.0], "outputs": ["j1"],
                                                "tool_origin": [1.0, 0.0, 0.0], "joints": [joint]},
            "reference": {"kind": "joint_ptp", "q_start_deg": [0.0], "q_end_deg": [90.0], "duration": 1.0,
                          "time_law": "poly11"}}


def test_topp_ra_reaches_the_bang_bang_time_of_a_rigid_link():
    path = PathSamples.of(problem_from_dict(one_link()))
    law = topp_ra_law(path, [TORQUE], grid=2000)
    assert law.duration == pytest.approx(2 * np.sqrt(THETA * J / TORQUE), rel=1e-2)
    motion = rigid_motion(path, law)
    assert np.abs(motion.u).max() == pytest.approx(TORQUE, rel=2e-2)  # at the bound, as bang-bang
    assert motion.q[0, 0] == pytest.approx(0.0, abs=1e-9) and motion.q[-1, 0] == pytest.approx(THETA, rel=1e-6)


def test_topp_ra_with_a_speed_limit_gives_the_trapezoid():
    path = PathSamples.of(problem_from_dict(one_link()))
    v_max = 1.0  # rad/s, below the bang-bang peak speed sqrt(theta tau / J) = 3.96 rad/s
    law = topp_ra_law(path, [TORQUE], speed_max=[v_max], grid=2000)
    assert law.duration == pytest.approx(THETA / v_max + v_max * J / TORQUE, rel=1e-2)


def test_ruckig_with_the_bound_as_acceleration_limit_gives_the_bang_bang_time():
    """Ruckig on the path parameter with a = tau_max / (J theta) and a very high jerk limit: the bang-bang time;
    with a finite jerk limit, longer."""
    a = TORQUE / (J * THETA)
    law = ruckig_law(speed_max=100.0, acceleration_max=a, jerk_max=1e6)
    assert law.duration == pytest.approx(2 * np.sqrt(THETA * J / TORQUE), rel=1e-3)
    assert ruckig_law(100.0, a, 50.0).duration > 1.05 * law.duration
    path = PathSamples.of(problem_from_dict(one_link()))
    assert np.abs(rigid_motion(path, law).u).max() == pytest.approx(TORQUE, rel=1e-3)


def test_ruckig_within_bounds_meets_the_torque_bound_and_is_slower_than_bang_bang():
    from ffopt.motion.peers import ruckig_within_bounds

    path = PathSamples.of(problem_from_dict(one_link()))
    law = ruckig_within_bounds(path, [TORQUE])
    peak = np.abs(rigid_motion(path, law).u_table).max()
    assert peak <= TORQUE * (1 + 1e-9) and peak == pytest.approx(TORQUE, rel=1e-2)  # on the bound (bisection 0.1 %)
    assert law.duration > 2 * np.sqrt(THETA * J / TORQUE)  # a finite jerk costs time against bang-bang


def test_topp_ra_within_bounds_keeps_the_applied_table_within_them():
    """The Manutec r3's TOPP-RA move under RobotR3's motor limits: its applied table (gravity share swapped for the
    elastic statics) exceeds axis 3's bound by ~7 %; the variant within the bounds scales TOPP-RA's bounds until it
    does not, so it is longer, and the raw move stays the lower bound."""
    from pathlib import Path

    import ffopt
    from ffopt.motion.min_time import MotionLimits
    from ffopt.motion.peers import topp_ra_within_bounds

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "manutec_r3_min_time.toml")
    limits = MotionLimits.of(problem)
    path = PathSamples.of(problem)
    speed = limits.link_speed_max[path.actuated]
    raw = topp_ra_law(path, limits.torque_max, speed)

    def applied_peak(law):
        motion = rigid_motion(path, law.resampled(np.arange(0.0, law.duration + 5e-4, 1e-3)))
        return float((np.abs(motion.u_table).max(0) / limits.torque_max).max())

    assert applied_peak(raw) > 1.05
    law, lam = topp_ra_within_bounds(path, limits.torque_max, speed)
    assert 0.85 < lam < 1.0 and applied_peak(law) <= 1.0 + 1e-9
    assert law.duration > raw.duration
