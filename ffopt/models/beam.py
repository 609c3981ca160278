"""Euler-Bernoulli clamped-free beam: characteristic roots, mode shapes and modal integrals.

The assumed modes of a flexible link (Mohan & Saha, simulation of serial robots with flexible
links, eq. 43) are the eigenfunctions of a uniform clamped-free beam. With xi = x / L in [0, 1]
and z = beta_j xi, the standard shape is

    phi_j(xi) = cosh z - cos z - sigma_j (sinh z - sin z),
    sigma_j = (cosh beta_j + cos beta_j) / (sinh beta_j + sin beta_j),

where beta_j is the j-th root of 1 + cos(beta) cosh(beta) = 0 (1.8751, 4.6941, 7.8548, ...,
computed here by root finding). It satisfies phi(0) = phi'(0) = 0 (clamped) and
phi''(1) = phi'''(1) = 0 (free end). The paper prints s = (sin z + sinh z) - sigma (cos z + cosh z)
with sigma = (sin b + sinh b) / (cos b + cosh b); that is not zero at the clamp (s(0) = -2 sigma).
With the signs of the standard shape, (sinh z - sin z) - sigma (cosh z - cos z), it is the shape
above times -1 / sigma_j, i.e. the same mode.

Normalisation used by ffopt: phi_j(1) = 1, so the modal coordinate delta_j is the tip deflection
(m) that mode j contributes. Then, for a beam of mass m, length L and bending stiffness EI:
    modal mass       m int_0^1 phi_j^2 dxi           = m / 4
    modal stiffness  EI / L^3 int_0^1 (phi_j'')^2 dxi = EI beta_j^4 / (4 L^3)
    frequency        omega_j = beta_j^2 sqrt(EI / (rho L^4)),   rho = m / L
and the modes are orthogonal in both integrals.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


def clamped_free_roots(n: int) -> np.ndarray:
    """The first n roots beta_j of 1 + cos(beta) cosh(beta) = 0 (dimensionless, beta_j L for unit length).

    Solved as cos(beta) + 1 / cosh(beta) = 0 (the same roots, no overflow); root j lies in
    ((j - 1) pi, j pi), where the function changes sign exactly once.
    """
    if n < 1:
        raise ValueError(f"need at least one mode, got {n}")
    f = lambda b: np.cos(b) + 1.0 / np.cosh(b)  # noqa: E731
    from scipy.optimize import brentq  # imported here: problem files without flexible links skip SciPy

    return np.array([brentq(f, max((j - 1) * np.pi, 1e-3), j * np.pi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
                     for j in range(1, n + 1)])


def _standard_shape(beta: float, xi: np.ndarray, derivative: int) -> np.ndarray:
    """d^k/dxi^k of the standard shape (tip value +-2), evaluated without cancellation.

    cosh z - sigma sinh z = ((1 - sigma) e^z + (1 + sigma) e^-z) / 2 with 1 - sigma computed from
    (sin b - cos b - e^-b) / (sinh b + sin b), so large beta (high modes) loses no digits.
    """
    z = beta * np.asarray(xi, float)
    den = np.sinh(beta) + np.sin(beta)
    one_minus = (np.sin(beta) - np.cos(beta) - np.exp(-beta)) / den
    sigma = 1.0 - one_minus
    ep, em = one_minus * np.exp(z) / 2, (1.0 + sigma) * np.exp(-z) / 2
    hyper = ep + em if derivative % 2 == 0 else ep - em  # cosh - sigma sinh, and its derivatives
    c, s = np.cos(z), np.sin(z)
    trig = [-c + sigma * s, s + sigma * c, c - sigma * s, -s - sigma * c][derivative % 4]
    return beta**derivative * (hyper + trig)


class ModeIntegrals:
    """The integrals a set of ``n`` beam shapes on xi in [0, 1] contributes to a link's mass and stiffness
    matrices, from its ``shape(xi, derivative)`` (clamped-free modes, or Ritz modes with static shapes)."""

    @cached_property
    def quadrature(self) -> tuple[np.ndarray, np.ndarray]:
        """Gauss-Legendre points and weights on [0, 1], exact to rounding for these smooth shapes."""
        x, w = np.polynomial.legendre.leggauss(max(64, 8 * self.n + 32))
        return (x + 1.0) / 2.0, w / 2.0

    @cached_property
    def gram(self) -> np.ndarray:
        """(n+2, n+2) int_0^1 f_a f_b dxi over the basis f = [1, xi, phi_1, ..., phi_n]."""
        xi, w = self.quadrature
        f = np.vstack([np.ones_like(xi), xi, self.shape(xi)])
        return (f * w) @ f.T

    @cached_property
    def curvature_gram(self) -> np.ndarray:
        """(n, n) int_0^1 phi_i'' phi_j'' dxi (xi-derivatives): the stiffness integrals."""
        xi, w = self.quadrature
        d2 = self.shape(xi, 2)
        return (d2 * w) @ d2.T

    @cached_property
    def tip_slope(self) -> np.ndarray:
        """(n,) phi_j'(1) (per unit xi; divide by L for the slope dw/dx)."""
        return self.shape(1.0, 1)[:, 0]

    @cached_property
    def curvature_quadrature(self) -> tuple[np.ndarray, np.ndarray]:
        """Gauss-Legendre points and weights on [0, 1] for the fourth-order bending energy int w''^2 w'^2: fewer
        than ``quadrature`` (its expression has a term per point), enough for the smooth low shapes."""
        x, w = np.polynomial.legendre.leggauss(4 * self.n + 16)
        return (x + 1.0) / 2.0, w / 2.0

    @cached_property
    def curvature_tensor(self) -> np.ndarray:
        """(n, n, n, n) C_ijkl = T_ijkl + T_klij with T_ijkl = int phi_i' phi_j' phi_k'' phi_l'' dxi: the gradient of
        the fourth-order bending energy (EI / 2L^5) sum T delta delta delta delta is (EI / L^5) sum_jkl C_ijkl
        delta_j delta_k delta_l."""
        xi, w = self.quadrature
        d1, d2 = self.shape(xi, 1), self.shape(xi, 2)
        T = np.einsum("iq,jq,kq,lq,q->ijkl", d1, d1, d2, d2, w)
        return T + T.transpose(2, 3, 0, 1)

    def slope_products(self, xi) -> np.ndarray:
        """(n, n, len(xi)): H_ij(xi) = int_0^xi phi_i' phi_j' ds. A beam bent by w = sum phi_j delta_j is shorter
        along its axis at xi by (1 / 2L) delta^T H(xi) delta (the foreshortening of an inextensible beam to
        second order, u' = -w'^2 / 2)."""
        xi = np.atleast_1d(np.asarray(xi, float))
        s, w = self.quadrature
        out = np.empty((self.n, self.n, len(xi)))
        for k, x in enumerate(xi):
            d1 = self.shape(x * s, 1)
            out[:, :, k] = x * (d1 * w) @ d1.T
        return out

    @cached_property
    def second_order(self) -> "SecondOrderIntegrals":
        return SecondOrderIntegrals(self)


