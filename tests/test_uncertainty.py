"""Uncertainty ranges ([uncertainty]) and the plants drawn from them; Monte Carlo verification over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.errors import ProblemError
from ffopt.motion.uncertainty import plants, uncertainty_from_dict, vertex_points

E12 = Path(__file__).resolve().parent.parent / "problems" / "e12_line.toml"
RANGES = {"model.joints.*.stiffness": "+-20%", "model.joints.q3.mass": "+-20%"}


@pytest.fixture(scope="module")
def e12():
    return ffopt.load_problem(str(E12))


def test_ranges_expand_every_joint_and_scale_relative(e12):
    u = uncertainty_from_dict({"ranges": RANGES, "samples": 20, "seed": 3}, e12)
    assert u.names == ["model.joints.q1.stiffness", "model.joints.q2.stiffness", "model.joints.q3.stiffness",
                       "model.joints.q3.mass"]
    assert u.values([0, 1, 0.5, 1]) == {"model.joints.q1.stiffness": 8e4, "model.joints.q2.stiffness": 1.2e5,
                                        "model.joints.q3.stiffness": 1e5, "model.joints.q3.mass": 240.0}
    absolute = uncertainty_from_dict({"ranges": {"model.joints.q3.mass": [150.0, 260.0]}}, e12)
    assert absolute.values([0.5]) == {"model.joints.q3.mass": 205.0}
    # nested tables (the key written unquoted in TOML) read the same
    nested = uncertainty_from_dict({"ranges": {"model": {"joints": {"*": {"stiffness": "+-20%"}}}}}, e12)
    assert len(nested.ranges) == 3


@pytest.mark.parametrize("table, words", [
    ({"ranges": {"model.joints.*.stiffnes": "+-20%"}}, "'model.joints.*.stiffnes': no entry has this field"),
    ({"ranges": {"model.joints.q9.mass": "+-20%"}}, "'model.joints.q9.mass': no such numeric field"),
    ({"ranges": {"model.joints.q1.stiffness": [2e5, 1e5]}}, "empty range [200000.0, 100000.0]"),
    ({"ranges": {"model.joints.q1.mass": "+-0%"}}, "empty range '+-0%'"),
    ({"ranges": {"model.joints.q1.stiffness": "+-120%"}}, "q1.stiffness would be -20000 at the range's low end: a "
                                                          "stiffness must be > 0"),
    ({"ranges": {"model.joints.q1.mass": [-1.0, 5.0]}}, "q1.mass would be -1 at the range's low end: a mass must be"),
    ({"ranges": {"model.joints.q1.mass": "about 20%"}}, "is not a range"),
    ({"ranges": {}}, "uncertainty.ranges: missing or empty"),
    ({"ranges": RANGES, "samples": 0}, "uncertainty.samples: expected an integer >= 1"),
    ({"ranges": RANGES, "sample": 4}, "uncertainty.sample: unknown key"),
])
def test_bad_ranges_name_the_field(e12, table, words):
    with pytest.raises(ProblemError) as err:
        uncertainty_from_dict(table, e12)
    assert words in str(err.value)
    assert str(err.value).startswith(str(E12))


def test_design_is_seeded_and_holds_the_vertices(e12):
    u = uncertainty_from_dict({"ranges": RANGES}, e12)
    a, b = plants(e12, u, 24, seed=5, build=False), plants(e12, u, 24, seed=5, build=False)
    c = plants(e12, u, 24, seed=6, build=False)
    pa, pb, pc = (np.array([p.point for p in x]) for x in (a, b, c))
    assert np.array_equal(pa, pb)  # the same seed, the same plants
    assert not np.array_equal(pa[16:], pc[16:]) and np.array_equal(pa[:16], pc[:16])  # the design moves, not the box
    assert {tuple(x) for x in pa[:16]} == {tuple(x) for x in vertex_points(4)}  # all 2^4 vertices first
    assert np.all((pa[16:] > 0) & (pa[16:] < 1))
    assert a[0].label == "vertex ----" and a[16].label == "sample 1"
    built = plants(e12, u, 2)
    assert built[1].problem.model is not None
    assert built[1].problem.to_dict()["model"]["joints"][2]["mass"] == 240.0


def test_many_fields_take_axis_extremes_and_capped_corners():
    v = vertex_points(9, seed=1)
    assert len(v) == 32 and len({tuple(x) for x in v}) == 32
    assert any(np.all(x == 0) for x in v) and any(np.all(x == 1) for x in v)
    assert sum(np.count_nonzero(x != 0.5) == 1 for x in v) == 18  # each field alone at each bound


@pytest.fixture(scope="module")
def rest_table(e12):
    from ffopt.motion.monte_carlo import table_of_plan

    result = ffopt.plan(e12, verify=False)
    return result.problem, table_of_plan(result.problem, result.trajectory)


def test_monte_carlo_is_the_same_on_any_number_of_workers(e12, rest_table):
    from ffopt.motion.monte_carlo import monte_carlo

    problem, table = rest_table
    u = uncertainty_from_dict({"ranges": RANGES}, e12)
    some = plants(e12, u, 20, build=False)[::5]  # 4 plants: 2 vertices, 2 samples
    lines = []
    one = monte_carlo(problem, table, some, processes=1)
    two = monte_carlo(problem, table, some, processes=2, progress=lines.append)
    runs = {"1": one, "2": two}
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        pass
    else:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            runs["dask"] = monte_carlo(problem, table, some, scheduler=client)
    for key, mc in runs.items():
        assert [r.label for r in mc.runs] == [p.label for p in some], key
        for a, b in zip(one.runs, mc.runs):
            assert (a.max_mm, a.residual_mm, a.static_offset_mm, a.settled_cycle_s) == \
                (b.max_mm, b.residual_mm, b.static_offset_mm, b.settled_cycle_s), key
    assert lines and lines[-1].startswith("Monte Carlo: 4/4 plants")
    s = one.summary()
    assert s["residual_mm"]["worst"] == max(r.residual_mm for r in one.runs) > 50.0  # the plain plan rings
    assert s["worst_plant"]["label"] == one.worst.label and not s["worst_within_tolerance"]
    # the nominal plant: at rest at the end point (the plan rests, the static offset is zero)
    nominal = monte_carlo(problem, table, [type(some[0])("nominal", np.zeros(4), {})], processes=1)
    assert nominal.runs[0].static_offset_mm < 1e-6 and nominal.runs[0].residual_mm < 0.05


def test_problem_file_holds_the_uncertainty_table(e12):
    from ffopt.motion.uncertainty import problem_uncertainty

    data = e12.to_dict()
    data["uncertainty"] = {"samples": 32, "seed": 2, "ranges": RANGES}
    problem = ffopt.Problem.from_dict(data, "robust.toml")
    u = problem_uncertainty(problem)
    assert (u.samples, u.seed, len(u.ranges)) == (32, 2, 4)
    assert problem_uncertainty(e12) is None
    assert "uncertainty" in problem.to_toml()  # kept when the problem is written
    data["uncertainty"]["ranges"] = {"model.joints.q1.stiffness": "+-200%"}
    with pytest.raises(ProblemError, match="robust.toml: uncertainty.ranges"):
        problem_uncertainty(ffopt.Problem.from_dict(data, "robust.toml"))


def test_reference_takes_the_ei_shapers(e12):
    for kind, periods in (("ei", 1.0), ("zvd", 1.0)):
        p = e12.with_values({"reference.shaper": kind, "reference.shaper_modes": [[1.0, 0.1]]})
        ref = p.reference
        assert ref.t_motion_end - ref.t_motion_start == pytest.approx(0.3 + periods / np.sqrt(1 - 0.01), rel=1e-6)


def test_an_interval_may_set_a_field_the_problem_leaves_out(e12):
    u = uncertainty_from_dict({"ranges": {"model.payload.mass": [0.0, 5.0]}}, e12)  # E12 has no [model.payload]
    assert u.ranges[0].nominal is None
    heavy = plants(e12, u, 2)[1]
    assert heavy.problem.to_dict()["model"]["payload"] == {"mass": 5.0}
    with pytest.raises(ProblemError, match="no such numeric field"):  # a relative range needs a nominal value
        uncertainty_from_dict({"ranges": {"model.payload.mass": "+-20%"}}, e12)


def test_a_plan_validates_its_uncertainty_first_and_reports_the_monte_carlo(tmp_path):
    """ffopt plan: a bad [uncertainty] fails before any solve, naming the field (exit 2, nothing written); a good
    one runs the plan on its plants and summary.json holds the statistics."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    text = (root / "problems" / "e12_line.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text + '\n[uncertainty]\n[uncertainty.ranges]\n"model.joints.q9.stiffness" = "+-20%"\n')
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", str(bad), "--out", str(tmp_path / "o1"),
                           "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 2 and "q9" in proc.stderr and not (tmp_path / "o1").exists()
    good = tmp_path / "good.toml"
    good.write_text(text + '\n[uncertainty]\nsamples = 4\n[uncertainty.ranges]\n"model.joints.q3.mass" = "+-5%"\n')
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", str(good), "--out", str(tmp_path / "o2"),
                           "--quiet", "--no-plots"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "over the uncertainty ranges" in proc.stdout
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["monte_carlo"]["plants"] == 4 and len(summary["monte_carlo"]["per_plant"]) == 4
    from ffopt.report.html import write_report

    page = write_report(tmp_path / "o2").read_text()
    assert "Monte Carlo: residual after the table over the uncertainty ranges" in page  # the histogram
