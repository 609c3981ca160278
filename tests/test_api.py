"""The Python API for scripts and notebooks: fields by dotted name (validated like a file), problems
from dicts, the trajectory and the verification table as DataFrames, plots, saved plans read back."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from helpers import toml_text

import ffopt
from ffopt.errors import ProblemError, VerificationError
from ffopt.io.results import read_trajectory_csv

ROOT = Path(__file__).resolve().parents[1]
E12 = ROOT / "problems" / "e12_line.toml"
E1 = ROOT / "problems" / "e1_complete.toml"


def raw(path: Path) -> dict:
    return tomllib.loads(path.read_text())


@pytest.fixture(scope="module")
def e1_plan(tmp_path_factory):
    """E1 complete, verified without the payload cases, saved with plots."""
    problem = ffopt.load_problem(E1).with_values({"verification.payload_scales": [0.5]})
    result = ffopt.plan(problem, compile=False, verify="full")
    return result, result.save(tmp_path_factory.mktemp("api") / "e1")


# --- with_values ------------------------------------------------------------------------------


def test_with_values_equals_the_edited_file(tmp_path):
    """Joints by name or position, a vector element, a table the file left out: the same problem as
    editing the TOML by hand (compared through an independent TOML file)."""
    base = ffopt.load_problem(E12)
    changed = base.with_values({"model.joints.q3.stiffness": 8e4, "reference.duration": 0.4,
                                "model.joints[1].damping": 40, "reference.end_mm[2]": 1600.0,
                                "nlp.torque_max": np.array([1.5e5, 9e4]), "solver.order": np.int64(5)})
    data = raw(E12)
    data["model"]["joints"][2]["stiffness"] = 8e4
    data["model"]["joints"][0]["damping"] = 40
    data["reference"]["duration"] = 0.4
    data["reference"]["end_mm"][1] = 1600.0
    data["nlp"] = {"torque_max": [1.5e5, 9e4]}
    data["solver"]["order"] = 5
    (tmp_path / "edited.toml").write_text(toml_text(data))
    edited = ffopt.load_problem(tmp_path / "edited.toml")
    assert changed.to_dict() == edited.to_dict()
    assert changed.chain.joints[2].stiffness == 8e4 and changed.chain.joints[0].damping == 40.0
    assert changed.reference_spec.duration == 0.4 and changed.reference_spec.end[1] == pytest.approx(1.6)
    assert changed.nlp.torque_max == (1.5e5, 9e4) and changed.solver.order == 5
    assert changed.source == base.source
    # e12_line.toml's q3 stiffness; the original is untouched
    assert base.chain.joints[2].stiffness == 1e5 and base.to_dict() == raw(E12)
    assert base.with_values({"model.joints.q2.mass": 90.0}).to_dict() == \
        base.with_values({"model.joints[2].mass": 90.0}).to_dict()


def test_joint_names_with_dots_are_addressed_whole():
    data = raw(E1)
    data["model"]["joints"][1]["name"] = "elbow.pass"
    problem = ffopt.problem_from_dict(data)
    assert problem.with_values({"model.joints.elbow.pass.damping": 7.0}).chain.joints[1].damping == 7.0


@pytest.mark.parametrize("values, message", [
    ({"model.joints.q3.stiffness": -1.0},
     r"e12_line\.toml: model\.joints\[3\]\.stiffness: must be >= 0, got -1\.0 "
     r"\(set by with_values: 'model\.joints\.q3\.stiffness' = -1\.0\)"),
    ({"model.joints.q4.stiffness": 1.0},
     r"e12_line\.toml: with_values: 'model\.joints\.q4\.stiffness': model\.joints has no entry named 'q4' "
     r"\(names: q1, q2, q3; or give a 1-based position, model\.joints\[1\]\)"),
    ({"model.joints.q_3.mass": 1.0}, r"no entry named 'q_3' \(did you mean 'q3'\?\)"),
    ({"model.joints.q3.stifness": 1.0}, r"model\.joints\[3\]\.stifness: unknown key \(did you mean 'stiffness'\?\)"),
    ({"reference.duration": "fast"}, r"reference\.duration: expected a finite number, got 'fast'"),
    ({"reference.speed_mm_s": 500.0, "solver.order": 5},
     r"reference\.speed_mm_s: give either duration or speed_mm_s, not both "
     r"\(set by with_values: 'reference\.speed_mm_s' = 500\.0\)"),
    ({"nlp.torque_max": [1e5]}, r"nlp\.torque_max: expected 2 values .* \(set by with_values: 'nlp\.torque_max'"),
    ({"model.gravity[4]": 0.0}, r"'model\.gravity\[4\]': model\.gravity has 3 entries; positions are 1\.\.3"),
    ({"reference.duration.x": 1}, r"reference\.duration is a value \(0\.3\), not a table or an array"),
    ({"model..joints": 1}, r"'model\.\.joints' is not a dotted field name"),
    ({"solver.order": 9}, r"solver\.order: must be 1\.\.6, got 9"),
])
def test_with_values_errors_name_the_file_and_the_dotted_key(values, message):
    with pytest.raises(ProblemError, match=message):
        ffopt.load_problem(E12).with_values(values)


def test_problem_from_dict_accepts_numpy_and_round_trips_through_toml(tmp_path):
    data = raw(E12)
    numeric = copy.deepcopy(data)
    numeric["model"]["gravity"] = np.array([0.0, 0.0, -9.81])
    numeric["solver"]["order"] = np.int64(6)
    a = ffopt.problem_from_dict(numeric, source="notebook")
    b = ffopt.Problem.from_dict(data)
    assert a.to_dict() == b.to_dict() == data and a.source == "notebook"
    (tmp_path / "p.toml").write_text(a.to_toml())
    assert ffopt.load_problem(tmp_path / "p.toml").to_dict() == data
    with pytest.raises(ProblemError, match=r"notebook: model\.joints\[1\]\.mass: missing required key"):
        del numeric["model"]["joints"][0]["mass"]
        ffopt.problem_from_dict(numeric, source="notebook")


def test_plan_keeps_the_file_form_in_step_with_its_options():
    result = ffopt.plan(ffopt.load_problem(E1), order=4, step=2.5e-3, verify=False, compile=False)
    d = result.problem.to_dict()
    assert d["solver"]["order"] == 4 and d["solver"]["step"] == 2.5e-3 and d["nlp"]["step"] == 2.5e-3


# --- results as tables and figures ------------------------------------------------------------


def test_dataframes_match_the_saved_files(e1_plan):
    result, out = e1_plan
    df = result.to_dataframe()
    csv = read_trajectory_csv(out / "trajectory.csv")
    assert list(df.columns) == list(csv)
    for name in csv:
        # the CSV holds 12 significant digits (%.12g)
        assert np.allclose(df[name], csv[name], rtol=1e-11, atol=1e-12), name
    summary = json.loads((out / "summary.json").read_text())
    assert df.attrs["units"] == {c["name"]: c["unit"] for c in summary["columns"]}
    assert df.attrs["units"]["u_q1"] == "N m" and df.attrs["units"]["tool_z_mm"] == "mm"

    ver = result.verification_dataframe()
    cases = summary["verification"]["tool_error"]
    assert list(ver.index) == list(cases) and ver.index.name == "case"
    for case, numbers in cases.items():
        # the same numbers through summary.json (JSON floats round-trip exactly; 1e-12 is slack only)
        assert ver.loc[case, "max_mm"] == pytest.approx(numbers["max_mm"], rel=1e-12)
        assert ver.loc[case, "rms_mm"] == pytest.approx(numbers["rms_mm"], rel=1e-12)
        assert ver.loc[case, "peak_u_q1_Nm"] == pytest.approx(numbers["peak_torque_Nm"][0], rel=1e-12)
    # regression values measured on 2026-11-27 (E1 complete, BDF-6 at its 5 ms step): 0.232 mm with the plan, 53.0 mm
    # with the PD loop alone; bounds 2x / 0.5x the measured
    assert ver.loc["feedforward_pd", "max_mm"] < 0.47 and ver.loc["pd_only", "max_mm"] > 26.0

    saved = ffopt.load_plan(out)  # the same tables from the folder
    pd.testing.assert_frame_equal(saved.verification_dataframe(), ver)
    # read back from the CSV's %.12g
    assert np.allclose(saved.to_dataframe().to_numpy(), df.to_numpy(), rtol=1e-11, atol=1e-12)
    assert saved.to_dataframe().attrs["units"] == df.attrs["units"]
    assert saved.problem().to_dict() == result.problem.to_dict()


def test_plot_methods_draw_the_plan(e1_plan):
    result, _ = e1_plan
    fig = result.plot_torques()
    assert isinstance(fig, matplotlib.figure.Figure)
    (line,) = fig.axes[0].get_lines()
    assert np.array_equal(line.get_ydata(), result.trajectory.u[:, 0])
    path = result.plot_tool_path()
    labels = [ln.get_label() for ln in path.axes[0].get_lines()]
    assert "reference" in labels and "feedforward_pd" in labels
    # 4 cases during the move, the same 4 in the settle window after the table, the table-end marker
    assert len(result.plot_tool_error().axes[0].get_lines()) == 9
    unverified = ffopt.plan(E1, verify=False, compile=False)
    assert unverified.verification_dataframe() is None
    with pytest.raises(VerificationError, match="not verified"):
        unverified.plot_tool_path()
    matplotlib.pyplot.close("all")


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path, monkeypatch):
    """The README's Python block, as a user would paste it (run from the repository, out/ in tmp_path)."""
    import re

    block = re.search(r"```python\n(import ffopt\n.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    monkeypatch.chdir(ROOT)
    code = block.replace('"out/e12"', repr(str(tmp_path / "e12")))
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["df"].attrs["units"]["u_q1"] == "N m" and namespace["saved"].summary["problem"]["name"]
    assert namespace["stiff"].chain.joints[2].stiffness == 8e4
    matplotlib.pyplot.close("all")


def test_load_plan_names_what_is_missing(tmp_path):
    with pytest.raises(ProblemError, match="no such plan folder"):
        ffopt.load_plan(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match="not a plan folder"):
        ffopt.load_plan(tmp_path / "empty")
