"""Every command that reads a plan folder (simulate --plan, animate, report, ffopt.load_plan) reads it as ffopt
wrote it: a file changed, truncated or removed since is exit 2 naming the file (the folder's marker holds each
file's SHA-256), a damaged table without a marker is exit 2 too, never a traceback; --problem must be the robot
the plan moves."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ffopt.cli.main import main
from ffopt.errors import ProblemError
from ffopt.io.results import MARKER
from ffopt.io.saved import load_plan

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "two_link_elastic.toml"


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "plan"
    assert main(["plan", str(PROBLEM), "--out", str(out), "--quiet", "--no-plots", "--no-verify"]) == 0
    return out


def _truncate(folder: Path):
    text = (folder / "trajectory.csv").read_text()
    (folder / "trajectory.csv").write_text(text[:2000])
    (folder / "trajectory.npz").unlink()


def _edit(folder: Path):
    lines = (folder / "trajectory.csv").read_text().splitlines()
    lines[4] = "0.5" + lines[4][lines[4].index(","):]
    (folder / "trajectory.csv").write_text("\n".join(lines) + "\n")


def _empty_npz(folder: Path):
    np.savez(folder / "trajectory.npz")


def _remove(name: str):
    return lambda folder: (folder / name).unlink()


COMMANDS = {"simulate": lambda d: ["simulate", str(PROBLEM), "--plan", str(d), "--quiet"],
            "animate": lambda d: ["animate", str(d), "--fps", "2"],
            "report": lambda d: ["report", str(d)]}
DAMAGES = {"truncated-csv-npz-removed": (_truncate, "trajectory.csv: changed since ffopt wrote it"),
           "edited-csv": (_edit, "trajectory.csv: changed since ffopt wrote it"),
           "emptied-npz": (_empty_npz, "trajectory.npz: changed since ffopt wrote it"),
           "summary-removed": (_remove("summary.json"), "summary.json: missing"),
           "npz-removed": (_remove("trajectory.npz"), "trajectory.npz: missing")}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_plan_folder_is_named_not_read(planned, tmp_path, capsys, command, damage):
    folder = tmp_path / "plan"
    shutil.copytree(planned, folder)
    change, words = DAMAGES[damage]
    change(folder)
    before = sorted(p.name for p in folder.iterdir())
    assert main(COMMANDS[command](folder)) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("[")]  # no progress
    assert len(err) == 1 and err[-1].startswith("ffopt: error: ")
    assert str(folder / words.split(":")[0]) in err[-1] and words in err[-1]
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("damage, words", [
    (_truncate, "trajectory.csv: cannot read the plan's table"),
    (_empty_npz, "the plan has no column 'q_j1'"),
    (lambda d: [(d / "trajectory.csv").write_text("t,u_j1\n"), (d / "trajectory.npz").unlink()],
     "trajectory.csv: cannot read the plan's table"),
])
def test_without_the_marker_a_damaged_table_is_still_one_line(planned, tmp_path, capsys, damage, words):
    folder = tmp_path / "plan"
    shutil.copytree(planned, folder)
    (folder / MARKER).unlink()
    damage(folder)
    assert main(COMMANDS["simulate"](folder)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err  # no warning lines either


def test_an_intact_folder_reads_and_a_file_is_not_a_plan_folder(planned, tmp_path, capsys):
    assert load_plan(planned).data["t"][0] == 0.0
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    assert main(["report", str(notes)]) == 2
    err = capsys.readouterr().err.strip()
    assert "notes.txt: is a file, not a plan folder" in err and "--out" not in err.split("wrote")[0].split(";")[0]
    assert notes.read_text() == "my notes"


def test_animate_with_another_robot_of_the_same_joints_is_refused(planned, tmp_path, capsys):
    """Link 1 of 2 m instead of 0.904 m: same joint names, but the tool lands a metre off the plan's path."""
    other = tmp_path / "other.toml"
    other.write_text(PROBLEM.read_text().replace("origin = [0.904, 0.0, 0.0]", "origin = [2.0, 0.0, 0.0]"))
    folder = tmp_path / "plan"
    shutil.copytree(planned, folder)
    assert main(["animate", str(folder), "--problem", str(other), "--fps", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "other.toml: is not the robot of the plan" in err and "mm from the plan's tool path" in err
    assert not (folder / "animation.gif").exists()
    with pytest.raises(ProblemError, match="not the robot of the plan"):
        load_plan(folder).problem(other)
    assert load_plan(folder).problem(PROBLEM).chain.n_joints == 2  # the plan's own robot is accepted
