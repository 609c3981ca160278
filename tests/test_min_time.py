"""Minimum-time rest-to-rest moves (ffopt.motion.min_time) against analytic bounds.

A rigid link of inertia J turned by theta under |u| <= tau_max: u = J theta s''(tau) / T^2 for a time law s(tau),
so a law of the searched family needs T >= sqrt(J theta max|s''| / tau_max). No law beats the bang-bang time
2 sqrt(theta J / tau_max), and the search must do at least as well as the unshaped base law (poly11,
max|s''| = time_law_peak(poly11, 2)). With an elastic gear of growing stiffness the shortest move tends to the
rigid link's (the gear's deflection ~ 1/k).
"""

from __future__ import annotations

import numpy as np
import pytest

from ffopt.errors import ProblemError
from ffopt.io.problem import problem_from_dict
from ffopt.motion.min_time import MotionLimits, minimum_time
from ffopt.reference.paths import time_law_peak
from ffopt.reference.time_laws import get_time_law

J = 1.0  # kg m^2: 0.1 + 2 * 0.5^2 + 0.4 (link, its mass at 0.5 m, the motor)
THETA = np.pi / 2
TORQUE = 10.0
BANG_BANG = 2 * np.sqrt(THETA * J / TORQUE)
POLY11 = np.sqrt(J * THETA * time_law_peak(get_time_law("poly11"), 2) / TORQUE)


def one_link(kind: str = "direct", stiffness: float | None = None, torque_max=TORQUE) -> dict:
    joint = {"name": "j1", "kind": kind, "axis": [0.0, 0.0, 1.0], "mass": 2.0, "com": [0.5, 0.0, 0.0],
             "inertia_diag": [0.0, 0.0, 0.1]}
    if kind == "elastic_gear":  # the motor inertia behind the gear, the link alone in front of it
        joint.update(stiffness=stiffness, damping=0.05 * np.sqrt(stiffness * 0.6), motor_inertia=0.4)
    else:
        joint["motor_inertia"] = 0.4
    problem = {"name": "one link", "model": {"gravity": [0.0, 0.0, 0.0], "outputs": ["j1"],
                                             "tool_origin": [1.0, 0.0, 0.0], "joints": [joint]},
               "reference": {"kind": "joint_ptp", "q_start_deg": [0.0], "q_end_deg": [90.0], "duration": 1.0,
                             "time_law": "poly11", "rest_before": 0.01, "rest_after": 0.2},
               "solver": {"method": "bdf", "order": 4, "step": 1e-3}}
    if torque_max is not None:
        problem["nlp"] = {"torque_max": [torque_max]}
    return problem


def test_rigid_link_lies_between_the_bang_bang_time_and_the_base_law():
    found = minimum_time(problem_from_dict(one_link()), n_shape=6, lower_bound=False)
    assert BANG_BANG < found.duration_s < POLY11 * (1 + 1e-3)
    assert found.peak_ratio == pytest.approx(1.0, abs=2e-2)  # on the bound, not below it
    assert found.bracket_s[1] / found.bracket_s[0] - 1 <= 0.011
    assert found.problem.reference_spec.duration == pytest.approx(found.duration_s)


def test_a_stiff_elastic_gear_needs_the_rigid_links_time():
    """k = 1e5 N m/rad (the gear's mode at 65 Hz): within 0.2 % of the rigid link (measured 0.02 %)."""
    rigid = minimum_time(problem_from_dict(one_link()), n_shape=6, lower_bound=False).duration_s
    stiff = minimum_time(problem_from_dict(one_link("elastic_gear", 1e5)), n_shape=6, lower_bound=False).duration_s
    assert stiff == pytest.approx(rigid, rel=2e-3)


