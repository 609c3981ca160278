"""The settled cycle time: from the motion's start until the tool stays within the tolerance of the end pose for
good, over the table and the settle window after it (ffopt.sim.settle.settled_cycle_time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.sim.settle import settled_cycle_time

ROOT = Path(__file__).resolve().parents[1]


def test_settled_cycle_time_on_a_decaying_oscillation():
    """A tool that leaves the end pose after the motion and decays as e^(-t/tau): the last time outside the
    tolerance is where the envelope crosses it (to the grid step), counted from the motion's start."""
    t = np.linspace(0.0, 10.0, 100001)
    start, end, tau, amplitude, tol = 0.5, 1.5, 0.8, 10.0, 0.1
    error = np.where(t < end, 0.0, amplitude * np.exp(-(t - end) / tau))
    expected = end + tau * np.log(amplitude / tol) - start
    assert settled_cycle_time(t, error > tol, start, end) == pytest.approx(expected, abs=2e-4)
    assert settled_cycle_time(t, np.zeros_like(t, bool), start, end) == pytest.approx(end - start)
    assert settled_cycle_time(t, t > 9.0, start, end) is None  # still outside at the last sample


def test_plans_report_their_settled_cycle():
    """E12 rest to rest lands at rest: the settled cycle is the move; exact tracking of poly11 rings after the table
    (its zero dynamics): longer, or never within the window."""
    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    rest = ffopt.plan(problem).verification.cases["feedforward_pd"].settle
    assert rest.settled_cycle_s == pytest.approx(0.3, abs=1e-9)
    exact = ffopt.plan(problem.with_values({"solver.end_at_rest": False})).verification.cases["feedforward_pd"].settle
    assert exact.settled_cycle_s is None or exact.settled_cycle_s > 0.3 + 0.5  # rings past the rest after the move
