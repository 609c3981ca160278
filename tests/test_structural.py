"""Structural analysis (Pantelides + dummy derivatives) and automatic index reduction
(Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 5-6)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from ffopt.analysis.structural import (analyse_dae, differential_index, incidence, pantelides, pryce_offsets,
                                       structural_analysis, structural_index)
from ffopt.analysis.strangeness import strangeness_analysis
from ffopt.dae.dummy_derivatives import reduce_index, solve_inverse_dd
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import SolverError
from ffopt.io.problem import load_problem

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


@pytest.fixture(scope="module")
def e1():
    return load_problem(PROBLEMS / "e1_simplified.toml")


@pytest.fixture(scope="module")
def e12():
    return load_problem(PROBLEMS / "e12_line.toml")


def _pendulum():
    """Cartesian pendulum [px, py, u, v, lam]: the textbook index-3 DAE (Pantelides 1988)."""
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", 5), ca.SX.sym("xd", 5)
    px, py, u, v, lam = (x[i] for i in range(5))
    res = ca.vertcat(xd[0] - u, xd[1] - v, xd[2] + lam * px, xd[3] + lam * py + 9.81, px**2 + py**2 - 1)
    return ca.Function("pendulum", [t, x, xd], [res])


def test_pantelides_on_the_pendulum():
    # known result: the constraint is differentiated twice, the kinematic rows once; lam is
    # algebraic, so the index is 2 + 1 = 3; Pryce's Sigma method gives the same offsets.
    F = _pendulum()
    sigma = incidence(F)
    c, d, match = pantelides(sigma)
    assert c.tolist() == [1, 1, 0, 0, 2]
    assert d.tolist() == [2, 2, 1, 1, 0]
    assert sorted(match.tolist()) == [0, 1, 2, 3, 4]
    cp, dp = pryce_offsets(sigma)
    assert cp.tolist() == c.tolist() and dp.tolist() == d.tolist()
    assert structural_index(c, d) == 3
    hanging = np.array([0.0, -1.0, 0.0, 0.0, 9.81])  # at rest, lam = g: on the solution manifold
    assert differential_index(F, 0.0, hanging) == 3


def test_dummy_choice_follows_the_numbers_not_only_the_preference():
    # hanging straight down the constraint gradient is (0, -2): px cannot be the dummy even though
    # it comes first in the preference order; py and v become algebraic.
    F = _pendulum()
    system, dummies, _, _, _ = analyse_dae(F, np.array([0.0, -1.0, 0.0, 0.0, 9.81]), [0, 1, 2, 3, 4])
    first = sorted(j for j, k in dummies if k == 1)
    assert first == [1, 3]
    assert len(dummies) == int(system.c.sum())  # one dummy per differentiation


def test_structurally_singular_dae_is_reported():
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", 2), ca.SX.sym("xd", 2)
    F = ca.Function("singular", [t, x, xd], [ca.vertcat(x[0] - t, x[0] + 1)])
    with pytest.raises(SolverError, match="singular"):
        pantelides(incidence(F))


def test_e1_paper_numbers(e1):
    # Moberg & Hanssen sec. 5.1.1: nu = 2; mu = 1 with a = 2 algebraic and d = 2 differential variables;
    # the constraint (16e) is differentiated twice (eq. 47), the kinematic rows once.
    r = structural_analysis(e1.model, e1.reference, "I3", e1.reference_spec.joint_guess)
    assert r.structural_index == 2 and r.differential_index == 2
    assert dict(zip(r.equation_names, r.differentiations)) == {"kin_q1": 1, "kin_q2": 1, "link_q2": 0, "path_z": 2}
    assert r.pryce_agrees
    mu = strangeness_analysis(e1.model, e1.reference, "I3", e1.reference_spec.joint_guess)
    assert (mu.mu, mu.a, mu.d) == (1, 2, 2)
    assert len(r.algebraic) == mu.a and len(r.differential) == mu.d
    # the paper's two choices: x^1 = x1' (eq. 43/44, driven joint first) and x2, x4 algebraic (eq. 19-20)
    assert r.algebraic_x() == ["x1", "x3"]
    passive = structural_analysis(e1.model, e1.reference, "I3", e1.reference_spec.joint_guess, prefer="passive")
    assert passive.algebraic_x() == ["x2", "x4"] and passive.differential_x() == ["x1", "x3"]


def test_e1_complete_has_the_same_structure():
    # Moberg & Hanssen sec. 5.1.2: two algebraic, two differential variables, mu = 1 (so nu = 2)
    p = load_problem(PROBLEMS / "e1_complete.toml")
    r = structural_analysis(p.model, p.reference, "I3", p.reference_spec.joint_guess, prefer="passive")
    assert (r.structural_index, r.differential_index) == (2, 2)
    assert r.algebraic_x() == ["x2", "x4"]


def test_e12_paper_numbers(e12):
    # Moberg & Hanssen sec. 5.2.2-5.2.3: nu = 3; x1, x2, x6, x7, x9, x10 algebraic, x3, x4, x5, x8
    # differential (a = 6, d = 4, as Hypothesis 1 gives in sec. 5.2.1)
    r = structural_analysis(e12.model, e12.reference, "I3", e12.reference_spec.joint_guess)
    assert r.structural_index == 3 and r.differential_index == 3
    assert r.algebraic_x() == ["x1", "x2", "x6", "x7", "x9", "x10"]
    assert r.differential_x() == ["x3", "x4", "x5", "x8"]
    assert r.pryce_agrees
    d = r.to_dict()
    assert d["equations"]["path_x"] == 2 and d["equations"]["link_q3"] == 0
    assert "x9" in r.table() and "algebraic" in r.table()


@pytest.mark.parametrize("form, nu", [("I2", 2), ("I1", 1)])
def test_e12_differentiated_forms(e12, form, nu):
    # Moberg & Hanssen sec. 7.4: eq. (33) has index 2, eq. (34) index 1
    r = structural_analysis(e12.model, e12.reference, form, e12.reference_spec.joint_guess)
    assert r.structural_index == nu and r.differential_index == nu


def _without_gear_damping(p):
    ch = p.chain
    joints = tuple(replace(j, damping=0.0) if j.kind == "elastic_gear" else j for j in ch.joints)
    return p.model.variant(replace(ch, joints=joints))


def test_zero_gear_damping_raises_the_index_by_one(e12):
    # Moberg & Hanssen sec. 8: "the index increases one step if the damping is zero": without gear
    # damping the motor velocities leave the link rows, so they need one more differentiation.
    model = _without_gear_damping(e12)
    r = structural_analysis(model, e12.reference, "I3", e12.reference_spec.joint_guess)
    assert r.structural_index == 4 and r.differential_index == 4
    mu = strangeness_analysis(model, e12.reference, "I3", e12.reference_spec.joint_guess)
    assert mu.mu == 3


def test_reduced_system_has_index_one(e1, e12):
    for p in (e1, e12):
        y0 = p.reference.evaluate(np.array([0.0])).ravel()
        q0 = static_equilibrium(p.model, y0, p.reference_spec.joint_guess)
        dae = reduce_index(p.model, p.reference, q0)
        x0 = dae.initial_state(q0)
        assert differential_index(dae.F, 0.0, x0) <= 1
        assert len(dae.algebraic) + len(dae.differential) == 2 * p.model.layout.nq


def test_dummy_derivative_solution_matches_the_fine_i1_solution(e1):
    # automatic reduction + BDF-6 against the hand-written I1 form at h/8 (a second formulation)
    g = e1.reference_spec.joint_guess
    ref = solve_inverse_bdf(e1.model, e1.reference, BdfSettings(order=6, step=1.25e-4, form="I1"), qa_guess=g)
    dd = solve_inverse_dd(e1.model, e1.reference, 6, 1e-3, g)
    # regression values measured on 2026-11-27: u 1.9e-7 of the peak, q 2.8e-8 rad; bounds ~2x
    assert np.abs(dd.u - ref.u[::8]).max() / np.abs(ref.u).max() < 4e-7
    assert np.abs(dd.q - ref.q[::8]).max() < 6e-8
    assert np.abs(dd.tool[:, 2] - dd.y_ref[:, 0]).max() < 1e-12  # the path constraint is kept exactly


def test_dummy_derivative_solution_e12(e12):
    # same check on E12 (index 3; 2.3 s with a cold compile cache, 0.5 s warm)
    g = e12.reference_spec.joint_guess
    ref = solve_inverse_bdf(e12.model, e12.reference, BdfSettings(order=6, step=1.25e-4, form="I1"), qa_guess=g)
    dd = solve_inverse_dd(e12.model, e12.reference, 6, 1e-3, g)
    assert np.abs(dd.u - ref.u[::8]).max() / np.abs(ref.u).max() < 3e-3  # measured 1.1e-3 on 2026-11-27
