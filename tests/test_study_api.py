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


def test_analyze_reports_the_published_indices_and_the_nmp_zero():
    """Moberg & Hanssen: E1 strangeness index 1 (a = 2, d = 2), differential index 2; the NMP variant's
    zero, closed form (problems/e1_nmp.toml): (J22 - J12 r) s^2 + d s + k = 0 has a root near +56 rad/s."""
    e1 = ffopt.analyze(ROOT / "problems" / "e1_simplified.toml", n_points=5, frequency_points=3).to_dict()
    assert (e1["strangeness"]["mu"], e1["strangeness"]["a"], e1["strangeness"]["d"]) == (1, 2, 2)
    assert e1["structural"]["differential_index"] == 2
    nmp = ffopt.analyze(ffopt.load_problem(ROOT / "problems" / "e1_nmp.toml"), n_points=5, frequency_points=3)
    zd = nmp.to_dict()["zero_dynamics"]
    assert not zd["minimum_phase"] and zd["worst_zero"][0] == pytest.approx(56, rel=0.05)
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
    assert 0.01 * np.abs(u).max() < np.abs(pd_u - u).max() < 0.15 * np.abs(u).max()
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