@pytest.mark.slow
def test_elastic_gear_tends_to_the_rigid_link_as_it_stiffens():
    """The gap to the rigid link's time shrinks as the gear stiffens (measured 1e2: -7.8 %, 1e3: -1.7 %, 1e4: -0.14 %:
    a soft gear stores energy and is faster than the rigid link's smooth law), and no move beats the bang-bang
    time of the whole inertia (the mean angle (Jm qm + Jl qa) / J obeys J x'' = u)."""
    rigid = minimum_time(problem_from_dict(one_link()), n_shape=6, lower_bound=False).duration_s
    gaps = [abs(minimum_time(problem_from_dict(one_link("elastic_gear", k)), n_shape=6,
                             lower_bound=False).duration_s / rigid - 1) for k in (1e2, 1e3, 1e4)]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 3e-3
    assert rigid * (1 - max(gaps)) > BANG_BANG


def test_speed_limit_is_respected_and_reported_active():
    problem = problem_from_dict(one_link(torque_max=1e3))  # a torque bound far away: the speed limit decides
    limits = MotionLimits(torque_max=np.array([1e3]), link_speed_max=np.array([2.0]), n_link=1)
    found = minimum_time(problem, limits, n_shape=6, lower_bound=False)
    # a law's peak speed theta s'/T is at least its mean theta / T: T >= theta / v_max
    assert found.duration_s > THETA / 2.0
    from ffopt.dae.inverse import solve_inverse_bdf
    from ffopt.reference.build import reference_from_spec
    spec = found.problem.reference_spec
    traj = solve_inverse_bdf(found.problem.model, reference_from_spec(spec, found.problem.model), found.problem.solver)
    assert np.abs(traj.v[:, 0]).max() <= 2.0 * (1 + 1e-3)
    active = limits.active(traj, ["j1"])
    assert [a["limit"] for a in active] == ["link_speed"]


def test_without_a_limit_minimum_time_is_refused():
    with pytest.raises(ProblemError, match="needs a limit"):
        minimum_time(problem_from_dict(one_link(torque_max=None)), lower_bound=False)


def test_a_rigid_direct_drive_link_plans_its_inverse_dynamics():
    """A chain without elastic or passive joints has no differential rows in the inverse DAE (it crashed on an
    empty index); its torque is J theta s''(tau) / T^2, poly11's peak at T = 1 s."""
    from ffopt.plan import plan

    result = plan(problem_from_dict(one_link()))
    assert np.abs(result.trajectory.u).max() == pytest.approx(J * THETA * time_law_peak(get_time_law("poly11"), 2),
                                                             rel=1e-3)
    assert result.verification.verdict.status == "verified"


def test_a_non_minimum_phase_arm_by_the_non_causal_nlp():
    """E1 with a zero at +56 rad/s has no BDF plan: its moves are the non-causal NLP's. Under 80 % of its 0.1 s
    move's peak torque the shortest move is longer than 0.1 s, on the bound, at rest, and above the rigid lower
    bound (measured 0.1143 s against TOPP-RA's 0.1088 s)."""
    from pathlib import Path

    import ffopt

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "e1_nmp.toml")
    bound = 0.8 * 8508.83  # N m: 0.8 x the 0.1 s move's peak (measured on 2026-11-28)
    from ffopt.plan import minimum_time_of  # the planner makes the non-causal NLP moves

    found = minimum_time_of(problem.with_values({"nlp.torque_max": [bound]}), lower_bound=False)
    assert all(s.get("route", "").startswith("nlp") for s in found.searches)
    with pytest.raises(ProblemError, match="call ffopt.plan.minimum_time"):  # without the planner: said
        minimum_time(problem.with_values({"nlp.torque_max": [bound]}), lower_bound=False)
    assert 0.1 < found.duration_s < 0.1 * 1.25  # the dynamic torque falls at least like 1/T (gravity's share not)
    assert 0.98 <= found.peak_ratio <= 1.0 and all(s["at_rest"] for s in found.searches)


