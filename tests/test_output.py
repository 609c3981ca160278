"""Safe output (ffopt.io.results): an output folder never holds anything ffopt did not write, and a
user's file is never replaced or deleted; a Ctrl-C in any stage exits 130 and leaves no partial or
temporary folder. Readable output: joint-named CSV columns with units, plots with reference and bounds."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import snapshot

from ffopt import interrupt
from ffopt.cli.main import main
from ffopt.errors import OutputError
from ffopt.io.results import MARKER, check_output_file, read_trajectory_csv, write_result_folder

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_simplified.toml"
DATA = ["problem.toml", "summary.json", "trajectory.csv", "trajectory.mat", "trajectory.npz"]  # every plan folder


def plan_cli(out, *extra, problem=E1):
    return main(["plan", str(problem), "--out", str(out), "--quiet", "--no-verify", *extra])


def marker(folder: Path) -> dict:
    return json.loads((folder / MARKER).read_text())


def fill_with(**files):
    def fill(tmp):
        for name, text in files.items():
            (tmp / name).write_text(text)
    return fill


# --- the rules, on the result-folder writer --------------------------------------------------


def test_new_folder_with_new_parents_is_marked_with_what_ffopt_wrote(tmp_path):
    out = write_result_folder(tmp_path / "a" / "b" / "res", fill_with(**{"x.csv": "1\n", "summary.json": "{}"}))
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "summary.json", "x.csv"]
    m = marker(out)
    assert m["written_by"] == "ffopt" and m["ffopt_version"] and set(m["files"]) == {"x.csv", "summary.json"}
    assert m["files"]["x.csv"]["sha256"] == hashlib.sha256(b"1\n").hexdigest()
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~_umask())  # as mkdir would make it, not 0700
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["a", "b", "res", MARKER, "summary.json", "x.csv"])


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_failure_while_writing_leaves_nothing_not_even_new_parents(tmp_path):
    def fill(tmp):
        (tmp / "trajectory.csv").write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="No space left"):
        write_result_folder(tmp_path / "new" / "res", fill)
    assert list(tmp_path.iterdir()) == []


def test_existing_result_folder_keeps_user_files_and_drops_stale_ffopt_files(tmp_path):
    out = write_result_folder(tmp_path / "res", fill_with(**{"a.csv": "old", "old.png": "png"}))
    (out / "notes.txt").write_text("my notes")
    os.mkdir(out / "my_dir")
    write_result_folder(out, fill_with(**{"a.csv": "new"}))
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "a.csv", "my_dir", "notes.txt"]
    assert (out / "a.csv").read_text() == "new" and (out / "notes.txt").read_text() == "my notes"
    assert set(marker(out)["files"]) == {"a.csv"}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]  # no temporary folder beside or inside


def test_a_stale_ffopt_file_the_user_changed_is_kept(tmp_path):
    out = write_result_folder(tmp_path / "res", fill_with(**{"a.csv": "1", "b.png": "2"}))
    (out / "b.png").write_text("edited by the user")
    write_result_folder(out, fill_with(**{"a.csv": "3"}))
    assert (out / "b.png").read_text() == "edited by the user"


def test_changed_ffopt_file_is_not_replaced(tmp_path):
    out = write_result_folder(tmp_path / "res", fill_with(**{"a.csv": "1"}))
    (out / "a.csv").write_text("edited")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"a\.csv: was changed after ffopt wrote it"):
        write_result_folder(out, fill_with(**{"a.csv": "2"}))
    assert snapshot(tmp_path) == before


def test_a_folder_where_ffopt_had_a_file_is_the_users(tmp_path):
    out = write_result_folder(tmp_path / "res", fill_with(**{"a.csv": "1"}))
    (out / "a.csv").unlink()
    (out / "a.csv").mkdir()
    with pytest.raises(OutputError, match=r"a\.csv: exists and was not written by ffopt"):
        write_result_folder(out, fill_with(**{"a.csv": "2"}))
    assert (out / "a.csv").is_dir()


def test_foreign_folder_needs_force_and_then_only_gains_files(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "data.txt").write_text("precious")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="not an ffopt result folder.*'data.txt'.*--force"):
        write_result_folder(out, fill_with(**{"a.csv": "1"}))
    assert snapshot(tmp_path) == before
    write_result_folder(out, fill_with(**{"a.csv": "1"}), force=True)
    assert (out / "data.txt").read_text() == "precious" and set(marker(out)["files"]) == {"a.csv"}
    # now it is a result folder: updated without --force, the user's file still never listed or touched
    write_result_folder(out, fill_with(**{"b.csv": "2"}))
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "b.csv", "data.txt"]


def test_force_never_replaces_a_user_file_with_the_same_name(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "a.csv").write_text("mine")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"mine/a\.csv: exists and was not written by ffopt"):
        write_result_folder(out, fill_with(**{"a.csv": "1"}), force=True)
    assert snapshot(tmp_path) == before


def test_a_foreign_marker_file_counts_as_the_users(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / MARKER).write_text("not ffopt's")
    with pytest.raises(OutputError, match="not an ffopt result folder"):
        write_result_folder(out, fill_with(**{"a.csv": "1"}))
    with pytest.raises(OutputError, match="was not written by ffopt"):
        write_result_folder(out, fill_with(**{"a.csv": "1"}), force=True)
    assert [p.name for p in out.iterdir()] == [MARKER] and (out / MARKER).read_text() == "not ffopt's"


def test_a_marker_naming_files_outside_the_folder_is_not_trusted(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "res"
    out.mkdir()
    digest = hashlib.sha256(b"keep").hexdigest()
    (out / MARKER).write_text(json.dumps({"written_by": "ffopt", "files": {"../victim.txt": {"sha256": digest}}}))
    with pytest.raises(OutputError, match="not an ffopt result folder"):
        write_result_folder(out, fill_with(**{"a.csv": "1"}))
    assert victim.read_text() == "keep"


def test_empty_existing_folder_is_used(tmp_path):
    (tmp_path / "empty").mkdir()
    write_result_folder(tmp_path / "empty", fill_with(**{"a.csv": "1"}))
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == [MARKER, "a.csv"]


# --- through the command line ----------------------------------------------------------------


def test_plan_updates_its_own_folder_in_place(tmp_path, capsys):
    out = tmp_path / "res"
    assert plan_cli(out) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, *DATA, "torques.png"])
    (out / "notes.md").write_text("run 1: looks fine")
    first = read_trajectory_csv(out / "trajectory.csv")
    assert plan_cli(out, "--no-plots", "--step", "0.002") == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "notes.md", *DATA])
    assert (out / "notes.md").read_text() == "run 1: looks fine"
    second = read_trajectory_csv(out / "trajectory.csv")
    assert len(second["t"]) == (len(first["t"]) - 1) // 2 + 1  # the new run's 2 ms grid, not the old 1 ms one
    assert json.loads((out / "summary.json").read_text())["files"] == ["trajectory.csv", "trajectory.npz",
                                                                        "trajectory.mat", "problem.toml", "summary.json"]


def test_plan_refuses_the_folder_of_another_ffopt_command(tmp_path, capsys):
    """A sweep's folder (its table and sweep file) is ffopt's, but not a plan's to replace."""
    out = write_result_folder(tmp_path / "sweep", fill_with(**{"results.parquet": "table", "sweep.toml": "x"}),
                              command="sweep")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert plan_cli(out) == 2
    err = capsys.readouterr().err
    assert "is the folder of an 'ffopt sweep', not of an 'ffopt plan'" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(OutputError, match="ffopt sweep"):
        write_result_folder(out, fill_with(**{"summary.json": "{}"}), command="plan")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_out_dot_follows_the_same_rules(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thesis.tex").write_text("\\documentclass{article}")
    before = snapshot(tmp_path)
    assert plan_cli(".") == 2
    assert "not an ffopt result folder" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    assert plan_cli(".", "--force") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([MARKER, *DATA, "thesis.tex", "torques.png"])
    assert plan_cli(".", "--no-plots") == 0  # now ffopt's folder: no --force needed, its plot is removed
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([MARKER, *DATA, "thesis.tex"])
    assert (tmp_path / "thesis.tex").read_text() == "\\documentclass{article}"


@pytest.fixture(autouse=True)
def sigint_default():
    """SIGINT as in a terminal, for every test here (a test run started in the background inherits it ignored,
    and ffopt rightly leaves an ignored SIGINT alone)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_writing_leaves_the_previous_result_and_no_temporary_folder(tmp_path, monkeypatch, capsys):
    out = tmp_path / "res"
    assert plan_cli(out) == 0
    (out / "notes.md").write_text("mine")
    before = snapshot(tmp_path)

    def interrupted_plots(traj, verification, folder):
        (folder / "torques.png").write_bytes(b"half a png")
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, through ffopt's handler
        time.sleep(5)
        raise AssertionError("SIGINT did not interrupt")

    monkeypatch.setattr("ffopt.io.plots.write_plots", interrupted_plots)
    assert plan_cli(out, "--step", "0.0025") == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "ffopt: interrupted"
    assert snapshot(tmp_path) == before
    # and into a new folder: nothing at all
    assert plan_cli(tmp_path / "new" / "res") == 130
    assert snapshot(tmp_path) == before


def test_interrupt_is_held_until_the_end_of_a_deferred_block():
    """The final renames (and cyipopt's solve) run with Ctrl-C held: the block finishes, then it raises."""
    reached = []
    with interrupt.catch_interrupts():
        with pytest.raises(KeyboardInterrupt):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                reached.append(interrupt.received())  # what a solver's iteration callback polls
        assert reached == [True] and interrupt.received()
    assert not interrupt.received()  # cleared with the command's end: later API calls are not "interrupted"
    with pytest.raises(KeyboardInterrupt):  # without ffopt's handler (Python API) too
        with interrupt.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            reached.append(True)
    assert reached == [True, True] and not interrupt.received()


def test_analyze_json_replaces_only_its_own_file(tmp_path, capsys):
    report = tmp_path / "reports" / "e1.json"
    assert main(["analyze", str(E1), "--json", str(report), "--points", "3", "--frequency-points", "3"]) == 0
    data = json.loads(report.read_text())
    assert data["written_by"] == "ffopt analyze" and data["zero_dynamics"]
    assert main(["analyze", str(E1), "--json", str(report), "--points", "3", "--frequency-points", "3"]) == 0
    assert sorted(p.name for p in report.parent.iterdir()) == ["e1.json"]  # replaced, no temporary file
    (tmp_path / "mine.json").write_text('{"my": "data"}')
    with pytest.raises(OutputError, match="not written by ffopt"):
        check_output_file(tmp_path / "mine.json")


def _ffopt_command():
    script = Path(sys.executable).with_name("ffopt")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ffopt.cli.main"]


def _interrupt_when(cmd, stage_text, tmp_path):
    """Run ffopt in a subprocess, send SIGINT when ``stage_text`` appears on stderr. The child gets SIGINT's
    default disposition, as a command started from a terminal has: a test run started in the background
    (``pytest &``) inherits an ignored SIGINT, which ffopt then rightly ignores too."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if stage_text in line:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.stderr.read()
    proc.wait(timeout=120)
    return proc.returncode, "".join(seen) + rest


@pytest.mark.parametrize("problem, extra, stage", [
    ("e12_line.toml", [], "verifying"),
    pytest.param("e12_torque_bounded.toml", ["--method", "nlp", "--backend", "auto"], "solving the NLP",
                 marks=pytest.mark.slow),  # IPOPT via cyipopt: Ctrl-C held until the iteration ends
], ids=["bdf-verification", "nlp-ipopt"])
def test_ctrl_c_in_a_real_process_exits_130_and_writes_nothing(tmp_path, problem, extra, stage):
    cmd = [*_ffopt_command(), "plan", str(ROOT / "problems" / problem), "--out", "res", *extra]
    code, err = _interrupt_when(cmd, stage, tmp_path)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "ffopt: interrupted"
    assert list(tmp_path.iterdir()) == []  # no result folder, no temporary folder


def test_real_process_exit_codes(tmp_path):
    (tmp_path / "p.toml").write_text("name = 'x'\n")
    proc = subprocess.run([*_ffopt_command(), "plan", "p.toml", "--out", "res"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "ffopt: error: p.toml: model: missing required key"
    proc = subprocess.run([*_ffopt_command(), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().startswith("ffopt ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml"]


def test_help_documents_exit_codes_and_what_step_sets(capsys):
    assert main(["plan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "1 solver failure" in text and "2 bad input" in text and "130 interrupted (Ctrl-C) in any stage" in text
    assert "sets solver.step and nlp.step" in text and "--force" in text
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"ffopt {__import__('ffopt').__version__}"


# --- readable output -------------------------------------------------------------------------


def test_columns_units_and_plots_of_a_bounded_plan(tmp_path):
    """E12 (3 joints, 2 elastic gears, outputs x, z) through the NLP with torque bounds: CSV columns
    named after the joints, units in summary.json, bounds drawn in the torque plot."""

    from ffopt import load_problem, plan

    problem = load_problem(ROOT / "problems" / "e12_torque_bounded.toml")
    result = plan(problem, method="nlp", verify=False, step=4e-3, backend="auto")
    out = result.save(tmp_path / "res")
    data = read_trajectory_csv(out / "trajectory.csv")
    assert list(data)[:7] == ["t", "u_q1", "u_q2", "qm_q1", "qm_q2", "dqm_q1", "dqm_q2"]
    assert {"ref_x_mm", "ref_z_mm", "q_q3", "dq_q3", "tool_y_mm"} <= set(data)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["nlp"]["step"] == 4e-3  # --step sets the NLP grid too
    info = {c["name"]: c for c in summary["columns"]}
    assert list(info) == list(data) and info["ref_x_mm"]["unit"] == "mm" and info["q_q3"]["unit"] == "rad"
    assert "joint q2" in info["u_q2"]["meaning"]
    bounds = np.array(problem.nlp.torque_max)
    assert np.all(np.abs(np.column_stack([data["u_q1"], data["u_q2"]])).max(axis=0) <= bounds * (1 + 1e-6))
    assert result.trajectory.stats["torque_max_Nm"] == list(bounds)
    # the torque plot draws each bound at +-bound, labelled with the joint
    from ffopt.io.plots import torque_figure

    fig = torque_figure(result.trajectory, result.trajectory.stats["torque_max_Nm"])
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    assert {"u_q1", "u_q2"} <= set(lines)
    bound_lines = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert sorted(float(ln.get_ydata()[0]) for ln in bound_lines) == sorted([*bounds, *-bounds])
    assert any(lab.startswith("bound |u_q2| = ") for lab in lines)


def _trajectory(tool, outputs):
    """A Trajectory with a given tool path (m) for the plot logic; the reference is the tool's outputs."""
    from ffopt.trajectory import Trajectory

    n = len(tool)
    t = np.linspace(0, 1, n)
    y = tool[:, ["xyz".index(c) for c in outputs]]
    z = np.zeros((n, 1))
    return Trajectory(t=t, u=z, q=z, v=z, a=z, qm=z, dqm=z, y_ref=y, tool=tool, coordinate_names=["q1"],
                      output_names=list(outputs), method="test", input_names=["q1"], link_names=["q1"])


class _Verification:
    def __init__(self, traj, offset_m):
        from types import SimpleNamespace

        sim = SimpleNamespace(t=traj.t, y=traj.y_ref + offset_m, tool=traj.tool + offset_m)
        self.simulations = {"feedforward_pd": sim}


def test_tool_path_views_reference_on_top():
    from ffopt.io.plots import path_views, tool_path_figure

    s = np.linspace(0, 1, 50)
    planar = _trajectory(np.column_stack([s, 0 * s + 0.2, s**2]), "xz")  # moves in x-z
    assert path_views(planar) == [(0, 2)]
    spatial = _trajectory(np.column_stack([np.cos(3 * s), np.sin(3 * s), s]), "xyz")  # a helix
    assert path_views(spatial) == [(0, 1), (0, 2), (1, 2)]
    # a 3D tool path with only x and z controlled: still three views (y comes from the plan)
    assert path_views(_trajectory(spatial.tool, "xz")) == [(0, 1), (0, 2), (1, 2)]

    fig = tool_path_figure(spatial, _Verification(spatial, 1e-4))
    assert [ax.get_title() for ax in fig.axes] == ["Tool path, x-y view", "Tool path, x-z view", "Tool path, y-z view"]
    for ax in fig.axes:
        result, ref = ax.get_lines()
        assert ref.get_label() == "reference" and ref.get_zorder() > result.get_zorder()
        assert ref.get_linestyle() == "--" and result.get_linestyle() == "-"
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["feedforward_pd", "reference"]
    x_ref, y_ref = fig.axes[0].get_lines()[1].get_data()
    assert np.allclose(x_ref, 1000 * spatial.tool[:, 0]) and np.allclose(y_ref, 1000 * spatial.tool[:, 1])  # mm
