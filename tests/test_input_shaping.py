"""Input shapers (ffopt.sim.shaping): Singer & Seering's ZV and ZVD on a damped oscillator, and the shaped
reference the rigid-feedforward baseline runs on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from ffopt.sim.shaping import (insensitivity_band, lowest_modes, residual_vibration, shape_reference, shape_signal,
                               shaped_rigid_feedforward, shaper, zv, zvd)

ROOT = Path(__file__).resolve().parents[1]


def shaped_step_response(sh, freq_hz, zeta, t_after: float = 3.0):
    """x'' + 2 zeta w x' + w^2 x = w^2 r(t), r the shaped unit step (a staircase), from rest: solved piece by
    piece between the impulse times (tight tolerances). Returns the times after the last impulse and x."""
    w = 2 * np.pi * freq_hz

    def rhs(_, x, r):
        return [x[1], w**2 * (r - x[0]) - 2 * zeta * w * x[1]]

    x, level = np.zeros(2), 0.0
    edges = list(sh.times) + [sh.times[-1] + t_after]
    for k, a in enumerate(sh.amplitudes):
        level += a
        t_eval = np.linspace(edges[k], edges[k + 1], 2001) if k == len(sh.amplitudes) - 1 else None
        sol = solve_ivp(rhs, (edges[k], edges[k + 1]), x, args=(level,), rtol=1e-12, atol=1e-14, method="DOP853",
                        t_eval=t_eval)
        x = sol.y[:, -1]
    return sol.t, sol.y[0]


@pytest.mark.parametrize("zeta", [0.0, 0.02, 0.1, 0.3])
def test_impulses_sum_to_one_positive_and_ordered(zeta):
    for sh in (zv(2.0, zeta), zvd(2.0, zeta), shaper("zv", [(2.0, zeta), (7.0, 0.05)]),
               shaper("zvd", [(2.0, zeta), (7.0, 0.05)])):
        assert sh.amplitudes.sum() == pytest.approx(1.0, abs=1e-14)
        assert np.all(sh.amplitudes > 0) and np.all(np.diff(sh.times) > 0) and sh.times[0] == 0.0
    # the textbook values: ZV at T/2, ZVD at T/2 and T, T the damped period
    K = np.exp(-zeta * np.pi / np.sqrt(1 - zeta**2))
    Td = 1 / (2.0 * np.sqrt(1 - zeta**2))
    np.testing.assert_allclose(zv(2.0, zeta).amplitudes, [1 / (1 + K), K / (1 + K)])
    np.testing.assert_allclose(zv(2.0, zeta).times, [0, Td / 2])
    np.testing.assert_allclose(zvd(2.0, zeta).amplitudes, np.array([1, 2 * K, K**2]) / (1 + K) ** 2)
    np.testing.assert_allclose(zvd(2.0, zeta).times, [0, Td / 2, Td])


@pytest.mark.parametrize("zeta", [0.0, 0.05, 0.2])
def test_zv_leaves_no_residual_vibration_on_its_design_oscillator(zeta):
    f = 1.5
    t, x = shaped_step_response(zv(f, zeta), f, zeta)
    assert np.abs(x - 1.0).max() < 1e-8  # at rest at the target from the last impulse on
    # unshaped, the same oscillator rings: its first overshoot is the closed form exp(-pi zeta / (1 - zeta^2)^0.5)
    # (>= 0.53 for zeta <= 0.2; x starts at 0, so |x - 1| alone would always reach 1); abs 1e-5: the sampled peak
    # on a grid of 2000 steps per period (measured 3.7e-7 off on 2026-11-27)
    _, x0 = shaped_step_response(zv(f, zeta).__class__(np.array([1.0]), np.array([0.0]), "none", ((f, zeta),)),
                                 f, zeta, t_after=1 / f)
    assert x0.max() - 1.0 == pytest.approx(np.exp(-np.pi * zeta / np.sqrt(1 - zeta**2)), abs=1e-5)


@pytest.mark.parametrize("make", [zv, zvd])
@pytest.mark.parametrize("ratio", [0.8, 0.95, 1.1, 1.3])
def test_residual_formula_matches_simulation_off_design(make, ratio):
    """Singer & Seering's V(omega) against the simulated oscillator (undamped: the unshaped residual is 1)."""
    sh = make(1.0, 0.0)
    t, x = shaped_step_response(sh, ratio, 0.0, t_after=2.0 / ratio)
    assert np.abs(x - 1.0).max() == pytest.approx(float(sh.residual(ratio)), abs=1e-6)  # the simulation's tolerance