class SecondOrderIntegrals:
    """What the foreshortening adds to a link's integrals. The beam point at xi is at
    (xi L - (1 / 2L) sum_(i<=j) c_ij H_ij(xi) delta_i delta_j) e + sum_j phi_j(xi) delta_j b (c_ii = 1, c_ij = 2),
    linear in the basis f = [1, xi, phi_1..phi_n, H_ij (i <= j)]; ``gram`` is int f_a f_b dxi over it."""

    def __init__(self, modes: ModeIntegrals):
        n = modes.n
        self.pairs = [(i, j, 1.0 if i == j else 2.0) for i in range(n) for j in range(i, n)]
        xi, w = modes.quadrature
        H = modes.slope_products(xi)
        f = np.vstack([np.ones_like(xi), xi, modes.shape(xi)] + [H[i, j][None, :] for i, j, _ in self.pairs])
        self.gram = (f * w) @ f.T
        self.tip = modes.slope_products(1.0)[:, :, 0]  # H(1): chord shortening (1 / 2L) delta^T H(1) delta


@dataclass(frozen=True)
class ClampedFreeModes(ModeIntegrals):
    """The first ``n`` clamped-free modes on xi in [0, 1], normalised to tip value 1."""

    n: int

    @cached_property
    def beta(self) -> np.ndarray:
        return clamped_free_roots(self.n)

    @cached_property
    def _tip_scale(self) -> np.ndarray:
        return np.array([_standard_shape(b, 1.0, 0) for b in self.beta])

    def shape(self, xi, derivative: int = 0) -> np.ndarray:
        """(n, len(xi)): d^k phi_j / dxi^k at xi (derivatives with respect to xi, not x)."""
        xi = np.atleast_1d(np.asarray(xi, float))
        return np.array([_standard_shape(b, xi, derivative) / s for b, s in zip(self.beta, self._tip_scale)])

