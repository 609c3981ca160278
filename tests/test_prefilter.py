"""Butterworth prefilter (Thuemmel, Otter & Bals eq. 12): the closed-form output and its derivatives
against an independent integration of the filter ODE, the Butterworth magnitude and DC gain, the
smoothness it gives, the settling bound, the order derived from the model and its errors."""

import copy
import math
import tomllib
from pathlib import Path

import casadi as ca
import numpy as np
import pytest
from scipy import signal
from scipy.integrate import solve_ivp

from ffopt.analysis.structural import reference_smoothness
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.reference.prefilter import Butterworth, ptp_profile, step_profile

ROOT = Path(__file__).resolve().parents[1]
R3 = ROOT / "problems" / "manutec_r3_benchmark.toml"
R3_PTP = ROOT / "problems" / "manutec_r3_ptp.toml"
E12 = ROOT / "problems" / "e12_line.toml"
RAW = {"step": step_profile(0.1), "ptp": ptp_profile(0.1, [1.0, 2.0], [1.5, 3.0], [15.0, 20.0])}


def filter_ode_solution(n, cutoff_hz, profile, ts):
    """y, y', ..., y^(n) of the filter by integrating its controller canonical form (states = the
    output and its first n - 1 derivatives; SciPy's Butterworth coefficients), restarted at every
    knot of the raw input."""
    _, a = signal.butter(n, 2 * np.pi * cutoff_hz, analog=True)  # a[0] = 1, descending powers
    a = a[::-1]  # ascending: a_0 .. a_n
    A = np.zeros((n, n))
    A[:-1, 1:] = np.eye(n - 1)
    A[-1] = -a[:-1]
    out = np.zeros((len(ts), n + 1))
    x = np.zeros(n)
    edges = sorted({0.0, ts[-1], *[k[0] for k in profile.knots]})
    for lo, hi in zip(edges[:-1], edges[1:]):
        def rhs(t, x, lo=lo):
            return A @ x + np.r_[np.zeros(n - 1), a[0] * profile.evaluate(np.array(max(t, lo + 1e-12)))]
        sol = solve_ivp(rhs, (lo, hi), x, method="DOP853", rtol=1e-13, atol=1e-14, dense_output=True)
        sel = (ts >= lo) & (ts <= hi)
        out[sel, :n] = sol.sol(ts[sel]).T
        x = sol.y[:, -1]
    out[:, n] = out[:, :n] @ -a[:-1] + a[0] * profile.evaluate(ts)
    return out


def closed_form(filt, profile, ts, k_max):
    t = ca.SX.sym("t")
    y = filt.response(profile, t)
    rows = []
    for _ in range(k_max + 1):
        rows.append(np.array(ca.Function("y", [t], [y]).map(len(ts))(ts)).ravel())
        y = ca.jacobian(y, t)
    return np.array(rows).T


@pytest.mark.parametrize("raw", ["step", "ptp"])
@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_output_and_derivatives_match_the_integrated_filter(n, raw):
    """y and its derivatives 1..n (the filter states and the state equation's last row) agree with
    DOP853 at rtol 1e-13 to 2e-11 of each derivative's peak (measured 9.5e-12 at most on 2026-11-27)."""
    filt, profile = Butterworth(n, 3.0), RAW[raw]
    ts = np.linspace(0.0, 2.0, 801)
    ref = filter_ode_solution(n, 3.0, profile, ts)
    ours = closed_form(filt, profile, ts, n)
    err = np.abs(ours - ref).max(axis=0) / np.abs(ref).max(axis=0)
    assert err.max() < 2e-11, err


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_butterworth_magnitude_and_dc_gain(n):
    """|H| = 1 / sqrt(1 + (f/fc)^(2n)) (SciPy's butter/freqs and the closed form), -3 dB at the cutoff,
    DC gain 1; the denominator is SciPy's; the DC group delay is 1 / (w sin(pi / 2n))."""
    filt = Butterworth(n, 4.0)
    f = np.logspace(-2, 2, 50)
    b, a = signal.butter(n, filt.omega, analog=True)
    _, H = signal.freqs(b, a, worN=2 * np.pi * f)
    np.testing.assert_allclose(filt.magnitude(f), np.abs(H), rtol=1e-10)
    np.testing.assert_allclose(filt.magnitude(f), 1 / np.sqrt(1 + (f / 4.0) ** (2 * n)), rtol=1e-10)
    assert filt.magnitude(4.0) == pytest.approx(1 / math.sqrt(2), rel=1e-12)
    np.testing.assert_allclose(filt.denominator, a[::-1], rtol=1e-10)
    assert filt.dc_series(0)[0] == 1.0
    assert filt.delay == pytest.approx(1 / (filt.omega * math.sin(math.pi / (2 * n))), rel=1e-12)
    step = filt.response(step_profile(0.0), np.array([40.0 / filt.slowest_decay]))
    assert abs(step[0] - 1.0) < 1e-12  # the step response ends at 1: DC gain 1


