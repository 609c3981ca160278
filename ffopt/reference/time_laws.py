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
poly11      11      1..5 (seed 000, 7.1)   tau^6 (462 - 1980 tau + 3465 tau^2 - 3080 tau^3
                                                  + 1386 tau^4 - 252 tau^5)
==========  ======  =====================  =================================================

The coefficients are computed by solving the linear end-condition system in exact rational
arithmetic (they come out as integers).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import factorial

import numpy as np

from ffopt.errors import ProblemError

__all__ = [
    "TimeLaw",
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

    def polynomial(self, tau, order: int = 0) -> np.ndarray:
        """d^order p / dtau^order of the raw polynomial (no clamping), numpy, vectorised."""
        d = self.derivative_coefficients(order)
        return np.polynomial.polynomial.polyval(np.asarray(tau, dtype=float), d)

    def __call__(self, tau, order: int = 0) -> np.ndarray:
        """d^order s / dtau^order with s = 0 for tau < 0 and s = 1 for tau > 1 (numpy)."""
        tau = np.asarray(tau, dtype=float)
        inside = (tau >= 0.0) & (tau <= 1.0)
        out = np.where(inside, self.polynomial(np.clip(tau, 0.0, 1.0), order), 0.0)
        if order == 0:
            out = np.where(tau > 1.0, 1.0, out)
        return out

    def expression(self, tau):
        """The raw polynomial p(tau) as a CasADi expression (Horner), tau an SX/MX scalar."""
        c = self.coefficients
        expr = c[-1] + 0 * tau
        for cj in reversed(c[:-1]):
            expr = expr * tau + cj
        return expr


def make_time_law(n_zero_derivs: int, name: str | None = None) -> TimeLaw:
    coeffs = tuple(float(c) for c in rest_to_rest_coefficients_exact(n_zero_derivs))
    return TimeLaw(name or f"rest_to_rest_{n_zero_derivs}", coeffs, int(n_zero_derivs))


TIME_LAWS: dict[str, TimeLaw] = {
    "quintic": make_time_law(2, "quintic"),
    "septic": make_time_law(3, "septic"),
    "hermite9": make_time_law(4, "hermite9"),
    "poly11": make_time_law(5, "poly11"),
}


def get_time_law(time_law, field: str = "reference.time_law") -> TimeLaw:
    """A TimeLaw from its name (one of TIME_LAWS) or a TimeLaw instance."""
    if isinstance(time_law, TimeLaw):
        return time_law
    if isinstance(time_law, str) and time_law in TIME_LAWS:
        return TIME_LAWS[time_law]
    valid = ", ".join(f'"{k}"' for k in TIME_LAWS)
    raise ProblemError(f"{field} must be one of {valid}, got {time_law!r}")
