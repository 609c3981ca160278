"""Analysis stage: zero dynamics, eigenfrequencies, strangeness index (Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), sec. 4-5, 7.4)."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ffopt.analysis.linear import eigenfrequencies, invariant_zeros, modes, zero_dynamics
from ffopt.io.problem import load_problem, problem_from_dict

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def _e1_complete_dict(l2: float) -> dict:
    data = tomllib.loads((PROBLEMS / "e1_complete.toml").read_text())
    data = copy.deepcopy(data)
    data["model"]["tool_origin"] = [l2, 0.0, 0.0]
    return data


def _e1_analytic_zeros(data: dict) -> np.ndarray:
    """Moberg & Hanssen eq. (27) linearised at rest with q2 = 0 (g = 0) and z held fixed.

    dz = (l1 c1 + l2 c12) dq1 + l2 c12 dq2 = 0 gives dq1 = -rho dq2, rho = l2 / (l1 + l2) at q2 = 0;
    row 2: (M22 - M21 rho) s^2 + d s + k = 0 with M21 = j2 + m2 (l1 xi2 + xi2^2), M22 = j2 + m2 xi2^2.
    """
    j1, j2 = data["model"]["joints"]
    l1 = j2["origin"][0]
    l2 = data["model"]["tool_origin"][0]
    m2, xi2, jj2 = j2["mass"], j2["com"][0], j2["inertia_diag"][1]
    M21 = jj2 + m2 * (l1 * xi2 + xi2**2)
    M22 = jj2 + m2 * xi2**2
    rho = l2 / (l1 + l2)
    return np.roots([M22 - M21 * rho, j2["damping"], j2["stiffness"]])


def _assert_same_zeros(z, expected, rtol):
    dist = np.abs(np.asarray(z)[:, None] - np.asarray(expected)[None, :])
    assert dist.min(axis=0).max() <= rtol * np.abs(expected).max(), (z, expected)
    assert dist.min(axis=1).max() <= rtol * np.abs(expected).max(), (z, expected)


@pytest.mark.parametrize("l2, minimum_phase", [(1.0, True), (5.5, True), (6.5, False)])
def test_e1_complete_zeros_match_closed_form(l2, minimum_phase):
    data = _e1_complete_dict(l2)
    problem = problem_from_dict(data)
    report = zero_dynamics(problem.model, problem.reference, problem.reference_spec.joint_guess, n_points=5)
    expected = _e1_analytic_zeros(data)
    assert (expected.real.max() < 0) == minimum_phase  # the analytic boundary is l2 = 6
    assert report.minimum_phase == minimum_phase
    for z in report.zeros:
        assert len(z) == 2
        # closed form above; measured 2026-11-27: at most 4.9e-13 of the largest zero (l2 = 6.5), rounding
        _assert_same_zeros(z, expected, rtol=1e-11)
    assert report.worst_zero.real == pytest.approx(expected.real.max(), rel=1e-11)
    assert report.margin == pytest.approx(-expected.real.max(), rel=1e-11)
    assert ("NON-MINIMUM" in report.summary()) != minimum_phase


def test_invariant_zeros_of_transfer_function():
    """G(s) = (s - 3)(s + 5) / (s + 1)^4 in controllable canonical form: zeros 3 and -5."""
    den = np.poly([-1.0, -1.0, -1.0, -1.0])
    num = np.poly([3.0, -5.0])
    n = 4
    A = np.zeros((n, n))
    A[:-1, 1:] = np.eye(n - 1)
    A[-1] = -den[:0:-1]
    B = np.zeros((n, 1))
    B[-1] = 1.0
    C = np.zeros((1, n))
    C[0, : len(num)] = num[::-1]
    zeros, nf = invariant_zeros(A, B, C)
    np.testing.assert_allclose(np.sort(zeros.real), [-5.0, 3.0], rtol=1e-9)  # the numerator's roots, rounding
    np.testing.assert_allclose(np.sort(nf.real), [-5.0, 3.0], rtol=1e-9)


def _mixed_drive_arm() -> dict:
    """A user's planar arm: passive elastic base, elastic gear at the shoulder, direct drive at the elbow.

    The direct drive reaches both outputs with relative degree 2 but the gear does not, so the
    decoupling matrix is singular (no vector relative degree) and the infinite zeros form Jordan
    blocks of size 3 (drawn by the random-arm property test, tests/test_random_arms.py).
    """
    def joint(name, kind, origin, mass, com, inertia, **dyn):
        return dict(name=name, kind=kind, axis=[0.0, 0.0, 1.0], origin=[origin, 0.0, 0.0], mass=mass,
                    com=[com, 0.0, 0.0], inertia_diag=[0.0, inertia, inertia], **dyn)
    return {"name": "mixed-drive arm", "model": {"outputs": ["x", "y"], "tool_origin": [0.5, 0.0, 0.0], "joints": [
        joint("q1", "passive", 0.0, 9.04791, 0.1, 0.0837769, stiffness=10401.6, damping=53.519),
        joint("q2", "elastic_gear", 0.333333, 4.09302, 0.302976, 0.142605, stiffness=530.214, damping=7.47688,
              motor_inertia=1.34305),
        joint("q3", "direct", 0.646602, 1.0, 0.25, 0.0208333)]},
        "reference": {"kind": "line", "start_mm": [-129.283, -188.184], "end_mm": [-116.685, -233.341],
                      "duration": 1.42125, "joint_guess": [0.0, 2.66007, 2.27508]}}


def _direct_and_gear_arm() -> dict:
    """A user's planar 2-link arm: direct drive at the shoulder, elastic gear at the elbow, no gravity."""
    def joint(name, kind, origin, mass, com, inertia, **dyn):
        return dict(name=name, kind=kind, axis=[0.0, 1.0, 0.0], origin=[origin, 0.0, 0.0], mass=mass,
                    com=[com, 0.0, 0.0], inertia_diag=[0.0, inertia, inertia], **dyn)
    return {"name": "direct + gear arm", "model": {"outputs": ["x", "z"], "tool_origin": [0.780607, 0.0, 0.0], "joints": [
        joint("q1", "direct", 0.0, 1.37854, 0.529614, 0.0993618),
        joint("q2", "elastic_gear", 0.930015, 1.0, 0.494201, 0.0507789, stiffness=1078.75, damping=11.3904,
              motor_inertia=0.0346129)]},
        "reference": {"kind": "line", "start_mm": [1039.28, 337.577], "end_mm": [299.127, 410.112],
                      "duration": 0.888879, "joint_guess": [0.462638, -1.76501]}}