@pytest.mark.parametrize("raw,m", [("step", 0), ("ptp", 2)])
def test_continuity_up_to_order_n_minus_1_and_the_jump(raw, m):
    """A raw input jumping in its derivative m, filtered with order n: derivatives up to n + m - 1 are
    continuous at every knot, the derivative n + m jumps by (raw jump) x w^n (the state equation's
    input term a_0 u)."""
    n = 5
    filt = Butterworth(n, 3.0)
    t = ca.SX.sym("t")
    y = filt.response(RAW[raw], t)
    knot, _, jump = RAW[raw].knots[0]
    derivs = [y]
    for _ in range(n + m):
        derivs.append(ca.jacobian(derivs[-1], t))
    f = ca.Function("d", [t], [ca.vertcat(*derivs)])
    e = 1e-9
    left, right = np.array(f(knot - e)).ravel(), np.array(f(knot + e)).ravel()
    scale = filt.omega ** np.arange(n + m + 1)
    # across +-1e-9 s a continuous derivative moves by the next one x 2e-9: measured 1.9e-8 of the scale, and the
    # jump 6.1e-8 off its closed form, on 2026-11-27 (bounds ~2x; a jump would be of the order of the scale)
    assert np.all(np.abs(right - left)[:-1] / scale[:-1] < 4e-8)
    assert right[-1] - left[-1] == pytest.approx(jump * filt.omega**n, rel=1.5e-7)


@pytest.mark.parametrize("raw", ["step", "ptp"])
def test_settling_bound_holds(raw):
    """After the settling time the tail stays below the tolerance; it is not far above it just before."""
    filt, profile = Butterworth(5, 3.0), RAW[raw]
    tol = 1e-6
    ts_settle = filt.settling_time(profile, tol)
    after = profile.t_end + ts_settle + np.linspace(0.0, 3.0, 3001)
    assert np.abs(filt.response(profile, after) - 1.0).max() <= tol
    before = profile.t_end + np.linspace(0.3 * ts_settle, 0.8 * ts_settle, 501)
    assert np.abs(filt.response(profile, before) - 1.0).max() > 10 * tol


@pytest.mark.parametrize("order, cutoff_hz, raw, tol", [(2, 1.0, "step", 1e-3), (4, 10.0, "ptp", 1e-6),
                                                        (8, 0.5, "ptp", 1e-9), (5, 3.0, "step", 1e-12)])
def test_settling_time_is_the_root_brentq_finds(order, cutoff_hz, raw, tol):
    """The settling time (a monotone Newton iteration) is the root of the tail bound that SciPy's brentq brackets."""
    from scipy.optimize import brentq

    filt, profile = Butterworth(order, cutoff_hz), RAW[raw]
    A, sigma = np.abs(filt.tail_amplitudes(profile)), np.real(filt.poles)
    bound = lambda tau: float(np.sum(A * np.exp(sigma * tau))) - tol  # noqa: E731
    hi = 1.0 / filt.slowest_decay
    while bound(hi) > 0:
        hi *= 2
    assert filt.settling_time(profile, tol) == pytest.approx(brentq(bound, 0.0, hi, xtol=1e-13), rel=1e-10)


def test_ptp_profile_is_the_library_kinematic_ptp():
    """MSL KinematicPTP2 for the RobotR3 demo: the most limited axes set the pace (speed: axis 5,
    acceleration: axis 3), every axis within its limits, s from 0 to 1, the library's phase times."""
    dq = np.radians([120.0, -90.0, -125.0, 45.0, 220.0, 45.0])
    vmax, amax = np.array([3.0, 1.5, 5.0, 3.1, 3.1, 4.1]), np.array([15.0, 15.0, 15.0, 60.0, 60.0, 60.0])
    p = ptp_profile(0.0, dq, vmax, amax)
    sd, sdd = 1 / np.max(np.abs(dq) / vmax), 1 / np.max(np.abs(dq) / amax)
    assert p.t_end == pytest.approx(sd / sdd + 1 / sd, rel=1e-14)
    t = np.linspace(0.0, p.t_end, 10001)
    assert p.evaluate(p.t_end + 1.0) == pytest.approx(1.0, abs=1e-13)
    speed = np.abs(dq)[:, None] * p.evaluate(t, 1)
    assert np.all(speed.max(axis=1) <= vmax * (1 + 1e-12)) and speed[4].max() == pytest.approx(vmax[4])
    acc = np.abs(dq)[:, None] * np.abs(p.evaluate(t, 2))
    assert np.all(acc.max(axis=1) <= amax * (1 + 1e-12)) and acc[2].max() == pytest.approx(amax[2])


