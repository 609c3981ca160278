"""Singularities of the inverse along a motion: the decoupling matrix of the nonlinear plant.

Exact tracking y(t) = theta(t) asks, at every instant, for the input that gives the tool the
r-th derivative the path prescribes: y_i^(r_i) = L_f^r_i h_i(x) + A_i(x) u with the decoupling
matrix A(x) = [L_g L_f^(r_i - 1) h_i(x)] (Isidori, nonlinear control systems, ch. 5; Moberg &
Hanssen, inverse dynamics of flexible manipulators, sec. 2: the inverse exists where the
relative degree is well defined). Where A(x) is singular the input has no authority over a
combination of the tool's r-th derivatives, and the inverse torque u = A^-1 (theta^(r) - L_f^r h)
is unbounded (an impasse point of the inverse DAE).

For a rigid arm A is the manipulator Jacobian up to invertible factors, and the singularity check
of the path finds it. On an arm with a passive (unactuated, elastic) joint A also depends on the
passive joint's swing: e.g. a planar 2-link arm with a motor in the shoulder and a passive elbow,
tool x as the output, has A ~ J M^-1 e_1 = (J_1 M_22 - J_2 M_12) / det M, which changes sign
when the elbow swings far enough (the reaction of the elbow cancels the shoulder's effect on the
tool). This happens only in motion, so the static analysis along the path cannot see it; this
module evaluates A along a planned (or any) state trajectory.

The relative degrees r_i come from the plant linearised at the trajectory's first state (the
first k with c_i A^(k-1) B != 0, ``ffopt.analysis.linear.relative_degree``); the Lie derivatives
L_f^k h are built symbolically (CasADi) from the plant's right-hand side ``model.plant_rhs``.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.analysis.linear import linearize, plant_state_space, relative_degree
from ffopt.models.flexible import FlexibleModel

# The decoupling matrix counts as singular where its smallest singular value falls below this
# fraction of its value at the start of the motion, or where (square A) its determinant changes
# sign between two samples (a continuous A passes through a singular matrix there).
SINGULAR_RTOL = 1e-3
REGULAR_AT_START_RTOL = 1e-9  # sigma_min / sigma_max of A at the first state: below, no vector relative degree


@dataclass
class DecouplingReport:
    """The decoupling matrix A(x(t)) along a trajectory: its relative size and sign."""

    times: np.ndarray
    relative_degree: list[int]
    sigma_min_ratio: np.ndarray  # sigma_min(A(t)) / sigma_min(A(t_0))
    det_sign: np.ndarray | None  # sign of det A(t) (square A), else None
    output_names: list[str]

    @property
    def singular_times(self) -> np.ndarray:
        """Times where A is singular: a sign change of det A (the later sample) or a tiny sigma_min."""
        bad = self.sigma_min_ratio < SINGULAR_RTOL
        if self.det_sign is not None:
            flips = np.flatnonzero(self.det_sign[1:] * self.det_sign[:-1] < 0) + 1
            bad[flips] = True
        return self.times[bad]

    @property
    def singular(self) -> bool:
        return self.singular_times.size > 0

    def summary(self) -> str:
        r = ", ".join(f"{n}: {k}" for n, k in zip(self.output_names, self.relative_degree))
        if not self.singular:
            return (f"decoupling matrix regular along the motion (relative degrees {r}; smallest singular "
                    f"value {self.sigma_min_ratio.min():.3g} x its start value)")
        ts = self.singular_times
        span = f"t = {ts[0]:.4g} s" if ts.size == 1 else f"t = {ts[0]:.4g} .. {ts[-1]:.4g} s"
        return (f"decoupling matrix singular at {span} (relative degrees {r}): there the motor torques have "
                f"no authority over the tool's {'/'.join(self.output_names)} derivative of that order, so "
                f"no bounded torque tracks the path exactly")

    def to_dict(self) -> dict:
        ts = self.singular_times
        return {"singular": bool(self.singular), "relative_degree": list(self.relative_degree),
                "singular_times_s": [float(ts[0]), float(ts[-1])] if ts.size else [],
                "sigma_min_ratio_min": float(self.sigma_min_ratio.min()), "summary": self.summary()}


def decoupling_function(model: FlexibleModel, r: list[int]) -> ca.Function:
    """x -> A(x) = d y^(r) / d u (rows: outputs, columns: inputs), with Lie derivatives of model.plant_rhs."""
    L = model.layout
    x = ca.SX.sym("x", 2 * L.nq + model.n_z)
    u = ca.SX.sym("u", L.n_u)
    f = model.plant_rhs(x, u)
    y = model.output(x[: L.n_link])
    rows = []
    for i, ri in enumerate(r):
        yk = y[i]
        for _ in range(ri - 1):  # L_f^(r_i - 1) h_i: free of u (the relative degree)
            yk = ca.jtimes(yk, x, f)
            yk = ca.substitute(yk, u, ca.DM.zeros(L.n_u))  # numerically independent of u; drop the symbol
        rows.append(ca.jacobian(ca.jtimes(yk, x, f), u))  # L_g L_f^(r_i - 1) h_i
    return ca.Function("decoupling", [x], [ca.vertcat(*rows)])


def decoupling_along(model: FlexibleModel, times: np.ndarray, states: np.ndarray) -> DecouplingReport:
    """The decoupling matrix at each row of ``states`` (x = [q; v; z], as ``model.plant_rhs``)."""
    states = np.atleast_2d(np.asarray(states, float))
    L = model.layout
    lin = linearize(model, states[0, : L.nq], states[0, L.nq: 2 * L.nq])
    r, _ = relative_degree(*plant_state_space(model, lin)[:3])
    if r is None:
        raise ValueError("no vector relative degree at the first state (an output the inputs do not reach)")
    A = np.array(decoupling_function(model, [int(k) for k in r]).map(len(states))(states.T))
    mats = A.reshape(len(r), len(states), L.n_u).transpose(1, 0, 2)
    svd = np.array([np.linalg.svd(m, compute_uv=False) for m in mats])
    sigma = svd.min(axis=1)
    if sigma[0] <= REGULAR_AT_START_RTOL * svd[0].max():
        # e.g. direct drives and elastic gears mixed: each output sees the direct drives two
        # derivatives before the gears, so A has zero columns at those degrees already at rest; the
        # inverse then needs the structure algorithm (a dynamic extension), not checked here
        raise ValueError("the decoupling matrix is singular already at the first state (no vector relative "
                         f"degree: relative degrees {[int(k) for k in r]} per output); not checked")
    det_sign = np.sign([np.linalg.det(m) for m in mats]) if len(r) == L.n_u else None
    return DecouplingReport(np.asarray(times, float), [int(k) for k in r], sigma / max(sigma[0], 1e-300),
                            det_sign, list(model.outputs))
