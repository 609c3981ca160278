"""Singularities of the inverse along a motion (ffopt.analysis.decoupling), against Pinocchio.

The arm: tests/data/arm_no_exact_inverse.json, a drawn planar 2-link arm with an elastic-gear
shoulder (32 kg link) and a light passive elbow, tool x as the only output. Its decoupling matrix
is x''' / u = J_x M^-1 e_1 d / J_m, and J_x M^-1 e_1 changes sign when the elbow swings ~0.3 rad:
the shoulder's torque then has no effect on the tool's x (the elbow's reaction cancels it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _robots import pinocchio_decoupling
from random_arms import problem_of

import ffopt
from ffopt.analysis.decoupling import decoupling_along, decoupling_function

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


def _arm():
    return json.loads((DATA / "arm_no_exact_inverse.json").read_text())


def _pin_decoupling(problem, qa):
    return pinocchio_decoupling(problem.model, qa)


def test_the_decoupling_matrix_of_a_passive_elbow_arm_matches_pinocchio():
    """At random states (positions, velocities, motor angles): ffopt's Lie derivative L_g L_f^2 x equals
    Pinocchio's J_x M^-1 e_1 times d / J_m to 1e-9 (two evaluations of the same formula: roundoff)."""
    problem = problem_of(_arm())
    A = decoupling_function(problem.model, [3])
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = np.concatenate([rng.uniform(-np.pi, np.pi, 3), rng.uniform(-5, 5, 3)])
        expected = _pin_decoupling(problem, x[:2])
        assert np.allclose(np.array(A(x)), expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())


def _mixed_arm(damping: float) -> dict:
    """A planar 2-link arm (joint axes y, tool x and z): a direct-drive shoulder, an elastic-gear elbow."""
    body = {"mass": 8.0, "com": [0.3, 0.0, 0.0], "inertia_diag": [0.01, 0.25, 0.25]}
    elbow = {"name": "q2", "kind": "elastic_gear", "axis": [0.0, 1.0, 0.0], "origin": [0.6, 0.0, 0.0], **body,
             "stiffness": 2000.0, "damping": damping, "motor_inertia": 0.2}
    shoulder = {"name": "q1", "kind": "direct", "axis": [0.0, 1.0, 0.0], "origin": [0.0, 0.0, 0.0], **body,
                "motor_inertia": 0.3}
    return {"name": "direct shoulder, elastic elbow",
            "model": {"gravity": [0.0, 0.0, -9.81], "outputs": ["x", "z"], "tool_origin": [0.5, 0.0, 0.0],
                      "joints": [shoulder, elbow]},
            "reference": {"kind": "line", "start_mm": [800.0, -300.0], "end_mm": [700.0, -400.0], "duration": 0.5},
            "meta": {"kind": "mixed"}}


@pytest.mark.parametrize("damping", [3.0, 0.0])
def test_an_arm_of_a_direct_drive_and_an_elastic_gear_is_checked_by_input_degrees(damping):
    """No vector relative degree (x and z see the direct drive at degree 2, the gear at 3, or 4 without
    gear damping): the decoupling matrix by input degrees (a dynamic extension) equals Pinocchio's
    J M^-1 S diag(1, d / J_m) (k / J_m undamped) at random states to 1e-9."""
    problem = problem_of(_mixed_arm(damping))
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.uniform(-np.pi, np.pi, (10, 3)), rng.uniform(-5, 5, (10, 3))])
    rep = decoupling_along(problem.model, np.arange(10.0), x)
    assert rep.by == "inputs" and rep.relative_degree == [2, 3 if damping else 4]
    A = np.array(decoupling_function(problem.model, rep.relative_degree, "inputs").map(10)(x.T))
    for k in range(10):
        expected = _pin_decoupling(problem, x[k, :2])
        assert np.allclose(A[:, 2 * k: 2 * k + 2], expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())