def test_chosen_order_for_e12_and_the_r3():
    """The torque through an elastic gear follows the path's 4th derivative (3 with the damper:
    Pantelides), a direct drive's the 2nd, the r3 with full rotor coupling the 6th; a raw step needs
    order 5 for a continuous torque (6 by default), a raw ptp (acceleration jumps) 3 (4 by default)."""
    e12, r3 = load_problem(E12), load_problem(R3)
    assert (reference_smoothness(e12.model).damped, reference_smoothness(e12.model).undamped) == (3, 4)
    assert (reference_smoothness(r3.model).damped, reference_smoothness(r3.model).undamped) == (3, 4)
    assert reference_smoothness(load_problem(ROOT / "problems" / "e1_simplified.toml").model).derivatives == 2
    info = r3.reference_spec.params["info"]
    assert (info["order"], info["order_required"], info["order_source"]) == (4, 3, "derived")
    assert load_problem(R3_PTP).reference_spec.params["info"]["order"] == 4
    full = tomllib.loads(R3.read_text())
    full["model"]["rotor_coupling"] = "full"  # link rows with motor accelerations: 6 without dampers, 4 with
    p = problem_from_dict(full)
    assert (reference_smoothness(p.model).damped, reference_smoothness(p.model).undamped) == (4, 6)
    assert p.reference_spec.params["info"]["order"] == 6
    d = tomllib.loads(E12.read_text())
    d["reference"] = {"kind": "prefilter", "raw": "step", "start_mm": [2146.0, -345.0], "end_mm": [1146.0, 1645.0],
                      "cutoff_hz": 2.0, "joint_guess": [0.0, 0.3, 0.0]}
    info = problem_from_dict(d).reference_spec.params["info"]
    assert (info["order"], info["order_required"]) == (6, 5)
    assert "4th derivative" in info["order_reason"]


def test_order_too_low_for_the_index_is_an_error():
    d = tomllib.loads(R3.read_text())
    d["reference"]["order"] = 2
    with pytest.raises(ProblemError, match=r"reference\.order: 2 is too low .*order >= 3"):
        problem_from_dict(d, source="r3.toml")
    d["reference"].update(raw="step", order=4)
    for key in ("speed_max_rad_s", "acceleration_max_rad_s2"):
        del d["reference"][key]
    with pytest.raises(ProblemError, match=r"r3\.toml: reference\.order: 4 is too low.*4th derivative.*>= 5"):
        problem_from_dict(d, source="r3.toml")
    d["reference"]["order"] = 5  # the user may take the minimum
    assert problem_from_dict(d).reference_spec.params["info"]["order_source"] == "reference.order"


@pytest.mark.parametrize("change, match", [
    (lambda r: r.update(time_law="poly11"), r"reference\.time_law: is a key of kind .*not of kind 'prefilter'"),
    (lambda r: r.update(cutof_hz=3.0), r"reference\.cutof_hz: unknown key \(did you mean 'cutoff_hz'\?\)"),
    (lambda r: r.pop("cutoff_hz"), r"reference\.cutoff_hz: missing required key"),
    (lambda r: r.update(raw="trapezoid"), r"reference\.raw: must be one of step, ptp"),
    (lambda r: r.pop("speed_max_rad_s"), r"reference\.speed_max_deg_s: missing: raw = \"ptp\""),
    (lambda r: r.update(raw="step"), r"reference\.speed_max_rad_s: a raw step has no speed"),
    (lambda r: r.update(cutoff_hz=0.0), r"reference\.cutoff_hz: must be > 0"),
    (lambda r: r.update(settle_tolerance=1.5), r"reference\.settle_tolerance: must be in \(0, 1\)"),
    (lambda r: r.update(start_mm=[0.0, 0.0, 0.0]), r"reference\.start_mm: give a joint move"),
    (lambda r: r.update(q_end_rad=[0.0] * 6), r"reference\.q_end_rad: equals the start"),
])
def test_prefilter_schema_errors(change, match):
    d = tomllib.loads(R3.read_text())
    change(d["reference"])
    with pytest.raises(ProblemError, match=match):
        problem_from_dict(d, source="r3.toml")


