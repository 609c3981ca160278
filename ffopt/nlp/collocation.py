"""Collocation rules: nodes, derivative weights and quadrature weights on one interval.

On interval k, [t_k, t_k + h], each state is the polynomial of degree d through its value at
the interval start (tau = 0) and at the d collocation nodes tau_1..tau_d in (0, 1]. For Radau
IIA the last node is tau_d = 1, so the last collocation value is also the start value of the
next interval (continuity for free) and the rule is stiffly accurate (good for the algebraic
variables of a DAE). Orders at the grid points: 2d - 1 for differential variables.

Schemes:
- ``radau``: Radau IIA of degree d (1..9), nodes from ``casadi.collocation_points``.
- ``euler``: the low-order rule, implicit Euler (= Radau IIA of degree 1, order 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.errors import ProblemError

SCHEMES = ("radau", "euler")


@dataclass(frozen=True)
class CollocationRule:
    scheme: str
    degree: int
    tau: np.ndarray  # (d,) nodes in (0, 1], tau[-1] = 1
    deriv: np.ndarray  # (d+1, d): h * xdot(tau_j) = sum_r deriv[r, j] * x_r, x_0 at tau = 0
    deriv_start: np.ndarray  # (d+1,): h * xdot(0) = sum_r deriv_start[r] * x_r
    weights: np.ndarray  # (d,): integral over [0, 1] of f = sum_j weights[j] f(tau_j)

    @property
    def name(self) -> str:
        return f"{self.scheme}{self.degree}" if self.scheme == "radau" else "euler"


def collocation_rule(scheme: str = "radau", degree: int = 3) -> CollocationRule:
    if scheme not in SCHEMES:
        raise ProblemError(f"nlp.scheme: must be one of {', '.join(SCHEMES)}; got {scheme!r}")
    if scheme == "euler":
        degree = 1
    if not 1 <= degree <= 9:
        raise ProblemError(f"nlp.degree: must be 1..9, got {degree}")
    tau = np.array(ca.collocation_points(degree, "radau"), dtype=float)
    nodes = np.concatenate([[0.0], tau])
    deriv = np.column_stack([_lagrange_derivative(nodes, s) for s in tau])
    # interpolatory quadrature on the collocation nodes (Radau: exact to degree 2d - 2)
    weights = np.linalg.solve(np.vander(tau, degree, increasing=True).T, 1.0 / np.arange(1, degree + 1))
    return CollocationRule(scheme, degree, tau, deriv, _lagrange_derivative(nodes, 0.0), weights)


def _lagrange_derivative(nodes: np.ndarray, s: float) -> np.ndarray:
    """Weights w_r with p'(s) = sum_r w_r p(nodes_r) for the interpolating polynomial p."""
    out = np.empty(len(nodes))
    for r in range(len(nodes)):
        others = np.delete(nodes, r)
        basis = np.poly1d(others, r=True) / np.prod(nodes[r] - others)
        out[r] = basis.deriv()(s)
    return out


def collocation_times(rule: CollocationRule, t0: float, h: float, n_intervals: int) -> np.ndarray:
    """All collocation times (n_intervals * d,), interval by interval."""
    starts = t0 + h * np.arange(n_intervals)
    return (starts[:, None] + h * rule.tau[None, :]).ravel()
