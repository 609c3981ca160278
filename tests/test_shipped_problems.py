"""Every shipped problem plans with its own settings and verifies with the motor PD loop (slow).

A problem file is the first thing a user copies: each must plan as it is, with the method it names,
and its verified tool error must be small against its motion. The bound, 0.5 mm with the motor PD,
is above every shipped plan's measured error (at most 0.25 mm: E1 at h = 5 ms) and far below what a
rigid-model feedforward gives on any of them (12 mm to 925 mm). Minimum-phase problems also plan by
the NLP (exact tracking, the problem's grid) to the same bound, unless their file says why not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = sorted((ROOT / "problems").glob("*.toml"))
BOUND_MM = 0.5
# minimum-phase problems whose NLP would be a large square system (long prefiltered moves of the r3:
# 1700-3400 intervals of a 12-coordinate model), whose file plans them by the NLP already, or (e12_nonlinear)
# whose link-side Coulomb friction switches within a fraction of a step: ffopt warns (tests/test_friction_check.py),
# BDF's table verifies to 0.05 mm, the NLP's collocation table to 20 mm
NLP_SKIP = {"manutec_r3_benchmark.toml", "manutec_r3_ptp.toml", "manutec_r3_step.toml",
            "manutec_r3_nonlinear.toml", "canadarm_tool_path.toml", "e12_torque_bounded.toml", "e1_nmp.toml",
            "arm3d_bearing.toml", "e12_nonlinear.toml", "e12_held.toml"}


@pytest.mark.slow
@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.name)
def test_shipped_problem_plans_and_verifies(path):
    problem = ffopt.load_problem(path)
    result = ffopt.plan(problem)
    err = result.verification.cases["feedforward_pd"].max_mm
    assert np.isfinite(err) and err < BOUND_MM, (path.name, err)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in PROBLEMS if p.name not in NLP_SKIP], ids=lambda p: p.name)
def test_shipped_minimum_phase_problem_plans_by_the_nlp(path):
    problem = ffopt.load_problem(path)
    result = ffopt.plan(problem, method="nlp")
    err = result.verification.cases["feedforward_pd"].max_mm
    assert np.isfinite(err) and err < BOUND_MM, (path.name, err)
