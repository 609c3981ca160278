"""A path retimed numerically (ffopt.reference.retimed: Faa di Bruno's formula as Taylor arithmetic on the
identity-law path) against the symbolic reference of the same law: every derivative the BDF inverse reads, on
a line, a line with tool angles, an arc and a joint move, before, during and after the motion."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.reference.build import reference_from_spec
from ffopt.reference.retimed import RetimedPath
from ffopt.reference.time_laws import shaped_time_law

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


@pytest.mark.parametrize("name", ["e12_line.toml", "ur5_line.toml", "arm3d_arc.toml", "arm3d_joint_ptp.toml"])
def test_retimed_rows_equal_the_symbolic_references(name):
    problem = ffopt.load_problem(PROBLEMS / name)
    spec = problem.reference_spec
    if not RetimedPath.separable(spec):
        pytest.skip(f"{name}: not one path parameter")
    law = shaped_time_law(spec.time_law, np.random.default_rng(1).normal(0.0, 0.05, 6), check=False)
    symbolic = reference_from_spec(spec, problem.model, law)
    retimed = RetimedPath(spec, problem.model).reference(law)
    t = np.linspace(0.0, symbolic.t_end, 397)
    n = 6
    rows = retimed.path_rows(t, n)
    for k in range(n):
        exact = symbolic.evaluate(t, k)
        scale = max(1.0, np.abs(exact).max())
        assert np.abs(rows[:, k * symbolic.n_out:(k + 1) * symbolic.n_out] - exact).max() <= 1e-11 * scale, k
    assert retimed.t_end == symbolic.t_end and retimed.n_out == symbolic.n_out


def test_polylines_and_shaped_paths_are_not_retimed():
    spec = ffopt.load_problem(PROBLEMS / "e12_polyline.toml").reference_spec
    assert not RetimedPath.separable(spec)
