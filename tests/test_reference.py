"""Tests of ffopt.reference: time laws, exact derivatives, smoothness, constructors, validation."""


# The package is not installed in the venv and pyproject sets no pytest ``pythonpath``.

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ffopt.errors import FfoptError, PathError, ProblemError  # noqa: E402
from ffopt.reference import (  # noqa: E402
    TIME_LAWS,
    JointMove,
    Reference,
    hermite9,
    joint_ptp,
    line,
    poly11,
    quintic,
    rest_to_rest_coefficients_exact,
    rest_to_rest_polynomial,
)

TAU = np.linspace(0.0, 1.0, 101)


# ----------------------------------------------------------------------------- time laws
def test_poly11_closed_form():
    expected = TAU**6 * (462 - 1980 * TAU + 3465 * TAU**2 - 3080 * TAU**3 + 1386 * TAU**4 - 252 * TAU**5)
    np.testing.assert_allclose(poly11(TAU), expected, atol=1e-12)
    assert [int(c) for c in rest_to_rest_coefficients_exact(5)] == [
        0, 0, 0, 0, 0, 0, 462, -1980, 3465, -3080, 1386, -252,
    ]
    assert poly11.degree == 11 and poly11.n_zero_derivs == 5


def test_hermite9_and_quintic_closed_forms():
    h = TAU**5 * (126 - 420 * TAU + 540 * TAU**2 - 315 * TAU**3 + 70 * TAU**4)
    np.testing.assert_allclose(hermite9(TAU), h, atol=1e-12)
    q = TAU**3 * (10 - 15 * TAU + 6 * TAU**2)
    np.testing.assert_allclose(quintic(TAU), q, atol=1e-12)
    assert hermite9.degree == 9 and quintic.degree == 5


@pytest.mark.parametrize("n", range(0, 8))
def test_rest_to_rest_polynomial_end_conditions(n):
    c = rest_to_rest_polynomial(n)
    assert len(c) == 2 * n + 2
    P = np.polynomial.Polynomial(c)
    assert P(0.0) == 0.0 and P(1.0) == pytest.approx(1.0, abs=1e-9)
    for k in range(1, n + 1):
        assert P.deriv(k)(0.0) == 0.0
        assert P.deriv(k)(1.0) == pytest.approx(0.0, abs=1e-9 * np.abs(P.deriv(k).coef).max())
    # Monotone on [0, 1]: the first derivative is tau^n (1 - tau)^n times a positive constant.
    assert np.all(P.deriv(1)(TAU[1:-1]) > 0)


@pytest.mark.parametrize("name,n", [("quintic", 2), ("hermite9", 4), ("poly11", 5)])
def test_time_law_derivatives_vanish_at_ends(name, n):
    law = TIME_LAWS[name]
    for k in range(1, n + 1):
        assert law.polynomial(0.0, k) == 0.0
        assert abs(law.polynomial(1.0, k)) < 1e-9
    # ... and derivative n+1 does not (the law is exactly C^n across a rest junction).
    assert abs(law.polynomial(0.0, n + 1)) > 1.0
    assert abs(law.polynomial(1.0, n + 1)) > 1.0