@pytest.mark.parametrize("arm, n_zeros", [(_mixed_drive_arm, 3), (_direct_and_gear_arm, 1)])
def test_zeros_without_vector_relative_degree_have_no_spurious_members(arm, n_zeros):
    """Both arms lack a vector relative degree (the direct drive reaches the outputs faster than the
    gear), so the infinite zeros form Jordan blocks. QZ on the full Rosenbrock pencil split them into
    'zeros' of ~1e7 rad/s (one with positive real part: 'non-minimum phase') at 2 of 81 points of the
    first path (1 of the default 41); SLICOT's reduction with its default rank tolerance still found
    three zeros instead of one, two at +-2e8 rad/s, at 4 of 21 points of the second. Checked: the
    same count at every point, continuous along the path, each a rank drop of the Rosenbrock matrix."""
    from ffopt.analysis.linear import equilibrium_path, linearize_at_rest, path_times

    problem = problem_from_dict(arm())
    guess = problem.reference_spec.joint_guess
    report = zero_dynamics(problem.model, problem.reference, guess, n_points=81)
    assert report.minimum_phase and all(len(z) == n_zeros for z in report.zeros)
    # each zero moves little between points (measured 2026-11-27: at most 0.32 rad/s on the first arm, 1e-10 on
    # the second; bound 2x); the spurious members were ~1e7 rad/s
    for z0, z1 in zip(report.zeros[:-1], report.zeros[1:]):
        assert np.abs(z0[:, None] - z1[None, :]).min(axis=1).max() < 0.65, (z0, z1)
    qs = equilibrium_path(problem.model, problem.reference, path_times(problem.reference, 81), guess)
    for lin in linearize_at_rest(problem.model, qs):
        A, B, C, D = lin.state_space()
        zeros, nf = invariant_zeros(A, B, C)
        assert nf is None  # no vector relative degree: the normal form cannot count the zeros
        n = A.shape[0]
        for z in zeros:
            sv = np.linalg.svd(np.block([[A - z * np.eye(n), B], [C, D]]), compute_uv=False)
            assert sv[-1] < 1e-10 * sv[0], z  # a rank drop up to rounding


