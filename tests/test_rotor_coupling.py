"""Rotor gyroscopic coupling (Hoepler & Thuemmel, symbolic inverse dynamics of elastic joint robots)
against an independent multibody model: Pinocchio with every rotor as its own body on its carrier
link, rotor angle = gear ratio x motor angle; the reduced (Spong) model against Pinocchio without
rotor bodies plus the rotor spin energy."""

from dataclasses import replace

import casadi as ca
import numpy as np
import pytest
from _robots import pinocchio_model, pinocchio_terms, random_problem

from ffopt.models.chain import SpringGroup
from ffopt.models.flexible import FlexibleModel

RTOL = 1e-9  # against Pinocchio: roundoff (measured 4e-15 at most on 2026-11-27); far below any modelling error


def _rigid_body_only(chain):
    """The same chain without springs, dampers and friction: its equations of motion are M a + c + g."""
    joints = tuple(replace(j, stiffness=0.0, damping=0.0, viscous_friction=0.0, coulomb_friction=0.0)
                   for j in chain.joints)
    groups = tuple(SpringGroup(g.name, g.joints, 0 * g.stiffness, 0 * g.damping) for g in chain.spring_groups)
    return replace(chain, joints=joints, spring_groups=groups)


def _ffopt_terms(model: FlexibleModel):
    """Functions q -> M, q -> g, (q, v) -> c of the model's equations of motion (u = 0)."""
    L = model.layout
    eom = model.equations_of_motion(model.q, model.v, model.a, ca.SX.zeros(L.n_u))
    zero = ca.SX.zeros(L.nq)
    M = ca.Function("M", [model.q], [ca.substitute(ca.jacobian(eom, model.a), model.v, zero)])
    g = ca.Function("g", [model.q], [ca.substitute(ca.substitute(eom, model.a, zero), model.v, zero)])
    c = ca.Function("c", [model.q, model.v], [ca.substitute(eom, model.a, zero)])
    return M, g, lambda q, v: c(q, v) - g(q)


def _rel(actual, expected):
    expected = np.asarray(expected, float)
    actual = np.asarray(actual, float).reshape(expected.shape)
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("seed, bearing", [(21, False), (22, True)])
def test_full_coupling_matches_rotors_as_bodies(seed, bearing):
    """M, c, g of rotor_coupling = "full" equal those of the multibody model with each rotor its own
    body on the preceding link (non-coaxial rotor axes, signed gear ratios, transverse rotor inertia,
    elastic gears and direct drives, a 2-axis bearing), mapped to ffopt's coordinates: 1e-9."""
    problem = random_problem(seed, coupling="full", bearing=bearing)
    chain = _rigid_body_only(problem.chain)
    model = FlexibleModel(chain, problem.outputs)
    M, g, c = _ffopt_terms(model)
    pmodel, T = pinocchio_model(chain, rotors=True)
    rng = np.random.default_rng(seed)
    nq = model.layout.nq
    for _ in range(4):
        q, v = rng.uniform(-np.pi, np.pi, nq), rng.normal(size=nq) * 3
        M_pin, c_pin, g_pin = pinocchio_terms(pmodel, T, q, v)
        assert _rel(M(q), M_pin) < RTOL
        assert _rel(c(q, v), c_pin) < RTOL
        assert _rel(g(q), g_pin) < RTOL


def test_reduced_coupling_is_spong_model():
    """rotor_coupling = "reduced": the link bodies' M, c, g plus J_m on the motor coordinates only; the
    full model differs from it (so the coupling terms are not zero by accident)."""
    problem = random_problem(23, coupling="reduced")
    chain = _rigid_body_only(problem.chain)
    model = FlexibleModel(chain, problem.outputs)
    M, g, c = _ffopt_terms(model)
    pmodel, T = pinocchio_model(chain, rotors=False)
    L = model.layout
    J = np.zeros(L.nq)
    for j, col in enumerate(L.motor_of_input):
        J[col] = chain.joints[L.actuated[j]].motor_inertia
    rng = np.random.default_rng(3)
    full_M, _, full_c = _ffopt_terms(FlexibleModel(replace(chain, rotor_coupling="full"), problem.outputs))
    for _ in range(3):
        q, v = rng.uniform(-np.pi, np.pi, L.nq), rng.normal(size=L.nq) * 3
        M_pin, c_pin, g_pin = pinocchio_terms(pmodel, T, q, v)
        assert _rel(M(q), M_pin + np.diag(J)) < RTOL
        assert _rel(c(q, v), c_pin) < RTOL
        assert _rel(g(q), g_pin) < RTOL
        assert _rel(full_M(q), M(q)) > 1e-5 and _rel(full_c(q, v), c(q, v)) > 1e-5


def test_coupling_matrix_is_upper_triangular():
    """Hoepler & Thuemmel eq. 6: with motors on the preceding links, motor j couples only with the
    accelerations of links i < j (S upper triangular with zero diagonal), and the coupling
    block is constant in the motor angles."""
    problem = random_problem(24, coupling="full", kinds=["elastic_gear"] * 6)
    model = problem.model
    L = model.layout
    M, _, _ = _ffopt_terms(model)
    rng = np.random.default_rng(5)
    q = rng.uniform(-np.pi, np.pi, L.nq)
    S = np.array(M(q))[: L.n_link, L.n_link:]  # link rows x motor columns
    assert np.all(np.abs(np.tril(S)) < 1e-14)
    assert np.all(np.abs(np.diag(S, 1)) > 1e-6)
    q2 = q.copy()
    q2[L.n_link:] += rng.normal(size=L.n_motor)
    np.testing.assert_array_equal(np.array(M(q2))[: L.n_link, L.n_link:], S)