def test_time_law_clamps_outside_unit_interval():
    np.testing.assert_array_equal(poly11(np.array([-1.0, 0.0, 1.0, 2.0])), [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(poly11(np.array([-1.0, 2.0]), 3), [0.0, 0.0])


# ----------------------------------------------------------------------------- smoothness
@pytest.mark.parametrize("law,n", [("poly11", 5), ("hermite9", 4), ("quintic", 2)])
def test_reference_smooth_across_junctions(law, n):
    ref = line([0.0, 0.5], [0.3, 0.2], duration=0.8, time_law=law, rest_before=0.2, rest_after=0.3)
    jumps = ref.junction_jumps(n + 1)
    scale = np.abs(jumps[n + 1]).max()
    assert scale > 1.0  # derivative n+1 does jump: the check below can fail
    assert ref.check_smoothness(n) <= 1e-9 * scale
    # Same from the numerical side: one-sided values of d^k theta/dt^k around each junction.
    eps = 1e-7
    for tj in (ref.t_motion_start, ref.t_motion_end):
        for k in range(n + 1):
            left, right = ref.evaluate([tj - eps, tj + eps], k)
            # +-eps apart, derivative k moves by about derivative k+1 x 2 eps: scale x 1e-7 at k = n (measured
            # 0.038 = 1.0e-7 x scale for poly11 on 2026-11-27), the bound 10x that
            assert np.abs(left - right).max() < 1e-3 * max(1.0, scale * 1e-3), (tj, k)
        left, right = ref.evaluate([tj - eps, tj + eps], n + 1)
        assert np.abs(left - right).max() > 0.5 * scale


def test_poly11_sixth_derivative_nonzero_at_junction():
    ref = line(0.0, 1.0, duration=1.0, rest_before=0.5, rest_after=0.5)
    d6 = ref.motion_function(6)
    assert float(d6(ref.t_motion_start)) == pytest.approx(462 * 720)
    # p(tau) = 1 - p(1 - tau), so p^(6)(1) = -p^(6)(0).
    assert float(d6(ref.t_motion_end)) == pytest.approx(-462 * 720)
    assert ref.junction_jumps(6)[6].min() == pytest.approx(462 * 720)
    assert ref.check_smoothness(5) == pytest.approx(0.0, abs=1e-6)
    assert ref.check_smoothness(6) == pytest.approx(462 * 720)
    # Inside the rest segments theta is constant: every derivative is exactly 0.
    for k in range(1, 8):
        np.testing.assert_array_equal(ref.evaluate([0.0, 0.25, 1.75, 2.0, 10.0], k), 0.0)


# ----------------------------------------------------------------------------- derivatives
def test_ad_derivatives_match_analytic_polynomial():
    start, end, d, rb = np.array([0.1, -0.2, 0.4]), np.array([0.5, 0.3, 0.4]), 0.7, 0.15
    ref = line(start, end, duration=d, rest_before=rb, rest_after=0.1, names=["x", "y", "z"])
    ts = np.linspace(0.0, ref.t_end, 57)
    tau = (ts - rb) / d
    for k in range(0, 8):
        expected = poly11(tau, k)[:, None] * (end - start)[None, :] / d**k
        if k == 0:
            expected = expected + start
        got = ref.evaluate(ts, k)
        assert got.shape == (ts.size, 3)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_ad_derivatives_match_finite_differences():
    ref = line([0.0, 0.2], [0.4, -0.1], duration=1.0, rest_before=0.2, rest_after=0.2)
    ts = np.linspace(0.05, ref.t_end - 0.05, 41)
    h = 1e-5
    for k in range(0, 5):
        fd = (ref.evaluate(ts + h, k) - ref.evaluate(ts - h, k)) / (2 * h)
        ad = ref.evaluate(ts, k + 1)
        scale = max(1.0, np.abs(ad).max())
        # central differences at h = 1e-5: O(h^2) and roundoff eps / h; measured 1.3e-8 of the scale at most
        # (k = 4) on 2026-11-27, bound ~2x
        np.testing.assert_allclose(ad, fd, atol=3e-8 * scale)


def test_function_expression_and_caching():
    ref = line(0.0, 2.0, duration=1.0, names=["z"])
    assert ref.function(2) is ref.function(2)
    f = ref.function(1)
    assert f.size_in(0) == (1, 1) and f.size_out(0) == (1, 1)
    # SX symbol of the caller: substitution gives a plain SX expression.
    ts = ca.SX.sym("s")
    e = ref.expression(ts, 1)
    assert isinstance(e, ca.SX) and e.shape == (1, 1)
    g = ca.Function("g", [ts], [e])
    assert float(g(0.5)) == pytest.approx(float(f(0.5)))
    # MX symbol of the caller, embedded in a residual.
    tm = ca.MX.sym("tm")
    r = ca.Function("r", [tm], [ref.expression(2 * tm, 2) - 1.0])
    assert float(r(0.3)) == pytest.approx(ref.evaluate(0.6, 2)[0, 0] - 1.0)
    assert ref.evaluate(0.5).shape == (1, 1)
    assert ref.evaluate([]).shape == (0, 1)


# ----------------------------------------------------------------------------- constructors
def test_line_endpoints_monotone_and_times():
    ref = line([0.0, 1.0], [1.0, 0.0], duration=2.0, rest_before=0.5, rest_after=1.0, names=["x", "z"])
    assert ref.n_out == 2 and ref.names == ["x", "z"]
    assert (ref.t_motion_start, ref.t_motion_end, ref.t_end) == (0.5, 2.5, 3.5)
    np.testing.assert_allclose(ref.evaluate([0.0, 0.5]), [[0.0, 1.0], [0.0, 1.0]], atol=1e-14)
    np.testing.assert_allclose(ref.evaluate([2.5, 3.5]), [[1.0, 0.0], [1.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(ref.evaluate(1.5), [[0.5, 0.5]], atol=1e-12)  # symmetric law
    x = ref.evaluate(np.linspace(0.0, 3.5, 351))
    assert np.all(np.diff(x[:, 0]) >= 0) and np.all(np.diff(x[:, 1]) <= 0)
    # It is a straight line: x + z = 1 everywhere.
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-12)
    scalar = line(0.0, 0.1, duration=1.0)
    assert scalar.n_out == 1 and scalar.evaluate(1.0)[0, 0] == pytest.approx(0.1)


def _planar_fk():
    q = ca.SX.sym("q", 2)
    xz = ca.vertcat(ca.cos(q[0]) + ca.cos(q[0] + q[1]), ca.sin(q[0]) + ca.sin(q[0] + q[1]))
    return ca.Function("fk", [q], [xz]), ca.Function("jacobian_fk", [q], [ca.jacobian(xz, q)])


def test_joint_ptp_planar_two_link():
    fk, jac = _planar_fk()
    q0, q1 = np.array([0.2, 0.9]), np.array([0.8, 0.4])
    ref = joint_ptp(JointMove(q0, q1), 1.5, fk, rest_before=0.3, rest_after=0.2, names=["x", "z"])
    assert ref.n_out == 2 and ref.names == ["x", "z"] and ref.t_end == pytest.approx(2.0)
    np.testing.assert_allclose(ref.evaluate(0.0)[0], np.array(fk(q0)).ravel(), atol=1e-14)
    np.testing.assert_allclose(ref.evaluate(ref.t_motion_start)[0], np.array(fk(q0)).ravel(), atol=1e-14)
    np.testing.assert_allclose(ref.evaluate(ref.t_end)[0], np.array(fk(q1)).ravel(), atol=1e-12)
    ts = np.linspace(0.0, ref.t_end, 31)
    q = np.array(ref.joint_function(0).map(ts.size)(ts.reshape(1, -1))).T
    dq = np.array(ref.joint_function(1).map(ts.size)(ts.reshape(1, -1))).T
    dtheta = ref.evaluate(ts, 1)
    for i in range(ts.size):
        np.testing.assert_allclose(dtheta[i], np.array(jac(q[i]) @ dq[i]).ravel(), atol=1e-12)
        np.testing.assert_allclose(ref.evaluate(ts[i])[0], np.array(fk(q[i])).ravel(), atol=1e-12)
    assert ref.check_smoothness(5) < 1e-10  # roundoff of the chain rule: measured 2.4e-12 on 2026-11-27
    assert ref.check_smoothness(6) > 1.0


def test_joint_ptp_accepts_mx_forward_kinematics():
    q = ca.MX.sym("q", 2)
    fk = ca.Function("fk", [q], [ca.vertcat(ca.cos(q[0]) + ca.cos(q[0] + q[1]), ca.sin(q[0]) + ca.sin(q[0] + q[1]))])
    ref = joint_ptp(JointMove([0.0, 0.5], [0.5, 0.0]), 1.0, fk, time_law="hermite9")
    assert ref.names == ["theta0", "theta1"]
    np.testing.assert_allclose(ref.evaluate(1.0)[0], np.array(fk([0.5, 0.0])).ravel(), atol=1e-12)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(duration=-1), "reference.duration must be > 0, got -1"),
        (dict(duration=0.0), "reference.duration"),
        (dict(duration=float("nan")), "reference.duration"),
        (dict(duration="1"), "reference.duration"),
        (dict(rest_before=-0.1), "reference.rest_before"),
        (dict(rest_after=float("inf")), "reference.rest_after"),
        (dict(end=[1.0, 2.0, 3.0]), "reference.start and reference.end must have the same length, got 2 and 3"),
        (dict(start=[0.0, float("nan")]), "reference.start"),
        (dict(start=[[0.0, 1.0]]), "reference.start"),
        (dict(end="abc"), "reference.end"),
        (dict(names=["x"]), "reference.names"),
        (dict(names=["x", "x"]), "reference.names"),
        (dict(time_law="cubic"), "reference.time_law"),
    ],
)
def test_line_bad_input_names_argument(kwargs, needle):
    args = dict(start=[0.0, 0.0], end=[1.0, 1.0], duration=1.0)
    args.update(kwargs)
    with pytest.raises(ProblemError) as info:
        line(**args)
    assert needle in str(info.value)
    assert isinstance(info.value, FfoptError)


def test_unknown_time_law_lists_valid_ones():
    with pytest.raises(ProblemError) as info:
        line(0.0, 1.0, 1.0, time_law="cubic")
    for name in ("poly11", "hermite9", "quintic"):
        assert f'"{name}"' in str(info.value)


def test_joint_ptp_bad_input():
    fk, _ = _planar_fk()
    with pytest.raises(ProblemError, match="reference.q_start and reference.q_end"):
        joint_ptp(JointMove([0.0, 0.0], [1.0]), 1.0, fk)
    with pytest.raises(ProblemError, match="reference.forward_kinematics must be a casadi.Function"):
        joint_ptp(JointMove([0.0, 0.0], [1.0, 1.0]), 1.0, lambda q: q)
    with pytest.raises(ProblemError, match="reference.forward_kinematics input must have 3 entries"):
        joint_ptp(JointMove([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), 1.0, fk)
    with pytest.raises(ProblemError, match="reference.duration"):
        joint_ptp(JointMove([0.0, 0.0], [1.0, 1.0]), -2.0, fk)
    with pytest.raises(ProblemError, match="reference.names"):
        joint_ptp(JointMove([0.0, 0.0], [1.0, 1.0]), 1.0, fk, names=["x", "y", "z"])


def test_bad_derivative_order_and_no_joint_path():
    ref = line(0.0, 1.0, 1.0)
    with pytest.raises(ProblemError, match="order"):
        ref.function(-1)
    with pytest.raises(ProblemError, match="order"):
        ref.evaluate(0.5, 1.5)
    with pytest.raises(ProblemError, match="joint path"):
        ref.joint_function(0)
    assert isinstance(ref, Reference)


def test_joint_ptp_non_finite_forward_kinematics_is_path_error():
    q = ca.SX.sym("q", 2)
    fk = ca.Function("fk", [q], [ca.vertcat(ca.sqrt(q[0] - 0.5), q[1])])  # undefined for q1 < 0.5
    with pytest.raises(PathError, match="reference.forward_kinematics gives non-finite"):
        joint_ptp(JointMove([0.0, 0.0], [1.0, 1.0]), 1.0, fk)
