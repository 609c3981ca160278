"""The spline time law (``ffopt.reference.time_laws.SplineLaw``) and the smoothed time-optimal law built from it
(``ffopt.motion.min_time.smoothed_time_optimal``), against closed forms: a bang-bang law's rate and position, the
B-spline's smoothness at the rests, and the CasADi expression against the numpy evaluation."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from ffopt.errors import ProblemError
from ffopt.io.problem import problem_from_dict
from ffopt.motion.min_time import smoothed_time_optimal
from ffopt.reference.time_laws import SPLINE_DEGREE, SplineLaw


def bang_bang_rate(T: float, n: int = 4001) -> tuple[np.ndarray, np.ndarray]:
    """sigma' of the rest-to-rest bang-bang law over T: acceleration 4 / T^2, then -4 / T^2."""
    t = np.linspace(0.0, T, n)
    return t, np.where(t < T / 2, 4 * t / T**2, 4 * (T - t) / T**2)


def bang_bang_spline(cells: int = 30) -> SplineLaw:
    """A SplineLaw whose acceleration coefficients are +a, -a (a scaled so that the law reaches 1; an odd number of
    cells is projected onto the end conditions)."""
    p, delta = SPLINE_DEGREE, 1.0 / (cells + SPLINE_DEGREE)
    a = np.concatenate([np.ones(cells // 2), -np.ones(cells - cells // 2)])
    centre = (np.arange(cells) + (p + 1) / 2) * delta
    projected = SplineLaw(a / (delta * np.sum(a * (1 - centre))), check=False)  # odd cells: projected to end at rest
    return SplineLaw(projected.acceleration)


def test_the_law_rests_at_both_ends_and_is_c8_there():
    law = bang_bang_spline()
    assert law(np.array([0.0, 1.0])).tolist() == [0.0, 1.0]
    assert law(np.array([-0.5, 1.5])).tolist() == [0.0, 1.0]
    eps = 1e-3  # inside the first piece (1 / 37 long)
    for k in range(1, SPLINE_DEGREE + 2):  # derivatives 1..8 vanish at the rests: ~ eps^(9 - k) from inside
        scale = np.abs(law(np.linspace(0, 1, 2001), k)).max()
        assert np.abs(law(np.array([0.0, 1.0]), k)).max() <= 1e-9 * scale
        ratio = law(np.array([2 * eps]), k)[0] / law(np.array([eps]), k)[0]
        assert ratio == pytest.approx(2.0 ** (SPLINE_DEGREE + 2 - k), rel=1e-6)
        # the law is point-symmetric (its acceleration odd about 1/2): the same zero at the end, to roundoff
        for x in (eps, 2 * eps, 0.1):
            assert abs(law(np.array([1 - x]), k)[0]) == pytest.approx(abs(law(np.array([x]), k)[0]), abs=1e-12 * scale)
    ninth = law(np.array([1e-6]), SPLINE_DEGREE + 2)[0]  # the 9th jumps: C^8, not C^9
    assert abs(ninth) > 1e-3 * np.abs(law(np.linspace(0, 1, 2001), SPLINE_DEGREE + 2)).max()
    assert np.all(law(np.linspace(0, 1, 1001), 1) >= -1e-12)  # monotone (to roundoff at the end)


def test_the_casadi_expression_is_the_numpy_law():
    law = bang_bang_spline(23)
    tau = ca.SX.sym("tau")
    expr = law.expression(tau)
    derivs = [expr]
    for _ in range(5):
        derivs.append(ca.jacobian(derivs[-1], tau))
    f = ca.Function("f", [tau], derivs)
    points = np.concatenate([[0.0, 1.0, 0.5], np.random.default_rng(3).uniform(0, 1, 20)])
    for x in points:
        values = [float(v) for v in f(x)]
        for k, v in enumerate(values):
            scale = np.abs(law(np.linspace(0, 1, 2001), k)).max()
            assert v == pytest.approx(float(law(np.array([x]), k)[0]), abs=1e-10 * scale)


def test_coefficients_that_do_not_end_at_rest_are_refused_by_name():
    with pytest.raises(ProblemError, match=r"reference.time_law_spline: the law does not end at rest"):
        SplineLaw([1.0, 1.0, -1.0])
    a = np.asarray(bang_bang_spline(30).acceleration)
    backwards = np.r_[-a[:4], 3 * a[:4], a[8:]]  # starts backwards; projected onto the end conditions, still backwards
    with pytest.raises(ProblemError, match="runs backwards"):
        SplineLaw(SplineLaw(backwards, check=False).acceleration)


def test_smoothing_a_bang_bang_law_keeps_its_rate_bound_and_lengthens_it_by_seven_eighths_of_the_width():
    T, width = 1.0, 0.08
    t, rate = bang_bang_rate(T)
    law, duration = smoothed_time_optimal(t, rate, width)
    cells = int(np.ceil(T * (SPLINE_DEGREE + 1) / width))
    assert duration == pytest.approx(T + SPLINE_DEGREE * T / cells)
    tau = np.linspace(0.0, 1.0, 4001)
    speed = law(tau, 1) / duration  # d sigma / dt
    assert speed.min() >= -1e-12 and speed.max() <= rate.max() * (1 + 1e-9)  # a convex combination of the rates
    # away from the switch and the start the smoothed rate is the bang-bang rate (linear there, so a symmetric
    # kernel leaves it as it is) delayed by SPLINE_DEGREE / 2 cells: a cell's mean acceleration moves from the
    # cell's centre to its B-spline's, SPLINE_DEGREE / 2 cells later
    delay = SPLINE_DEGREE / 2 * T / cells
    mid = duration * tau
    inside = (mid > delay + width) & (mid < T / 2 - width)
    assert inside.sum() > 500
    assert np.abs(speed[inside] - 4 * (mid[inside] - delay) / T**2).max() < 1e-9


def one_link(law: str, spline=()) -> dict:
    joint = {"name": "j1", "kind": "direct", "axis": [0.0, 0.0, 1.0], "mass": 2.0, "com": [0.5, 0.0, 0.0],
             "inertia_diag": [0.0, 0.0, 0.1], "motor_inertia": 0.4}
    ref = {"kind": "joint_ptp", "q_start_deg": [0.0], "q_end_deg": [90.0], "duration": 1.0, "time_law": law}
    if spline:
        ref["time_law_spline"] = list(spline)
    return {"name": "one link", "model": {"gravity": [0.0, 0.0, 0.0], "outputs": ["j1"], "tool_origin": [1.0, 0.0, 0.0],
                                         "joints": [joint]},
            "reference": ref, "solver": {"method": "bdf", "order": 4, "step": 1e-3}}


def test_a_problem_file_moves_by_a_spline_law_and_misuse_is_named():
    law = bang_bang_spline()
    problem = problem_from_dict(one_link("spline", law.acceleration))
    assert problem.reference_spec.law.acceleration == pytest.approx(law.acceleration, rel=1e-13)  # re-projected
    y = problem.reference.evaluate(np.array([0.05 + 0.3]))  # the joint output = 90 deg x s(0.3)
    assert float(np.ravel(y)[0]) == pytest.approx(np.pi / 2 * float(law(np.array([0.3]))[0]), rel=1e-12)
    with pytest.raises(ProblemError, match="reference.time_law: time_law = \"spline\" and time_law_spline"):
        problem_from_dict(one_link("spline"))
    with pytest.raises(ProblemError, match="reference.time_law_spline: time_law = \"spline\" and time_law_spline"):
        problem_from_dict(one_link("poly11", law.acceleration))
    with pytest.raises(ProblemError, match="reference.time_law_spline: the law does not end at rest"):
        problem_from_dict(one_link("spline", [1.0, 2.0, 3.0]))
