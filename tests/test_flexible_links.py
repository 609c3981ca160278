"""Flexible links by assumed modes (Mohan & Saha, simulation of serial robots with flexible links).

- the clamped-free beam: roots against the literature, boundary conditions, orthogonality, modal
  mass and stiffness against their closed forms, the paper's printed shape (eq. 43) checked;
- a single clamped link through ``ffopt analyze``: its first two frequencies against
  beta_j^2 sqrt(EI / (rho L^4)) with beta = 1.8751, 4.6941 (1e-6);
- the recursive Newton-Euler model against the Euler-Lagrange equations derived from the model's
  kinetic and potential energy (an independent formulation) on a 3-D chain with an elastic gear,
  a passive joint, two flexible links, tip bodies with full inertia tensors and gravity;
- the rigid limit: at zero deflection the joint rows are the rigid chain's M, c, g (recursive
  Newton-Euler and CRBA of ffopt.models.rigid_body), and deflections scale like 1 / EI;
- energy conservation of a free, undamped simulation; the schema's error messages;
- a one-link non-minimum-phase plan: causal BDF diverges, the non-causal NLP plan verifies;
- slow: the Canadarm forced motion (10 s, power balance) and the Canadarm tool-path plan.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from ffopt.errors import ProblemError, SolverError
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.models import rigid_body
from ffopt.models.beam import ClampedFreeModes, clamped_free_roots
from ffopt.models.chain import Body, Chain, Joint
from ffopt.models.flexible import FlexibleModel
from ffopt.models.flexible_links import FlexibleLink, FlexibleLinkModel, rigid_equivalent_chain

ROOT = Path(__file__).resolve().parents[1]
CANADARM = ROOT / "problems" / "canadarm_tool_path.toml"
# Roots of 1 + cos(b) cosh(b) = 0 as tabulated in the vibration literature (e.g. Blevins, Formulas
# for natural frequency and mode shape, Table 8-1), to 15 digits.
BETA = [1.875104068711961, 4.694091132974175, 7.854757438237613, 10.995540734875467]


# ------------------------------------------------------------------------------------ the beam
def test_clamped_free_roots_match_the_literature():
    assert np.allclose(clamped_free_roots(4), BETA, rtol=1e-13, atol=0)
    with pytest.raises(ValueError):
        clamped_free_roots(0)


def test_mode_shapes_boundary_conditions_orthogonality_and_modal_integrals():
    modes = ClampedFreeModes(6)
    beta = modes.beta
    for k, at in ((0, 0.0), (1, 0.0), (2, 1.0), (3, 1.0)):  # clamped: w = w' = 0; free: w'' = w''' = 0
        assert np.all(np.abs(modes.shape(at, k)[:, 0]) < 1e-12 * beta**k), (k, at)
    assert np.allclose(modes.shape(1.0)[:, 0], 1.0)  # normalised to tip value 1
    # modal mass int phi^2 = 1/4 and stiffness int phi''^2 = beta^4 / 4, orthogonal (tip value +-2 -> 1)
    mass, stiff = modes.gram[2:, 2:], modes.curvature_gram
    assert np.allclose(np.diag(mass), 0.25, rtol=1e-12)
    assert np.allclose(np.diag(stiff), beta**4 / 4, rtol=1e-12)
    assert np.abs(mass - np.diag(np.diag(mass))).max() < 1e-13
    assert np.abs(stiff - np.diag(np.diag(stiff))).max() < 1e-10 * stiff.max()
    # closed forms of the standard shape (tip value 2 (-1)^(j+1)): int phi = 2 sigma / beta, int xi phi = 2 / beta^2
    sigma = (np.cosh(beta) + np.cos(beta)) / (np.sinh(beta) + np.sin(beta))
    tip = 2.0 * (-1.0) ** np.arange(6)
    assert np.allclose(modes.gram[0, 2:], 2 * sigma / beta / tip, rtol=1e-12)
    assert np.allclose(modes.gram[1, 2:], 2 / beta**2 / tip, rtol=1e-12)
    assert np.allclose(modes.gram[:2, :2], [[1, 0.5], [0.5, 1 / 3]], rtol=1e-14)


def test_the_papers_printed_mode_shape_and_its_sign_corrected_form():
    """Mohan & Saha eq. (43) as printed is not zero at the clamp; with the standard signs it is our mode."""
    modes = ClampedFreeModes(2)
    xi = np.linspace(0, 1, 11)
    for j, b in enumerate(modes.beta):
        z = b * xi
        sigma_paper = (np.sin(b) + np.sinh(b)) / (np.cos(b) + np.cosh(b))
        printed = (np.sin(z) + np.sinh(z)) - sigma_paper * (np.cos(z) + np.cosh(z))
        assert abs(printed[0]) > 1.0  # s(0) = -2 sigma: violates the clamped condition
        corrected = (np.sinh(z) - np.sin(z)) - sigma_paper * (np.cosh(z) - np.cos(z))
        ours = modes.shape(xi)[j]
        assert np.allclose(corrected / corrected[-1], ours, atol=1e-12)


# ------------------------------------------------------------------------------ single link
def one_link(modes: int = 2, outputs=("y",), tip_mass: float = 0.5, motor_inertia: float = 0.05) -> dict:
    """A 1 m, 2 kg flexible link (EI = 50 N m^2, first mode 2.8 Hz) on a direct drive, turning 17 deg."""
    joint = {"name": "hub", "kind": "direct", "axis": [0.0, 0.0, 1.0], "mass": tip_mass, "com": [1.0, 0.0, 0.0],
             "motor_inertia": motor_inertia, "flexible": {"modes": modes, "EI": 50.0, "length": 1.0, "mass": 2.0}}
    ref = ({"kind": "line", "start_mm": [0.0], "end_mm": [300.0]} if outputs == ("y",) else
           {"kind": "joint_ptp", "q_start_deg": [0.0], "q_end_deg": [17.0]})
    return {
        "name": "one flexible link",
        "model": {"gravity": [0.0, 0.0, 0.0], "outputs": list(outputs), "tool_origin": [1.0, 0.0, 0.0],
                  "joints": [joint]},
        "reference": {**ref, "duration": 1.0, "time_law": "poly11", "rest_before": 0.0, "rest_after": 0.5},
        "solver": {"method": "nlp", "step": 0.01},
        # non-minimum phase: stable inversion from rest, no BDF warm start (the causal BDF solution diverges)
        "nlp": {"strategy": "noncausal", "backend": "auto", "step": 0.02, "pre_actuation_s": 0.3,
                "post_actuation_s": 0.3, "warm_start": "none"},
        "verification": {"payload_scales": []},
    }


def test_clamped_link_frequencies_from_ffopt_analyze_match_the_beam_roots():
    from ffopt.analysis.report import analyze_problem

    problem = problem_from_dict(one_link(modes=3, outputs=("hub",), tip_mass=0.0, motor_inertia=0.0))
    link = problem.flexible_links[0]
    rho, L, EI = link.mass / link.length, link.length, link.EI
    exact = np.array(BETA[:2]) ** 2 * np.sqrt(EI / (rho * L**4))
    report = analyze_problem(problem, n_points=3, frequency_points=3)
    clamped = 2 * np.pi * report.frequencies.all_undamped_hz["clamped"][0]  # joint held: the cantilever
    assert np.allclose(clamped[:2], exact, rtol=1e-6, atol=0)
    assert np.allclose(np.diag(link.modal_mass), link.mass / 4, rtol=1e-12)
    assert np.allclose(np.diag(link.modal_stiffness), EI * np.array(BETA[:3]) ** 4 / (4 * L**3), rtol=1e-10)
    assert report.zero_dynamics.minimum_phase is False  # joint output, undamped modes: zeros on the axis
    assert "hub.mode1" in report.model["passive"]


# ------------------------------------------------------------------------------ 3-D chain
def _body(rng, mass, com):
    A = rng.normal(size=(3, 3))
    return Body(mass, np.asarray(com, float), 0.05 * (A @ A.T + np.eye(3)))


def mixed_chain(EI: float = 2.0e3, gravity=(0.0, 0.0, -9.81), damping: float = 0.0,
                frames: bool = False) -> tuple[Chain, list]:
    """Elastic gear about z (rigid column), a flexible upper arm (2 modes) about a tilted axis with a
    tip body, a passive elastic joint carrying a flexible forearm (1 mode) with a tool body.
    ``frames``: also fixed joint-frame rotations, a payload and a tool-frame rotation."""
    rng = np.random.default_rng(7)
    a2 = np.array([0.2, 1.0, 0.1]) / np.linalg.norm([0.2, 1.0, 0.1])
    e2 = np.cross(a2, [0.0, 0.0, 1.0]); e2 /= np.linalg.norm(e2)
    a3 = np.array([0.0, 1.0, 0.0])
    e3 = np.array([1.0, 0.0, 0.3]) / np.linalg.norm([1.0, 0.0, 0.3])
    joints = (
        Joint("base", "elastic_gear", np.array([0.0, 0.0, 1.0]), np.zeros(3), _body(rng, 10.0, [0.0, 0.05, 0.2]),
              stiffness=3.0e4, damping=damping, motor_inertia=1.5),
        Joint("shoulder", "direct", a2, np.array([0.0, 0.0, 0.4]), _body(rng, 3.0, 0.8 * e2 + [0.0, 0.05, 0.0]),
              motor_inertia=0.3),
        Joint("elbow", "passive", a3, 0.8 * e2 + np.array([0.0, 0.0, 0.05]), _body(rng, 1.0, 0.6 * e3),
              stiffness=2.0e3, damping=damping),
    )
    chain = Chain(joints, 0.6 * e3 + np.array([0.05, 0.0, 0.0]), np.array(gravity, float))
    if frames:
        from dataclasses import replace

        from ffopt.models.chain import Body, rotation_rpy

        turned = tuple(replace(j, rotation=rotation_rpy(*rng.uniform(-0.6, 0.6, 3))) for j in joints)
        chain = replace(chain, joints=turned, payload=_body(rng, 2.5, [0.1, 0.02, -0.03]),
                        tool_rotation=rotation_rpy(0.3, -0.2, 0.5))
        assert isinstance(chain.payload, Body)
    links = [FlexibleLink(1, 2, EI, 0.8, 4.0, e2, (0.02 if damping else 0.0,) * 2),
             FlexibleLink(2, 1, 0.5 * EI, 0.6, 2.0, e3)]
    return chain, links


def _input_matrix(model) -> np.ndarray:
    """B with equations_of_motion = (Lagrange part) - B u: the row each input acts on."""
    L = model.layout
    B = np.zeros((L.nq, L.n_u))
    for j, link in enumerate(L.actuated):
        B[link if link in L.direct else L.n_link + L.gear.index(link), j] = 1.0
    return B


@pytest.mark.parametrize("kinematics", ["linear", "second_order"])
@pytest.mark.parametrize("frames", [False, True])
def test_recursive_newton_euler_matches_euler_lagrange_from_the_energies(frames, kinematics):
    """Second order: the foreshortening terms of the recursive algorithm (a 5x smaller expression) against the
    Lagrange equations of the energies with the foreshortening and the fourth-order bending energy."""
    from dataclasses import replace

    chain, links = mixed_chain(frames=frames)
    model = FlexibleLinkModel(chain, [replace(k, kinematics=kinematics) for k in links], ("x", "z"))
    q, v, a, u = model.q, model.v, model.a, model.u
    T, V = model.energy(q, v)
    h = ca.gradient(T, v)
    lagrange = ca.jacobian(h, v) @ a + ca.jacobian(h, q) @ v - ca.gradient(T, q) + ca.gradient(V, q) \
        - ca.DM(_input_matrix(model)) @ u
    f = ca.Function("lagrange", [q, v, a, u], [lagrange])
    rng = np.random.default_rng(1)
    L = model.layout
    for _ in range(5):
        x = [rng.normal(size=L.nq), rng.normal(size=L.nq), rng.normal(size=L.nq), rng.normal(size=L.n_u)]
        x[0][model.n_joints:L.n_link] *= 0.05  # deflections of a few cm
        ref = np.array(f(*x)).ravel()
        res = np.array(model.equations_of_motion(*x)).ravel()
        assert np.abs(res - ref).max() < 1e-11 * np.abs(ref).max()


def test_mass_matrix_symmetric_positive_definite():
    chain, links = mixed_chain()
    model = FlexibleLinkModel(chain, links, ("x", "z"))
    rng = np.random.default_rng(2)
    for _ in range(5):
        qa = rng.normal(size=model.layout.n_link)
        qa[model.n_joints:] *= 0.05
        M = np.array(model.mass_matrix(qa))
        assert np.abs(M - M.T).max() < 1e-12 * np.abs(M).max()
        assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize("frames", [False, True])
def test_rigid_limit_reproduces_the_rigid_chain(frames):
    """At zero deflection the joint rows are the rigid chain's M, c, g (CRBA and RNEA of rigid_body,
    checked against Pinocchio), also with rotated joint frames and a payload."""
    chain, links = mixed_chain(frames=frames)
    model = FlexibleLinkModel(chain, links, ("x", "z"))
    rigid = rigid_equivalent_chain(chain, links)
    nj, L = model.n_joints, model.layout
    qs, dqs = ca.SX.sym("q", nj), ca.SX.sym("dq", nj)
    M_rb = ca.Function("M", [qs], [rigid_body.mass_matrix(rigid, qs)])
    bias_rb = ca.Function("b", [qs, dqs], [rigid_body.bias_torques(rigid, qs, dqs)])
    rigid_model = FlexibleModel(rigid, ("x", "z"))
    rng = np.random.default_rng(3)
    for _ in range(5):
        th, dth, ddth = rng.normal(size=(3, nj))
        qa = np.concatenate([th, np.zeros(L.n_link - nj)])
        M = np.array(model.mass_matrix(qa))[:nj, :nj]
        assert np.abs(M - np.array(M_rb(th))).max() < 1e-12 * np.abs(M).max()
        full = lambda x, extra=np.zeros(L.n_motor): np.concatenate([x, np.zeros(L.n_link - nj), extra])  # noqa: E731
        qm = th[list(L.gear)] + 0.01
        res = np.array(model.equations_of_motion(full(th, qm), full(dth, dth[list(L.gear)]),
                                                 full(ddth, ddth[list(L.gear)]), np.zeros(L.n_u))).ravel()
        ref = np.array(rigid_model.equations_of_motion(np.concatenate([th, qm]), np.concatenate([dth, dth[list(L.gear)]]),
                                                       np.concatenate([ddth, ddth[list(L.gear)]]), np.zeros(L.n_u))).ravel()
        assert np.abs(res[:nj] - ref[:nj]).max() < 1e-11 * np.abs(ref).max()
        assert np.abs(res[L.n_link:] - ref[nj:]).max() < 1e-11 * np.abs(ref).max()  # motor rows
        b = np.array(bias_rb(th, dth)).ravel()  # c + g alone
        c_g = np.array(model.equations_of_motion(full(th, th[list(L.gear)]), full(dth, dth[list(L.gear)]),
                                                 np.zeros(L.nq), np.zeros(L.n_u))).ravel()[:nj]
        passive_spring = np.array([0.0, 0.0, chain.joints[2].stiffness * th[2]])
        assert np.abs(c_g - passive_spring - b).max() < 1e-11 * np.abs(b).max()


def _static_deflection(EI: float) -> np.ndarray:
    """Modal coordinates at rest under gravity with the joints held at a fixed pose."""
    chain, links = mixed_chain(EI=EI)
    model = FlexibleLinkModel(chain, links, ("x", "z"))
    L, nj = model.layout, model.n_joints
    d = ca.SX.sym("d", L.n_link - nj)
    th = np.array([0.3, -0.4, 0.2])
    q = ca.vertcat(ca.DM(th), d, ca.DM(th[list(L.gear)]))
    rows = model.unactuated_link_rows(q, ca.DM.zeros(L.nq), ca.DM.zeros(L.nq))[-d.numel():]
    solve = ca.rootfinder("static", "newton", ca.Function("r", [d], [rows]), {"abstol": 1e-14})
    return np.array(solve(np.zeros(d.numel()))).ravel()


def test_deflection_under_gravity_scales_like_one_over_EI():
    soft, stiff = _static_deflection(2.0e3), _static_deflection(2.0e5)
    assert np.abs(soft).max() > 1e-3  # a real sag
    assert np.allclose(soft / stiff, 100.0, rtol=2e-2)


def test_free_undamped_motion_conserves_energy():
    from ffopt.sim.plant import SimulationOptions, simulate

    chain, links = mixed_chain()
    model = FlexibleLinkModel(chain, links, ("x", "z"))
    L = model.layout
    q0 = np.zeros(L.nq)
    q0[: model.n_joints] = [0.3, -0.4, 0.2]
    q0[model.n_joints:L.n_link] = [0.02, -0.002, 0.01]
    q0[L.n_link:] = q0[list(L.gear)] + 0.01
    v0 = np.zeros(L.nq)
    v0[:3] = [0.5, -1.0, 1.5]
    t = np.linspace(0.0, 1.0, 11)
    sim = simulate(model, t, np.zeros((len(t), L.n_u)), q0, v0, options=SimulationOptions(rtol=1e-10, atol=1e-12))
    T, V = (np.array(x).ravel() for x in model.energy.map(len(t))(sim.q.T, sim.v.T))
    E = T + V
    assert np.ptp(T) > 0.1 * T.max()  # energy is exchanged, not trivially constant
    assert np.abs(E - E[0]).max() < 1e-7 * T.max()


def test_damped_motion_dissipates():
    from ffopt.sim.plant import SimulationOptions, simulate

    chain, links = mixed_chain(damping=5.0, gravity=(0.0, 0.0, 0.0))
    model = FlexibleLinkModel(chain, links, ("x", "z"))
    L = model.layout
    q0 = np.zeros(L.nq)
    q0[model.n_joints:L.n_link] = [0.02, -0.002, 0.01]
    t = np.linspace(0.0, 1.0, 21)
    sim = simulate(model, t, np.zeros((len(t), L.n_u)), q0, options=SimulationOptions(rtol=1e-9))
    E = sum(np.array(x).ravel() for x in model.energy.map(len(t))(sim.q.T, sim.v.T))
    assert np.all(np.diff(E) < 0) and E[-1] < 0.8 * E[0]


# ------------------------------------------------------------------------------ problem files
def _canadarm() -> dict:
    return tomllib.loads(CANADARM.read_text())


def _flex(d, i=0):
    return d["model"]["joints"][i]["flexible"]


BAD = [
    ("modes zero", lambda d: _flex(d).update(modes=0), "model.joints[1].flexible.modes: must be >= 1, got 0"),
    ("no length", lambda d: _flex(d).pop("length"), "model.joints[1].flexible.length: missing required key"),
    ("typo", lambda d: _flex(d).update(lenght=_flex(d).pop("length")), "did you mean 'length'"),
    ("negative EI", lambda d: _flex(d).update(EI=-1.0), "model.joints[1].flexible.EI: must be > 0"),
    ("no mass", lambda d: _flex(d).pop("mass"), "flexible.mass: missing required key"),
    ("direction along the axis", lambda d: _flex(d).update(direction=[0.0, 0.0, 1.0]), "not perpendicular"),
    ("damping per mode", lambda d: _flex(d).update(damping_ratio=[0.01]), "expected one number or 2"),
    ("negative damping", lambda d: _flex(d).update(damping_ratio=-0.1), "damping ratios must be >= 0"),
    ("too many modes", lambda d: _flex(d).update(modes=50), "at most 20 modes"),
    ("not a table", lambda d: d["model"]["joints"][0].update(flexible=3), "flexible: expected a table"),
    ("constant inertia", lambda d: d["model"].update(constant_inertia=np.eye(3).tolist()),
     "model.constant_inertia: cannot be combined with flexible links"),
    ("name clash", lambda d: d["model"]["joints"][2].update(name="shoulder.mode1"), "equal the names of modal"),
    ("full rotor coupling", lambda d: (d["model"].update(rotor_coupling="full"),
                                       [j.update(gear_ratio=100.0) for j in d["model"]["joints"] if j["kind"] != "passive"]),
     "model.rotor_coupling: \"full\" is not modelled together with flexible links"),
]


def test_flexible_link_after_a_multi_axis_bearing_maps_to_its_chain_joint():
    """A two-axis bearing expands to two chain joints: the flexible table of the next joint table
    belongs to the chain joint after both (and a bearing itself cannot be a flexible link)."""
    d = _canadarm()
    joints = d["model"]["joints"]
    bearing = {"name": "mount", "kind": "passive", "axes": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
               "mass": 0.0, "stiffness_matrix": [[1e6, 0.0], [0.0, 1e6]]}
    d["model"]["joints"] = [bearing] + joints
    problem = problem_from_dict(d, source="canadarm.toml")
    chain = problem.chain
    flexible = [chain.joints[k.joint].name for k in problem.flexible_links]
    assert flexible == [j["name"] for j in joints if "flexible" in j]
    bearing["flexible"] = {"modes": 1, "EI": 1e5, "length": 1.0, "mass": 1.0}
    with pytest.raises(ProblemError, match=r"model.joints\[1\].flexible: a flexible link needs a single-axis joint"):
        problem_from_dict(d, source="canadarm.toml")


@pytest.mark.parametrize("change, expect", [(c, e) for _, c, e in BAD], ids=[b[0] for b in BAD])
def test_bad_flexible_tables(change, expect):
    d = _canadarm()
    change(d)
    with pytest.raises(ProblemError) as err:
        problem_from_dict(d, source="canadarm.toml")
    assert str(err.value).startswith("canadarm.toml: ") and expect in str(err.value)


def test_cli_rejects_zero_modes_with_exit_code_2(tmp_path, capsys):
    from ffopt.cli.main import main

    bad = tmp_path / "bad.toml"
    bad.write_text(CANADARM.read_text().replace("modes = 2, EI = 1.0e5, length = 6.0",
                                                "modes = 0, EI = 1.0e5, length = 6.0"))
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.joints[1].flexible.modes: must be >= 1, got 0" in err[0]


def test_canadarm_problem_file():
    from ffopt.analysis.linear import zero_dynamics

    p = load_problem(CANADARM)
    m = p.model
    assert isinstance(m, FlexibleLinkModel) and m.layout.nq == 9 and m.layout.n_u == 3
    assert [k.modes for k in p.flexible_links] == [2, 2, 2]
    assert m.coordinate_names()[3:5] == ["shoulder.mode1", "shoulder.mode2"]
    # the tool is the deflected tip of link 3: at zero deflection the rigid tip 15 m out
    assert np.allclose(np.array(m.tool_position(np.zeros(9))).ravel(), [15.0, 0.0, 0.0])
    deflected = np.zeros(9)
    deflected[7] = 0.01  # wrist mode 1: 1 cm at the tip of link 3
    assert np.allclose(np.array(m.tool_position(deflected)).ravel(), [15.0, 0.01, 0.0])
    zd = zero_dynamics(m, p.reference, p.reference_spec.joint_guess, n_points=3)
    assert not zd.minimum_phase
    unstable = np.sort([z.real for z in zd.zeros[0] if z.real > 0])
    assert 15 < unstable[0] < 25  # the slowest unstable zero sets the pre-actuation (10 / 20.6 1/s)
    assert p.nlp.pre_actuation_s >= 10 / unstable[0] * 0.95


# ------------------------------------------------------------------------------ planning
def test_one_link_tip_output_bdf_diverges_nlp_plan_verifies():
    """Non-minimum phase: the causal BDF inverse diverges; the non-causal NLP plan verifies."""
    import ffopt
    from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf

    problem = problem_from_dict(one_link())
    with pytest.raises(SolverError):
        solve_inverse_bdf(problem.model, problem.reference, BdfSettings(order=6, step=0.01, form="I1"), compile=False)
    result = ffopt.plan(problem, verify="full")
    cases = result.verification.cases
    # regression values measured on 2026-11-27: 0.0188 mm with the PD, 5.1e-5 mm open loop (cubic u), the rigid
    # plan 64.6 mm; bounds ~2x (the PD bound 2.7x), the rigid one 6x below: the flexible link matters
    assert cases["feedforward_pd"].max_mm < 0.05
    assert cases["feedforward_open_loop_cubic_u"].max_mm < 1e-4
    assert cases["rigid_feedforward_pd"].max_mm > 10.0
    assert result.trajectory.t[0] < 0  # pre-actuation
    units = {c["name"]: c["unit"] for c in result.trajectory.column_info()}
    assert units["q_hub.mode1"] == "m" and units["dq_hub.mode2"] == "m/s" and units["q_hub"] == "rad"


@pytest.mark.slow
def test_canadarm_forced_motion_is_stable_for_10_s():
    """Mohan & Saha's forced simulation (sec. 7.1): rigid-link torques along eq. (44), all links flexible.

    The paper shows the tip deflections as curves (its Fig. 4 and 5); results/canadarm.md quotes no number
    of the paper's for them, so the deflections below are ffopt's own regression values
    (results/canadarm.md, "max tip deflection"), not the paper's."""
    from ffopt.sim.forced import power_balance, simulate_rigid_torques

    model = load_problem(CANADARM).model
    k, T = np.array([0.075, 0.05, 0.1]), np.array([10.0, 5.0, 5.0])
    t = np.arange(0.0, 10.0 + 1e-9, 0.005)[:, None]
    q = k * (t - T / np.pi * np.sin(np.pi * t / T))
    dq = k * (1 - np.cos(np.pi * t / T))
    ddq = k * np.pi / T * np.sin(np.pi * t / T)
    run = simulate_rigid_torques(model, t.ravel(), q, dq, ddq, rtol=1e-8)
    assert np.all(np.isfinite(run.sim.q))
    tip = np.abs(np.array(model.tip_deflection.map(len(t))(run.sim.q[:, :9].T))).max(axis=1)
    # regression values measured on 2026-11-27 (ffopt, CVODES rtol 1e-8; results/canadarm.md gives the same
    # 152.82 / 89.74 / 0.61 mm): max |tip deflection| of the shoulder, elbow and wrist link; 2 % is far above the
    # difference between rtol 1e-8 and 1e-10 (2e-5 mm, results/canadarm.md)
    assert np.allclose(tip, [0.1528, 0.0897, 6.1e-4], rtol=0.02)
    # regression value measured on 2026-11-27 (ffopt's, not the paper's): max joint deviation from eq. (44)
    # 21.2 / 35.0 / 12.3 mrad (results/canadarm.md); bound 1.5x the largest
    assert np.abs(run.sim.q[:, :3] - q).max() < 0.053
    assert power_balance(model, run.sim)["relative_error"] < 1e-6


@pytest.mark.slow
def test_canadarm_tool_path_plan_verifies():
    import ffopt

    result = ffopt.plan(load_problem(CANADARM), verify="full")
    cases = result.verification.cases
    # results/canadarm.md, 50 ms grid: 0.0513 mm with the joint PD (0.0512 for the shipped file), 0.0187 mm open
    # loop with cubic u, the rigid feedforward 3458 mm; bounds ~2x / 2.7x, and 3x below the rigid miss
    assert cases["feedforward_pd"].max_mm < 0.1
    assert cases["feedforward_open_loop_cubic_u"].max_mm < 0.05
    assert cases["rigid_feedforward_pd"].max_mm > 1000.0
