"""``ffopt bench --table motion``: minimum-time moves side by side with the rigid-robot peers, in one run.

Per problem (E12 under ``e12_torque_bounded.toml``'s bounds; with not quick also the UR5 under its URDF's limits):
TOPP-RA's rigid time-optimal move (the lower bound; Pham & Pham, IEEE T-RO 2018), Ruckig's jerk-limited profile of
the path parameter within the same torque bounds (Berscheid & Kröger, RSS 2021), and ffopt's minimum-time
rest-to-rest move of the elastic arm with 8 and 16 shaping terms and by default (TOPP-RA's law smoothed, a spline
law, where the arm rests with it; the polynomial family's 8 terms where not, E12): duration, its ratio to TOPP-RA's, the largest
limit ratio of the rigid (peers) or elastic (ffopt) torques, and CPU time (median of the repeats). How the arm moves
with each (tool error, settled cycle): ``python results/motion_design.py``. The Manutec r3 under RobotR3's motor
limits (``manutec_r3_min_time.toml``) is only there: its two polynomial searches take 74 and 141 s of CPU
(2026-12-07), which at three repeats would more than double this table's run. The default's CPU time includes
TOPP-RA's.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

PROBLEMS = (("E12, e12_torque_bounded's bounds", "e12_line.toml", {"nlp.torque_max": [1.2e5, 7.5e4]}),
            ("UR5, URDF limits", "ur5_line.toml", {"nlp.torque_max": "urdf"}))


def motion_table(repeats: int = 3, quick: bool = False, root: Path | None = None) -> str:
    from ffopt.io.problem import load_problem
    from ffopt.motion.min_time import MotionLimits, minimum_time
    from ffopt.motion.peers import PathSamples, rigid_motion, ruckig_within_bounds, topp_ra_law

    root = root or Path(__file__).resolve().parents[2] / "problems"
    lines = [f"{'problem':34s} {'plan':30s} {'move [s]':>9s} {'/ TOPP-RA':>9s} {'peak/limit':>10s} {'CPU [s]':>8s}"]
    for title, name, values in PROBLEMS[:1] if quick else PROBLEMS:
        problem = load_problem(root / name).with_values(values)
        limits = MotionLimits.of(problem)
        path = PathSamples.of(problem)
        speed = None if limits.link_speed_max is None else limits.link_speed_max[path.actuated]
        cpu, topp = _median_cpu(lambda: topp_ra_law(path, limits.torque_max, speed_max=speed), repeats)
        motion = rigid_motion(path, topp.resampled(np.arange(0.0, topp.duration + 5e-4, 1e-3)))
        peak = float((np.abs(motion.u).max(0) / limits.torque_max).max())
        lines.append(_row(title, "TOPP-RA (rigid, lower bound)", topp.duration, 1.0, peak, cpu))
        cpu, ruck = _median_cpu(lambda: ruckig_within_bounds(path, limits.torque_max, speed), repeats)
        motion = rigid_motion(path, ruck.resampled(np.arange(0.0, ruck.duration + 5e-4, 1e-3)))
        peak = float((np.abs(motion.u_table).max(0) / limits.torque_max).max())
        lines.append(_row(title, "Ruckig within the bounds", ruck.duration, ruck.duration / topp.duration, peak, cpu))
        for n_shape in (8,) if quick else (8, 16):
            cpu, found = _median_cpu(lambda: minimum_time(problem, limits, n_shape=n_shape, lower_bound=False),
                                     1 if n_shape > 8 else repeats)
            lines.append(_row(title, f"ffopt minimum time, {n_shape} terms", found.duration_s,
                              found.duration_s / topp.duration, found.peak_ratio, cpu))
        cpu, found = _median_cpu(lambda: minimum_time(problem, limits), repeats)  # with TOPP-RA's law: smoothed
        lines.append(_row(title, f"ffopt minimum time, default ({found.time_law})", found.duration_s,
                          found.duration_s / topp.duration, found.peak_ratio, cpu))
    return "\n".join(lines)


def _row(title, plan, move, ratio, peak, cpu) -> str:
    return f"{title:34s} {plan:30s} {move:9.4f} {ratio:9.2f} {peak:10.3f} {cpu:8.2f}"


def _median_cpu(fn, repeats: int):
    times, value = [], None
    for _ in range(max(1, repeats)):
        tic = time.process_time()
        value = fn()
        times.append(time.process_time() - tic)
    return float(np.median(times)), value