def test_a_sign_change_is_found_where_pinocchio_finds_it():
    """The shoulder held at the path's start, the elbow swinging 0 -> 0.45 -> 0 rad: singular exactly
    between the samples where Pinocchio's J M^-1 e_1 changes sign, and nowhere else."""
    problem = problem_of(_arm())
    t = np.linspace(0.0, 1.0, 401)
    q1 = np.full_like(t, -3.5641)
    q2 = 0.45 * np.sin(np.pi * t)
    x = np.column_stack([q1, q2, q1, np.zeros((t.size, 3))])
    rep = decoupling_along(problem.model, t, x)
    pin_sign = np.sign([_pin_decoupling(problem, [a, b])[0, 0] for a, b in zip(q1, q2)])
    flips = t[np.flatnonzero(pin_sign[1:] != pin_sign[:-1]) + 1]
    assert flips.size == 2
    assert rep.singular and set(flips) <= set(rep.singular_times)
    # nowhere else: within one sample (2.5 ms) of Pinocchio's sign changes (measured: at them, 2026-11-27)
    assert rep.singular_times.min() >= flips[0] - 2.5e-3 and rep.singular_times.max() <= flips[1] + 2.5e-3
    assert "singular at t = " in rep.summary() and rep.to_dict()["singular"]


@pytest.mark.parametrize("name, degrees", [("e12_line", [3, 3]), ("jankowski_2link", [5, 5])])
def test_a_regular_path_is_regular(name, degrees):
    """E12 (Moberg & Hanssen's elastic-gear 2-link arm) and Jankowski & Van Brussel's 2-link arm with
    DC-motor electrics (the currents are states: one more derivative) at rest along their paths."""
    from ffopt.analysis.linear import equilibrium_path

    problem = ffopt.load_problem(ROOT / "problems" / f"{name}.toml")
    ref = problem.reference
    t = np.linspace(ref.t_motion_start, ref.t_motion_end, 30)
    q = equilibrium_path(problem.model, ref, t, problem.reference_spec.joint_guess)
    z = np.zeros((t.size, problem.model.n_z))
    rep = decoupling_along(problem.model, t, np.hstack([q, np.zeros_like(q), z]))
    assert not rep.singular and rep.relative_degree == degrees
    assert "regular" in rep.summary()


def test_an_arm_without_either_degree_is_not_checked():
    """Full rotor coupling and a passive elastic bearing (arm3d_bearing.toml): the decoupling matrix is
    singular at rest by output and by input degrees; the check says so instead of reporting a singularity."""
    from ffopt.analysis.linear import equilibrium_path

    problem = ffopt.load_problem(ROOT / "problems" / "arm3d_bearing.toml")
    ref = problem.reference
    t = np.linspace(ref.t_motion_start, ref.t_motion_end, 5)
    q = equilibrium_path(problem.model, ref, t, problem.reference_spec.joint_guess)
    with pytest.raises(ValueError, match="singular already at the first state"):
        decoupling_along(problem.model, t, np.hstack([q, np.zeros_like(q)]))


def test_a_penalty_plan_through_a_singularity_says_so(tmp_path):
    """The penalty NLP (method auto's last step) on the arm: the plan passes the singularity at
    t = 0.13-0.20 s (measured on 2026-11-27), the console line and summary.json say so, and Pinocchio agrees along
    the plan's own configurations. ~15 s."""
    problem = problem_of(_arm()).with_solver(method="nlp").with_nlp(
        warm_start="none", tracking="penalty", penalty_weight=1e15)
    lines = []
    result = ffopt.plan(problem, progress=lines.append, verify=False)
    dec = result.trajectory.stats["decoupling"]
    assert dec["singular"] and 0.1 < dec["singular_times_s"][0] < dec["singular_times_s"][1] < 0.25
    assert any(line.startswith("warning: the plan passes a singularity of the inverse") for line in lines)
    tr = result.trajectory
    pin_sign = np.sign([_pin_decoupling(problem, q[:2])[0, 0] for q in tr.q])
    flips = tr.t[np.flatnonzero(pin_sign[1:] != pin_sign[:-1]) + 1]
    assert flips.size >= 2 and abs(flips[0] - dec["singular_times_s"][0]) < 1e-12  # the same sample (measured)
    summary = json.loads((result.save(tmp_path / "out", plots=False) / "summary.json").read_text())
    assert summary["solver"]["decoupling"]["singular"]
