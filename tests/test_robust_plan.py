"""Worst-case-robust rest to rest (ffopt.plan.worst_case): the worst residual over the ranges falls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.motion.monte_carlo import monte_carlo, table_of_plan
from ffopt.plan.worst_case import _parabola_vertex, robust_rest_plan, shaper_duration
from ffopt.motion.uncertainty import plants, uncertainty_from_dict

ROOT = Path(__file__).resolve().parent.parent
E12 = ROOT / "problems" / "e12_line.toml"


def test_parabola_vertex_refines_an_inner_minimum_only():
    assert _parabola_vertex([(1.0, 3.0), (1.1, 1.0), (1.2, 3.0)]) == pytest.approx(1.1)
    assert _parabola_vertex([(1.0, 4.0), (1.1, 1.0), (1.2, 2.0)]) == pytest.approx(1.125)
    assert _parabola_vertex([(1.0, 1.0), (1.1, 2.0), (1.2, 3.0)]) is None  # the least at an end of the scan


def test_robust_plan_rings_less_than_the_plain_plan_on_the_vertices():
    p0 = ffopt.load_problem(str(E12))
    ranges = uncertainty_from_dict({"ranges": {"model.joints.q3.mass": "+-20%"}}, p0)  # 2 vertices: cheap
    vertices = plants(p0, ranges, 2, build=False)
    plain = ffopt.plan(p0, verify=False)
    before = monte_carlo(plain.problem, table_of_plan(plain.problem, plain.trajectory), vertices, processes=1)
    robust = robust_rest_plan(p0, ranges, factors=(1.15,), damping_factors=(1.4,), processes=1, samples=0)
    f, z = robust.shaper[1][0]
    # one EI design: 1.15 x the PD-held mode's 0.948 Hz, 1.4 x its damping; the base law fills the move
    assert robust.shaper[0] == "ei" and f == pytest.approx(1.15 * 0.948, rel=1e-3) and z == pytest.approx(0.1503,
                                                                                                        rel=1e-2)
    assert robust.move_s == pytest.approx(1.35)  # 0.3 s + one period of the PD-held mode, 10 ms down
    assert robust.problem.reference_spec.duration == pytest.approx(robust.move_s - shaper_duration("ei", [(f, z)]))
    # measured 2026-11-28: 154 mm (the plain 0.3 s rest-to-rest plan) -> 4.0 mm on q3's mass x0.8, x1.2
    worst_before = max(r.residual_mm for r in before.runs)
    assert worst_before > 100.0
    assert robust.worst_vertex_mm < 0.1 * worst_before
    # ... and the plan still rests on the nominal model
    from ffopt.dae.rest_to_rest import ends_at_rest

    assert ends_at_rest(robust.problem.model, robust.trajectory)[0]
    assert np.isfinite(robust.summary()["worst_vertex_residual_mm"])


def test_solver_robust_worst_case_needs_uncertainty_ranges():
    from ffopt.errors import ProblemError

    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    with pytest.raises(ProblemError, match=r"solver.robust: worst_case plans over the ranges of an \[uncertainty\]"):
        problem.with_values({"solver.robust": "worst_case"})


@pytest.mark.slow
def test_plan_with_solver_robust_worst_case(tmp_path):
    """The planner's worst-case step on E12's robust problem (its law removed): the plan it makes rests on the
    vertices within 2x of the study's 6.42 mm, its problem.toml holds the law (robust = none), the Monte Carlo
    runs on the plan."""
    data = ffopt.load_problem(ROOT / "problems" / "e12_robust.toml").to_dict()
    for key in ("time_law_shape", "shaper", "shaper_modes"):
        data["reference"].pop(key, None)
    data["reference"]["duration"] = 0.3
    data.setdefault("solver", {})["robust"] = "worst_case"
    result = ffopt.plan(ffopt.Problem.from_dict(data, "e12 worst case"))
    record = result.method_choice["worst_case"]
    assert record["worst_vertex_residual_mm"] < 2 * 6.42
    assert result.problem.solver.robust == "none" and result.problem.reference_spec.shaper is not None
    assert result.monte_carlo is not None and result.verification.verdict.status == "verified"
