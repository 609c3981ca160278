"""Shaped time laws (reference.time_law_shape) and the rest-to-rest search (ffopt.dae.rest_to_rest).

E12 (Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods)): with poly11 the
exact-tracking plan ends with the passive joint turning at 3.8 rad/s (its zero dynamics, -0.63 +- 50j
rad/s, ring through rest_after); eight free shaping terms bring it to rest and lower the peak torque, the law
C^7 across the rests so that the torque table does not alternate from row to row there.
"""

from __future__ import annotations

import tomllib
from fractions import Fraction
from math import factorial
from pathlib import Path

import numpy as np
import pytest

import ffopt.dae.bdf as bdf
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.dae.rest_to_rest import JUNCTION_EXTRA, N_SHAPE, ends_at_rest, shape_for_rest
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.reference.time_laws import TIME_LAWS, junction_family, make_time_law, shape_basis, shaped_time_law

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
# regression values measured on 2026-11-27 (BDF-6, h = 1 ms, form I1; E1: h = 5 ms); the shaped ones on 2026-11-28
# with 8 free terms and C^7 rests (before, 6 terms and C^5 rests: E12 98776.6 N m, E1 62171.3 N m)
E12_PEAK_POLY11 = 136193.4  # N m, poly11
E12_PEAK_SHAPED = 127387.4  # N m, poly11 + 8 free shaping terms at rest (-6.5 %)
E1_PEAK_SHAPED = 76259.3  # N m, E1 simplified at h = 5 ms, 8 free terms (poly11: 104610)
ALTERNATION_MAX = 1e-3  # the alternating part of a torque column, at most this share of the column's peak


def alternating_part(u) -> np.ndarray:
    """Per column, max_i |d2u[i+1] - d2u[i]| / 4 (d2u the second difference along the rows) over the column's
    peak |u|: for u alternating +-a from row to row it is 2a / peak; a smooth column gives h^3 max |d3u/dt3| / 4."""
    d2 = np.diff(np.asarray(u, float), 2, axis=0)
    return (np.abs(np.diff(d2, axis=0)) / 4).max(axis=0) / np.abs(u).max(axis=0)


def _plan(problem):
    s = problem.solver
    return solve_inverse_bdf(problem.model, problem.reference, s, qa_guess=problem.reference_spec.joint_guess)


@pytest.mark.parametrize("base,shape", [("poly11", [-0.0858, -0.5376, -0.1770, -0.2660, -0.0052, -0.0915]),
                                        ("hermite9", [0.02, -0.1]), ("poly15", [0.01])])
