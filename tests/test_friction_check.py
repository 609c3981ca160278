"""Link-side Coulomb friction behind an elastic gear switching faster than the grid: found, said, and the
advice works (ffopt.sim.friction_check)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.sim.friction_check import RESOLVING_STEPS, SWITCH_WIDTHS, _fast_reversals

ROOT = Path(__file__).resolve().parents[1]


def test_switch_time_of_a_linear_velocity_crossing():
    """v = a (t - t0): tanh(v / w) switches over SWITCH_WIDTHS w / a, the reversal at t0."""
    a, w, t0 = 20.0, 1e-3, 0.1234
    t = np.arange(0.0, 0.3, 1e-3)
    times, taus = _fast_reversals(t, a * (t - t0), w, 1e-3)
    assert times == pytest.approx([t0], abs=1e-12) and taus == pytest.approx([SWITCH_WIDTHS * w / a], rel=1e-9)
    # resolved when the switch spans RESOLVING_STEPS steps
    assert _fast_reversals(t, a * (t - t0), 1.01 * RESOLVING_STEPS * 1e-3 * a / SWITCH_WIDTHS, 1e-3) == ([], [])


def test_e12_line_without_link_friction_has_no_warning():
    r = ffopt.plan(ffopt.load_problem(ROOT / "problems" / "e12_line.toml"), verify=False)
    assert "unresolved_friction_reversals" not in r.trajectory.stats


# e12_nonlinear.toml as it was before its friction was widened to what the 1 ms grid resolves
UNRESOLVED_FRICTION = {"model.joints.q1.coulomb_smoothing": 1e-3, "model.joints.q2.coulomb_smoothing": 1e-3,
                       "reference.duration": 0.3}


def test_e12_nonlinear_friction_warning_and_its_advice():
    """The default 1e-3 rad/s smoothing on e12_nonlinear.toml's 0.3 s move (the file has 0.25 rad/s, what this
    warning advises, and 0.375 s): both gears' link friction switches within a fraction of the 1 ms step (the NLP's
    collocation table then verifies to ~20 mm); with the smoothing the warning asks for, no warning and the NLP
    plan verifies like BDF's (measured 0.02 mm)."""
    problem = ffopt.load_problem(ROOT / "problems" / "e12_nonlinear.toml").with_values(UNRESOLVED_FRICTION)
    lines = []
    r = ffopt.plan(problem, method="bdf", verify=False, progress=lines.append)
    found = r.trajectory.stats["unresolved_friction_reversals"]
    assert [f["joint"] for f in found] == ["q1", "q2"]
    assert [f["field"] for f in found] == ["model.joints[1].link_coulomb_friction",
                                          "model.joints[2].link_coulomb_friction"]
    assert all(f["switch_time_s"] < 1e-4 for f in found)
    assert sum(line.startswith("warning: model.joints[") for line in lines) == 2
    advised = problem.with_values({f"model.joints.{f['joint']}.coulomb_smoothing": 1.2 * f["smoothing_needed_rad_per_s"]
                                   for f in found})
    nlp = ffopt.plan(advised, method="nlp")
    assert "unresolved_friction_reversals" not in nlp.trajectory.stats
    assert nlp.verification.cases["feedforward_pd"].max_mm < 0.015  # 2x the 0.0072 mm measured on 2026-11-27
