"""Rest-to-rest time laws s(tau) on tau in [0, 1] with s(0) = 0 and s(1) = 1.

A rest-to-rest polynomial of degree 2n+1 has derivatives 1..n equal to zero at both ends
(``rest_to_rest_polynomial(n)``). The inverse dynamics of a flexible robot differentiates the
reference several times, so the reference must be smooth enough across the junctions with the
rest segments:

==========  ======  =====================  =================================================
name        degree  zero derivatives       closed form
==========  ======  =====================  =================================================
quintic     5       1..2                   tau^3 (10 - 15 tau + 6 tau^2)
septic      7       1..3                   tau^4 (35 - 84 tau + 70 tau^2 - 20 tau^3)
hermite9    9       1..4                   tau^5 (126 - 420 tau + 540 tau^2 - 315 tau^3 + 70 tau^4)
poly11      11      1..5 (Moberg &         tau^6 (462 - 1980 tau + 3465 tau^2 - 3080 tau^3
                    Hanssen, sec. 7.1)            + 1386 tau^4 - 252 tau^5)
poly15      15      1..7                   rest_to_rest_polynomial(7)
poly19      19      1..9                   rest_to_rest_polynomial(9)
cinf        -       all                    f(tau) / (f(tau) + f(1 - tau)), f(x) = exp(-1.4 / x)
==========  ======  =====================  =================================================

The coefficients are computed by solving the linear end-condition system in exact rational
arithmetic (they come out as integers); the polynomials are evaluated in Bernstein form
(``TimeLaw.bernstein_coefficients``), which has no cancellation.

Which law for which accuracy. The motor torque of an elastic-gear robot contains the fourth
derivative of the path (the motor acceleration carries the link's jerk and snap through the gear
deflection), and BDF-k obtains it by differencing the motor angle twice. Where the motion meets
a rest, a law with n zero derivatives leaves a jump in the derivative n + 1 of the path, and the
torque error near the junction then falls only like h^(n - 3) (like h^(n - 2) with gear damping,
which smooths the motor angle once). So the torque of BDF-k converges with order about
min(k, n - 3): 2 for ``poly11`` whatever k, up to 4 for ``poly15``, up to 6 for ``poly19``, and
k for ``cinf`` (``SmoothStepLaw``: every derivative vanishes at the ends). The link angles
converge with order k (or are exact) for every law. Measured on a closed-form elastic link and on
the shipped problems in ``results/convergence.md``; smoother laws have larger peaks of the higher
derivatives (E12's peak torque: ``cinf`` 1.6x, ``poly19`` 6x that of ``poly11``), which is why
``poly11`` stays the default.

Shaped laws. ``shaped_time_law(base, shape)`` adds shaping terms to a polynomial base law,
s(tau) = base(tau) + sum_i c_i phi_i(tau), phi_i(tau) = (4 tau (1 - tau))^(n+1) P_(i-1)(2 tau - 1)
(P_k the Legendre polynomials, n the base's ``n_zero_derivs``): every phi_i vanishes with its
derivatives 1..n at both ends, and |phi_i| <= 1, so the shaped law keeps s(0) = 0, s(1) = 1 and the
base's rest smoothness for any c, and stays an ordinary ``TimeLaw`` (degree 2n + 1 + len(c), its
Bernstein coefficients converted from the exact rational coefficients: the ends are exact). The
free coefficients let a planner choose the timing inside the move, e.g. so that the internal
(zero) dynamics of a flexible arm come to rest with the tool (``ffopt.dae.rest_to_rest``). A
shaped law must stay monotone (s' >= 0): ``check_monotone``. Each phi_i has a nonzero derivative n + 1 at
the ends, so the shaping changes the jump the law leaves there; ``junction_family`` gives the coefficients
whose law has derivatives n + 1 .. n + m zero at both ends too (C^(n+m) across the rests), the family the
rest-to-rest search uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from math import comb, factorial

import casadi as ca
import numpy as np

from ffopt.errors import ProblemError

__all__ = [
    "TimeLaw",
    "SmoothStepLaw",
    "SplineLaw",
    "SPLINE_DEGREE",
    "TIME_LAWS",
    "rest_to_rest_polynomial",
    "rest_to_rest_coefficients_exact",
    "make_time_law",
    "get_time_law",
    "shaped_time_law",
    "shape_basis",
    "check_monotone",
    "monotonicity_margin",
    "junction_family",
]


def _falling(j: int, k: int) -> int:
    """j (j-1) ... (j-k+1): the factor of tau^(j-k) in d^k/dtau^k tau^j (0 if k > j)."""
    if k > j:
        return 0
    return factorial(j) // factorial(j - k)


def rest_to_rest_coefficients_exact(n_zero_derivs: int) -> list[Fraction]:
    """Exact ascending coefficients c_0..c_{2n+1} of the rest-to-rest polynomial.

    Conditions: p(0) = 0, p(1) = 1, p^(k)(0) = p^(k)(1) = 0 for k = 1..n.
    """
    if isinstance(n_zero_derivs, bool) or not isinstance(n_zero_derivs, (int, np.integer)):
        raise ProblemError(f"time law n_zero_derivs must be an integer >= 0, got {n_zero_derivs!r}")
    n = int(n_zero_derivs)
    if n < 0:
        raise ProblemError(f"time law n_zero_derivs must be an integer >= 0, got {n}")
    m = 2 * n + 2  # unknowns c_0 .. c_{2n+1}
    rows: list[list[Fraction]] = []
    for tau, value in ((0, 0), (1, 1)):
        for k in range(n + 1):
            row = []
            for j in range(m):
                if j < k:
                    row.append(Fraction(0))
                elif tau == 0:
                    row.append(Fraction(_falling(j, k) if j == k else 0))
                else:
                    row.append(Fraction(_falling(j, k)))
            rows.append(row + [Fraction(value if k == 0 else 0)])
    # Gauss-Jordan elimination with exact fractions (the system is nonsingular).
    for col in range(m):
        pivot = next(r for r in range(col, m) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        p = rows[col][col]
        rows[col] = [v / p for v in rows[col]]
        for r in range(m):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[col])]
    return [rows[j][m] for j in range(m)]


def rest_to_rest_polynomial(n_zero_derivs: int) -> np.ndarray:
    """Ascending float coefficients (length 2n+2) of the degree-(2n+1) rest-to-rest polynomial."""
    return np.array([float(c) for c in rest_to_rest_coefficients_exact(n_zero_derivs)])


@dataclass(frozen=True)
class TimeLaw:
    """A polynomial time law s(tau). ``coefficients`` are in ascending powers of tau.

    ``n_zero_derivs``: derivatives 1..n_zero_derivs vanish at tau = 0 and tau = 1, so a
    reference built with this law is C^n_zero_derivs across the rest junctions.
    """

    name: str
    coefficients: tuple[float, ...]
    n_zero_derivs: int
    # the exact rational coefficients, if known: the Bernstein form is converted from them
    exact_coefficients: tuple[Fraction, ...] = field(default=(), repr=False, compare=False)
    # the Bernstein coefficients, if made already (a shaped law, ``shaped_time_law``)
    bernstein: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @property
    def degree(self) -> int:
        return len(self.coefficients) - 1

    def derivative_coefficients(self, order: int = 0) -> np.ndarray:
        """Ascending coefficients of d^order s / dtau^order (an empty polynomial is [0.0])."""
        c = np.asarray(self.coefficients, dtype=float)
        if order > self.degree:
            return np.zeros(1)
        return np.array([c[j] * _falling(j, order) for j in range(order, len(c))])

    @cached_property
    def bernstein_coefficients(self) -> tuple[float, ...]:
        """b_j of p(tau) = sum_j b_j C(m, j) tau^j (1 - tau)^(m - j), m the degree (exact conversion).

        A rest-to-rest law has b_j = 0 for j <= n and 1 above (p is the probability of at least
        n + 1 successes in 2n + 1 trials). Evaluated in this form p and its derivatives are
        accurate to ~1e-14 relative; the monomial form loses 1e-12 (degree 11) to 1e-7
        (degree 23) to cancellation between its large alternating coefficients, and the
        inverse dynamics amplifies that noise by 1/h^2 or more.
        """
        if self.bernstein:
            return self.bernstein
        exact = tuple(self.exact_coefficients) or tuple(Fraction(x) for x in self.coefficients)
        return tuple(float(b) for b in _bernstein_exact(exact, self.degree))

    def polynomial(self, tau, order: int = 0) -> np.ndarray:
        """d^order p / dtau^order of the raw polynomial (no clamping), numpy, vectorised.

        Bernstein form: the derivative of order k has the coefficients m!/(m-k)! Delta^k b in the
        Bernstein basis of degree m - k.
        """
        m = self.degree
        tau = np.asarray(tau, dtype=float)
        if order > m:
            return np.zeros_like(tau)
        d = np.diff(np.array(self.bernstein_coefficients), order) * _falling(m, order)
        r = m - order
        j = np.arange(r + 1)
        binom = np.array([comb(r, i) for i in j], dtype=float)
        t = tau[..., None]
        return (binom * t**j * (1.0 - t) ** (r - j)) @ d

    def __call__(self, tau, order: int = 0) -> np.ndarray:
        """d^order s / dtau^order with s = 0 for tau < 0 and s = 1 for tau > 1 (numpy)."""
        tau = np.asarray(tau, dtype=float)
        inside = (tau >= 0.0) & (tau <= 1.0)
        out = np.where(inside, self.polynomial(np.clip(tau, 0.0, 1.0), order), 0.0)
        if order == 0:
            out = np.where(tau > 1.0, 1.0, out)
        return out

    def expression(self, tau):
        """The raw polynomial p(tau) as a CasADi expression (Bernstein form), tau an SX/MX scalar."""
        m = self.degree
        expr = 0 * tau
        for j, b in enumerate(self.bernstein_coefficients):
            if b != 0.0:
                expr = expr + b * comb(m, j) * tau**j * (1 - tau) ** (m - j)
        return expr


def make_time_law(n_zero_derivs: int, name: str | None = None) -> TimeLaw:
    coeffs = tuple(float(c) for c in rest_to_rest_coefficients_exact(n_zero_derivs))
    return TimeLaw(name or f"rest_to_rest_{n_zero_derivs}", coeffs, int(n_zero_derivs))


def _poly_mul(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _legendre_in_tau(k: int) -> list[Fraction]:
    """Ascending exact coefficients in tau of P_k(2 tau - 1) (Bonnet's recurrence)."""
    x = [Fraction(-1), Fraction(2)]
    p_prev, p = [Fraction(1)], x
    if k == 0:
        return p_prev
    for j in range(1, k):  # (j + 1) P_(j+1) = (2j + 1) x P_j - j P_(j-1)
        a = [Fraction(2 * j + 1, j + 1) * c for c in _poly_mul(x, p)]
        b = [Fraction(j, j + 1) * c for c in p_prev] + [Fraction(0)] * (len(a) - len(p_prev))
        p_prev, p = p, [u - v for u, v in zip(a, b)]
    return p


@lru_cache(maxsize=256)
def _bernstein_exact(c: tuple[Fraction, ...], m: int) -> tuple[Fraction, ...]:
    """b_j = sum_(i <= j) C(j, i) / C(m, i) c_i: the exact Bernstein coefficients of degree m of the polynomial
    with ascending coefficients c (len(c) <= m + 1)."""
    c = _padded(c, m)
    return tuple(sum(Fraction(comb(j, i), comb(m, i)) * c[i] for i in range(j + 1)) for j in range(m + 1))


@lru_cache(maxsize=None)
def _basis_bernstein(n_zero_derivs: int, i: int, m: int) -> tuple[Fraction, ...]:
    return _bernstein_exact(shape_basis(n_zero_derivs, i), m)


def _padded(c: tuple[Fraction, ...], m: int) -> tuple[Fraction, ...]:
    return tuple(c) + (Fraction(0),) * (m + 1 - len(c))


def _combined(base: tuple[Fraction, ...], terms: tuple[tuple[Fraction, ...], ...], weights) -> tuple[float, ...]:
    """base + sum_i weights_i terms_i evaluated exactly and rounded once to floats (weights: floats, exact as the
    dyadic rationals they are): in integers over each column's common denominator (``_integer_columns``), so
    Python's correctly rounded int / int gives the bits float(Fraction) gives, 30x faster."""
    columns = _integer_columns(base, terms)
    ratios = [float(w).as_integer_ratio() for w in weights]
    shift = max((d.bit_length() - 1 for _, d in ratios), default=0)  # denominators are powers of two
    scaled = [n << (shift - (d.bit_length() - 1)) for n, d in ratios]
    return tuple(((b << shift) + sum(w * x for w, x in zip(scaled, xs))) / (den << shift) for b, xs, den in columns)


@lru_cache(maxsize=64)
def _integer_columns(base: tuple[Fraction, ...], terms: tuple[tuple[Fraction, ...], ...]) -> tuple:
    """Per coefficient j: (base_j D_j, (term_ij D_j)_i, D_j) in integers, D_j the lcm of the denominators."""
    columns = []
    for j, b in enumerate(base):
        xs = [t[j] for t in terms]
        den = math.lcm(b.denominator, *(x.denominator for x in xs))
        columns.append((int(b * den), tuple(int(x * den) for x in xs), den))
    return tuple(columns)


@lru_cache(maxsize=None)
def shape_basis(n_zero_derivs: int, i: int) -> tuple[Fraction, ...]:
    """Exact ascending coefficients of phi_i(tau) = (4 tau (1 - tau))^(n+1) P_(i-1)(2 tau - 1), i >= 1.

    phi_i and its derivatives 1..n vanish at tau = 0 and 1; |phi_i| <= 1 on [0, 1] (1 for i = 1;
    0.17 .. 0.1 for i = 2 .. 6 at n = 5)."""
    w = [Fraction(1)]
    for _ in range(n_zero_derivs + 1):
        w = _poly_mul(w, [Fraction(0), Fraction(4), Fraction(-4)])
    return tuple(_poly_mul(w, _legendre_in_tau(i - 1)))


def junction_family(base, n_free: int, extra: int) -> tuple[np.ndarray, np.ndarray]:
    """Shaping coefficients whose law is smoother at the rests than its base: c = c0 + N w, w in R^n_free.

    The shape terms keep derivatives 1..n of s zero at both ends (n the base's ``n_zero_derivs``); with
    n_free + 2 extra terms, the 2 extra linear conditions s^(k)(0) = s^(k)(1) = 0 for k = n + 1 .. n + extra
    leave an n_free-dimensional affine family of laws that are C^(n + extra) across the rests. c0 is its
    least-norm member (for poly11 and extra = 1: the degree-13 rest-to-rest polynomial), the columns of N an
    orthonormal basis of its directions. Exact rational end derivatives, the solve in floats."""
    law = get_time_law(base)
    if not isinstance(law, TimeLaw):
        raise ProblemError(f"reference.time_law: shaping terms need a polynomial time law, not {law.name!r}")
    n, n_coef = law.n_zero_derivs, n_free + 2 * extra
    exact_base = tuple(law.exact_coefficients) or tuple(Fraction(x) for x in law.coefficients)
    rows = [(k, end) for k in range(n + 1, n + 1 + extra) for end in (0, 1)]
    A = np.array([[float(_derivative_at(shape_basis(n, i), k, end)) for i in range(1, n_coef + 1)] for k, end in rows])
    b = -np.array([float(_derivative_at(exact_base, k, end)) for k, end in rows])
    c0 = np.linalg.lstsq(A, b, rcond=None)[0] if extra else np.zeros(n_coef)
    N = np.linalg.svd(A)[2][2 * extra:].T if extra else np.eye(n_coef)
    return c0, N


def _derivative_at(coefficients, k: int, end: int) -> Fraction:
    """d^k p / dtau^k at tau = end (0 or 1), exactly, p with ascending rational coefficients."""
    if end == 0:
        return Fraction(factorial(k)) * coefficients[k] if k < len(coefficients) else Fraction(0)
    return sum((Fraction(_falling(j, k)) * c for j, c in enumerate(coefficients) if j >= k), Fraction(0))


def shaped_time_law(base, shape, field: str = "reference.time_law_shape", check: bool = True) -> TimeLaw:
    """base(tau) + sum_i shape[i-1] phi_i(tau) as a TimeLaw named e.g. ``poly11+shape6``.

    ``base``: a polynomial law (name or TimeLaw); an empty shape returns the base itself. Raises
    ProblemError naming ``field`` for a non-polynomial base, non-finite coefficients or (``check``)
    a law that is not monotone (``check_monotone``; a search may try such laws with check=False)."""
    law = get_time_law(base)
    c = [float(x) for x in np.atleast_1d(np.asarray(shape, dtype=float))] if shape is not None else []
    if not c:
        return law
    if not isinstance(law, TimeLaw):
        raise ProblemError(f"{field}: shaping terms need a polynomial time law, not {law.name!r} (use e.g. poly11)")
    if not all(math.isfinite(x) for x in c):
        raise ProblemError(f"{field}: expected finite numbers, got {c}")
    n = law.n_zero_derivs
    m = max(law.degree, 2 * n + 1 + len(c))
    # Linear in the shape: base + sum c_i phi_i, with each term's coefficients and Bernstein form at degree m
    # exact and cached, combined in exact arithmetic and rounded once (the same numbers as converting the
    # exact sum; converting it anew cost 2.5 ms a law, 1300 laws in a rest-to-rest search).
    base = tuple(law.exact_coefficients) or tuple(Fraction(x) for x in law.coefficients)
    terms = range(1, len(c) + 1)
    coefficients = _combined(_padded(base, m), tuple(_padded(shape_basis(n, i), m) for i in terms), c)
    bernstein = _combined(_bernstein_exact(base, m), tuple(_basis_bernstein(n, i, m) for i in terms), c)
    shaped = TimeLaw(f"{law.name}+shape{len(c)}", coefficients, n, bernstein=bernstein)
    if check:
        check_monotone(shaped, field)
    return shaped


def monotonicity_margin(law: TimeLaw, n_grid: int = 2001, n_zero: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(tau, g(tau)) on a grid of [0, 1] with s'(tau) = tau^n (1 - tau)^n g(tau), n = n_zero_derivs.

    Dividing out the zeros at the ends makes g O(1) there: s' >= 0 exactly where g >= 0, also
    next to the ends, where s' itself is ~tau^n and a plain grid check would miss a sign change.
    ``n_zero``: divide out more zeros than the law's n_zero_derivs (a shaped law whose derivatives up to
    n_zero vanish at the ends: ``junction_family``; its Bernstein coefficients below are then ~0 and left out).
    Bernstein form: g has the coefficients m (b_(j+n+1) - b_(j+n)) C(m-1, j+n) / C(r, j), r = m-1-2n."""
    m = law.degree
    n = law.n_zero_derivs if n_zero is None else int(n_zero)
    r = m - 1 - 2 * n
    d = np.diff(np.array(law.bernstein_coefficients)) * m
    e = np.array([d[j + n] * comb(m - 1, j + n) / comb(r, j) for j in range(r + 1)])
    tau = np.linspace(0.0, 1.0, n_grid)
    j = np.arange(r + 1)
    binom = np.array([comb(r, i) for i in j], dtype=float)
    basis = binom * tau[:, None] ** j * (1.0 - tau[:, None]) ** (r - j)
    return tau, basis @ e


_MONOTONE_ROUNDOFF = 1e-9  # g below -this x max|g| is a sign change; above it, rounding of the coefficients


def check_monotone(law: TimeLaw, field: str = "reference.time_law_shape") -> None:
    """ProblemError naming ``field`` and the interval where s'(tau) < 0."""
    tau, g = monotonicity_margin(law)
    # roundoff: a law made smoother at its ends (``junction_family``) has g ~ 0 there, to the last bits
    bad = g < -_MONOTONE_ROUNDOFF * np.abs(g).max()
    if not bad.any():
        return
    lo, hi = tau[bad].min(), tau[bad].max()
    slope = law(tau, 1)
    i = int(np.argmin(np.where(bad, slope, np.inf)))
    raise ProblemError(f"{field}: the shaped time law {law.name} is not monotone: s'(tau) < 0 for tau in "
                       f"[{lo:.4g}, {hi:.4g}] (s' = {float(law(tau[i], 1)):.3g} at tau = {tau[i]:.4g}); the tool "
                       "would move backwards along the path: use smaller shaping coefficients")


# exp(-c / x) < exp(-700) ~ 1e-304 below x = c / 700: taken as 0 there, so the expression and
# all its derivatives stay finite (no 0 * inf) at and near the ends of the motion.
_EXP_UNDERFLOW = 700.0


@dataclass(frozen=True)
class SmoothStepLaw:
    """The C-infinity rest-to-rest law s(tau) = f(tau) / (f(tau) + f(1 - tau)), f(x) = exp(-c / x).

    ``sharpness`` c: a larger c concentrates the motion towards the middle (peak velocity
    s'(1/2) = 2 c). c = 1.4 (the registered ``cinf``) about minimises the peak of s^(4) (1150;
    ``poly11``: 946) and keeps the peaks of s^(1..3) within 11 % of ``poly11``'s (2.8 / 12.5 / 108
    vs 2.7 / 11.3 / 108).
    Every derivative vanishes at tau = 0 and tau = 1 (``n_zero_derivs`` is infinite), and
    s(1 - tau) = 1 - s(tau).
    """

    name: str
    sharpness: float = 1.4

    @property
    def n_zero_derivs(self) -> float:
        return math.inf

    def expression(self, tau):
        """s(tau) for tau in [0, 1] as a CasADi expression (tau an SX/MX scalar)."""
        return _smooth_step(tau, float(self.sharpness))

    def __call__(self, tau, order: int = 0) -> np.ndarray:
        """d^order s / dtau^order with s = 0 for tau < 0 and s = 1 for tau > 1 (numpy)."""
        tau = np.asarray(tau, dtype=float)
        inside = (tau >= 0.0) & (tau <= 1.0)
        flat = np.clip(tau, 0.0, 1.0).reshape(1, -1)
        values = np.array(_smooth_step_derivative(float(self.sharpness), int(order)).map(flat.size)(flat))
        out = np.where(inside, values.reshape(tau.shape), 0.0)
        if order == 0:
            out = np.where(tau > 1.0, 1.0, out)
        return out


def _smooth_step(tau, c: float):
    def f(x):
        return ca.if_else(x > c / _EXP_UNDERFLOW, ca.exp(-c / x), 0.0)

    def rising(x):  # for x <= 1/2, where f(x) <= f(1 - x): no cancellation in the derivatives
        return f(x) / (f(x) + f(1 - x))

    # s(tau) = 1 - s(1 - tau): the second half from the first keeps the end at tau = 1 as exact
    # (every derivative exactly 0) as the start
    return ca.if_else(tau <= 0.5, rising(tau), 1 - rising(1 - tau))


@lru_cache(maxsize=None)
def _smooth_step_derivative(c: float, order: int) -> ca.Function:
    """tau -> d^order s / dtau^order of the smooth step (exact: repeated symbolic differentiation)."""
    tau = ca.SX.sym("tau")
    expr = _smooth_step(tau, c)
    for _ in range(order):
        expr = ca.jacobian(expr, tau)
    return ca.Function(f"smooth_step_d{order}", [tau], [expr])


SPLINE_DEGREE = 7  # of a SplineLaw's acceleration: the law is C^8 everywhere, across the rests too
_SPLINE_END_TOL = 1e-9  # |s(1) - 1| and |s'(1)| of the coefficients as given (then projected to exactly 1, 0)


class SplineLaw:
    """A rest-to-rest law whose acceleration is a uniform B-spline: s''(tau) = sum_j a_j B_j(tau), B_j of degree
    SPLINE_DEGREE (p) on the knots j / (n + p), j = -p .. n + 2p (n coefficients; B_j lives on [j, j + p + 1] / (n + p),
    so together they span [0, 1] and vanish outside). s(0) = s'(0) = 0 by integration, and the law reaches s(1) = 1
    at rest (s'(1) = 0) when sum_j a_j = 0 and sum_j a_j (1 - c_j) / (n + p) = n + p (c_j the centre of B_j): two
    linear conditions the coefficients are projected onto (minimum-norm), after a check that they hold to 1e-9 as
    given. s is C^(p + 1) everywhere, so n_zero_derivs = p + 1 at the rests. Local: a coefficient moves the law
    within (p + 1) / (n + p) of its place, so it can approach a bang-bang acceleration (a time-optimal law
    smoothed, ``ffopt.motion.min_time``), which a polynomial law of the same number of terms cannot."""

    name = "spline"
    n_zero_derivs = SPLINE_DEGREE + 1

    def __init__(self, acceleration, field: str = "reference.time_law_spline", check: bool = True):
        from scipy.interpolate import BSpline, PPoly

        a = np.asarray(acceleration, float).ravel()
        p = SPLINE_DEGREE
        if a.size < 2 or not np.all(np.isfinite(a)):
            raise ProblemError(f"{field}: expected at least 2 finite numbers (the law's acceleration coefficients)")
        n = a.size
        delta = 1.0 / (n + p)
        centre = (np.arange(n) + (p + 1) / 2) * delta
        A = np.vstack([np.full(n, delta), delta * (1.0 - centre)])
        miss = A @ a - np.array([0.0, 1.0])
        if check and np.abs(miss).max() > _SPLINE_END_TOL * max(1.0, np.abs(a).max() * delta):
            raise ProblemError(f"{field}: the law does not end at rest at s = 1 (s'(1) = {miss[0]:.3g}, s(1) = "
                               f"{1 + miss[1]:.6g}): its coefficients must sum to 0 and weigh to 1 (see SplineLaw)")
        a = a - A.T @ np.linalg.solve(A @ A.T, miss)
        self.acceleration = tuple(float(x) for x in a)
        knots = delta * np.arange(-p, n + 2 * p + 1)
        s = BSpline(knots, np.concatenate([np.zeros(p), a, np.zeros(p)]), p).antiderivative(2)
        # local power form of each piece [x_i, x_i+1], highest power first: its Taylor coefficients at x_i (BSpline
        # evaluates the piece to the right of a knot; FITPACK's PPoly.from_spline stops at degree 5)
        self._x = delta * np.arange(n + p + 1)
        self._x[-1] = 1.0  # (n + p) delta may round below 1
        self._c = np.array([s(self._x[:-1], nu=k) / factorial(k) for k in range(p + 2, -1, -1)])
        self._poly = PPoly(self._c, self._x, extrapolate=True)
        if check:
            rate = self._poly(np.linspace(0.0, 1.0, 20 * (n + p) + 1), 1)
            if rate.min() < -1e-9 * np.abs(rate).max():
                raise ProblemError(f"{field}: the law runs backwards (s' < 0 somewhere): not a motion along the path")

    @property
    def n_coefficients(self) -> int:
        return len(self.acceleration)

    def __call__(self, tau, order: int = 0) -> np.ndarray:
        """d^order s / dtau^order with s = 0 for tau < 0 and s = 1 for tau > 1 (numpy)."""
        tau = np.asarray(tau, dtype=float)
        inside = (tau >= 0.0) & (tau <= 1.0)
        values = self._poly(np.clip(tau, 0.0, 1.0), order) if order <= SPLINE_DEGREE + 2 else np.zeros(tau.shape)
        out = np.where(inside, values, 0.0)
        if order == 0:
            out = np.where(tau >= 1.0, 1.0, out)
        return out

    def expression(self, tau):
        """s(tau) for tau in [0, 1] as a CasADi expression: the piece that holds tau, in Horner form."""
        expr = 0 * tau
        last = self._c.shape[1] - 1
        for i in range(self._c.shape[1]):
            lo, hi = float(self._x[i]), float(self._x[i + 1])
            local, piece = tau - lo, 0 * tau
            for coefficient in self._c[:, i]:
                piece = piece * local + float(coefficient)
            where = tau >= lo if i == last else (tau >= lo) * (tau < hi)  # the last piece up to tau = 1 and on
            expr = expr + ca.if_else(where, piece, 0.0)
        return expr

    def __repr__(self) -> str:
        return f"SplineLaw({self.n_coefficients} acceleration coefficients, degree {SPLINE_DEGREE})"


class _LawRegistry(Mapping):
    """Name -> time law, each built on first use: the exact rational solve of the degree-19 law
    alone takes ~20 ms, which every ``import ffopt`` paid when the registry was built eagerly."""

    def __init__(self, factories: dict):
        self._factories = factories
        self._built: dict[str, TimeLaw | SmoothStepLaw] = {}

    def __getitem__(self, name: str) -> TimeLaw | SmoothStepLaw:
        if name not in self._built:
            self._built[name] = self._factories[name]()  # KeyError for an unknown name, as a dict
        return self._built[name]

    def __iter__(self):
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


TIME_LAWS: Mapping[str, TimeLaw | SmoothStepLaw] = _LawRegistry({
    "quintic": lambda: make_time_law(2, "quintic"),
    "septic": lambda: make_time_law(3, "septic"),
    "hermite9": lambda: make_time_law(4, "hermite9"),
    "poly11": lambda: make_time_law(5, "poly11"),
    "poly15": lambda: make_time_law(7, "poly15"),
    "poly19": lambda: make_time_law(9, "poly19"),
    "cinf": lambda: SmoothStepLaw("cinf", 1.4),
})


def get_time_law(time_law, field: str = "reference.time_law") -> TimeLaw | SmoothStepLaw | SplineLaw:
    """A time law from its name (one of TIME_LAWS) or a TimeLaw / SmoothStepLaw / SplineLaw instance."""
    if isinstance(time_law, (TimeLaw, SmoothStepLaw, SplineLaw)):
        return time_law
    if isinstance(time_law, str) and time_law in TIME_LAWS:
        return TIME_LAWS[time_law]
    valid = ", ".join(f'"{k}"' for k in TIME_LAWS)
    raise ProblemError(f"{field} must be one of {valid}, got {time_law!r}")
