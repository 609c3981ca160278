"""Flexible links that bend as beams do: the geometrically exact beam (ffopt.models.beam_chain), second-order
assumed-mode kinematics (ffopt.models.flexible_links) and Kane, Ryan & Banerjee's spin-up (results/spin_up.py).

Independent references: the Euler-Bernoulli beam's closed-form statics and frequencies for the rigid-segment
chain; MuJoCo (a second simulator, the same rods and hinge springs written as MJCF) for its dynamics; the chain
itself, Richardson-extrapolated in its segment count, for the second-order model.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from ffopt.models import rigid_body
from ffopt.models.beam import clamped_free_roots
from ffopt.models.beam_chain import link_bending, segmented_beam_model
from ffopt.models.chain import Body, Chain, Joint
from ffopt.models.flexible_links import FlexibleLink, FlexibleLinkModel
from ffopt.sim.prescribed import simulate_prescribed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "results"))
import spin_up  # noqa: E402

L, EI, MASS = 2.0, 800.0, 3.0  # a 2 m link, first clamped frequency 1.875^2 sqrt(EI / (rho L^4)) = 14.4 rad/s
Z = np.array([0.0, 0.0, 1.0])


def one_link(tip_mass: float = 0.0, kinematics: str = "linear", modes: int = 4, gravity=(0.0, 0.0, 0.0),
             beam_mass: float = MASS) -> FlexibleLinkModel:
    """A flexible link along x on a direct drive about z, an optional point mass at its tip."""
    hub = Joint("hub", "direct", Z, np.zeros(3), Body(tip_mass, np.array([L, 0.0, 0.0]), np.zeros((3, 3))))
    link = FlexibleLink(0, modes, EI, L, beam_mass, static_correction=modes >= 2, kinematics=kinematics)
    return FlexibleLinkModel(Chain((hub,), np.array([L, 0.0, 0.0]), np.array(gravity, float)), [link], ("hub",))


def _hinge_angles_at_rest(beam, K: int) -> np.ndarray:
    """The hinges' static angles with the hub held at 0 (Newton on the passive rows)."""
    x = ca.SX.sym("x", K)
    q = ca.vertcat(0, x)
    rows = beam.unactuated_link_rows(q, ca.DM.zeros(K + 1), ca.DM.zeros(K + 1))
    solve = ca.rootfinder("rest", "newton", ca.Function("r", [x], [rows]), {"abstol": 1e-14})
    return np.array(solve(np.zeros(K))).ravel()


@pytest.mark.parametrize("K", [1, 3, 10])
def test_segmented_beam_statics_under_a_tip_force(K):
    """A tip force F (a tip mass under gravity across the link, the beam itself nearly massless): the chain's
    tip slope is the beam's F L^2 / (2 EI) for every K, its deflection (1 - 1 / (4 K^2)) F L^3 / (3 EI)
    (the rods l/2, l, ..., l, l/2 with springs EI / l; in the small-deflection limit)."""
    F = 1e-3  # N: deflections of 1e-6 m, where the beam's linear statics hold
    model = one_link(tip_mass=F / 9.81, gravity=(0.0, -9.81, 0.0), beam_mass=1e-12)
    beam = segmented_beam_model(model, K)
    theta = _hinge_angles_at_rest(beam, K)
    w = np.array(link_bending(beam, model, K)(np.concatenate([[0.0], theta]))).ravel()
    assert -theta.sum() == pytest.approx(F * L**2 / (2 * EI), rel=1e-6)
    assert -w[0] == pytest.approx((1 - 1 / (4 * K**2)) * F * L**3 / (3 * EI), rel=1e-6)


def _clamped_frequencies(beam) -> np.ndarray:
    """Natural frequencies (rad/s) of the chain's hinges with the hub held, at rest, undamped."""
    n = beam.layout.n_link
    M = np.array(ca.Function("M", [], [rigid_body.mass_matrix(beam.chain, ca.SX.zeros(n))])()["o0"])[1:, 1:]
    K = np.diag([j.stiffness for j in beam.chain.joints[1:]])
    return np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real))