def test_duration_min_in_the_problem_file():
    """reference.duration = "min" marks the problem (its duration is duration_max until the search sets it); the
    search's problem holds the duration found (and no duration_max); misuse names the key."""
    problem = problem_from_dict({**one_link(), "reference": {**one_link()["reference"], "duration": "min",
                                                             "duration_max": 3.0}})
    spec = problem.reference_spec
    assert spec.minimum_time and spec.duration == 3.0
    found = minimum_time(problem, n_shape=4, lower_bound=False)
    assert not found.problem.reference_spec.minimum_time
    assert np.ravel(found.problem.to_dict()["reference"]["duration"])[0] == found.duration_s < 3.0
    assert "duration_max" not in found.problem.to_dict()["reference"]
    with pytest.raises(ProblemError, match="reference.duration_max: bounds the search"):
        problem_from_dict({**one_link(), "reference": {**one_link()["reference"], "duration_max": 3.0}})
    with pytest.raises(ProblemError, match="reference.speed_max_deg_s: with duration = \"min\""):
        problem_from_dict({**one_link(), "reference": {**one_link()["reference"], "duration": "min",
                                                       "speed_max_deg_s": 90.0}})


def test_plan_with_duration_min_records_the_search_and_verifies(tmp_path):
    """ffopt.plan of a problem with duration = "min": the plan is made for the duration found, verified, and
    summary.json holds the search (method_choice.minimum_time: duration, active limits)."""
    import json

    import ffopt

    problem = problem_from_dict({**one_link("elastic_gear", 1e4), "reference": {**one_link()["reference"],
                                                                                 "duration": "min"}})
    result = ffopt.plan(problem)
    record = result.method_choice["minimum_time"]
    assert result.verification.verdict.status == "verified"
    assert result.problem.reference_spec.duration == pytest.approx(record["duration_s"])
    assert [a["limit"] for a in record["active_limits"]] == ["torque"] and record["active_limits"][0]["joint"] == "j1"
    summary = json.loads((result.save(tmp_path / "plan") / "summary.json").read_text())
    assert summary["method_choice"]["minimum_time"]["duration_s"] == pytest.approx(record["duration_s"])


def test_cli_min_time_without_a_limit_is_refused(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", str(root / "problems" / "e12_line.toml"),
                           "--min-time", "--out", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 2 and "minimum time needs a limit" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_bench_motion_table_side_by_side():
    """ffopt bench --table motion --quick: TOPP-RA, Ruckig and ffopt's minimum time on E12 in one run; ffopt's move
    is no shorter than TOPP-RA's rigid bound and within the bounds."""
    import re

    from ffopt.bench import run_bench

    text = run_bench(quick=True, repeats=1, tables=("motion",))
    rows = {m.group(1).strip(): (float(m.group(2)), float(m.group(3)), float(m.group(4)))
            for m in re.finditer(r"E12, e12_torque_bounded's bounds\s+(.+?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+",
                                 text)}
    topp, ffopt_row = rows["TOPP-RA (rigid, lower bound)"], rows["ffopt minimum time, 8 terms"]
    assert ffopt_row[0] > topp[0] and ffopt_row[1] >= 1.0 and ffopt_row[2] <= 1.0
    assert rows["Ruckig within the bounds"][0] > topp[0]
    default = rows["ffopt minimum time, default (poly11)"]  # E12's smoothed law does not rest: the polynomials'
    assert default[0] > topp[0] and default[2] <= 1.0


def test_a_bound_below_the_holding_torque_is_named_as_such():
    """Under gravity a bound below the static torque of the path's end cannot be met by any duration: the search
    stops when a longer move no longer lowers the ratio and says why."""
    data = one_link(torque_max=1.0)
    data["model"]["gravity"] = [0.0, -9.81, 0.0]  # the link horizontal at the end: 2 kg x 9.81 x 0.5 m = 9.8 N m
    with pytest.raises(ProblemError, match="holding the arm against gravity"):
        minimum_time(problem_from_dict(data), n_shape=4, lower_bound=False)


def test_a_hand_written_arms_speed_limit_from_its_problem_file():
    """model.joints' speed_max_rad_s: the link (and its motor) stay below it in the minimum-time move."""
    data = one_link("elastic_gear", 1e5, torque_max=1e3)
    data["model"]["joints"][0]["speed_max_rad_s"] = 2.0
    problem = problem_from_dict(data)
    limits = MotionLimits.of(problem)
    assert limits.link_speed_max.tolist() == [2.0] and limits.motor_speed_max.tolist() == [2.0]
    found = minimum_time(problem, n_shape=6, lower_bound=False)
    assert found.duration_s > THETA / 2.0 and found.peak_ratio <= 1.0
    with pytest.raises(ProblemError, match="speed_max_rad_s"):
        data["model"]["joints"][0]["speed_max_rad_s"] = -1.0
        problem_from_dict(data)


def test_a_urdf_arms_limits_are_its_effort_and_velocity_limits():
    """Without nlp.torque_max a URDF model's minimum time keeps its <limit effort> and <limit velocity>."""
    from pathlib import Path

    import ffopt

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "ur5_line.toml")
    assert problem.nlp.torque_max is None
    limits = MotionLimits.of(problem)
    effort = {j.name: j.effort for j in problem.urdf.joints}
    assert limits.torque_max.tolist() == [effort[problem.chain.joints[i].name] for i in problem.model.layout.actuated]
    assert np.all(np.isfinite(limits.link_speed_max))