def test_prefiltered_reference_horizon_and_derivatives():
    """The r3 benchmark's reference: the exact filter output over [0, t_end] with t_end = raw end +
    settling + rest_after; joints at rest before the raw move, at the target (1e-6) after settling;
    C^5 at the raw profile's corners (order 4 + 2 - 1); the tool path is the rigid image."""
    p = load_problem(R3)
    ref, info = p.reference, p.reference_spec.params["info"]
    assert ref.t_end == pytest.approx(info["raw_end_s"] + info["settling_time_s"] + 0.5, abs=1e-12)
    assert ref.prefilter["order"] == 4 and ref.time_law == "butterworth4"
    np.testing.assert_array_equal(ref.evaluate([0.0, 0.05, 0.1]), 0.0)
    tail = ref.evaluate(np.linspace(info["raw_end_s"] + info["settling_time_s"], ref.t_end, 50))
    assert np.abs(tail - 1.0).max() <= 1e-6  # the settling tolerance
    jumps = ref.breakpoint_jumps(6, rel_step=1e-9)
    scale = np.array([1.0] + [(2 * np.pi * 10.0) ** k * 15.0 / (2 * np.pi * 10.0) ** 2 for k in range(1, 7)])
    # measured on 2026-11-27: derivatives 0-5 jump by 2.2e-7 of the scale at most, the 6th by 2.3e8 (~ its scale)
    assert np.all(jumps[:6, :-1] / scale[:6, None] < 5e-7) and np.all(jumps[6, 1:-1] > 1e8)
    assert ref.tool_path is not None and ref.tool_path.n_out == 3


def test_plan_reports_the_prefilter(tmp_path):
    """summary.json carries the order, why, the cutoff and the horizon; the plan verifies (BDF-6, a
    one-joint elastic arm under gravity, 30 deg step through 4 Hz)."""
    import json

    import ffopt

    d = {"name": "one elastic joint, filtered step", "model": {
        "gravity": [0.0, 0.0, -9.81], "outputs": ["j"], "tool_origin": [0.5, 0.0, 0.0],
        "joints": [{"name": "j", "kind": "elastic_gear", "axis": [0.0, 1.0, 0.0], "mass": 5.0,
                    "com": [0.25, 0.0, 0.0], "inertia_diag": [0.0, 0.1, 0.0], "stiffness": 2.0e3,
                    "damping": 1.0, "motor_inertia": 0.5}]},
        "reference": {"kind": "prefilter", "raw": "step", "q_start_deg": [0.0], "q_end_deg": [30.0],
                      "cutoff_hz": 4.0, "rest_before": 0.05, "rest_after": 0.2},
        "solver": {"step": 1e-3}, "verification": {"payload_scales": []}}
    result = ffopt.plan(problem_from_dict(copy.deepcopy(d)), verify="full")
    cases = {k: c.max_mm for k, c in result.verification.cases.items()}
    # regression values measured on 2026-11-27: 0.0025 mm with PD (u linear between samples), 1.4e-5 mm open loop
    # with u as a spline, rigid 9.9 mm (3900x); bounds ~2x
    assert cases["feedforward_pd"] < 0.005 and cases["feedforward_open_loop_cubic_u"] < 3e-5
    assert cases["rigid_feedforward_pd"] > 2000 * cases["feedforward_pd"]
    result.save(tmp_path / "out", plots=False)
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    pf = s["reference"]["prefilter"]
    assert pf["order"] == 6 and pf["order_source"] == "derived" and "continuous motor torque" in pf["order_reason"]
    assert s["problem"]["t_end_s"] == pytest.approx(pf["t_end_s"], abs=1e-3)  # rounded to 1 ms in the summary


def test_the_structural_analysis_kept_on_disk_is_the_fresh_one_and_knows_its_chain(tmp_path, monkeypatch):
    """reference_smoothness_cached: the first call analyses and writes, the second reads (no analysis); a chain
    that differs (full rotor coupling: 4 / 6 instead of 3 / 4) has its own entry and its own answer."""
    from ffopt.analysis import structural

    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    r3 = load_problem(R3)
    full = tomllib.loads(R3.read_text())
    full["model"]["rotor_coupling"] = "full"
    coupled = problem_from_dict(full)
    assert len(list(tmp_path.glob("structure_*.json"))) == 2  # each problem's prefilter order asked for its own
    calls = []
    monkeypatch.setattr(structural, "reference_smoothness", lambda model: calls.append(model))
    got = [structural.reference_smoothness_cached(p.model) for p in (r3, coupled)]
    assert not calls  # both read from the disk
    assert [(g.damped, g.undamped) for g in got] == [(3, 4), (4, 6)]  # what the analysis gives (test above)
