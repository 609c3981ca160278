"""[output] sample_time / hold: the plan is made for the hold a controller applies and verified with it.

Checked against closed forms (a held torque on a rigid joint), against the structure the hold imposes
(the NLP's collocation torques are exactly piecewise constant / linear on the control grid) and by
re-simulation of E12 with the stated hold (slow)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_structured_derivatives_match_ad
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import choose_dummy_set
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.settings import NlpSettings
from ffopt.nlp.solve import held_settings, solve_backend, warm_start_trajectory
from ffopt.nlp.transcription import Transcription
from ffopt.plan import plan
from ffopt.sim.plant import SimulationOptions, simulate
from ffopt.trajectory import resample_to_hold, sample_nodes
from tests.test_sim import one_joint_model

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


# ------------------------------------------------------------------------------ problem file
def test_output_table_is_validated_and_named():
    p = load_problem(PROBLEMS / "e12_line.toml")
    assert not p.output.stated and p.output.hold_kind == "linear"
    q = p.with_values({"output.hold": "zoh", "output.sample_time": 4e-3})
    assert q.output.stated and q.output.hold == "zoh" and q.output.sample_time == 4e-3
    with pytest.raises(ProblemError, match=r"output\.hold: must be one of zoh, linear"):
        p.with_values({"output.hold": "foh"})
    with pytest.raises(ProblemError, match=r"output\.sample_time: must be > 0"):
        p.with_values({"output.sample_time": -1e-3})
    with pytest.raises(ProblemError, match=r"output\.sampletime: unknown key \(did you mean 'sample_time'"):
        p.with_values({"output.sampletime": 1e-3})
    # the sample instants must be points of the planning grid: refused before anything is solved
    bad = p.with_values({"output.sample_time": 2.5e-3})
    with pytest.raises(ProblemError, match=r"output\.sample_time \(with solver\.step\): 0.0025 s must be a whole "
                                           r"multiple of the planning step 0.001 s"):
        plan(bad, verify=False)
    with pytest.raises(ProblemError, match=r"output\.sample_time \(with nlp\.step\)"):
        plan(bad.with_values({"solver.method": "nlp", "solver.step": 5e-4}), verify=False)


# ------------------------------------------------------------------------------ simulator
def test_zoh_applies_each_row_until_the_next_on_a_rigid_joint():
    # J q'' = u_k on [t_k, t_k+1): q, v piecewise quadratic / linear, in closed form
    J = 2.0
    t = np.array([0.0, 0.3, 0.5, 1.0, 1.2])
    u = np.array([3.0, -5.0, 1.0, 4.0, 100.0])  # the last row is never applied
    sim = simulate(one_joint_model(J), t, u[:, None], q0=[0.0], options=SimulationOptions(interpolation="zoh"))
    dt = np.diff(t)
    v = np.concatenate([[0.0], np.cumsum(u[:-1] * dt / J)])
    q = np.concatenate([[0.0], np.cumsum(v[:-1] * dt + 0.5 * u[:-1] * dt**2 / J)])
    np.testing.assert_allclose(sim.v[:, 0], v, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(sim.q[:, 0], q, rtol=1e-7, atol=1e-10)
    lin = simulate(one_joint_model(J), t, u[:, None], q0=[0.0], options=SimulationOptions(interpolation="linear"))
    assert abs(lin.q[-1, 0] - q[-1]) > 1e-2  # the hold matters: linear interpolation gives another motion


def test_resampling_to_a_hold_projects_or_averages_the_solver_input():
    p = load_problem(PROBLEMS / "e12_line.toml")
    from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf

    traj = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=2e-3, form="I1"),
                             qa_guess=p.reference_spec.joint_guess)
    n = len(traj.t) - 1
    idx = sample_nodes(n, 3)
    assert idx[0] == 0 and idx[-1] == n and np.all(np.diff(idx) <= 3) and n % 3 != 0  # a shorter last sample
    np.testing.assert_array_equal(resample_to_hold(traj, 1, "linear").u, traj.u)  # its own grid: unchanged
    lin = resample_to_hold(traj, 3, "linear")
    np.testing.assert_array_equal(lin.q, traj.q[idx])
    # L2 projection: the residual is orthogonal to every hat function of the sample grid (dense quadrature)
    tt = np.linspace(traj.t[0], traj.t[-1], 40 * n + 1)
    resid = np.interp(tt, traj.t, traj.u[:, 0]) - np.interp(tt, lin.t, lin.u[:, 0])
    w = np.full(tt.size, tt[1] - tt[0])
    w[[0, -1]] *= 0.5
    for j in (0, 7, len(idx) // 2, len(idx) - 1):
        hat = np.interp(tt, lin.t, np.eye(len(idx))[j])
        assert abs(np.sum(w * resid * hat)) < 1e-6 * np.abs(traj.u).max() * (lin.t[1] - lin.t[0])
    assert np.abs(lin.u - traj.u[idx]).max() > 1.0  # and it is not the node values
    zoh = resample_to_hold(traj, 3, "zoh")
    # zoh of a quadratic u = c t^2 (u'' = 2c): the average of its linear interpolant over the 3 steps of the
    # sample, (u0 + 2 u1 + 2 u2 + u3) / 6, minus T^2/12 u'' (first-moment correction), T = 6 ms
    c = 3e7
    quad = dataclasses.replace(traj, u=np.column_stack([c * traj.t**2, -c * traj.t**2]))
    zq = resample_to_hold(quad, 3, "zoh")
    for k in (0, 5, len(idx) // 2):
        i = idx[k]
        mean = (quad.u[i] + 2 * quad.u[i + 1] + 2 * quad.u[i + 2] + quad.u[i + 3]) / 6
        np.testing.assert_allclose(zq.u[k], mean - (6e-3) ** 2 / 12 * np.array([2 * c, -2 * c]), rtol=1e-9, atol=1e-6)
    assert zoh.hold == "zoh" and zoh.stats["hold"] == "zoh" and zoh.stats["sample_time_s"] == pytest.approx(6e-3)
    assert "held from this row" in dict((c[0], c[2]) for c in zoh.column_spec())["u_q1"]


# ------------------------------------------------------------------------------ NLP
@pytest.mark.parametrize("hold", ["zoh", "linear"])
def test_nlp_plans_a_torque_that_is_exactly_held_on_the_control_grid(hold):
    from ffopt.io.problem import OutputSettings

    p = load_problem(PROBLEMS / "e1_complete.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    s = held_settings(NlpSettings(step=5e-3, strategy="causal"), OutputSettings(1e-2, hold))
    assert s.tracking == "penalty" and s.hold == hold  # exact tracking cannot hold u
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    tr = Transcription(m, r, s, q_rest, False, choose_dummy_set(m, q_rest[: m.layout.n_link]))
    assert tr.hold.m == 2
    warm, _ = warm_start_trajectory(m, r, g, 5e-3)
    nlp = tr.build(tr.guess_from_trajectory(warm))
    nlp.info["hessian"] = "exact"
    res = solve_backend("casadi", nlp, True, s, SolveMonitor(200, 60.0), tr)
    assert res.success
    sol = tr.unpack(res.w, nlp.scales)
    U, Uc = sol["u"][:, 1:], sol["u_held"]
    t_nodes = tr.hold.t_nodes
    assert np.allclose(np.diff(t_nodes[:-1]), 1e-2)
    # a Radau end point belongs to the sample on its left
    sample = np.searchsorted(t_nodes, tr.tc - 1e-9 * tr.h, side="right") - 1
    scale = np.abs(Uc).max()
    if hold == "zoh":
        assert np.abs(U - Uc[:, sample]).max() < 1e-9 * scale
    else:
        theta = (tr.tc - t_nodes[sample]) / np.diff(t_nodes)[sample]
        assert np.abs(U - (Uc[:, sample] * (1 - theta) + Uc[:, sample + 1] * theta)).max() < 1e-9 * scale
        np.testing.assert_allclose(Uc[:, 0], tr.u_rest)  # causal: the torque starts at rest
    # and the input varies: not a trivially constant plan
    assert np.ptp(Uc) > 0.1 * scale


def test_exact_tracking_with_a_hold_is_refused_in_the_transcription():
    p = load_problem(PROBLEMS / "e1_complete.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    s = dataclasses.replace(NlpSettings(step=5e-3, strategy="causal"), hold="zoh")
    with pytest.raises(ProblemError, match="output.hold: a held input cannot track the path exactly"):
        Transcription(m, r, s, q_rest, False, choose_dummy_set(m, q_rest[: m.layout.n_link]))


@pytest.mark.parametrize("hold", ["zoh", "linear"])  # ~2-3 s each
def test_e12_plan_with_a_stated_hold_resimulates_to_what_was_planned(hold):
    """E12 at a 2 ms sample period: the NLP made for the hold re-simulates with that hold to < 1 um
    open loop and with the motor PD (results/nlp.md: 0.09-0.19 um / 0.025-0.028 um); the table on the
    collocation points interpolated linearly (no [output] table) re-simulates to 0.092 mm."""
    p = load_problem(PROBLEMS / "e12_line.toml").with_values(
        {"solver.method": "nlp", "nlp.step": 2e-3, "nlp.backend": "auto", "output.hold": hold,
         "output.sample_time": 2e-3})
    res = plan(p, verify="default")
    tr = res.trajectory
    assert np.allclose(np.diff(tr.t), 2e-3) and tr.stats["hold"] == hold
    cases = res.verification.cases
    # regression values measured on 2026-11-27: open loop 4.1e-5 (zoh) / 2.4e-4 mm (linear), with the PD
    # 3.7e-5 / 3.2e-5 mm; bounds 2x the larger
    assert cases["feedforward_open_loop"].max_mm < 5e-4
    assert cases["feedforward_pd"].max_mm < 8e-5
    out = res.summary()["settings"]["output"]
    assert out["hold"] == hold and out["sample_time_s"] == pytest.approx(2e-3) and out["stated"]
    assert res.summary()["verification"]["tool_error"]["feedforward_open_loop"]["description"].startswith(
        "plan torques" + ("" if hold == "linear" else " (zoh)"))


@pytest.mark.parametrize("hold", ["zoh", "linear"])
def test_structured_derivatives_with_a_hold_match_casadi_ad(hold):
    """The interval-wise Jacobian / Hessian (cyipopt, auto) with the hold rows and the torque-rate rows on
    the control grid equal CasADi's AD of the whole NLP at a random point."""

    from ffopt.io.problem import OutputSettings

    p = load_problem(PROBLEMS / "e1_complete.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    s = held_settings(NlpSettings(step=1e-2, strategy="causal", torque_rate_max=(1e6,)), OutputSettings(3e-2, hold))
    tr = Transcription(m, r, s, q_rest, False, choose_dummy_set(m, q_rest[: m.layout.n_link]))
    nlp = tr.build(tr.rest_guess())
    assert_structured_derivatives_match_ad(nlp, seed=3)


def test_saved_zoh_plan_is_resimulated_with_its_hold(tmp_path):
    """ffopt simulate reads the hold from the plan folder's summary.json: open loop it reproduces the plan's
    own verification (zoh), not the linear interpolation of the same rows."""
    from ffopt.closed_loop import simulate as closed_loop

    res = plan(PROBLEMS / "e12_held.toml", verify="default")
    folder = res.save(tmp_path / "plan", plots=False)
    out = closed_loop(PROBLEMS / "e12_held.toml", folder, controller="none")
    run = out.runs[out.main]
    assert run.simulation.stats["interpolation"] == "zoh"
    assert run.error.max_mm == pytest.approx(res.verification.cases["feedforward_open_loop"].max_mm, rel=1e-3, abs=1e-6)
    assert run.error.max_mm < 1e-4  # 2.5x the 4.1e-5 mm measured on 2026-11-27 (e12_held.toml: zoh at 2 ms)


def test_cli_sample_time_and_hold(tmp_path, capsys):
    """--sample-time / --hold set [output]: the table is written at the period and summary.json records it; a
    period that is not a multiple of the step is refused as bad input (exit 2) naming output.sample_time."""
    import json

    from ffopt.cli.main import main

    e12 = str(PROBLEMS / "e12_line.toml")
    assert main(["plan", e12, "--out", str(tmp_path / "bad"), "--quiet", "--sample-time", "0.0025"]) == 2
    assert "output.sample_time (with solver.step)" in capsys.readouterr().err
    out = tmp_path / "held"
    assert main(["plan", e12, "--out", str(out), "--quiet", "--no-plots", "--sample-time", "0.004", "--hold", "zoh"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["output"]["hold"] == "zoh" and summary["settings"]["output"]["sample_time_s"] == 0.004
    t = np.loadtxt(out / "trajectory.csv", delimiter=",", skiprows=1, usecols=0)
    assert np.allclose(np.diff(t)[:-1], 4e-3)
    assert "output.hold" in (out / "problem.toml").read_text() or "[output]" in (out / "problem.toml").read_text()
