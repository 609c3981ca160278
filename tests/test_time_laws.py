"""The smoother time laws (poly15, poly19, the C-infinity ``cinf``) and the Bernstein evaluation.

Checked against exact rational arithmetic (polynomials), against independent formulas and
quadrature (``cinf``), and in a reference path across the rest junctions.
"""

from fractions import Fraction
from math import factorial

import casadi as ca
import numpy as np
import pytest
from scipy.integrate import quad

from ffopt.reference import line
from ffopt.reference.time_laws import (TIME_LAWS, SmoothStepLaw, get_time_law, make_time_law,
                                       rest_to_rest_coefficients_exact)

TAU = np.linspace(0.0, 1.0, 201)


def _exact_derivative(c: list[Fraction], order: int, tau: Fraction) -> Fraction:
    """d^order p / dtau^order of the polynomial with coefficients c, in exact rational arithmetic."""
    return sum((cj * factorial(j) // factorial(j - order) * tau ** (j - order)
                for j, cj in enumerate(c) if j >= order), Fraction(0))


def _casadi_derivative(law, order: int, tau: np.ndarray) -> np.ndarray:
    x = ca.SX.sym("tau")
    expr = law.expression(x)
    for _ in range(order):
        expr = ca.jacobian(expr, x)
    return np.array(ca.Function("d", [x], [expr]).map(tau.size)(tau)).ravel()


@pytest.mark.parametrize("name,n", [("poly11", 5), ("poly15", 7), ("poly19", 9)])
def test_polynomial_laws_are_accurate_to_roundoff(name, n):
    """Bernstein form: the law and its derivatives 0..6 to ~1e-13 of their peak, in numpy and in
    CasADi. The monomial form (Horner) lost 1e-12 (poly11) ... 9e-9 (poly19) of the peak of s''."""
    law = TIME_LAWS[name]
    assert law.n_zero_derivs == n and law.degree == 2 * n + 1
    assert law.bernstein_coefficients == (0.0,) * (n + 1) + (1.0,) * (n + 1)
    taus = [Fraction(i, 64) for i in range(65)]
    x = np.array([float(t) for t in taus])
    coefficients = rest_to_rest_coefficients_exact(n)
    for order in range(7):
        exact = np.array([float(_exact_derivative(coefficients, order, t)) for t in taus])
        scale = np.abs(exact).max()
        assert np.abs(law(x, order) - exact).max() < 1e-13 * scale, order
        assert np.abs(_casadi_derivative(law, order, x) - exact).max() < 1e-12 * scale, order


@pytest.mark.parametrize("name,n", [("poly15", 7), ("poly19", 9)])
def test_higher_degree_laws_have_n_zero_derivatives_at_both_ends(name, n):
    law = TIME_LAWS[name]
    assert law(0.0) == 0.0 and law(1.0) == pytest.approx(1.0, abs=1e-15)
    for k in range(1, n + 1):
        assert law(0.0, k) == 0.0 and law(1.0, k) == 0.0, k
    # derivative n + 1 jumps: the law is exactly C^n across a rest junction
    jump = factorial(2 * n + 1) // factorial(n) ** 2 * factorial(n)  # (2n+1)! / n!: s^(n+1)(0)
    assert law(0.0, n + 1) == pytest.approx(jump, rel=1e-12)
    assert law(1.0, n + 1) == pytest.approx((-1) ** n * jump, rel=1e-12)
    assert np.all(law(TAU[1:-1], 1) > 0)  # monotone


def test_cinf_matches_its_closed_form_and_is_symmetric():
    law = TIME_LAWS["cinf"]
    assert isinstance(law, SmoothStepLaw) and law.sharpness == 1.4 and law.n_zero_derivs == np.inf
    x = TAU[1:-1]
    c = law.sharpness
    logistic = 1.0 / (1.0 + np.exp(c * (1 - 2 * x) / (x * (1 - x))))  # the same function, rewritten
    assert np.abs(law(x) - logistic).max() < 1e-15
    np.testing.assert_allclose(law(1.0 - TAU) + law(TAU), 1.0, atol=1e-15)
    assert law(0.5, 1) == pytest.approx(2 * c, rel=1e-14)
    assert np.all(law(x, 1) > 0)