def test_a_shaped_law_keeps_the_ends_and_their_zero_derivatives(base, shape):
    law = shaped_time_law(base, shape)
    n = TIME_LAWS[base].n_zero_derivs
    assert "shape" in law.name and law.n_zero_derivs == n and law.degree == 2 * n + 1 + len(shape)
    assert law(np.array([0.0]))[0] == 0.0 and law(np.array([1.0]))[0] == 1.0
    for k in range(1, n + 1):
        assert np.abs(law(np.array([0.0, 1.0]), k)).max() < 1e-12, k
    # the Bernstein form (sums of cached exact terms in floats) equals the exact rational polynomial base +
    # sum c_i phi_i (derivatives 0..3 inside the interval)
    exact = list(TIME_LAWS[base].exact_coefficients) or [Fraction(x) for x in TIME_LAWS[base].coefficients]
    exact += [Fraction(0)] * (law.degree + 1 - len(exact))
    for i, ci in enumerate(shape, start=1):
        for j, b in enumerate(shape_basis(n, i)):
            exact[j] += Fraction(ci) * b
    for tau in (Fraction(1, 7), Fraction(1, 2), Fraction(5, 6)):
        for k in range(4):
            value = sum(c * (factorial(j) // factorial(j - k)) * tau ** (j - k) for j, c in enumerate(exact) if j >= k)
            assert law(np.array([float(tau)]), k)[0] == pytest.approx(float(value), rel=1e-12, abs=1e-12)


def test_shape_terms_vanish_at_the_ends_and_are_order_one():
    tau = np.linspace(0.0, 1.0, 1001)
    for i in range(1, 7):
        c = [float(x) for x in shape_basis(5, i)]
        assert all(x == 0 for x in shape_basis(5, i)[:6])  # tau^6 divides phi_i
        assert 0.05 < np.abs(np.polynomial.polynomial.polyval(tau, c)).max() <= 1.0 + 1e-12


def test_a_shape_that_turns_s_backwards_next_to_an_end_is_refused():
    """s' ~ g(1) (1 - tau)^5 near tau = 1 is ~1e-13 there: the check divides the zeros out."""
    shaped_time_law("poly11", [0.11])  # g(1) = 2772 (1 - 0.11 / 0.1128...) > 0
    with pytest.raises(ProblemError, match=r"not monotone: s'\(tau\) < 0 for tau in \[0\.9"):
        shaped_time_law("poly11", [0.12])


def test_a_non_monotone_shape_or_a_cinf_base_is_refused_naming_the_field():
    problem = load_problem(PROBLEMS / "e12_line.toml")
    with pytest.raises(ProblemError, match=r"reference\.time_law_shape: .*not monotone: s'\(tau\) < 0 for tau in"):
        problem.with_values({"reference.time_law_shape": [3.0]})
    with pytest.raises(ProblemError, match=r"reference\.time_law_shape: shaping terms need a polynomial"):
        problem.with_values({"reference.time_law": "cinf", "reference.time_law_shape": [0.1]})


def test_a_problem_with_a_shape_round_trips_through_toml():
    shape = [-0.0858, -0.5376, -0.1770, -0.2660, -0.0052, -0.0915]
    problem = load_problem(PROBLEMS / "e12_line.toml").with_values({"reference.time_law_shape": shape})
    again = problem_from_dict(tomllib.loads(problem.to_toml()), "again")
    assert again.reference_spec.time_law_shape == tuple(shape) == problem.reference_spec.time_law_shape
    assert again.reference.time_law == problem.reference.time_law == "poly11+shape6"
    t = np.linspace(0.0, problem.reference.t_end, 97)
    assert np.array_equal(again.reference.evaluate(t, 3), problem.reference.evaluate(t, 3))


@pytest.fixture(scope="module")
def e12():
    problem = load_problem(PROBLEMS / "e12_line.toml")
    base = _plan(problem)  # compiles (or loads) the BDF step: the search must reuse it
    builds = []
    original = bdf.build_bdf_functions
    bdf.build_bdf_functions = lambda *a, **k: builds.append(1) or original(*a, **k)
    try:
        shape, info = shape_for_rest(problem)
    finally:
        bdf.build_bdf_functions = original
    shaped = problem.with_values({"reference.time_law_shape": shape.tolist()})
    return problem, base, shape, info, shaped, _plan(shaped), builds


def test_e12_poly11_ends_moving(e12):
    problem, base, *_ = e12
    rest, end = ends_at_rest(problem.model, base)
    # regression values measured on 2026-11-27: 3.8 rad/s, 5.0e4 N m from the holding torque (bounds ~1/2)
    assert not rest and end["link_speed_max_rad_s"] > 2.0 and end["input_offset_max"] > 2.5e4


def test_e12_shaped_plan_ends_at_rest_with_a_lower_peak(e12):
    problem, base, shape, info, shaped, traj, builds = e12
    assert info["at_rest"] and info["needed"] and not builds  # a new law is new data, not a new compile
    rest, end = ends_at_rest(shaped.model, traj)
    assert rest
    # regression values measured on 2026-11-28: speeds 2.8e-11 rad/s, angle offset 4.6e-12 rad (1.8e-10 rad with
    # the libraries of 2026-12-07: casadi 3.8.2, numpy 2.4, scipy 1.17; roundoff of the path arithmetic, so the
    # bound is 1e-9 rad, 1e-5 of the 1e-4 rad/s that counts as rest over a second). The torque offset, 1.7e-5 (2.1e-5)
    # N m (1.3e-10 of the peak): the search reads the path by Taylor arithmetic (ffopt.reference.retimed), the plan
    # symbolically; they agree to ~1e-11 relative (4.8e-7 N m when both were symbolic)
    assert max(end["link_speed_max_rad_s"], end["motor_speed_max_rad_s"]) < 6e-11
    assert end["input_offset_max"] < 5e-5 and end["q_offset_max"] < 1e-9  # N m, rad
    peak, peak0 = np.abs(traj.u).max(), np.abs(base.u).max()
    assert peak0 == pytest.approx(E12_PEAK_POLY11, rel=1e-4)
    assert peak <= peak0 and peak == pytest.approx(E12_PEAK_SHAPED, rel=1e-5)  # the constant's rounding: 2e-7
    assert info["peak_input_after"] == pytest.approx(peak, rel=1e-9)
    assert info["bdf_solves"] < 180 and info["iterations"] <= 10  # measured 91 and 5 on 2026-11-28


def test_e12_shaped_plan_tracks_the_same_line_exactly(e12):
    problem, _, _, _, shaped, traj, _ = e12
    tool = traj.tool[:, [0, 2]]  # outputs x, z
    assert np.abs(tool - traj.y_ref).max() < 1e-12  # m: the BDF's planned error (measured 1.0e-13 on 2026-11-27)
    spec = problem.reference_spec
    p0, p1 = spec.start, spec.end
    along = (traj.y_ref - p0) @ (p1 - p0) / np.dot(p1 - p0, p1 - p0)
    off = traj.y_ref - p0 - np.outer(along, p1 - p0)
    assert np.abs(off).max() < 1e-12 and np.all(np.diff(along) >= -1e-15)  # on the line, never backwards
    assert along[0] == pytest.approx(0.0, abs=1e-15) and along[-1] == pytest.approx(1.0, abs=1e-15)


def test_the_junction_family_is_smoother_at_the_rests():
    """With no free term and one extra order, poly11's family has one member: the degree-13 law with 6 zero
    derivatives (the rest-to-rest polynomial of its own exact rational solve). With free terms, every member is
    C^(5 + extra) at both ends and the free directions are orthonormal."""
    c0, N = junction_family("poly11", 0, 1)
    assert N.shape == (2, 0)
    law, poly13 = shaped_time_law("poly11", c0), make_time_law(6)
    tau = np.linspace(0.0, 1.0, 101)
    for k in range(4):
        scale = np.abs(poly13(tau, k)).max()
        assert np.abs(law(tau, k) - poly13(tau, k)).max() < 1e-12 * scale, k
    c0, N = junction_family("poly11", N_SHAPE, JUNCTION_EXTRA)
    assert N.shape == (N_SHAPE + 2 * JUNCTION_EXTRA, N_SHAPE) and np.allclose(N.T @ N, np.eye(N_SHAPE), atol=1e-12)
    rng = np.random.default_rng(7)
    for w in 0.05 * rng.standard_normal((3, N_SHAPE)):
        law = shaped_time_law("poly11", c0 + N @ w, check=False)
        base_jump = abs(TIME_LAWS["poly11"](np.array([0.0]), 6)[0])  # 462 * 720 (poly11's jump at a rest)
        for k in range(6, 6 + JUNCTION_EXTRA):
            assert np.abs(law(np.array([0.0, 1.0]), k)).max() < 1e-12 * base_jump * 10 ** (k - 6), k


def test_e12_shaped_table_does_not_alternate_at_the_rests(e12):
    """The alternating part of each torque column of E12's rest-to-rest plan (BDF-6, 1 ms) stays below 1e-3 of
    the column's peak (measured 4.8e-4 / 4.3e-4 on 2026-11-28; with the C^5 laws of 6 terms it was 1.07e-2 /
    1.03e-2, for ~80 ms after each rest). Against a 0.1 ms solve of the same law the 1 ms table is within 3e-4
    of the peak (measured 1.9e-4; the C^5 law: 1.0e-2)."""
    problem, _, _, _, shaped, traj, _ = e12
    assert np.all(alternating_part(traj.u) <= ALTERNATION_MAX)
    fine = _plan(shaped.with_values({"solver.step": 1e-4}))
    assert np.abs(traj.u - fine.u[::10]).max() < 3e-4 * np.abs(fine.u).max()


def test_e12_default_plan_is_smooth_and_verified():
    """``ffopt plan problems/e12_line.toml`` as shipped: every torque column's alternating part <= 1e-3 of its peak,
    and verified with the motor PD. Tool errors measured on 2026-11-28: 0.0300 mm during the move, 0.0082 mm after
    the table (the C^5 laws of 6 terms: 0.0280 / 0.0074 mm, with a peak torque of 9.9e4 N m instead of 1.27e5; the
    error during the move is the 1 ms table's linear interpolation: 0.0075 mm at 0.5 ms)."""
    import ffopt

    result = ffopt.plan(load_problem(PROBLEMS / "e12_line.toml"))
    assert result.method_choice["rest_to_rest"]["shaped"]
    assert np.all(alternating_part(result.trajectory.u) <= ALTERNATION_MAX)
    assert result.verification.status == "verified"
    pd = result.verification.cases["feedforward_pd"]
    assert pd.max_mm < 0.031 and pd.settle.residual_mm < 0.0085


def test_e1_needs_enough_shaping_terms_or_a_longer_move():
    """E1 simplified (zero dynamics -2 +- 63j rad/s) on its former 5 ms step: two free terms find no monotone
    rest-to-rest law in the 0.1 s move (the best still turns at ~1.7 rad/s) and need a 1.5x longer one; eight
    rest within 0.1 s."""
    problem = load_problem(PROBLEMS / "e1_simplified.toml").with_values({"solver.step": 5e-3})
    _, info = shape_for_rest(problem, 2, duration_factors=(1.25, 1.5))
    assert not info["at_rest"] and "no monotone rest-to-rest law" in info["message"]
    # regression values measured on 2026-11-28: 1.71 rad/s, end residual 2.5e5 (bounds ~1/2)
    assert info["end_after"]["link_speed_max_rad_s"] > 0.8 and info["end_residual_max"] > 1.2e5
    assert info["duration_needed_s"] == pytest.approx(0.15) and info["duration_factor"] == 1.5
    shape, info = shape_for_rest(problem, 8, duration_factors=())
    assert info["at_rest"] and info["peak_input_after"] == pytest.approx(E1_PEAK_SHAPED, rel=1e-5)  # rounding
    shaped = problem.with_values({"reference.time_law_shape": shape.tolist()})
    assert ends_at_rest(shaped.model, _plan(shaped))[0]


# ------------------------------------------------------------------ robust rest (solver.robust_rest)
# regression values measured on 2026-11-27 (results/robust_rest.md): E12 driven by its plan with the 5 Hz motor PD,
# the largest vibration after the table over springs x0.9 / x1.1 and last link x0.9 / x1.1
E12_WORST_PLAIN_MM = 79.97  # plain rest to rest, 0.3 s
E12_WORST_ROBUST_MM = 4.65  # robust, ZVD on 0.948 Hz and the zero dynamics' 7.96 Hz, 1.49 s (17x less)


def test_a_shaper_needs_its_modes_and_is_written_back():
    problem = load_problem(PROBLEMS / "e12_line.toml")
    with pytest.raises(ProblemError, match=r"reference\.shaper_modes: missing: shaper 'zvd' needs the modes"):
        problem.with_values({"reference.shaper": "zvd"})
    with pytest.raises(ProblemError, match=r"reference\.shaper_modes: given without reference\.shaper"):
        problem.with_values({"reference.shaper_modes": [[1.0, 0.1]]})
    with pytest.raises(ProblemError, match=r"reference\.shaper_modes: row 2: expected \[frequency Hz > 0, damping"):
        problem.with_values({"reference.shaper": "zv", "reference.shaper_modes": [[1.0, 0.1], [2.0, 1.0]]})
    shaped = problem.with_values({"reference.shaper": "zvd", "reference.shaper_modes": [[1.0, 0.0], [4.0, 0.0]]})
    # ZVD spans one period of each undamped mode: 1 s + 0.25 s more motion (Singer & Seering)
    ref, base = shaped.reference, problem.reference
    assert ref.t_motion_end - base.t_motion_end == pytest.approx(1.25, abs=1e-12)
    assert ref.t_end - base.t_end == pytest.approx(1.25, abs=1e-12)
    again = problem_from_dict(tomllib.loads(shaped.to_toml()), "again")
    t = np.linspace(0.0, ref.t_end, 101)
    assert np.array_equal(again.reference.evaluate(t, 2), ref.evaluate(t, 2))
    # the shaped path stays on the line and ends at its end point
    y = ref.evaluate(t)
    assert np.abs(y[-1] - base.evaluate([base.t_end])[0]).max() < 1e-12


@pytest.mark.parametrize("kind, periods", [("ei", 1.0), ("ei2", 1.5)])
def test_an_ei_shaper_is_a_problem_setting(kind, periods):
    """reference.shaper takes every shaper of ffopt.reference.shaping: EI spans one period of an undamped mode,
    two-hump EI 1.5 (Singhose, Seering & Singer 1994), and the problem round-trips through TOML."""
    problem = load_problem(PROBLEMS / "e12_line.toml")
    shaped = problem.with_values({"reference.shaper": kind, "reference.shaper_modes": [[2.0, 0.0]]})
    ref, base = shaped.reference, problem.reference
    assert ref.t_motion_end - base.t_motion_end == pytest.approx(periods / 2.0, abs=1e-12)
    again = problem_from_dict(tomllib.loads(shaped.to_toml()), "again")
    assert again.reference_spec.shaper == shaped.reference_spec.shaper


def test_robust_rest_needs_end_at_rest_and_a_time_law():
    problem = load_problem(PROBLEMS / "e12_line.toml")
    with pytest.raises(ProblemError, match=r"solver\.robust_rest: needs solver\.end_at_rest = true"):
        problem.with_values({"solver.robust_rest": True, "solver.end_at_rest": False})
    step = load_problem(PROBLEMS / "manutec_r3_step.toml")
    with pytest.raises(ProblemError, match=r"solver\.robust_rest: a prefiltered reference has no time law"):
        step.with_values({"solver.robust_rest": True})


def test_e12_robust_shaper_takes_the_pd_held_mode_and_the_zero_dynamics():
    """The modes of E12 at the end pose: 0.948 Hz (damping 0.107) held by the 5 Hz motor PD
    (results/input_shaping.md) and the zero dynamics -0.63 +- 50j rad/s (module docstring of
    ffopt.dae.rest_to_rest): 50 / 2 pi = 7.96 Hz, damping 0.63 / 50 = 0.0126."""
    from ffopt.plan.robust import robust_shaper

    kind, modes = robust_shaper(load_problem(PROBLEMS / "e12_line.toml"))
    assert kind == "zvd" and len(modes) == 2
    # rel: the cited values are rounded (0.948 / 0.107: 3 digits; -0.63 +- 50j: 2 digits, 0.7 % off)
    assert modes[0] == pytest.approx((0.948, 0.107), rel=0.01)
    assert modes[1] == pytest.approx((50.0 / (2 * np.pi), 0.63 / 50.0), rel=0.02)


@pytest.mark.slow
def test_e12_robust_rest_cuts_the_mismatched_vibration_and_still_rests():
    """~20 s cold (the searches are cached on disk after): the plain plan, its search, the shaped path's search and 10 closed-loop runs with settle windows."""
    import ffopt

    problem = load_problem(PROBLEMS / "e12_line.toml").with_values({"solver.robust_rest": True})
    result = ffopt.plan(problem)
    robust = result.method_choice["rest_to_rest"]["robust"]
    plain, new = robust["plain"], robust["robust"]
    assert robust["used"] and result.problem.reference_spec.shaper[0] == "zvd"
    assert plain["worst_vibration_mm"] == pytest.approx(E12_WORST_PLAIN_MM, rel=0.02)  # = results/input_shaping.md
    # the claim: at least 8x less vibration on the worst mismatched plant (measured 17x)
    assert new["worst_vibration_mm"] < plain["worst_vibration_mm"] / 8.0
    assert new["worst_vibration_mm"] < 2 * E12_WORST_ROBUST_MM
    # the price: the move is longer by one damped period of each shaped mode; the peak torque is not higher
    periods = sum(1.0 / (f * np.sqrt(1.0 - z**2)) for f, z in robust["modes_hz_damping"])
    assert new["move_s"] == pytest.approx(plain["move_s"] + periods, rel=1e-9)
    assert new["peak_input"] < plain["peak_input"]
    # the nominal plan still ends at rest and verifies
    assert ends_at_rest(result.problem.model, result.trajectory)[0]
    assert result.verification.verdict.status == "verified"
    assert new["nominal_vibration_mm"] < 0.01 and new["nominal_residual_mm"] < 0.01
    # the written problem holds the planned path: shaper and time-law shape
    again = problem_from_dict(tomllib.loads(result.problem.to_toml()), "again")
    assert again.reference_spec.shaper == result.problem.reference_spec.shaper
    assert again.reference_spec.time_law_shape == result.problem.reference_spec.time_law_shape != ()


@pytest.mark.slow
def test_e1_robust_rest_cuts_the_mismatched_vibration():
    """E1 simplified (5 ms step): ZVD on the PD-held 5.79 Hz mode and the zero dynamics (-2 +- 63j rad/s at the
    start, 10.1 Hz at the end pose); regression values measured on 2026-11-27 (results/input_shaping.md): worst
    vibration on the springs / inertia x0.9 / x1.1 plants 0.29 mm plain, 0.00073 mm robust (~400x), move
    0.1 -> 0.38 s, peak 6.2e4 -> 1.3e4 N m. ~10 s cold."""
    import ffopt

    result = ffopt.plan(load_problem(PROBLEMS / "e1_simplified.toml").with_values({"solver.robust_rest": True}),
                        verify=False)
    robust = result.method_choice["rest_to_rest"]["robust"]
    plain, new = robust["plain"], robust["robust"]
    assert plain["worst_vibration_mm"] == pytest.approx(0.29, rel=0.05)
    assert new["worst_vibration_mm"] < plain["worst_vibration_mm"] / 200.0  # half the measured factor
    assert new["move_s"] == pytest.approx(0.38, abs=0.01) and new["peak_input"] < plain["peak_input"]
    assert ends_at_rest(result.problem.model, result.trajectory)[0] and new["nominal_residual_mm"] < 0.01
