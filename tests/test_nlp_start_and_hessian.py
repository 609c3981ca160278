"""The non-causal NLP's start and Hessian (ffopt.nlp.solve.rigid_start, hessian_mode) and the grid's resolution of
an unstable zero (ffopt.settings.nlp.RESOLVED_GROWTH_PER_STEP), each against an independent computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
import ffopt.nlp.solve as nlp_solve
from ffopt.io.problem import load_problem
from ffopt.nlp.collocation import collocation_rule
from ffopt.nlp.solve import rigid_start
from ffopt.settings.nlp import RESOLVED_GROWTH_PER_STEP

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def _growth_per_step(rule, z: float) -> float:
    """The collocation rule's stability function R(z): x(h) of x' = lam x, x(0) = 1, z = lam h, solved on the
    rule's nodes (h x'(tau_j) = sum_r deriv[r, j] x_r = z x_j)."""
    d = rule.degree
    return float(np.linalg.solve(rule.deriv[1:, :].T - z * np.eye(d), -rule.deriv[0, :])[-1])


@pytest.mark.parametrize("degree", range(1, 10))
def test_the_resolved_growth_per_step_is_where_the_rule_falls_two_percent_behind_exp(degree):
    rule = collocation_rule("radau", degree)
    limit = RESOLVED_GROWTH_PER_STEP[degree]
    below = np.linspace(1e-3, limit - 0.01, 200)
    assert all(abs(_growth_per_step(rule, z) / np.exp(z) - 1) <= 0.02 for z in below)
    assert abs(_growth_per_step(rule, limit + 0.01) / np.exp(limit + 0.01) - 1) > 0.02


def test_radau_three_changes_sign_past_its_pole_the_zigzag_of_an_unresolved_zero():
    rule = collocation_rule("radau", 3)
    assert _growth_per_step(rule, 1.0) == pytest.approx(np.e, rel=2e-4)  # 2.71875
    assert _growth_per_step(rule, 3.5) > 0 > _growth_per_step(rule, 3.8)  # the pole near 3.64


def test_the_rigid_start_is_on_the_path_with_the_motors_ahead_by_the_gear_deflection():
    """The arm with a passive forearm flexure: the rigid start's tool on the path (the rigid inverse kinematics),
    the flexure at 0, and each elastic gear deflected by its torque over its stiffness (u - Jm a) / k."""
    problem = load_problem(PROBLEMS / "arm6_passive_forearm.toml")
    model, reference = problem.model, problem.reference
    t = np.linspace(-0.05, reference.t_end + 0.05, 301)
    start = rigid_start(model, reference, t, problem.reference_spec.joint_guess)
    L, joints = model.layout, model.chain.joints
    y = np.array(model.output.map(len(start.t))(start.q[:, : L.n_link].T)).T
    y_ref = np.asarray(reference.evaluate(start.t))
    assert np.abs(y - y_ref).max() < 1e-9
    assert np.abs(start.q[:, list(L.passive)]).max() == 0.0
    for r, link in enumerate(L.gear):
        j = joints[link]
        deflection = start.q[:, L.n_link + r] - start.q[:, link]
        tau = start.u[:, L.actuated.index(link)]
        np.testing.assert_allclose(deflection * j.stiffness + j.motor_inertia * start.a[:, link], tau, atol=1e-9)
    assert start.t[0] == 0.0 and start.t[-1] == reference.t_end  # held outside the reference by the guess


def test_the_gauss_newton_hessian_reaches_the_exact_hessians_plan(monkeypatch):
    """Non-causal exact tracking without bounds (problems/e1_nmp.toml): the objective's Hessian alone reaches the
    solution of the exact Lagrangian Hessian (the constraints' curvature times multipliers as small as the
    objective's gradient)."""
    problem = load_problem(PROBLEMS / "e1_nmp.toml")
    assert nlp_solve.hessian_mode(problem.nlp.__class__(strategy="noncausal"), noncausal=True) == "gauss-newton"
    gauss_newton = ffopt.plan(problem, verify=False).trajectory
    assert gauss_newton.stats["hessian"] == "gauss-newton"
    monkeypatch.setattr(nlp_solve, "hessian_mode", lambda settings, noncausal: "exact")
    exact = ffopt.plan(problem, verify=False).trajectory
    assert exact.stats["hessian"] == "exact"
    scale = np.abs(exact.u).max(axis=0)
    assert np.abs(gauss_newton.u - exact.u).max(axis=0) / scale == pytest.approx(0, abs=1e-6)
