"""Inverse dynamics of E1/E12: against an independent solution, observed BDF order, forms, IDAS."""

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from ffopt.bench import run_bench
from ffopt.dae.idas import solve_inverse_idas
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def e1():
    return load_problem(ROOT / "problems" / "e1_simplified.toml")


@pytest.fixture(scope="module")
def e1_exact(e1):
    """u(t) of E1 simplified (seed 000 eq. 16) by an independent route: SciPy DOP853 on the zero
    dynamics. With z = sin q1 + sin(q1 + q2) (l1 = l2 = 1) the path gives q1 explicitly,
    q1 = asin(z / (2 cos(q2/2))) - q2/2, and its derivatives; the passive row
    J21 q1'' + J22 q2'' + k q2 + d q2' = 0 is then an ODE for q2; u = J11 q1'' + J12 q2''."""
    J, k, d, R = e1.chain.constant_inertia, 1e6, 1e3, e1.reference

    def accelerations(t, q2, v2):
        z, dz, ddz = (R.evaluate(np.array([t]), o)[0, 0] for o in (0, 1, 2))
        with np.errstate(invalid="ignore"):
            q1 = np.arcsin(z / (2 * np.cos(q2 / 2))) - q2 / 2
        c1, c12, s1, s12 = np.cos(q1), np.cos(q1 + q2), np.sin(q1), np.sin(q1 + q2)
        w1 = (dz - c12 * v2) / (c1 + c12)
        A, B = (ddz + s1 * w1**2 + s12 * (w1 + v2) ** 2) / (c1 + c12), c12 / (c1 + c12)  # q1'' = A - B q2''
        a2 = (-k * q2 - d * v2 - J[1, 0] * A) / (J[1, 1] - J[1, 0] * B)
        return A - B * a2, a2

    sol = solve_ivp(lambda t, s: [s[1], accelerations(t, *s)[1]], (0, R.t_end), [0.0, 0.0], method="DOP853",
                    rtol=1e-12, atol=1e-14, dense_output=True)

    def u(t):
        return np.array([J[0] @ accelerations(ti, *sol.sol(ti)) for ti in t])

    return u


@pytest.mark.parametrize("form", ["I3", "I2", "I1"])
def test_e1_torque_matches_the_independent_solution(e1, e1_exact, form):
    tr = solve_inverse_bdf(e1.model, e1.reference, 6, 5e-4, form, qa_guess=e1.reference_spec.joint_guess)
    err = np.abs(tr.u[:, 0] - e1_exact(tr.t)).max() / np.abs(tr.u).max()
    assert err < 2e-6  # measured: I3 1.3e-6, I2 4e-7, I1 3e-9 of the 1.05e5 N m peak


@pytest.mark.parametrize("order", [2, 3, 4, 5, 6])
def test_e1_observed_order_on_the_i1_form(e1, e1_exact, order):
    # Error of u against the independent solution at h and h/2 (asymptotic range measured:
    # orders 1.97-2.00, 3.0, 4.0, 5.0, 5.99-6.0 between 2 ms and 0.5 ms).
    errs = []
    for h in (1e-3, 5e-4):
        tr = solve_inverse_bdf(e1.model, e1.reference, order, h, "I1", qa_guess=e1.reference_spec.joint_guess,
                               compile=False)
        errs.append(np.abs(tr.u[:, 0] - e1_exact(tr.t)).max())
    assert np.log2(errs[0] / errs[1]) == pytest.approx(order, abs=0.25)


def test_e1_i3_form_loses_order_at_the_start_of_the_motion(e1, e1_exact):
    # The path is C^5 where the motion starts (degree-11 law, derivatives 1-5 zero), and u is a
    # high derivative of it: on the index-3 form BDF-6 shows order ~4 there (initial layer), full
    # order away from it. Measured: max error at t = 0.021-0.023 s, order 4.1 overall, 5.7 in 0.04-0.10 s (motion 0.02-0.12 s).
    errs, late = [], []
    for h in (1e-3, 5e-4):
        tr = solve_inverse_bdf(e1.model, e1.reference, 6, h, "I3", qa_guess=e1.reference_spec.joint_guess,
                               compile=False)
        e = np.abs(tr.u[:, 0] - e1_exact(tr.t))
        errs.append(e.max())
        late.append(e[(tr.t > 0.04) & (tr.t < 0.10)].max())  # away from both ends of the motion
        assert 0.02 < tr.t[e.argmax()] < 0.03
    assert np.log2(errs[0] / errs[1]) == pytest.approx(4.0, abs=0.4)
    assert np.log2(late[0] / late[1]) > 5.2


def test_recovered_torque_satisfies_the_full_equations_of_motion():
    p = load_problem(ROOT / "problems" / "e12_line.toml")
    tr = solve_inverse_bdf(p.model, p.reference, 6, 1e-3, "I1", qa_guess=p.reference_spec.joint_guess)
    res = np.array(p.model.equations_of_motion.map(len(tr.t))(tr.q.T, tr.v.T, tr.a.T, tr.u.T))
    assert np.abs(res).max() < 1e-6 * np.abs(tr.u).max()


def test_e12_forms_and_idas_agree():
    p = load_problem(ROOT / "problems" / "e12_line.toml")
    g = p.reference_spec.joint_guess
    u = {f: solve_inverse_bdf(p.model, p.reference, 6, 1e-3, f, qa_guess=g).u for f in ("I3", "I2", "I1")}
    idas = solve_inverse_idas(p.model, p.reference, 1e-3, rtol=1e-10, atol=1e-12, qa_guess=g)
    peak = np.abs(idas.u).max()
    # IDAS at rtol 1e-10 is the reference here (measured 1.2e-6 of the peak from BDF-6 I1 at h/8)
    assert np.abs(u["I1"] - idas.u).max() / peak < 3e-3  # measured 1.1e-3
    assert np.abs(u["I2"] - idas.u).max() / peak < 1.5e-2  # measured 5.9e-3
    assert np.abs(u["I3"] - idas.u).max() / peak < 5e-2  # measured 2.8e-2 (order loss at the start)


def test_bench_quick_prints_every_solver():
    text = run_bench(quick=True, repeats=1)
    lines = text.splitlines()
    assert any(line.startswith("E1 ") and "BDF I1" in line for line in lines)
    assert any(line.startswith("E12 ") and "IDAS" in line for line in lines)
    assert "seed" in lines[1]