def test_e12_minimum_phase_along_path():
    """Moberg & Hanssen sec. 7.4: 'As expected, the system was minimum-phase at all points.'"""
    problem = load_problem(PROBLEMS / "e12_line.toml")
    report = zero_dynamics(problem.model, problem.reference, problem.reference_spec.joint_guess, n_points=9)
    assert report.minimum_phase
    assert all(len(z) == 4 for z in report.zeros)  # d = 4 differential variables (Moberg & Hanssen sec. 5.2.1)
    # QZ zeros vs the normal form's (independent), relative; measured 6.9e-14 on 2026-11-27: rounding
    assert report.cross_check_error < 1e-12


# ----------------------------------------------------------------------------- eigenfrequencies
def _one_joint_problem(J_link: float, Jm: float, k: float, d: float):
    """A single link on an elastic gear, no gravity: analytic modes."""
    data = {
        "name": "one elastic joint",
        "model": {"gravity": [0.0, 0.0, 0.0], "outputs": ["z"], "tool_origin": [1.0, 0.0, 0.0],
                  "joints": [{"name": "q1", "kind": "elastic_gear", "axis": [0.0, -1.0, 0.0], "mass": 0.0,
                              "inertia_diag": [0.0, J_link, 0.0], "stiffness": k, "damping": d,
                              "motor_inertia": Jm}]},
        "reference": {"kind": "line", "start_mm": [100.0], "end_mm": [300.0], "duration": 0.5,
                      "joint_guess": [0.1]},
    }
    return problem_from_dict(data)


def test_one_joint_clamped_free_pd_frequencies():
    J, Jm, k, d = 40.0, 10.0, 2.0e4, 30.0
    problem = _one_joint_problem(J, Jm, k, d)
    kp, kd = 5.0e3, 200.0
    rep = eigenfrequencies(problem.model, problem.reference, n_points=3, pd_gains=(np.array([kp]), np.array([kd])))
    # closed forms below; rtol 1e-10: rounding of the eigenvalue solve
    two_pi = 2 * np.pi
    # clamped motor: J s^2 + d s + k = 0
    np.testing.assert_allclose(rep.lowest_undamped_hz["clamped"], np.sqrt(k / J) / two_pi, rtol=1e-10)
    damped = np.abs(np.roots([J, d, k]).imag).max() / two_pi
    np.testing.assert_allclose(rep.lowest_damped_hz["clamped"], damped, rtol=1e-10)
    np.testing.assert_allclose(rep.lowest_damping_ratio["clamped"], d / (2 * np.sqrt(k * J)), rtol=1e-10)
    # free motor (u = 0): a rigid-body mode at 0 and the two inertias against each other
    np.testing.assert_allclose(rep.lowest_undamped_hz["free"], np.sqrt(k * (1 / J + 1 / Jm)) / two_pi, rtol=1e-10)
    # PD on the motor: K = [[k, -k], [-k, k + kp]], M = diag(J, Jm)
    M = np.diag([J, Jm])
    K = np.array([[k, -k], [-k, k + kp]])
    w2 = np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real)
    np.testing.assert_allclose(rep.all_undamped_hz["pd"][0], np.sqrt(w2) / two_pi, rtol=1e-10)


def test_modes_two_mass_chain_analytic():
    """Two masses, springs ground-m1-m2: omega^2 roots of m1 m2 w^4 - (m1 k2 + m2 (k1 + k2)) w^2 + k1 k2."""
    m1, m2, k1, k2 = 2.0, 1.0, 300.0, 100.0
    M = np.diag([m1, m2])
    K = np.array([[k1 + k2, -k2], [-k2, k2]])
    w2 = np.sort(np.roots([m1 * m2, -(m1 * k2 + m2 * (k1 + k2)), k1 * k2]).real)
    md = modes(M, np.zeros((2, 2)), K)  # closed form above; rtol: rounding of the eigenvalue solve
    np.testing.assert_allclose(md.undamped_hz, np.sqrt(w2) / (2 * np.pi), rtol=1e-12)
    np.testing.assert_allclose(md.natural_hz, np.sqrt(w2) / (2 * np.pi), rtol=1e-10)
    assert md.n_unstable == 0 and md.n_rigid == 0


