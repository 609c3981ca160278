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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from math import comb, factorial

import casadi as ca
import numpy as np

from ffopt.errors import ProblemError

__all__ = [
    "TimeLaw",
    "SmoothStepLaw",
    "TIME_LAWS",
    "rest_to_rest_polynomial",
    "rest_to_rest_coefficients_exact",
    "make_time_law",
    "get_time_law",
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
        m = self.degree
        c = [Fraction(x) for x in self.coefficients]
        return tuple(float(sum(Fraction(comb(j, i), comb(m, i)) * c[i] for i in range(j + 1)))
                     for j in range(m + 1))

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


def get_time_law(time_law, field: str = "reference.time_law") -> TimeLaw | SmoothStepLaw:
    """A time law from its name (one of TIME_LAWS) or a TimeLaw / SmoothStepLaw instance."""
    if isinstance(time_law, (TimeLaw, SmoothStepLaw)):
        return time_law
    if isinstance(time_law, str) and time_law in TIME_LAWS:
        return TIME_LAWS[time_law]
    valid = ", ".join(f'"{k}"' for k in TIME_LAWS)
    raise ProblemError(f"{field} must be one of {valid}, got {time_law!r}")
