"""What a plan folder gives other tools: trajectory.npz and trajectory.mat (read back against the CSV),
the HTML report (self-contained, every plot embedded) and the animated GIF of the arm (its elastic
deflection exaggerated on request)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io
from PIL import Image

import ffopt
from ffopt.cli.main import main
from ffopt.io.results import MARKER, matlab_names, read_trajectory_csv
from ffopt.report.animation import arm_points, joint_angles, views

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_complete.toml"
E12 = ROOT / "problems" / "e12_line.toml"


@pytest.fixture(scope="module")
def e12_folder(tmp_path_factory):
    """E12, verified (payload cases left out to save time), saved with plots by the command line."""
    tmp = tmp_path_factory.mktemp("present")
    problem = tmp / "e12.toml"
    problem.write_text(E12.read_text().replace("[verification]", "[verification]\npayload_scales = []"))
    out = tmp / "e12"
    assert main(["plan", str(problem), "--out", str(out), "--quiet", "--no-compile"]) == 0
    return out


def test_npz_and_mat_hold_the_csv_columns(e12_folder):
    csv = read_trajectory_csv(e12_folder / "trajectory.csv")
    summary = json.loads((e12_folder / "summary.json").read_text())
    npz = np.load(e12_folder / "trajectory.npz")  # no pickle needed
    assert list(npz["columns"]) == list(csv) and list(npz["units"]) == [c["unit"] for c in summary["columns"]]
    mat = scipy.io.loadmat(e12_folder / "trajectory.mat")
    names = [str(c[0]) for c in mat["columns"].ravel()]
    assert names == list(csv) and [str(v[0]) for v in mat["variables"].ravel()] == names  # all valid MATLAB names
    for name, values in csv.items():
        # the CSV has 12 significant digits; the binary files the full doubles
        assert np.allclose(npz[name], values, rtol=1e-11, atol=1e-9), name
        assert mat[name].shape == (len(values), 1) and np.allclose(mat[name][:, 0], values, rtol=1e-11, atol=1e-9)
    assert np.allclose(mat["u"], np.column_stack([csv["u_q1"], csv["u_q2"]]), rtol=1e-11)
    assert np.allclose(mat["q"], np.column_stack([csv["q_q1"], csv["q_q2"], csv["q_q3"]]), rtol=1e-11, atol=1e-12)
    assert np.allclose(mat["tool_mm"][:, 2], csv["tool_z_mm"], rtol=1e-11)
    assert [str(j[0]) for j in mat["actuated_joints"].ravel()] == ["q1", "q2"]
    assert [str(u[0]) for u in mat["units"].ravel()][:2] == ["s", "N m"]


def test_matlab_names_are_valid_and_distinct():
    names = matlab_names(["u_arm-1.b", "u_arm_1_b", "1st", "x" * 70, "x" * 70])
    assert names[0] == "u_arm_1_b" and names[1] == "u_arm_1_b_2" and names[2] == "x1st"
    assert len(names[3]) == 63 and names[3] != names[4] and len(names[4]) == 63
    assert all(re.fullmatch(r"[A-Za-z]\w{0,62}", n) for n in names)


def test_report_is_one_self_contained_page_with_every_plot(e12_folder, capsys):
    assert main(["report", str(e12_folder)]) == 0
    page = (e12_folder / "report.html").read_text()
    pngs = sorted(p for p in e12_folder.glob("*.png"))
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert sorted(base64.b64decode(e) for e in embedded) == sorted(p.read_bytes() for p in pngs) and len(pngs) == 3
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing outside the page
    summary = json.loads((e12_folder / "summary.json").read_text())
    pd_max = summary["verification"]["tool_error"]["feedforward_pd"]["max_mm"]
    assert f">{pd_max:.4g}<" in page and "E12 straight line" in page and "newton_iterations_mean" in page
    assert "payload_scales = []" in page  # the problem file as planned
    files = json.loads((e12_folder / MARKER).read_text())["files"]
    assert "report.html" in files and "trajectory.csv" in files and "torques.png" in files  # added, none dropped


def test_report_of_a_plan_without_plots_draws_the_torques(tmp_path):
    ffopt.plan(E1, verify=False, compile=False).save(tmp_path / "e1", plots=False)
    assert main(["report", str(tmp_path / "e1")]) == 0
    page = (tmp_path / "e1" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 1 and "Not verified" in page


def test_arm_points_follow_the_e12_kinematics_in_closed_form(e12_folder):
    plan = ffopt.load_plan(e12_folder)
    chain = plan.problem().chain
    q = joint_angles(plan, chain)
    pts = arm_points(chain, q)
    q1, q12, q123 = q[:, 0], q[:, 0] + q[:, 1], q.sum(axis=1)
    # rotations about +y turn the body x axis to (cos q, 0, -sin q); links 1 m, 1 m, tool 0.2 m
    x = np.column_stack([0 * q1, 0 * q1, np.cos(q1), np.cos(q1) + np.cos(q12), np.cos(q1) + np.cos(q12) + 0.2 * np.cos(q123)])
    z = -np.column_stack([0 * q1, 0 * q1, np.sin(q1), np.sin(q1) + np.sin(q12), np.sin(q1) + np.sin(q12) + 0.2 * np.sin(q123)])
    assert np.allclose(pts[:, :, 0], x, atol=1e-12) and np.allclose(pts[:, :, 2], z, atol=1e-12)
    assert np.allclose(pts[:, :, 1], 0.0)
    assert np.allclose(1000 * pts[:, -1, 0], plan.data["tool_x_mm"], atol=1e-6)  # the CSV's planned tool
    assert views(pts) == [(0, 2)]  # the arm moves in the x-z plane


def test_animate_writes_a_gif_and_finds_the_robot(e12_folder, tmp_path, capsys):
    assert main(["animate", str(e12_folder), "--fps", "4"]) == 0
    gif = Image.open(e12_folder / "animation.gif")
    # 0.82 s of plan slowed to about 5 s at 4 frames/s
    assert gif.n_frames == int(np.ceil(0.82 / (0.82 / 5.0) * 4)) + 1 and gif.info["duration"] == 250
    assert "animation.gif" in json.loads((e12_folder / MARKER).read_text())["files"]

    bare = tmp_path / "bare"  # a plan folder without problem.toml: the file summary.json names, or --problem
    shutil.copytree(e12_folder, bare)
    (bare / "problem.toml").unlink()
    summary = json.loads((bare / "summary.json").read_text())
    summary["problem"]["source"] = str(tmp_path / "moved.toml")
    (bare / "summary.json").write_text(json.dumps(summary))
    marker = json.loads((bare / MARKER).read_text())  # as ffopt would have written that folder
    del marker["files"]["problem.toml"]
    marker["files"]["summary.json"]["sha256"] = hashlib.sha256((bare / "summary.json").read_bytes()).hexdigest()
    (bare / MARKER).write_text(json.dumps(marker))
    assert main(["animate", str(bare)]) == 2
    assert "give the problem file (--problem FILE)" in capsys.readouterr().err
    assert main(["animate", str(bare), "--problem", str(E12), "--fps", "1"]) == 0
    wrong = main(["animate", str(bare), "--problem", str(E1)])
    assert wrong == 2 and "plan's joints (q1, q2, q3, the q_<joint> columns of trajectory.csv) are not the robot's (q1, q2)" in capsys.readouterr().err


def _link_directions(pts: np.ndarray) -> np.ndarray:
    """E12's drawn absolute link angles from the drawn points alone: a body x axis turned by theta about +y
    points to (cos theta, 0, -sin theta); points: base, joints 1-3, tool."""
    seg = np.diff(pts[:, 1:, :], axis=1)  # joint 1 -> 2, 2 -> 3, 3 -> tool
    return np.unwrap(np.arctan2(-seg[..., 2], seg[..., 0]), axis=0)


def test_animate_exaggerates_the_elastic_deflection_by_its_factor(e12_folder, monkeypatch, capsys):
    """The frames drawn with --exaggerate 50 (few frames): each link's drawn angle relative to the one before
    it is qm + 50 (q - qm) for the elastic gears q1, q2 and 50 q3 for the passive joint q3, read from the
    drawn points against the CSV's q_ and qm_ columns."""
    import ffopt.report.animation as animation

    drawn = []
    spy = animation.arm_points
    monkeypatch.setattr(animation, "arm_points", lambda chain, q: drawn.append(spy(chain, q)) or drawn[-1])
    assert main(["animate", str(e12_folder), "--fps", "1", "--speed", "0.5", "--exaggerate", "50"]) == 0
    assert "elastic deflection drawn x50" in capsys.readouterr().err
    pts = drawn[0]
    data = ffopt.load_plan(e12_folder).data
    t = data["t"]
    n = pts.shape[0]
    assert n == int(np.ceil((t[-1] - t[0]) / 0.5)) + 1  # few frames: 0.82 s at 2 frames per plan second
    at = lambda name: np.interp(np.linspace(t[0], t[-1], n), t, data[name])  # noqa: E731
    relative = np.diff(np.column_stack([np.zeros(n), _link_directions(pts)]), axis=1)
    expected = np.column_stack([at("qm_q1") + 50 * (at("q_q1") - at("qm_q1")),
                                at("qm_q2") + 50 * (at("q_q2") - at("qm_q2")), 50 * at("q_q3")])
    assert np.abs((relative - expected + np.pi) % (2 * np.pi) - np.pi).max() < 1e-9
    # the deflection is what changed: factor 1 draws the planned angles
    drawn.clear()
    assert main(["animate", str(e12_folder), "--fps", "1", "--speed", "0.5"]) == 0
    planned = np.diff(np.column_stack([np.zeros(n), _link_directions(drawn[0])]), axis=1)
    wrap = lambda x: (x + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    assert np.abs(wrap(planned - np.column_stack([at("q_q1"), at("q_q2"), at("q_q3")]))).max() < 1e-9
    assert np.abs(wrap(relative - planned)).max() > 0.1  # the two drawings differ


def test_animate_reports_every_stage(e12_folder, capsys):
    assert main(["animate", str(e12_folder), "--fps", "2"]) == 0
    err = capsys.readouterr().err
    for stage in ("reading the robot of the plan", "the arm's kinematics at", "drawing the axes",
                  "writing animation.gif"):
        assert stage in err, err