def test_segmented_beam_frequencies_converge_to_the_beam_like_one_over_K_squared():
    exact = clamped_free_roots(3) ** 2 * np.sqrt(EI / (MASS / L * L**4))
    errors = []
    for K in (8, 16, 32):
        w = _clamped_frequencies(segmented_beam_model(one_link(), K))[:3]
        errors.append(np.abs(w / exact - 1))
    errors = np.array(errors)
    assert errors[-1].max() < 2e-3  # 32 rods: the first three frequencies within 0.2 % (measured 0.02-0.13 %)
    ratio = errors[:-1] / errors[1:]
    assert np.all((ratio > 3.5) & (ratio < 4.5))  # second order in the rod length


def test_second_order_kinematics_add_the_centrifugal_stiffness_of_a_spinning_beam():
    """Spinning at omega with small deflections delta, the second-order modal rows exceed the linear ones by the
    geometric stiffness K_g delta of the centrifugal tension T(x) = rho omega^2 (L^2 - x^2) / 2 (the beam's
    classical result: K_g,ij = int T phi_i' phi_j' dx), to O(delta^2); at rest they differ from the elastic forces
    K delta only at O(delta^2) relative (the fourth-order bending energy)."""
    lin, so = one_link(kinematics="linear"), one_link(kinematics="second_order")
    link = so.links[0]
    xi, w = link.shapes.quadrature
    d1 = link.shapes.shape(xi, 1) / L
    tension = MASS / L * (L**2 - (xi * L) ** 2) / 2
    Kg = (d1 * tension * w * L) @ d1.T
    n, omega, h = lin.layout.nq, 3.0, 1e-6
    gap = np.zeros((n - 1, n - 1))  # d(second order - linear modal rows)/d delta at delta = 0, spinning
    for j in range(n - 1):
        q = np.concatenate([[0.4], h * np.eye(n - 1)[j]])
        v = np.concatenate([[omega], np.zeros(n - 1)])
        gap[:, j] = (np.array(so.equations_of_motion(q, v, np.zeros(n), [0.0]))
                     - np.array(lin.equations_of_motion(q, v, np.zeros(n), [0.0]))).ravel()[1:] / h
    assert np.abs(gap - omega**2 * Kg).max() < 1e-4 * np.abs(omega**2 * Kg).max()  # measured 3e-6
    direction = np.random.default_rng(5).normal(size=n - 1)
    rest_gaps = []
    for eps in (1e-3, 1e-4):
        q = np.concatenate([[0.4], eps * direction])
        elastic = np.array(lin.equations_of_motion(q, np.zeros(n), np.zeros(n), [0.0])).ravel()  # K delta
        at_rest = np.array(so.equations_of_motion(q, np.zeros(n), np.zeros(n), [0.0])).ravel() - elastic
        rest_gaps.append(np.abs(at_rest).max() / np.abs(elastic).max())
    assert rest_gaps[0] < 1e-3 and rest_gaps[0] / rest_gaps[1] == pytest.approx(100, rel=0.01)  # O(delta^2)
    q0 = np.array([0.3, 0.0, 0.0, 0.0, 0.0])
    M_lin, M_so = np.array(lin.mass_matrix(q0[:n])), np.array(so.mass_matrix(q0[:n]))
    assert np.abs(M_lin - M_so).max() < 1e-12 * np.abs(M_lin).max()  # undeformed: the same mass matrix


