"""`ffopt plan` end to end on E1: the files, their contents, and bad input (one line, exit 2, no output)."""

import csv
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ffopt.cli.main import main
from ffopt.io.results import atomic_directory, read_trajectory_csv

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_simplified.toml"


def _toml(data: dict) -> str:
    """Minimal TOML writer for the problem dicts used here (tables, arrays of tables, scalars, lists)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = []

    def table(prefix, d):
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict) and not _is_table_list(v)}
        if prefix:
            lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {value(v)}" for k, v in scalars.items())
        for k, v in d.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                table(name, v)
            elif _is_table_list(v):
                for item in v:
                    lines.append(f"[[{name}]]")
                    lines.extend(f"{kk} = {value(vv)}" for kk, vv in item.items())

    table("", data)
    return "\n".join(lines) + "\n"


def _is_table_list(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)


def e1_dict():
    return tomllib.loads(E1.read_text())


@pytest.fixture(scope="module")
def e1_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "e1"
    assert main(["plan", str(E1), "--out", str(out), "--quiet"]) == 0
    return out


def test_plan_writes_trajectory_summary_and_plots(e1_out):
    assert sorted(p.name for p in e1_out.iterdir()) == [
        "summary.json", "tool_error.png", "tool_path.png", "torques.png", "trajectory.csv"]
    with open(e1_out / "trajectory.csv", newline="") as f:
        header = next(csv.reader(f))
    assert header[:4] == ["t", "u1", "qm1", "dqm1"]
    data = read_trajectory_csv(e1_out / "trajectory.csv")
    assert np.allclose(np.diff(data["t"]), 5e-3) and data["t"][-1] == pytest.approx(0.42)
    s = json.loads((e1_out / "summary.json").read_text())
    assert s["settings"]["order"] == 6 and s["method"] == "bdf6-I1"
    assert s["verification"]["tool_error"]["feedforward_pd"]["max_mm"] < 0.5
    assert s["verification"]["tool_error"]["pd_only"]["max_mm"] > 10  # PD alone misses by cm
    assert {"casadi", "numpy", "python", "ffopt"} <= set(s["versions"])
    assert {"inverse_dynamics", "verification"} <= set(s["wall_time_s"])
    # the CSV torques are the ones the summary reports
    assert np.abs(data["u1"]).max() == pytest.approx(s["peak_torque_Nm"][0], rel=1e-9)


def _run_bad(tmp_path, capsys, data=None, extra=(), text=None):
    problem = tmp_path / "bad.toml"
    problem.write_text(text if text is not None else _toml(data))
    out = tmp_path / "out"
    code = main(["plan", str(problem), "--out", str(out), "--quiet", "--no-plots", *extra])
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert not out.exists(), "nothing may be written on failure"
    assert list(tmp_path.glob(".out*")) == [], "no temporary directories left behind"
    assert len(err.splitlines()) == 1, err
    return err


def test_unknown_key_is_named(tmp_path, capsys):
    d = e1_dict()
    d["reference"]["durtion"] = 0.1
    err = _run_bad(tmp_path, capsys, d)
    assert "reference.durtion" in err and "duration" in err


def test_wrong_type_is_named(tmp_path, capsys):
    d = e1_dict()
    d["model"]["joints"][1]["stiffness"] = "stiff"
    err = _run_bad(tmp_path, capsys, d)
    assert "stiffness" in err and "joints" in err


def test_path_outside_the_workspace_names_the_time(tmp_path, capsys):
    d = e1_dict()
    d["reference"]["end_mm"] = [2100.0]  # E1 reaches z <= l1 + l2 = 2 m
    err = _run_bad(tmp_path, capsys, d)
    assert "workspace" in err and "t = " in err


def test_path_through_a_singularity_names_the_time(tmp_path, capsys):
    # E1's tool z = 2 sin q1 (passive joint at rest) has dz/dq1 = 0 at full reach z = 2 m.
    d = e1_dict()
    d["reference"]["end_mm"] = [2000.0]
    err = _run_bad(tmp_path, capsys, d)
    assert "singularity at t = 0.1" in err and "reference" in err


def test_failed_run_leaves_an_existing_result_untouched(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "trajectory.csv").write_text("old\n")
    d = e1_dict()
    d["reference"]["end_mm"] = [2100.0]
    (tmp_path / "bad.toml").write_text(_toml(d))
    assert main(["plan", str(tmp_path / "bad.toml"), "--out", str(out), "--quiet"]) != 0
    assert [f.name for f in out.iterdir()] == ["trajectory.csv"] and (out / "trajectory.csv").read_text() == "old\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["bad.toml", "out"]


def test_atomic_directory_removes_everything_when_writing_fails(tmp_path):
    def fill(tmp):
        (tmp / "trajectory.csv").write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_directory(tmp_path / "res", fill)
    assert list(tmp_path.iterdir()) == []
    # and on success an existing directory is replaced as a whole
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "stale.png").write_text("x")
    atomic_directory(tmp_path / "res", lambda tmp: (tmp / "summary.json").write_text("{}"))
    assert [f.name for f in (tmp_path / "res").iterdir()] == ["summary.json"]
    assert [f.name for f in tmp_path.iterdir()] == ["res"]


def test_solver_failure_is_reported_with_advice(tmp_path, capsys):
    # E12 with 20 ms steps: BDF-6 on the index-3 form cannot follow the motion.
    data = tomllib.loads((ROOT / "problems" / "e12_line.toml").read_text())
    err = _run_bad(tmp_path, capsys, data, extra=("--step", "0.02", "--form", "I3"))
    assert "did not converge at t = " in err and "Try" in err


def test_invalid_toml_names_the_file(tmp_path, capsys):
    err = _run_bad(tmp_path, capsys, text="[model\nname = 1\n")
    assert "bad.toml" in err


@pytest.mark.slow
def test_readme_example_runs_as_a_subprocess(tmp_path):
    out = tmp_path / "e12"
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", str(ROOT / "problems" / "e12_line.toml"),
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["verification"]["tool_error"]["feedforward_pd"]["max_mm"] < 0.1  # issue target


def test_bdf_on_a_non_minimum_phase_robot_says_why_and_what_to_use(tmp_path, capsys):
    # E1 with a 3 m link 2 has a zero at +56 rad/s: causal BDF inversion diverges (seed 000, sec. 8).
    data = tomllib.loads((ROOT / "problems" / "e1_nmp.toml").read_text())
    err = _run_bad(tmp_path, capsys, data, extra=("--method", "bdf"))
    assert "did not converge at t = " in err and "non-minimum phase" in err and "--method nlp" in err
