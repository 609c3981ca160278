"""The API the study notebooks added: ``ffopt.analyze`` (``ffopt analyze`` from Python) and
``PlanResult.simulation_dataframe`` (one verification simulation as a table)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.errors import ProblemError, VerificationError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def e1_plan():
    problem = ffopt.load_problem(ROOT / "problems" / "e1_complete.toml").with_values({"verification.payload_scales": []})
    return ffopt.plan(problem, method="bdf", compile=False, verify="full")


def _e1_nmp_closed_form_zero() -> float:
    """The unstable zero of problems/e1_nmp.toml from its own data (as tests/test_analysis.py does for E1):
    Moberg & Hanssen eq. (27) linearised at rest, q2 = 0 (no gravity: the passive joint stays at 0 along
    the path), z held: dq1 = -rho dq2, rho = l2 / (l1 + l2), and (M22 - M21 rho) s^2 + d s + k = 0 with
    M21 = j2 + m2 (l1 xi2 + xi2^2), M22 = j2 + m2 xi2^2."""
    import tomllib

    data = tomllib.loads((ROOT / "problems" / "e1_nmp.toml").read_text())
    j2 = data["model"]["joints"][1]
    l1, l2 = j2["origin"][0], data["model"]["tool_origin"][0]
    m2, xi2, jj2 = j2["mass"], j2["com"][0], j2["inertia_diag"][1]
    M21, M22 = jj2 + m2 * (l1 * xi2 + xi2**2), jj2 + m2 * xi2**2
    return float(np.roots([M22 - M21 * l2 / (l1 + l2), j2["damping"], j2["stiffness"]]).real.max())


def test_analyze_reports_the_published_indices_and_the_nmp_zero():
    """Moberg & Hanssen: E1 strangeness index 1 (a = 2, d = 2), differential index 2; the NMP variant's
    zero, closed form (problems/e1_nmp.toml): (J22 - J12 r) s^2 + d s + k = 0 has a root at +55.83 rad/s."""
    e1 = ffopt.analyze(ROOT / "problems" / "e1_simplified.toml", n_points=5, frequency_points=3).to_dict()
    assert (e1["strangeness"]["mu"], e1["strangeness"]["a"], e1["strangeness"]["d"]) == (1, 2, 2)
    assert e1["structural"]["differential_index"] == 2
    nmp = ffopt.analyze(ffopt.load_problem(ROOT / "problems" / "e1_nmp.toml"), n_points=5, frequency_points=3)
    zd = nmp.to_dict()["zero_dynamics"]
    expected = _e1_nmp_closed_form_zero()  # 55.83 rad/s
    assert not zd["minimum_phase"] and zd["worst_zero"][0] == pytest.approx(expected, rel=1e-7)
    assert "NON-MINIMUM PHASE" in nmp.text()


def test_simulation_dataframe_matches_the_verification_table(e1_plan):
    """error_mm's maximum is the case's max_mm; open loop applies exactly the plan's torques; with the PD
    loop the applied torque differs from them by the correction (7 % of the peak at this 5 ms grid, where
    the loop corrects the linear interpolation of u); rigid feedforward by much more (67 %)."""
    table = e1_plan.verification_dataframe()
    u = e1_plan.trajectory.u[:, 0]
    for case in table.index:
        df = e1_plan.simulation_dataframe(case)
        assert list(df.columns) == ["t", "u_q1", "tool_x_mm", "tool_y_mm", "tool_z_mm", "y_z_mm", "error_mm"]
        assert df["error_mm"].max() == pytest.approx(table.loc[case, "max_mm"], rel=1e-12)
        assert np.abs(df["u_q1"]).max() == pytest.approx(table.loc[case, "peak_u_q1_Nm"], rel=1e-12)
        assert df.attrs["units"]["error_mm"] == "mm" and df.attrs["units"]["u_q1"] == "N m"
    np.testing.assert_array_equal(e1_plan.simulation_dataframe("feedforward_open_loop")["u_q1"], u)
    pd_u = e1_plan.simulation_dataframe()["u_q1"]  # default: feedforward_pd
    # regression values measured on 2026-11-27 (the docstring's 7 % and 67 %); bounds 1/2 and 2x
    assert 0.035 * np.abs(u).max() < np.abs(pd_u - u).max() < 0.15 * np.abs(u).max()
    rigid = e1_plan.simulation_dataframe("rigid_feedforward_pd")["u_q1"]
    assert np.abs(rigid - u).max() > 0.4 * np.abs(u).max()
    sim = e1_plan.simulation_dataframe("feedforward_pd")
    np.testing.assert_allclose(sim["y_z_mm"], sim["tool_z_mm"], atol=1e-9)  # output z is the tool's z


def test_simulation_dataframe_errors(e1_plan):
    with pytest.raises(ProblemError, match=r"no verification case 'nope' in this plan \(cases: feedforward_open_loop, "):
        e1_plan.simulation_dataframe("nope")
    unverified = ffopt.plan(ffopt.load_problem(ROOT / "problems" / "e1_simplified.toml"), method="bdf", verify=False,
                            compile=False)
    with pytest.raises(VerificationError, match="not verified"):
        unverified.simulation_dataframe()