def test_second_order_free_motion_conserves_energy():
    """A free, undamped second-order link (hub free, large initial bending) keeps its energy: the Lagrange
    equations, the foreshortening in the kinetic energy and the fourth-order bending energy are consistent."""
    from ffopt.sim.plant import SimulationOptions, simulate

    model = one_link(tip_mass=0.5, kinematics="second_order", modes=3)
    q0 = np.array([0.0, 0.25, -0.02, 0.01])  # 12 % of the length at the tip
    v0 = np.array([2.0, 0.0, 0.0, 0.0])
    t = np.linspace(0.0, 0.5, 11)
    sim = simulate(model, t, np.zeros((len(t), 1)), q0, v0,
                   options=SimulationOptions(rtol=1e-13, atol=1e-15, compile=False))
    T, V = (np.array(x).ravel() for x in model.energy.map(len(t))(sim.q.T, sim.v.T))
    assert np.ptp(T) > 0.1 * T.max()
    # the integration's own error: 8e-6, 1.6e-7, 3.5e-9 of T at rtol 1e-9, 1e-11, 1e-13 over 1 s (linear
    # kinematics: 6e-7, 1e-8, 2.5e-10), so the equations conserve energy to below that
    assert np.abs(T + V - T[0] - V[0]).max() < 1e-8 * T.max()


def test_spin_up_second_order_follows_the_exact_beam_where_linear_diverges():
    """Kane, Ryan & Banerjee's spin-up (10 m beam, 6 rad/s after 15 s, past its first frequency 3.8 rad/s): the
    linear model diverges; the second-order one stays within 2 % of the peak of the exact beam (rigid segments,
    Richardson-extrapolated from 8 and 16; measured 0.2 %), whose own extrapolation error is below 0.5 %."""
    t = np.linspace(0.0, 20.0, 201)
    w_lin, _ = spin_up.tip_deflection(spin_up.beam_on_hub(4, "linear"), t)
    w_so, _ = spin_up.tip_deflection(spin_up.beam_on_hub(4, "second_order"), t)
    w8, _ = spin_up.tip_deflection(spin_up.beam_on_hub(4, "linear"), t, 8)
    w16, _ = spin_up.tip_deflection(spin_up.beam_on_hub(4, "linear"), t, 16)
    exact = (4 * w16 - w8) / 3
    peak = np.abs(exact).max()
    assert 0.5 < peak < 0.65  # the beam lags the hub by about 0.57 m at its tip, then recovers
    assert np.abs(w_so - exact).max() < 0.02 * peak
    assert np.abs(w16 - exact).max() < 0.01 * peak
    diverged = ~np.isfinite(w_lin) | (np.abs(np.nan_to_num(w_lin, nan=np.inf)) > 10 * peak)
    assert diverged.any() and t[np.argmax(diverged)] < 20.0


def test_prescribed_canadarm_motion_second_order_matches_the_exact_beam():
    """The Canadarm's three joints along a joint move (8 s), links free: the second-order model's tip deflections
    follow the exact beam's (rigid segments, extrapolated from 6 and 12) to 0.2 % of their peak on the long links
    (0.5 % on the 2 m one), also in the large free vibration after the move (0.7-0.9 m); linear kinematics miss it
    by over 5 % (their frequency does not change with the bending)."""
    import ffopt

    p = ffopt.load_problem(Path(__file__).resolve().parents[1] / "problems" / "canadarm_tool_path.toml")
    q0, q1 = np.deg2rad([20.0, 40.0, 30.0]), np.deg2rad([40.0, 60.0, 60.0])
    T = 8.0

    def law(i):
        def theta(t):
            s = ca.fmin(ca.fmax(t / T, 0), 1)
            return q0[i] + (q1[i] - q0[i]) * s**6 * (462 - 1980 * s + 3465 * s**2 - 3080 * s**3 + 1386 * s**4
                                                     - 252 * s**5)
        return theta

    t = np.linspace(0.0, T + 1.5, 96)
    tips = {}
    for kinematics in ("linear", "second_order"):
        m = FlexibleLinkModel(p.chain, [replace(k, kinematics=kinematics) for k in p.flexible_links], p.model.outputs)
        q = simulate_prescribed(m, {i: law(i) for i in range(3)}, t, rtol=1e-9, atol=1e-11)
        tips[kinematics] = np.array(m.link_bending.map(len(t))(q.T)).T[:, ::2]
    for K in (6, 12):
        beam = segmented_beam_model(p.model, K)
        q = simulate_prescribed(beam, {i * (K + 1): law(i) for i in range(3)}, t, rtol=1e-9, atol=1e-11)
        tips[K] = np.array(link_bending(beam, p.model, K).map(len(t))(q.T)).T[:, ::2]
    exact = (4 * tips[12] - tips[6]) / 3
    peak = np.abs(exact).max(axis=0)
    assert peak[0] > 0.6  # the 6 m link bends by over 10 % of its length
    so_error = np.abs(tips["second_order"] - exact).max(axis=0) / peak  # measured 0.16, 0.17, 0.32 %
    assert so_error[0] < 2e-3 and np.all(so_error < 5e-3)
    assert np.abs(tips["linear"] - exact).max(axis=0)[0] > 0.05 * peak[0]