def test_zvd_is_flatter_than_zv():
    """Insensitivity curves (residual vs frequency error): ZVD's 5 % band is much wider than ZV's. Computed
    here for an undamped mode: ZV +-3.2 %, ZVD +-14.4 % (Singer & Seering's figure reads about +-5 % and +-15 %)."""
    # independent: undamped V_ZV(r) = |cos(pi r / 2)| and V_ZVD = V_ZV^2 (Singer & Seering), so the 5 % band
    # ends where cos(pi r / 2) = 0.05 (ZV: 0.9682) or 0.05^(1/2) (ZVD: 0.8564); abs 1e-4: the band is found on a
    # grid of step 5e-5
    zv_lo, zvd_lo = 2 / np.pi * np.arccos(0.05), 2 / np.pi * np.arccos(np.sqrt(0.05))
    lo, hi = insensitivity_band(zv(1.0))
    assert (lo, hi) == (pytest.approx(zv_lo, abs=1e-4), pytest.approx(2 - zv_lo, abs=1e-4))
    lo2, hi2 = insensitivity_band(zvd(1.0))
    assert (lo2, hi2) == (pytest.approx(zvd_lo, abs=1e-4), pytest.approx(2 - zvd_lo, abs=1e-4))
    assert hi2 - lo2 > 4 * (hi - lo)
    r = np.linspace(0.5, 1.5, 401)
    v_zv, v_zvd = zv(1.0).residual(r), zvd(1.0).residual(r)
    assert np.all(v_zvd <= v_zv + 1e-12)  # undamped ZVD = ZV * ZV: V_ZVD = V_ZV^2
    np.testing.assert_allclose(v_zvd, v_zv**2, atol=1e-12)
    # damped modes: still zero at the design point, band wider for ZVD
    for zeta in (0.05, 0.1):
        assert residual_vibration(zvd(1.0, zeta).amplitudes, zvd(1.0, zeta).times, 1.0, zeta) < 1e-12
        a, b = insensitivity_band(zv(1.0, zeta)), insensitivity_band(zvd(1.0, zeta))
        assert b[1] - b[0] > 3 * (a[1] - a[0])


def test_two_mode_shaper_cancels_both_modes():
    sh = shaper("zv", [(1.0, 0.05), (3.3, 0.1)])
    assert sh.duration == pytest.approx(zv(1.0, 0.05).duration + zv(3.3, 0.1).duration)
    assert sh.residual(1.0, 0.05) < 1e-10 and sh.residual(3.3, 0.1) < 1e-10
    assert len(sh.times) == 4
    with pytest.raises(ValueError):
        shaper("zvdd", [(1.0, 0.0)])
    with pytest.raises(ValueError):
        zv(1.0, 1.0)


def test_shaped_reference_is_the_shaped_path_along_the_same_line():
    import ffopt

    p = ffopt.load_problem(ROOT / "problems/e1_simplified.toml")
    ref = p.reference
    sh = zvd(5.79, 0.29)
    s = shape_reference(ref, sh)
    assert s.t_end == pytest.approx(ref.t_end + sh.duration)
    assert s.t_motion_end == pytest.approx(ref.t_motion_end + sh.duration)
    t = np.linspace(0, s.t_end, 3001)
    y = s.evaluate(t)
    np.testing.assert_allclose(y, shape_signal(t, ref.evaluate(t), sh), atol=2e-6)  # linear interpolation
    np.testing.assert_allclose(s.evaluate([s.t_end]), ref.evaluate([ref.t_end]), atol=1e-14)
    # derivatives exact: the shaped speed is the shaped speed
    dt = np.linspace(0.0, s.t_end, 7)
    want = sum(a * ref.evaluate(dt - ti, 1) for a, ti in zip(sh.amplitudes, sh.times))
    np.testing.assert_allclose(s.evaluate(dt, 1), want, atol=1e-12)
    # the rigid feedforward on it: motion ends at rest at the same pose
    sref, tt, rig = shaped_rigid_feedforward(p.model, ref, sh, p.solver.step, p.reference_spec.joint_guess)
    assert tt[-1] == pytest.approx(sref.t_end, abs=p.solver.step)
    np.testing.assert_allclose(rig.dqa[-1], 0.0, atol=1e-12)


