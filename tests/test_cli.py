"""`ffopt plan` end to end on E1: the files and their contents (bad input: tests/test_bad_input.py)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ffopt.cli.main import main
from ffopt.io.results import read_trajectory_csv

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_simplified.toml"


@pytest.fixture(scope="module")
def e1_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "e1"
    # E1 at 1 ms (the file's step; at Moberg & Hanssen's 5 ms the rest-to-rest plan misses 0.2 mm during the move)
    assert main(["plan", str(E1), "--out", str(out), "--quiet", "--verify", "full"]) == 0
    return out


def test_plan_writes_trajectory_summary_and_plots(e1_out):
    assert sorted(p.name for p in e1_out.iterdir()) == [
        ".ffopt-result.json", "problem.toml", "summary.json", "tool_error.png", "tool_path.png", "torques.png",
        "trajectory.csv", "trajectory.mat", "trajectory.npz"]
    with open(e1_out / "trajectory.csv", newline="") as f:
        header = next(csv.reader(f))
    # E1: joint q1 driven directly, q2 passive; tool z controlled; lengths in mm, angles in rad
    assert header == ["t", "u_q1", "qm_q1", "dqm_q1", "tool_x_mm", "tool_y_mm", "tool_z_mm", "ref_z_mm",
                      "q_q1", "q_q2", "dq_q1", "dq_q2"]
    data = read_trajectory_csv(e1_out / "trajectory.csv")
    # problems/e1_simplified.toml: 0.02 s rest + 0.1 s move + 0.3 s rest at 1 ms
    assert np.allclose(np.diff(data["t"]), 1e-3) and data["t"][-1] == pytest.approx(0.42)
    s = json.loads((e1_out / "summary.json").read_text())
    assert s["settings"]["order"] == 6 and s["method"] == "bdf6-I1"
    # the rest-to-rest plan at 1 ms: 0.0227 mm during the move, 5e-8 mm after the table (regression values
    # measured on 2026-11-28), within the default 0.2 mm
    pd_case = s["verification"]["tool_error"]["feedforward_pd"]
    assert pd_case["max_mm"] < 0.045 and pd_case["residual_mm"] < 1e-4 and s["status"] == "verified"
    assert s["method_choice"]["rest_to_rest"]["shaped"] and s["verification"]["plan_end_state"]["at_rest"]
    assert s["verification"]["tool_error"]["pd_only"]["max_mm"] > 14  # PD alone misses by cm: 30.0 mm (2026-11-28)
    assert {"casadi", "numpy", "python", "ffopt"} <= set(s["versions"])
    assert {"inverse_dynamics", "verification"} <= set(s["wall_time_s"])
    # the CSV torques are the ones the summary reports
    assert np.abs(data["u_q1"]).max() == pytest.approx(s["peak_torque_Nm"][0], rel=1e-9)
    # every column has a unit and a meaning in summary.json, in file order
    assert [c["name"] for c in s["columns"]] == header
    units = {c["name"]: c["unit"] for c in s["columns"]}
    assert units["t"] == "s" and units["u_q1"] == "N m" and units["tool_z_mm"] == "mm" and units["dq_q2"] == "rad/s"
    # E1 (l1 = l2 = 1 m): tool z = sin(q1) + sin(q1 + q2) m, in the file in mm; the reference starts at 1414 mm
    # (the problem file's start_mm, Moberg & Hanssen's); the planned tool is on it exactly (measured 0 mm)
    q1, q2 = data["q_q1"], data["q_q2"]
    assert np.allclose(data["tool_z_mm"], 1000 * (np.sin(q1) + np.sin(q1 + q2)), rtol=1e-10)
    assert data["ref_z_mm"][0] == pytest.approx(1414.0) and np.abs(data["tool_z_mm"] - data["ref_z_mm"]).max() < 1e-6


@pytest.mark.slow
def test_readme_example_runs_as_a_subprocess(tmp_path):
    out = tmp_path / "e12"
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", str(ROOT / "problems" / "e12_line.toml"),
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["verification"]["tool_error"]["feedforward_pd"]["max_mm"] < 0.1  # issue target