def test_mujoco_rod_chain_matches_the_segmented_beam():
    """The segmented beam written as MuJoCo bodies (rods with their mass and inertia, hinges with stiffness
    EI / l and the chain's damping), released straight with the hub held and gravity across it: MuJoCo's tip
    angle follows ffopt's within 0.5 % of its swing (a second simulator for the chain's geometry and inertia)."""
    mujoco = pytest.importorskip("mujoco")

    K = 6
    beam = segmented_beam_model(one_link(tip_mass=0.4, gravity=(0.0, -9.81, 0.0)), K)
    hinges = beam.chain.joints[1:]  # the hub held: its half rod is part of the world
    def text(*xs) -> str:
        return " ".join(repr(float(x)) for x in xs)

    xml = []
    for j in hinges:
        b, I = j.body, j.body.inertia + 1e-9 * np.eye(3)  # a thin rod: MuJoCo wants some inertia about its axis
        xml.append(f'<body pos="{text(*j.origin)}"><joint type="hinge" axis="0 0 1" stiffness="{text(j.stiffness)}" '
                   f'damping="{text(j.damping)}"/><inertial pos="{text(*b.com)}" mass="{text(b.mass)}" '
                   f'fullinertia="{text(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])}"/>')
    mjcf = (f'<mujoco><option gravity="0 -9.81 0" integrator="RK4" timestep="2e-5"/><worldbody>{"".join(xml)}'
            f'{"</body>" * K}</worldbody></mujoco>')
    mj = mujoco.MjModel.from_xml_string(mjcf)
    data = mujoco.MjData(mj)
    every, rows = 1250, 21  # 0.5 s, a row every 25 ms
    theirs = []
    for k in range(every * (rows - 1) + 1):
        if k % every == 0:
            theirs.append(data.qpos.copy())
        mujoco.mj_step(mj, data)
    from ffopt.models.flexible import FlexibleModel

    held = FlexibleModel(replace(beam.chain, joints=hinges), (), "the hinges, hub held")
    ours = simulate_prescribed(held, {}, np.linspace(0.0, 0.5, rows), rtol=1e-10, atol=1e-12)
    tip_ours, tip_theirs = ours.sum(axis=1), np.array(theirs).sum(axis=1)  # the last rod's angle
    swing = np.abs(tip_theirs).max()
    assert swing > 1e-3
    assert np.abs(tip_ours - tip_theirs).max() < 5e-3 * swing


@pytest.mark.parametrize("modes", [3, 8])
def test_fourth_order_bending_force_is_the_gradient_of_its_energy(modes):
    """The recursive algorithm's bending force (a tensor for up to 6 modes, the quadrature above) against CasADi's
    gradient of the energy (EI / 2) int w''^2 w'^2 dx."""
    link = FlexibleLink(0, modes, EI, L, MASS, static_correction=True, kinematics="second_order")
    d = ca.SX.sym("d", modes)
    force = ca.Function("f", [d], [FlexibleLinkModel._curvature_force(link, d)])
    grad = ca.Function("g", [d], [ca.gradient(FlexibleLinkModel._curvature_energy(link, d), d)])
    x = np.random.default_rng(3).normal(size=modes) * 0.05
    assert np.allclose(np.array(force(x)), np.array(grad(x)), rtol=1e-10, atol=1e-12 * np.abs(np.array(grad(x))).max())