def test_joint_space_reference_is_shaped_in_joint_space():
    import ffopt

    p = ffopt.load_problem(ROOT / "problems/arm3d_joint_ptp.toml")
    ref, model = p.reference, p.model
    sh = zv(3.0, 0.05)
    s = shape_reference(ref, sh, model)
    t = np.linspace(0, s.t_end, 41)
    q = s.joint.evaluate(t)
    want = sum(a * ref.joint.evaluate(t - ti) for a, ti in zip(sh.amplitudes, sh.times))
    np.testing.assert_allclose(q, want, atol=1e-12)
    from ffopt.reference.build import rigid_forward_kinematics

    tool = np.array([np.array(rigid_forward_kinematics(model, "tool")(qk)).ravel() for qk in q])
    np.testing.assert_allclose(s.tool_path.evaluate(t), tool, atol=1e-12)
    with pytest.raises(ValueError):
        shape_reference(ref, sh)  # a mapped reference needs the model


def test_lowest_modes_of_e1_clamped_is_the_passive_joint():
    """E1 simplified with the motor clamped: the passive joint alone, w^2 = k / J22, zeta = d / (2 sqrt(k J22))."""
    import ffopt
    from ffopt.dae.equilibrium import static_equilibrium

    p = ffopt.load_problem(ROOT / "problems/e1_simplified.toml")
    q = static_equilibrium(p.model, p.reference.evaluate([p.reference.t_end])[0], p.reference_spec.joint_guess)
    (f, z), = lowest_modes(p.model, q, [0.0], [0.0], n=1, condition="clamped")
    assert f == pytest.approx(np.sqrt(1e6 / 600) / (2 * np.pi), rel=1e-9)
    assert z == pytest.approx(1e3 / (2 * np.sqrt(1e6 * 600)), rel=1e-9)


def test_ei_shapers_have_their_published_insensitivity():
    """Singhose, Seering & Singer (1994) and Vaughan, Yano & Singhose (2008): for an undamped mode the residual
    stays below V = 5 % over +-20 % of the frequency with EI (one period long, as ZVD's +-14 %) and over +-35 %
    with the two-hump EI (1.5 periods); their amplitudes are Singhose's closed forms; damped EI keeps the hump
    at V on the design frequency."""
    from ffopt.reference.shaping import ei, ei2, insensitivity_band, zvd

    lo, hi = insensitivity_band(ei(2.0), 0.05, span=0.6)
    assert lo == pytest.approx(0.80, abs=0.005) and hi == pytest.approx(1.20, abs=0.005)
    assert np.allclose(ei(2.0).amplitudes, [0.2625, 0.475, 0.2625]) and ei(2.0).duration == pytest.approx(0.5)
    lo, hi = insensitivity_band(ei2(2.0), 0.05, span=0.6)
    assert 1 - lo > 0.35 and hi - 1 > 0.35 and ei2(2.0).duration == pytest.approx(0.75)
    assert np.allclose(ei2(2.0).amplitudes.sum(), 1.0) and np.allclose(ei2(2.0).amplitudes[0], 0.1598, atol=1e-4)
    z_lo, z_hi = insensitivity_band(zvd(2.0), 0.05, span=0.6)
    assert z_hi - z_lo < hi - lo  # ZVD: narrower at the same duration
    damped = ei(2.0, 0.1)
    assert damped.residual(2.0, 0.1).item() == pytest.approx(0.05, abs=1e-9)
    lo, hi = insensitivity_band(damped, 0.05, span=0.6)
    assert 1 - lo > 0.2 and hi - 1 > 0.2
    with pytest.raises(ValueError, match="use ei"):
        ei2(2.0, 0.1)