# ----------------------------------------------------------------------------- strangeness index
@pytest.mark.parametrize("name, expected", [
    ("e1_simplified.toml", (1, 2, 2)),  # Moberg & Hanssen sec. 5.1.1
    ("e1_complete.toml", (1, 2, 2)),  # Moberg & Hanssen sec. 5.1.2
    ("e12_line.toml", (2, 6, 4)),  # Moberg & Hanssen sec. 5.2.1
])
def test_strangeness_index_reproduces_the_paper(name, expected):
    from ffopt.analysis.strangeness import strangeness_analysis

    problem = load_problem(PROBLEMS / name)
    rep = strangeness_analysis(problem.model, problem.reference, "I3", problem.reference_spec.joint_guess)
    assert (rep.mu, rep.a, rep.d) == expected
    # the rank decision is clear-cut: sigma_r / sigma_(r+1) measured 2026-11-27 at 3.9e9 (E12) .. 2.9e16 (E1)
    assert rep.steps[-1].gap_M > 1e9


def test_strangeness_lower_for_differentiated_forms():
    """Each differentiation of the path constraint lowers mu by one (Moberg & Hanssen sec. 7.4: I3, I2, I1)."""
    from ffopt.analysis.strangeness import strangeness_analysis

    problem = load_problem(PROBLEMS / "e12_line.toml")
    mus = [strangeness_analysis(problem.model, problem.reference, form, problem.reference_spec.joint_guess).mu
           for form in ("I3", "I2", "I1")]
    assert mus == [2, 1, 0]


def _linear_dae(rows):
    import casadi as ca

    t = ca.SX.sym("t")
    x = ca.SX.sym("x", 3)
    xd = ca.SX.sym("xd", 3)
    return ca.Function("F", [t, x, xd], [rows(t, x, xd)])


def test_strangeness_of_textbook_daes():
    """Known cases (Kunkel-Mehrmann): prescribed motion of a mass (index 3, mu = 2, all algebraic)
    and a semi-explicit index-1 system (mu = 0)."""
    import casadi as ca

    from ffopt.analysis.strangeness import strangeness_index

    # x' = v, 2 v' = lam, x = sin t   -> x, v, lam all determined: mu = 2, a = 3, d = 0
    F = _linear_dae(lambda t, x, xd: ca.vertcat(xd[0] - x[1], 2 * xd[1] - x[2], x[0] - ca.sin(t)))
    rep = strangeness_index(F, 3, 0.3, [np.zeros(3)])
    assert (rep.mu, rep.a, rep.d) == (2, 3, 0)
    # x1' = -x1 + x3, x2' = x1, 0 = x3 - t  -> mu = 0, a = 1, d = 2
    F = _linear_dae(lambda t, x, xd: ca.vertcat(xd[0] + x[0] - x[2], xd[1] - x[0], x[2] - t))
    rep = strangeness_index(F, 3, 0.3, [np.zeros(3)])
    assert (rep.mu, rep.a, rep.d) == (0, 1, 2)


# ----------------------------------------------------------------------------- report and CLI
def _run_cli(argv):
    from ffopt.cli.main import main

    return main(argv)


def test_cli_analyze_writes_report(tmp_path, capsys):
    import json

    out = tmp_path / "analysis.json"
    assert _run_cli(["analyze", str(PROBLEMS / "e1_complete.toml"), "--json", str(out), "--points", "5",
                     "--frequency-points", "3"]) == 0
    text = capsys.readouterr().out
    assert "mu = 1" in text and "minimum phase" in text
    data = json.loads(out.read_text())
    assert (data["strangeness"]["mu"], data["strangeness"]["a"], data["strangeness"]["d"]) == (1, 2, 2)
    assert data["model"]["passive"] == ["q2"] and data["model"]["direct"] == ["q1"]
    assert data["zero_dynamics"]["minimum_phase"] is True
    # motors clamped: only q2 moves, omega^2 = k / M22 = 1e5 / 600 (Moberg & Hanssen eq. 27 at q2 = 0); rel 1e-9:
    # rounding
    assert data["eigenfrequencies"]["clamped"]["min_lowest_undamped_hz"] == pytest.approx(
        np.sqrt(1e5 / 600.0) / (2 * np.pi), rel=1e-9)


def test_cli_analyze_bad_input_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[model]\ntool_origin = [1.0]\n')
    assert _run_cli(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ffopt: error:") and "\n" not in err
    assert _run_cli(["analyze", str(tmp_path / "missing.toml")]) == 2
