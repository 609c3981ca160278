"""``ffopt simulate``: a saved plan on the nominal plant reproduces its verification; --set / --plant change
the plant as asked (checked against plans made on the changed problem); mismatches fail with exit 2."""

import json
from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.cli.main import main
from ffopt.cli.simulate import parse_values
from ffopt.errors import ProblemError
from ffopt.io.results import read_trajectory_csv
from helpers import snapshot

ROOT = Path(__file__).resolve().parents[1]
E12 = ROOT / "problems" / "e12_line.toml"
E1 = ROOT / "problems" / "e1_complete.toml"
SOFT = {"model.joints.q2.stiffness": 0.8e5}  # E1's passive joint 20 % softer


@pytest.fixture(scope="module")
def e12_plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("e12") / "plan"
    assert main(["plan", str(E12), "--out", str(out), "--no-plots", "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def e1_plans(tmp_path_factory):
    """E1 complete planned on the nominal and on the softer problem (its folder holds that problem.toml)."""
    base = tmp_path_factory.mktemp("e1")
    nominal = ffopt.load_problem(E1)
    ffopt.plan(nominal).save(base / "nominal")
    ffopt.plan(nominal.with_values(SOFT)).save(base / "soft")
    return nominal, base / "nominal", base / "soft"


def _case(folder: Path, name: str) -> dict:
    return json.loads((folder / "summary.json").read_text())["verification"]["tool_error"][name]


def test_simulate_reproduces_the_plans_verification_on_e12(e12_plan, tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", str(e12_plan / "problem.toml"), "--plan", str(e12_plan), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "feedforward_pd" in printed and "Kp 9.87e+04" in printed  # table and gains printed
    summary = json.loads((out / "summary.json").read_text())
    mine, planned = summary["tool_error"]["feedforward_pd"], _case(e12_plan, "feedforward_pd")
    for key in ("max_mm", "rms_mm", "start_mm", "final_mm"):  # the same simulation: measured equal (2026-11-27)
        assert abs(mine[key] - planned[key]) <= 1e-6, key
    # Kp = J (2 pi 5 Hz)^2 with E12's motor inertia J = 100 kg m^2
    assert summary["controller"]["controller"] == "pd" and summary["controller"]["kp"][0] == pytest.approx(98696.044)
    assert set(summary["files"]) == {"simulation.csv", "summary.json", "torques.png", "tool_path.png", "tool_error.png"}
    assert json.loads((out / ".ffopt-result.json").read_text())["command"] == "simulate"
    data = read_trajectory_csv(out / "simulation.csv")  # same columns as trajectory.csv, simulated values
    plan = read_trajectory_csv(e12_plan / "trajectory.csv")
    assert list(data) == list(plan)
    err = np.hypot(data["tool_x_mm"] - data["ref_x_mm"], data["tool_z_mm"] - data["ref_z_mm"])
    assert err.max() == pytest.approx(mine["max_mm"], rel=1e-6)  # the CSV's printed digits: measured 8.3e-8
    # open loop, from Python this time (the plan's other verification case)
    res = ffopt.simulate(E12, e12_plan, controller="none")
    planned = _case(e12_plan, "feedforward_open_loop")
    assert abs(res.cases["feedforward_open_loop"].max_mm - planned["max_mm"]) <= 1e-6


def test_set_changes_the_plant_as_a_plan_on_the_changed_problem_sees_it(e1_plans):
    nominal, plan_nominal, plan_soft = e1_plans
    soft_pd = _case(plan_soft, "feedforward_pd")
    # the soft plan on the nominal problem changed by --set behaves as on its own (soft) model ...
    res = ffopt.simulate(nominal, plan_soft, values=SOFT)
    assert abs(res.cases["feedforward_pd"].max_mm - soft_pd["max_mm"]) < 1e-6
    assert "model.joints.q2.stiffness" in res.plant_label
    # ... and the same through a second problem file (the soft plan's problem.toml)
    res = ffopt.simulate(nominal, plan_soft, plant=plan_soft / "problem.toml")
    assert abs(res.cases["feedforward_pd"].max_mm - soft_pd["max_mm"]) < 1e-6
    # on the unchanged plant the soft plan misses by far more: the override did change the plant
    wrong = ffopt.simulate(nominal, plan_soft).cases["feedforward_pd"].max_mm
    # measured 9.26 mm against 0.091 mm on 2026-11-28 (e1_complete.toml's 0.3 s move; 26.5 against 0.23 mm in 0.1 s)
    assert wrong > 50 * soft_pd["max_mm"] + 1.0


def test_simulate_cli_set_parses_toml_values_and_baselines(e1_plans, capsys):
    nominal, plan_nominal, _ = e1_plans
    assert parse_values(["model.joints.q2.stiffness=0.8e5", "model.payload.com=[0.2, 0, 0]", "a.b=word"]) == \
        {"model.joints.q2.stiffness": 0.8e5, "model.payload.com": [0.2, 0, 0], "a.b": "word"}
    code = main(["simulate", str(E1), "--plan", str(plan_nominal), "--set", "model.joints.q2.stiffness=0.8e5",
                 "--controller", "pd+state", "--baselines", "--quiet"])
    text = capsys.readouterr().out
    # a 20 % softer gear than planned: the plan misses its tolerance there, so simulate says so (exit 3)
    assert code == 3 and "MISSED TOLERANCE" in text and "plant differs from the planning model" in text
    for case in ("feedforward_pd_state", "static_compensation_pd_state", "rigid_feedforward_pd_state"):
        assert case in text
    assert "LQR" in text


@pytest.mark.parametrize("args, message", [
    (["--set", "reference.duration=0.2"], "only the robot"),
    (["--set", "model.joints.q9.stiffness=1"], "q9"),
    (["--set", "model.joints.q2.stiffness"], "KEY=VALUE"),
    (["--set", "model.joints.q2.stiffness=-1"], "must be >= 0"),
    (["--plant", str(E12)], "do not match the planning model"),
    (["--controller", "none", "--baselines"], "--controller pd"),
])
def test_bad_plant_or_options_exit_2_and_write_nothing(e1_plans, tmp_path, capsys, args, message):
    _, plan_nominal, _ = e1_plans
    before = snapshot(plan_nominal)
    out = tmp_path / "sim"
    code = main(["simulate", str(E1), "--plan", str(plan_nominal), "--out", str(out), "--quiet", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not out.exists() and snapshot(plan_nominal) == before


def test_plan_of_another_robot_or_path_is_refused(e12_plan, e1_plans, tmp_path, capsys):
    _, plan_e1, _ = e1_plans
    assert main(["simulate", str(E12), "--plan", str(plan_e1), "--quiet"]) == 2
    assert "the plan was made for actuated joints ['q1'], but" in capsys.readouterr().err
    slower = ffopt.load_problem(E12).with_values({"reference.duration": 0.35})
    path = tmp_path / "slower.toml"
    path.write_text(slower.to_toml())
    assert main(["simulate", str(path), "--plan", str(e12_plan), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "differs from" in err and "another path or timing" in err
    with pytest.raises(ProblemError, match="not a plan folder"):
        ffopt.simulate(E12, tmp_path)


def test_simulate_refuses_a_plan_folder_as_output(e12_plan, capsys):
    before = snapshot(e12_plan)
    assert main(["simulate", str(E12), "--plan", str(e12_plan), "--out", str(e12_plan), "--quiet"]) == 2
    assert "ffopt plan" in capsys.readouterr().err and snapshot(e12_plan) == before


def test_a_problem_with_another_robot_than_planned_is_noted(e12_plan, tmp_path, capsys):
    other = ffopt.load_problem(e12_plan / "problem.toml").with_values({"model.joints.q3.stiffness": 0.9e5})
    path = tmp_path / "other.toml"
    path.write_text(other.to_toml())
    # the plan on a robot it was not made for misses the tolerance (exit 3), and the note says why
    assert main(["simulate", str(path), "--plan", str(e12_plan)]) == 3
    assert "differs from the one the plan was made for" in capsys.readouterr().err
    assert main(["simulate", str(e12_plan / "problem.toml"), "--plan", str(e12_plan)]) == 0
    assert "differs" not in capsys.readouterr().err


def test_a_plant_with_other_modes_per_flexible_link_is_named_as_such():
    """The joints match (names, kinds, order) but a flexible link has another number of modal coordinates: the error
    says which link and how many (it printed the two equal joint lists before)."""
    from test_flexible_links import one_link

    from ffopt.closed_loop import _check_plant
    from ffopt.errors import ProblemError
    from ffopt.io.problem import problem_from_dict

    planned = problem_from_dict(one_link(modes=2), "plan.toml")
    plant = problem_from_dict(one_link(modes=3), "plant.toml")
    with pytest.raises(ProblemError) as err:
        _check_plant(planned, plant.model, "plant.toml")
    text = str(err.value)
    assert "link 'hub': 3 modes in the plant, 2 modes in the planning model (model.joints.hub.flexible.modes)" in text
    assert "joints" not in text.split(":")[1]  # not the joint lists
    _check_plant(planned, problem_from_dict(one_link(modes=2), "same.toml").model, "same.toml")  # the same: no error