def test_without_toppra_the_search_says_it_has_no_lower_bound(monkeypatch):
    """The rigid lower bound is an optional extra (.[peers]): without it the console and the record say so."""
    import sys

    monkeypatch.setitem(sys.modules, "toppra", None)  # import toppra raises ImportError
    lines = []
    found = minimum_time(problem_from_dict(one_link()), n_shape=4, progress=lines.append)
    assert found.lower_bound_s is None and found.gap is None
    assert found.lower_bound_method.startswith("no lower bound: toppra is not installed (pip install 'ffopt[peers]')")
    assert "polynomial laws only" in found.lower_bound_method and found.time_law == "poly11"
    assert any("no lower bound: toppra is not installed" in line for line in lines)
    unasked = minimum_time(problem_from_dict(one_link()), n_shape=4, lower_bound=False)
    assert unasked.lower_bound_method is None  # not asked for: nothing to explain


def test_a_rigid_link_reaches_the_bang_bang_time_within_one_percent():
    """With TOPP-RA's law at hand the search smooths it (a spline law): the rigid link's move is the bang-bang time
    plus 7/8 of the narrowest kernel the step allows (8 cells of 2 steps: 0.25 ms steps, 1.008x measured), on the
    bound, and the plan verifies."""
    import ffopt

    data = one_link()
    data["solver"]["step"] = 2.5e-4
    found = minimum_time(problem_from_dict(data))
    assert found.time_law == "spline" and found.problem.reference_spec.time_law == "spline"
    assert found.lower_bound_s == pytest.approx(BANG_BANG, rel=1e-3)  # TOPP-RA: the bang-bang time
    assert BANG_BANG < found.duration_s < 1.01 * BANG_BANG
    assert 0.98 <= found.peak_ratio <= 1.0
    assert ffopt.plan(found.problem).verification.verdict.status == "verified"


def test_with_an_elastic_gear_the_smoothed_law_tends_to_the_rigid_link_as_it_stiffens():
    """The smoothed time-optimal family on the one link with a gear of 1e3, 1e4, 1e5 N m/rad (measured 1.104,
    1.036, 1.027x the bang-bang time at 1 ms steps, the last near the narrowest kernel's 1.019x)."""
    rigid = minimum_time(problem_from_dict(one_link()))
    elastic = [minimum_time(problem_from_dict(one_link("elastic_gear", k))) for k in (1e3, 1e4, 1e5)]
    assert all(f.time_law == "spline" for f in (rigid, *elastic))
    durations = [f.duration_s for f in elastic]
    assert durations[0] > durations[1] > durations[2] > rigid.duration_s * (1 - 2e-3)
    assert durations[2] < 1.03 * BANG_BANG and rigid.duration_s < 1.02 * BANG_BANG


