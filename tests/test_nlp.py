"""Collocation NLP (ffopt.nlp): judged by re-simulating the torques in the independent forward
model (CVODES, ffopt.sim.plant), by grid refinement, and by three backends agreeing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_structured_derivatives_match_ad, paper_problem
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import ProblemError, SolverError
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.nlp.collocation import collocation_rule
from ffopt.nlp.settings import NlpSettings
from ffopt.nlp.solve import choose_strategy, solve_inverse_nlp, warm_start_trajectory
from ffopt.sim.plant import simulate

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def _load(name):
    p = paper_problem(PROBLEMS / name)
    return p, p.model, p.reference, p.reference_spec.joint_guess


def _resim_error_mm(model, reference, traj, guess):
    """Open-loop tool error of the torques, simulated from rest at the start equilibrium."""
    q0 = static_equilibrium(model, np.asarray(reference.evaluate(np.array([0.0]))).ravel(), guess)
    sim = simulate(model, traj.t, traj.u, q0)
    return 1e3 * np.abs(sim.y - reference.evaluate(traj.t)).max()


def _nlp(problem_name, **changes):
    p, m, r, g = _load(problem_name)
    s = dataclasses.replace(NlpSettings(strategy="causal"), **changes)
    warm, _ = warm_start_trajectory(m, r, g, 1e-3)
    return m, r, g, solve_inverse_nlp(m, r, s, g, warm)


# ------------------------------------------------------------------------------ collocation rule
@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_radau_rule_is_exact_for_polynomials(degree):
    rule = collocation_rule("radau", degree)
    nodes = np.concatenate([[0.0], rule.tau])
    for power in range(degree + 1):  # derivative weights exact up to the interpolation degree
        np.testing.assert_allclose(nodes**power @ rule.deriv, power * rule.tau ** max(power - 1, 0) * (power > 0),
                                   atol=1e-10)
    for power in range(2 * degree - 1):  # Radau quadrature: exact to degree 2d - 2
        assert rule.weights @ rule.tau**power == pytest.approx(1.0 / (power + 1), abs=1e-12)
    assert rule.tau[-1] == pytest.approx(1.0)


def test_unknown_scheme_and_nlp_table_errors():
    with pytest.raises(ProblemError, match="nlp.scheme"):
        collocation_rule("gauss", 3)
    data = load_problem(PROBLEMS / "e1_simplified.toml")
    assert data.nlp.tracking == "exact"  # default [nlp] table
    import tomllib

    raw = tomllib.loads((PROBLEMS / "e1_simplified.toml").read_text())
    raw["nlp"] = {"trackng": "band"}
    with pytest.raises(ProblemError, match=r"nlp\.trackng.*did you mean 'tracking'"):
        problem_from_dict(raw)
    raw["nlp"] = {"tracking": "band", "torque_max": [5.0e4], "band_mm": 2.0}
    s = problem_from_dict(raw).nlp
    assert s.torque_max == (5.0e4,) and s.band_mm == 2.0


# ------------------------------------------------------------------------------ E1, fast
def test_e1_converges_under_grid_refinement():
    """Exact-tracking NLP (I1 collocation): the re-simulated tool error and the distance of u to
    a fine BDF-6 solution both shrink as the grid is refined."""
    p, m, r, g = _load("e1_simplified.toml")
    fine = solve_inverse_bdf(m, r, BdfSettings(order=6, step=2.5e-4, form="I3"), qa_guess=g)
    tool, du = [], []
    for h in (1e-2, 5e-3, 2.5e-3):
        traj = solve_inverse_nlp(m, r, NlpSettings(step=h, strategy="causal"), g, None)
        assert traj.stats["status"] == "Solve_Succeeded"
        tool.append(_resim_error_mm(m, r, traj, g))
        u_fine = np.interp(traj.t, fine.t, fine.u[:, 0])
        du.append(np.abs(traj.u[:, 0] - u_fine).max() / np.abs(fine.u).max())
    assert tool[0] > 2 * tool[1] > 4 * tool[2], tool
    # u agrees with the fine BDF down to ~3e-5 of its peak (the BDF reference's own level)
    assert du[0] > 5 * du[1] and max(du[1:]) < 1e-4, du
    assert tool[-1] < 0.05, tool


def test_e1_warm_start_from_bdf_converges_in_few_iterations():
    m, r, g, traj = _nlp("e1_complete.toml", step=2e-3)
    assert traj.stats["warm_start"] and traj.stats["iterations"] <= 3
    assert traj.stats["planned_tool_error_max_mm"] < 1e-5  # exact tracking at the collocation points
    bdf = solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g)
    assert _resim_error_mm(m, r, traj, g) <= _resim_error_mm(m, r, bdf, g)


def test_e1_torque_bound_respected_and_trade_off_reported():
    p, m, r, g = _load("e1_complete.toml")
    peak = np.abs(solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g).u).max()
    bound = 0.8 * peak
    _, _, _, traj = _nlp("e1_complete.toml", step=2e-3, tracking="penalty", torque_max=(bound,),
                         torque_rate_max=(2e7,))
    assert np.abs(traj.u).max() <= bound * (1 + 1e-6)
    assert traj.stats["torque_bound_use"][0] == pytest.approx(1.0, abs=1e-3)  # the bound is active
    assert traj.stats["torque_rate_bound_use"][0] <= 1 + 1e-6
    planned = traj.stats["planned_tool_error_max_mm"]
    assert planned > 0.01  # the bound costs tool accuracy ...
    verified = _resim_error_mm(m, r, traj, g)
    assert verified == pytest.approx(planned, rel=0.2)  # ... and the plan predicts how much


def test_infeasible_bounds_end_with_a_diagnosis():
    with pytest.raises(SolverError, match=r"nlp\.torque_max\[1\] = 1000 N m .* exact tracking needs at t = .*'band'.*"
                                          r"'penalty'"):
        _nlp("e1_complete.toml", step=5e-3, torque_max=(1e3,))
    with pytest.raises(SolverError, match=r"NLP (not solved|stopped).*nlp.band_mm"):
        _nlp("e1_complete.toml", step=1e-2, tracking="band", band_mm=0.01, torque_max=(1e3,), max_iter=300)


def test_interval_jacobian_assembly_matches_casadi_ad():
    """The interval-by-interval Jacobian assembly (row scaling, Newton) equals CasADi's AD of the
    whole MX graph, at a perturbed point."""
    import casadi as ca

    from ffopt.dae.forms import choose_dummy_set
    from ffopt.nlp.transcription import Transcription

    p, m, r, g = _load("e1_complete.toml")
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    tr = Transcription(m, r, NlpSettings(step=1e-2, strategy="causal"), q_rest, False,
                       choose_dummy_set(m, q_rest[: m.layout.n_link]))
    nlp = tr.build(tr.rest_guess())
    w = nlp.w0 + 0.1 * np.random.default_rng(1).standard_normal(nlp.w0.size)
    J_ad = ca.Function("J", [nlp.w], [ca.jacobian(nlp.g, nlp.w)])(w).sparse()
    J = nlp.info["jac_g"](w)
    assert J.shape == J_ad.shape  # (the MX pattern keeps some structural zeros that SX drops)
    assert abs(J - J_ad).max() <= 1e-12 * abs(J_ad).max()


@pytest.mark.parametrize("tracking", ["band", "penalty"])
def test_structured_derivatives_match_casadi_ad(tracking):
    """Interval-wise Jacobian and Lagrangian Hessian (cyipopt backend) equal CasADi's AD of the
    whole NLP (objective, dynamics, band and torque-rate rows) at a random point and multipliers."""

    from ffopt.dae.forms import choose_dummy_set
    from ffopt.nlp.transcription import Transcription

    p, m, r, g = _load("e1_complete.toml")
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    s = NlpSettings(step=1e-2, strategy="causal", tracking=tracking, torque_rate_max=(1e6,))
    tr = Transcription(m, r, s, q_rest, False, choose_dummy_set(m, q_rest[: m.layout.n_link]))
    nlp = tr.build(tr.rest_guess())
    assert_structured_derivatives_match_ad(nlp, seed=2)


def test_square_nlp_by_newton_matches_ipopt():
    """Causal exact tracking is square: the casadi backend solves it by Newton + sparse LU; IPOPT
    on the same NLP (solve_ipopt) reaches the same point."""
    from ffopt.nlp.backends.casadi_ipopt import solve_ipopt
    from ffopt.nlp.monitor import SolveMonitor

    m, r, g, traj = _nlp("e1_complete.toml", step=5e-3)
    assert traj.stats["nlp_method"].startswith("newton") and traj.stats["success"]
    assert traj.stats["max_constraint_violation_scaled"] < 1e-11
    from ffopt.dae.forms import choose_dummy_set
    from ffopt.nlp.transcription import Transcription

    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    tr = Transcription(m, r, NlpSettings(step=5e-3, strategy="causal"), q_rest, False,
                       choose_dummy_set(m, q_rest[: m.layout.n_link]))
    nlp = tr.build(tr.rest_guess())
    nlp.info["hessian"] = "limited-memory"
    res = solve_ipopt(nlp, False, 1e-8, SolveMonitor(500, 60.0))
    assert res.success and res.method == "ipopt"
    u_ipopt = tr.unpack(res.w, nlp.scales)["u"].T
    assert np.abs(u_ipopt - traj.u).max() < 1e-6 * np.abs(traj.u).max()
    # a non-square NLP (penalty tracking) still goes to IPOPT, and so does any NLP on request
    traj_pen = _nlp("e1_complete.toml", step=5e-3, tracking="penalty")[3]
    assert traj_pen.stats["nlp_method"] == "ipopt"
    traj_ipopt = _nlp("e1_complete.toml", step=5e-3, square_by_newton=False)[3]
    assert traj_ipopt.stats["nlp_method"] == "ipopt" and traj_ipopt.stats["success"]
    assert np.abs(traj_ipopt.u - traj.u).max() < 1e-6 * np.abs(traj.u).max()


def test_auto_backend_matches_nlpsol_on_bounded_problem():
    """backend = auto (IPOPT through its C interface, interval-wise derivatives) and casadi (nlpsol, CasADi AD
    of the whole graph) reach the same optimum of a non-square NLP (penalty tracking, bound)."""
    kw = dict(step=5e-3, tracking="penalty", torque_max=(3.0e4,))
    ref = _nlp("e1_complete.toml", backend="casadi", **kw)[3]
    traj = _nlp("e1_complete.toml", backend="auto", **kw)[3]
    assert ref.stats["nlp_method"] == traj.stats["nlp_method"] == "ipopt"
    assert traj.stats["backend"] == "ipopt-c" and traj.stats["ipopt_library"] == "cyipopt" and traj.stats["success"]
    assert traj.stats["nlp_solver"] == "IPOPT (cyipopt's library) via its C interface"
    # the same NLP and the same IPOPT iterations: measured on 2026-11-27, bound use 1 - 3e-10 (active bound met to
    # the barrier), objective 2.6e-13 relative, u 2.3e-13 of the peak; bounds at IPOPT's tol = 1e-8, which any
    # converged iterate of this NLP meets
    assert traj.stats["torque_bound_use"][0] == pytest.approx(1.0, abs=1e-8)
    assert traj.stats["objective"] == pytest.approx(ref.stats["objective"], rel=1e-8)
    assert np.abs(traj.u - ref.u).max() < 1e-8 * np.abs(ref.u).max()


@pytest.mark.parametrize("backend", ["cyipopt", "ipopt-c", pytest.param("pyomo", marks=pytest.mark.slow)])
def test_backends_agree_on_e1(backend):
    ref = _nlp("e1_complete.toml", step=1e-2, backend="casadi")[3]
    traj = _nlp("e1_complete.toml", step=1e-2, backend=backend)[3]
    assert traj.stats["success"] and traj.stats["backend"] == backend
    # casadi, cyipopt and ipopt-c solve the identical NLP (measured on 2026-11-27: objective, u and q agree to 1e-16,
    # bound at IPOPT's tol = 1e-8); pyomo.dae rounds its time grid to ~1e-6 s (slow; not re-measured)
    tol = 1e-8 if backend in ("cyipopt", "ipopt-c") else 1e-3
    assert traj.stats["objective"] == pytest.approx(ref.stats["objective"], rel=tol)
    assert np.abs(traj.u - ref.u).max() / np.abs(ref.u).max() < tol
    assert np.abs(traj.q - ref.q).max() < tol


# ------------------------------------------------------------------------------ slow studies
def test_e1_nmp_noncausal_nlp_bounded_where_bdf_diverges():
    p, m, r, g = _load("e1_nmp.toml")
    s, info = choose_strategy(m, r, NlpSettings(step=2e-3), g)
    assert info["minimum_phase"] is False and s.strategy == "noncausal" and s.pre_actuation_s > 0
    with pytest.raises(SolverError):  # the causal inverse blows up
        solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g)
    traj = solve_inverse_nlp(m, r, s, g, None)
    assert traj.t[0] == pytest.approx(-s.pre_actuation_s)
    assert np.abs(traj.u).max() < 2e4  # bounded (static scale ~ 0; E1 complete peak ~ 4e4 N m)
    assert _resim_error_mm(m, r, traj, g) < 1.0


def test_e12_nlp_verified_no_worse_than_bdf():
    """E12 exact tracking at h = 1 ms (square NLP, Newton: ~0.3 s; was 5-10 s through IPOPT)."""
    m, r, g, traj = _nlp("e12_line.toml", step=1e-3)  # at 2 ms: 0.08 mm
    bdf = solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g)
    assert traj.stats["iterations"] <= 5 and traj.stats["nlp_method"].startswith("newton")
    assert _resim_error_mm(m, r, traj, g) <= _resim_error_mm(m, r, bdf, g)


def test_e12_torque_bounded_problem():
    p, m, r, g = _load("e12_torque_bounded.toml")
    warm, _ = warm_start_trajectory(m, r, g, 1e-3)
    s = dataclasses.replace(p.nlp, strategy="causal", backend="auto")  # cyipopt, interval-wise derivatives
    traj = solve_inverse_nlp(m, r, s, g, warm)
    tmax = np.array(s.torque_max)
    assert np.all(np.abs(warm.u).max(axis=0)[0] > tmax[0])  # the bound is below the unconstrained peak
    assert np.all(np.abs(traj.u).max(axis=0) <= tmax * (1 + 1e-6))
    assert np.all(np.array(traj.stats["torque_bound_use"]) > 0.99)  # both bounds active
    # regression values measured on 2026-11-27: planned (the penalty's own) tool error 0.0526 mm, re-simulated
    # 0.144 mm; bounds 0.5x-2x and 2x the measured
    assert 0.026 < traj.stats["planned_tool_error_max_mm"] < 0.105
    assert _resim_error_mm(m, r, traj, g) < 0.29


@pytest.mark.slow
def test_backends_agree_on_e12():
    results = {b: _nlp("e12_line.toml", step=1e-2, backend=b)[3] for b in ("casadi", "cyipopt", "pyomo")}
    ref = results["casadi"]
    scale = np.abs(ref.u).max(axis=0)
    for name, traj in results.items():
        tol = 1e-6 if name == "cyipopt" else 2e-3
        assert traj.stats["objective"] == pytest.approx(ref.stats["objective"], rel=tol), name
        assert (np.abs(traj.u - ref.u).max(axis=0) / scale).max() < tol, name


def test_plan_nlp_writes_nlp_statistics(tmp_path):
    import json

    from ffopt.plan import plan

    result = plan(PROBLEMS / "e1_complete.toml", method="nlp", verify=False, backend="cyipopt", warm_start="bdf")
    out = result.save(tmp_path / "plan", plots=False)
    summary = json.loads((out / "summary.json").read_text())
    solver = summary["solver"]
    for key in ("n_variables", "n_constraints", "iterations", "status", "time_ipopt_s", "time_function_eval_s",
                "strategy", "zero_dynamics", "bdf_status"):
        assert key in solver, key
    assert solver["backend"] == "cyipopt" and solver["status"] == "Solve_Succeeded"
    assert summary["settings"]["nlp"]["strategy"] == "causal"
    header = (out / "trajectory.csv").read_text().splitlines()[0]
    assert header.startswith("t,u_q1,qm_q1,dqm_q1")


def test_planned_error_of_angle_outputs_is_in_mrad_not_mm():
    """Joint outputs (rad): the planned error is reported as an angle (mrad), never labelled mm."""
    p, m, r, g = _load("arm3d_joint_ptp.toml")
    traj = solve_inverse_nlp(m, r, dataclasses.replace(p.nlp, step=4e-3, strategy="causal"), g, None)
    assert "planned_tool_error_max_mm" not in traj.stats
    # exact tracking at the collocation points: roundoff (1.1e-13 mrad measured on 2026-11-27)
    assert 0 <= traj.stats["planned_angle_error_max_mrad"] < 1e-12


def test_spral_reaches_the_mumps_optimum_and_needs_casadis_ipopt():
    """nlp.linear_solver = 'spral' (CasADi's IPOPT): backend auto then takes CasADi's IPOPT library through its C
    interface and reaches the optimum the default (MUMPS, cyipopt's library) reaches, as nlpsol with SPRAL does;
    the cyipopt backend's IPOPT has MUMPS only: an error before solving."""
    kw = dict(step=5e-3, tracking="penalty", torque_max=(3.0e4,))
    ref = _nlp("e1_complete.toml", backend="auto", **kw)[3]
    traj = _nlp("e1_complete.toml", backend="auto", linear_solver="spral", **kw)[3]
    nlpsol = _nlp("e1_complete.toml", backend="casadi", linear_solver="spral", **kw)[3]
    assert (ref.stats["ipopt_library"], traj.stats["ipopt_library"]) == ("cyipopt", "casadi")
    assert traj.stats["backend"] == "ipopt-c" and traj.stats["success"] and nlpsol.stats["success"]
    # another linear solver, the same optimum: measured on 2026-11-27 objective 2.1e-13 relative, u 3.0e-13 of the
    # peak; bounds at IPOPT's tol = 1e-8
    for other in (traj, nlpsol):
        assert other.stats["objective"] == pytest.approx(ref.stats["objective"], rel=1e-8)
        assert np.abs(other.u - ref.u).max() < 1e-8 * np.abs(ref.u).max()
    with pytest.raises(ProblemError, match="linear_solver = 'spral' needs CasADi's IPOPT"):
        _nlp("e1_complete.toml", backend="cyipopt", linear_solver="spral", **kw)


def test_ipopt_c_loads_cyipopts_libraries_without_lending_their_symbols():
    """The C-interface backend loads cyipopt's IPOPT with its MUMPS 5.5 and OpenBLAS in a local scope: loaded
    globally, their symbols took the place of CasADi's MUMPS 5.8 inside nlpsol (E12 bounded then ended in
    Restoration_Failed after one iteration). Checked in a fresh process: MUMPS's entry point is not global."""
    import subprocess
    import sys

    code = ("import ctypes; from ffopt.nlp.backends import ipopt_c; "
            "before = hasattr(ctypes.CDLL(None), 'dmumps_c'); ipopt_c.load_library('cyipopt'); "
            "print(before, hasattr(ctypes.CDLL(None), 'dmumps_c'), ipopt_c.available('cyipopt'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "True"]


def test_nlp_plans_keep_the_zero_dynamics_on_disk(tmp_path, monkeypatch):
    """The strategy's zero analysis is computed once per problem and read back after: the same report (worst zero,
    times, every zero) and the same strategy, without calling the analysis again."""
    import ffopt.analysis.linear as linear
    from ffopt.nlp import solve as nlp_solve

    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    problem = load_problem(PROBLEMS / "e1_nmp.toml")
    first = nlp_solve._zero_report_cached(problem)
    assert len(list(tmp_path.glob("nlpzeros_*.json"))) == 1
    monkeypatch.setattr(linear, "zero_dynamics", lambda *a, **k: pytest.fail("analysed again"))
    again = nlp_solve._zero_report_cached(problem)
    assert again.summary() == first.summary() and not again.minimum_phase
    np.testing.assert_array_equal(again.times, first.times)
    for z1, z2 in zip(first.zeros, again.zeros):
        np.testing.assert_array_equal(np.sort_complex(z1), np.sort_complex(z2))
    s1, info1 = choose_strategy(problem.model, problem.reference, NlpSettings(), zero_report=first)
    s2, info2 = choose_strategy(problem.model, problem.reference, NlpSettings(), zero_report=again)
    assert (s1, info1) == (s2, info2) and info1["strategy"] == "noncausal"


def test_a_problem_without_a_file_form_gets_its_zeros_without_the_cache(tmp_path, monkeypatch):
    """A problem assembled from a chain object has no file form to key the cache by: analysed, nothing written."""
    from ffopt.nlp import solve as nlp_solve

    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    problem = load_problem(PROBLEMS / "e1_nmp.toml")
    assembled = problem.with_chain(problem.model.chain)
    with pytest.raises(ProblemError, match="no file form"):
        assembled.to_toml()
    rep = nlp_solve._zero_report_cached(assembled)
    assert rep is not None and not rep.minimum_phase and not list(tmp_path.glob("nlpzeros_*.json"))


@pytest.mark.parametrize("hold", [None, "zoh"])
def test_the_transcription_does_not_change_when_it_builds(hold):
    """Everything a transcription has is set in __init__ and build leaves it as it was (two builds from different
    guesses give two NLPs with their own scales); the grid's blocks of w tile it in the order x0, X, U, Uc."""
    from ffopt.dae.forms import choose_dummy_set
    from ffopt.nlp.transcription import Transcription

    p, m, r, g = _load("e1_complete.toml")
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    s = NlpSettings(step=1e-2, strategy="causal", tracking="exact" if hold is None else "penalty")
    s = dataclasses.replace(s, hold=hold, sample_time=None if hold is None else 2e-2)
    tr = Transcription(m, r, s, q_rest, False, choose_dummy_set(m, q_rest[: m.layout.n_link]))
    before = dict(vars(tr))
    rest = tr.build(tr.rest_guess())
    guess = tr.rest_guess()
    guess.u = guess.u + 5.0  # a larger torque scale
    other = tr.build(guess)
    assert vars(tr) == before and all(vars(tr)[k] is v for k, v in before.items())
    assert not np.array_equal(rest.scales.u, other.scales.u) and np.array_equal(rest.scales.x, other.scales.x)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.grid.K = 1
    gr = tr.grid
    blocks = [gr.x0, gr.X, gr.U, gr.Uc]
    assert blocks[0].start == 0 and blocks[-1].stop == gr.n_w == rest.n_variables
    assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:]))
    assert (gr.Uc.stop - gr.Uc.start) == (0 if hold is None else gr.n_u * tr.hold.n_ctrl)