def test_cinf_derivatives_are_consistent():
    """Each derivative integrates to the one below (fundamental theorem, SciPy quad), orders 0..6,
    so the symbolic derivatives are those of the law itself."""
    law = TIME_LAWS["cinf"]
    for k in range(6):
        scale = np.abs(law(np.linspace(0.0, 1.0, 2001), k + 1)).max()
        for b in (0.2, 0.5, 0.9):
            integral, _ = quad(lambda x: float(law(x, k + 1)), 0.0, b, epsabs=1e-14 * scale, epsrel=1e-13,
                               limit=200)
            assert integral == pytest.approx(float(law(b, k)) - float(law(0.0, k)), abs=1e-11 * scale), k


def test_cinf_every_derivative_vanishes_at_the_ends_and_stays_finite():
    law = TIME_LAWS["cinf"]
    near = np.array([0.0, 1e-300, 1e-12, 1e-3, 0.002, 1.0 - 1e-12, 1.0])
    for k in range(1, 9):
        values = law(near, k)
        assert np.all(np.isfinite(values)), k
        assert values[0] == 0.0 and values[-1] == 0.0 and values[1] == 0.0, k
    # at tau = 0.01 the law has barely started: s' tiny but positive (not 0 * inf)
    assert 0.0 < law(0.01, 1) < 1e-20


@pytest.mark.parametrize("name,n", [("poly15", 7), ("poly19", 9), ("cinf", 12)])
def test_reference_with_smoother_law_is_smooth_across_junctions(name, n):
    """The path of a line with these laws: derivatives 0..n continuous at the rest junctions
    (for cinf checked up to 12), evaluated exactly by CasADi through the clamp."""
    ref = line([0.0, 0.5], [0.3, 0.2], duration=0.8, time_law=name, rest_before=0.2, rest_after=0.3)
    scale = np.abs(ref.evaluate(np.linspace(0.2, 1.0, 81), min(n, 6))).max()
    assert ref.check_smoothness(min(n, 8)) <= 1e-12 * max(scale, 1.0)
    if name != "cinf":
        assert ref.junction_jumps(n + 1)[n + 1].min() > 1.0  # the check above can fail
    for k in range(1, min(n, 6) + 1):  # inside the rests every derivative is exactly 0
        np.testing.assert_array_equal(ref.evaluate([0.0, 0.1, 1.2, 1.3], k), 0.0)


def test_time_laws_by_name_and_instance():
    assert get_time_law("cinf") is TIME_LAWS["cinf"]
    custom = SmoothStepLaw("sharp", 2.0)
    assert get_time_law(custom) is custom
    assert get_time_law(make_time_law(6, "poly13")).degree == 13


def test_shaped_law_coefficients_are_the_exact_sum_rounded_once():
    """The shaped law's coefficients and Bernstein form (combined in integers) are float(exact rational sum),
    bit for bit, for random shapes on every polynomial base."""
    from fractions import Fraction

    import ffopt.reference.time_laws as tl

    rng = np.random.default_rng(3)
    for trial in range(60):
        base = ["quintic", "septic", "poly11", "poly15", "hermite9", "poly19"][trial % 6]
        c = rng.normal(0.0, 10.0 ** rng.integers(-8, 1), int(rng.integers(1, 17)))
        law = tl.get_time_law(base)
        n, m = law.n_zero_derivs, max(law.degree, 2 * law.n_zero_derivs + 1 + len(c))
        exact = tuple(law.exact_coefficients) or tuple(Fraction(x) for x in law.coefficients)
        weights = [Fraction(float(x)) for x in c]

        def rounded(base_terms, terms):
            out = list(base_terms)
            for w, term in zip(weights, terms):
                out = [o + w * x for o, x in zip(out, term)]
            return tuple(float(x) for x in out)

        shaped = tl.shaped_time_law(base, c, check=False)
        terms = range(1, len(c) + 1)
        assert shaped.coefficients == rounded(tl._padded(exact, m), [tl._padded(tl.shape_basis(n, i), m) for i in terms])
        assert tuple(shaped.bernstein) == rounded(tl._bernstein_exact(exact, m), [tl._basis_bernstein(n, i, m)
                                                                                   for i in terms])