def test_an_arm_whose_zero_dynamics_ring_falls_back_to_the_polynomial_family():
    """E12's passive-body mode (zeros -0.63 +- 50j rad/s) keeps ringing after an exactly tracked smoothed
    time-optimal law: the search says so and shapes a polynomial law for rest instead."""
    from pathlib import Path

    import ffopt

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "e12_torque_bounded.toml")
    lines = []
    found = minimum_time(problem.with_solver(method="bdf"), progress=lines.append)
    assert found.time_law == "poly11" and found.time_law_shape and "does not end at rest" in found.family_note
    assert any("does not end at rest" in line for line in lines)
    assert found.to_dict()["family_note"] == found.family_note


def test_the_ur5_from_its_urdf_moves_within_1_15x_the_rigid_time_optimal_move():
    """The issue's target on the UR5 (URDF effort and velocity limits, elastic gears): ffopt.plan with duration =
    "min" is verified during and after the move, ends at rest, stays within every limit, and its settled cycle is at
    most 1.15x TOPP-RA's rigid bound (1.08x measured: 0.3235 s against 0.2991 s)."""
    from pathlib import Path

    import ffopt

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "ur5_line.toml")
    problem = problem.with_values({"reference.duration": "min", "reference.duration_max": 2.0})
    result = ffopt.plan(problem)
    record = result.method_choice["minimum_time"]
    assert record["time_law"] == "spline"
    assert result.verification.verdict.status == "verified"
    limits = MotionLimits.of(result.problem)
    assert np.abs(limits.ratios(result.trajectory)).max() <= 1.0
    settled = result.verification.cases["feedforward_pd"].settle.settled_cycle_s
    assert settled == pytest.approx(record["duration_s"], abs=2e-3)  # settled when the move ends
    assert settled / record["lower_bound_s"] <= 1.15


def test_a_ratio_flat_in_the_duration_does_not_ask_for_a_zero_second_move():
    """A holding torque near the bound makes p(T) flat: the secant's root then lies near T = 0 (a drawn arm's search
    asked for a 0 s move and crashed); a feasible-only bracket is at most halved per step."""
    from ffopt.motion.min_time import _next_duration

    history = [{"duration_s": 2.0, "peak_ratio": 0.9804, "at_rest": True},
               {"duration_s": 1.8, "peak_ratio": 0.98040001, "at_rest": True}]
    T = _next_duration(history, (1.8, 0.98, None), None, 10.0)
    assert 0.9 <= T <= 0.95 * 1.8


def test_when_toppra_finds_no_parameterisation_the_search_goes_on_without_a_bound(monkeypatch):
    """TOPP-RA's rigid robot (passive joints locked) may need more holding torque than the elastic arm: its failure
    is said and the search continues with the polynomial family (two drawn arms crashed on it)."""
    import ffopt.motion.peers as peers

    def no_parameterisation(*args, **kwargs):
        raise ProblemError("<arm>: TOPP-RA found no parameterisation of the path under the limits")

    monkeypatch.setattr(peers, "topp_ra_law", no_parameterisation)
    lines = []
    found = minimum_time(problem_from_dict(one_link()), n_shape=4, progress=lines.append)
    assert found.lower_bound_s is None and found.time_law == "poly11"
    assert found.lower_bound_method.startswith("no lower bound: TOPP-RA found no parameterisation")
    assert any("no lower bound: TOPP-RA found no parameterisation" in line for line in lines)


def test_a_urdf_arm_with_a_passive_joint_plans_its_minimum_time_with_the_bdf_order_method_auto_chose():
    """The Panda with joint 3 passive: its lightly damped zero (-193 +- 1956j rad/s) makes BDF-4..6 unstable at
    1 ms, and method auto plans by BDF-3; the search ran the problem's BDF-6 and crashed (both law families). It
    now searches with method auto's order: verified, at rest, 1.08x TOPP-RA measured (0.3586 s)."""
    from pathlib import Path

    import ffopt

    problem = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "panda_passive_joint.toml")
    result = ffopt.plan(problem.with_values({"reference.duration": "min", "reference.duration_max": 2.0}))
    record = result.method_choice["minimum_time"]
    assert result.trajectory.method == "bdf3-I1" and result.verification.verdict.status == "verified"
    assert record["duration_s"] / record["lower_bound_s"] <= 1.15
