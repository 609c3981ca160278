"""Problem files: the shipped ones load; bad input names the file and the field."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem, problem_from_dict

ROOT = Path(__file__).resolve().parents[1]
E12 = ROOT / "problems" / "e12_line.toml"


def e12_dict():
    return tomllib.loads(E12.read_text())


@pytest.mark.parametrize("path", sorted((ROOT / "problems").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_problems_load(path):
    p = load_problem(path)
    assert p.model.layout.n_u == len(p.outputs)


def test_e12_matches_table_1_of_moberg_hanssen_and_kinematics():
    p = load_problem(E12)
    m = p.model
    assert m.layout.gear == (0, 1) and m.layout.passive == (2,)
    q = np.array([0.3, -0.7, 0.1])
    x, z = np.array(m.output(q)).ravel()
    s = np.cumsum(q)
    # Moberg & Hanssen, sec. 5.2: x = l1 c1 + l2 c12 + l3 c123, z = -l1 s1 - l2 s12 - l3 s123
    assert x == pytest.approx(np.cos(s[0]) + np.cos(s[1]) + 0.2 * np.cos(s[2]), abs=1e-14)
    assert z == pytest.approx(-np.sin(s[0]) - np.sin(s[1]) - 0.2 * np.sin(s[2]), abs=1e-14)
    assert [j.body.mass for j in p.chain.joints] == [100.0, 100.0, 200.0]
    assert p.reference_spec.start == pytest.approx([2.146, -0.345])


def test_e1_simplified_is_lagrangian_form():
    """Row 1 has no spring term; row 2 is J12 a1 + J22 a2 + k q2 + d v2 (see the problem file)."""
    p = load_problem(ROOT / "problems" / "e1_simplified.toml")
    eom = p.model.equations_of_motion
    q, v, a = np.array([0.5, 0.01]), np.array([0.2, -0.3]), np.array([1.5, 2.5])
    res = np.array(eom(q, v, a, [7.0])).ravel()
    assert res[0] == pytest.approx(1000 * 1.5 + 700 * 2.5 - 7.0)
    assert res[1] == pytest.approx(700 * 1.5 + 600 * 2.5 + 1e6 * 0.01 + 1e3 * -0.3)


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["model"]["joints"][1].update(stifness=1.0), "model.joints[2].stifness"),
    (lambda d: d["model"]["joints"][0].update(mass="heavy"), "model.joints[1].mass"),
    (lambda d: d["model"]["joints"][2].update(stiffness=-1.0), "model.joints[3].stiffness"),
    (lambda d: d["model"]["joints"][0].update(kind="magnetic"), "model.joints[1].kind"),
    (lambda d: d["model"].update(outputs=["x"]), "model.outputs"),
    (lambda d: d["reference"].update(duration=0.0), "reference.duration"),
    (lambda d: d["reference"].update(start_mm=[1.0, 2.0, 3.0]), "reference.start_mm"),
    (lambda d: d["solver"].update(order=7), "solver.order"),
    (lambda d: d["solver"].update(form="I4"), "solver.form"),
    (lambda d: d.pop("reference"), "reference"),
    (lambda d: d.update(colour="red"), "colour"),
])
def test_bad_fields_are_named(mutate, field):
    d = e12_dict()
    mutate(d)
    with pytest.raises(ProblemError) as err:
        problem_from_dict(d, source="e12_line.toml")
    assert f"e12_line.toml: {field}" in str(err.value)


def test_typo_gets_a_suggestion():
    d = e12_dict()
    d["model"]["joints"][1]["stifness"] = d["model"]["joints"][1].pop("stiffness")
    with pytest.raises(ProblemError, match="did you mean 'stiffness'"):
        problem_from_dict(d, source="x.toml")


def test_invalid_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[model\n")
    with pytest.raises(ProblemError, match="bad.toml: not valid TOML"):
        load_problem(bad)
    with pytest.raises(ProblemError, match="no such problem file"):
        load_problem(tmp_path / "missing.toml")


def test_payload_scale_changes_only_last_body():
    p = load_problem(E12)
    c2 = p.chain.with_payload_scale(2.0)
    assert c2.joints[-1].body.mass == 400.0 and c2.joints[0].body.mass == 100.0
    assert np.allclose(c2.joints[-1].body.inertia, 2 * p.chain.joints[-1].body.inertia)
