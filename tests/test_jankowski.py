"""The Jankowski & Van Brussel two-link arm (problems/jankowski_2link.toml) and their discrete-time
inverse-dynamics controller (ffopt.control.discrete_inverse)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.analysis.linear import invariant_zeros, linearize, plant_state_space
from ffopt.analysis.report import analyze_problem
from ffopt.control.discrete_inverse import ControllerSettings, DiscreteInverseController, run_closed_loop
from ffopt.errors import ProblemError

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "jankowski_2link.toml"


@pytest.fixture(scope="module")
def problem():
    return ffopt.load_problem(PROBLEM)


def test_analyze_prints_the_clamped_motor_frequencies_of_the_paper(problem):
    report = analyze_problem(problem, n_points=5, frequency_points=21)
    modes = np.array([f[:2] for f in report.frequencies.all_undamped_hz["clamped"]])
    assert modes.mean(axis=0) == pytest.approx([11.1, 22.5], abs=0.02)  # fitted: 11.100, 22.500
    assert 10.0 < modes[:, 0].min() and modes[:, 0].max() < 12.0  # measured 10.31 .. 11.69 Hz
    assert 21.0 < modes[:, 1].min() and modes[:, 1].max() < 24.0  # measured 21.70 .. 23.73 Hz
    text = report.text()
    assert "(mean 11.10), " in text and "(mean 22.50)" in text
    assert "armature voltage [V]" in text and "needs derivative 5 of the path" in text
    assert report.strangeness.mu == 3  # the torque inverse (mu = 2) plus one for the circuit


def test_the_problem_plans_voltages_verified_by_simulation(problem, tmp_path):
    result = ffopt.plan(problem)
    tr = result.trajectory
    assert tr.input_unit == "V" and tr.electric
    assert result.verification.cases["feedforward_pd"].max_mm < 1e-3  # measured 2.4e-4 mm
    assert np.abs(tr.torques - problem.model.drives.torque(tr.current)).max() < 1e-9
    result.save(tmp_path / "plan", plots=False)
    data = ffopt.io.results.read_trajectory_csv(tmp_path / "plan" / "trajectory.csv")
    assert {"u_q1", "torque_q1", "current_q1"} <= set(data)
    summary = ffopt.load_plan(tmp_path / "plan").summary
    units = {c["name"]: c["unit"] for c in summary["columns"]}
    assert (units["u_q1"], units["torque_q1"], units["current_q1"]) == ("V", "N m", "A")
    assert summary["peak_voltage_V"][0] == pytest.approx(np.abs(tr.u[:, 0]).max())


def test_a_time_law_too_rough_for_the_voltage_is_refused_before_solving(problem):
    rough = problem.with_values({"reference.time_law": "septic"})
    with pytest.raises(ProblemError, match=r"reference.time_law: 'septic' leaves derivative 4 .* needs derivative 5"):
        ffopt.plan(rough)


def test_electrics_add_no_zeros():
    """Zeros of E1 complete (direct drive + passive joint) with the torque and with the voltage as input."""
    p = ffopt.load_problem(ROOT / "problems" / "e1_complete.toml")
    e = {"inductance": 1e-3, "resistance": 0.5, "torque_constant": 2.0, "back_emf_constant": 2.0}
    pe = p.with_values({"model.joints.q1.gear_ratio": 10.0, "model.joints.q1.electrics": e})
    q = np.array([0.7853981633974483, 0.0])
    zt, _ = invariant_zeros(*linearize(p.model, q).state_space())
    ze, _ = invariant_zeros(*plant_state_space(pe.model, linearize(pe.model, q)))
    assert len(zt) == len(ze) == 2
    assert np.sort_complex(ze) == pytest.approx(np.sort_complex(zt), rel=1e-8)


def test_controller_error_falls_with_the_inner_step_and_newton_needs_at_most_three_iterations(problem):
    """Short run (the acceleration phase, 0.3 s). Measured: 0.543 / 0.427 / 0.386 mm for h = H/2,
    H/4, H/6, at most 3 Newton iterations per step."""
    errors = []
    for m in (2, 4, 6):
        r = run_closed_loop(problem.model, problem.reference, ControllerSettings(substeps=m),
                            guess=problem.reference_spec.joint_guess, t_end=0.3)
        assert r.newton_iterations.shape[1] == 3 * m // 2 and r.newton_iterations.max() <= 3
        errors.append(r.max_error_mm)
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.5


def test_controller_error_falls_with_the_sampling_period(problem):
    """Held voltages: the error is dominated by the sampling (measured 0.43, 0.11 mm at H = 10, 5 ms)."""
    errs = [run_closed_loop(problem.model, problem.reference, ControllerSettings(sampling_s=H, substeps=4),
                            guess=problem.reference_spec.joint_guess, t_end=0.3).max_error_mm for H in (0.01, 0.005)]
    assert errs[1] < 0.4 * errs[0]


def test_controller_needs_electrics_and_three_steps():
    e1 = ffopt.load_problem(ROOT / "problems" / "e1_complete.toml")
    with pytest.raises(ProblemError, match="needs DC-motor electrics"):
        DiscreteInverseController(e1.model, e1.reference)
    p = ffopt.load_problem(PROBLEM)
    with pytest.raises(ProblemError, match="substeps must be >= 2"):
        DiscreteInverseController(p.model, p.reference, ControllerSettings(substeps=1))
