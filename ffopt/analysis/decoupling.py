"""Singularities of the inverse along a motion: the decoupling matrix of the nonlinear plant.

Exact tracking y(t) = theta(t) asks, at every instant, for the input that gives the tool the
r-th derivative the path prescribes: y_i^(r_i) = L_f^r_i h_i(x) + A_i(x) u with the decoupling
matrix A(x) = [L_g L_f^(r_i - 1) h_i(x)] (Isidori, nonlinear control systems, ch. 5). Moberg &
Hanssen (inverse dynamics of flexible manipulators, sec. 5.1.1) meet it as the Jacobian that fixes
the index of their passive-elbow arm E1, "non-singular for most values of x"; where A(x) is
singular the input has no authority over a
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
An arm that mixes direct drives and elastic gears has no vector relative degree (every output sees
the direct drives two derivatives before the gears: A has zero columns already at rest); there
the degrees are taken per input instead, which is the decoupling matrix of the plant with
integrators before the earlier inputs (a dynamic extension; Isidori, ch. 5.4). For such an arm,
A = J M^-1 S diag(1 for a direct drive, d_j / J_m,j for a damped elastic gear).
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
    det_sign: np.ndarray  # sign of det A(t) (A is square: a FlexibleModel has as many outputs as inputs)
    output_names: list[str]
    by: str  # outputs: relative degree per output; inputs: per input (dynamic extension)
    degree_names: list[str]  # what relative_degree is listed by (the outputs or the inputs)

    @property
    def singular_times(self) -> np.ndarray:
        """Times where A is singular: a sign change of det A (the later sample) or a tiny sigma_min."""
        bad = self.sigma_min_ratio < SINGULAR_RTOL
        bad[np.flatnonzero(self.det_sign[1:] * self.det_sign[:-1] < 0) + 1] = True
        return self.times[bad]

    @property
    def singular(self) -> bool:
        return self.singular_times.size > 0

    def summary(self) -> str:
        r = ", ".join(f"{n}: {k}" for n, k in zip(self.degree_names, self.relative_degree))
        r = f"relative degrees {r}" if self.by == "outputs" else \
            f"degrees by input {r}, earlier inputs differentiated to the highest (dynamic extension)"
        if not self.singular:
            return (f"decoupling matrix regular along the motion ({r}; smallest singular "
                    f"value {self.sigma_min_ratio.min():.3g} x its start value)")
        ts = self.singular_times
        span = f"t = {ts[0]:.4g} s" if ts.size == 1 else f"t = {ts[0]:.4g} .. {ts[-1]:.4g} s"
        return (f"decoupling matrix singular at {span} ({r}): there the motors cannot set every combination "
                f"of the derivatives of the tool's {'/'.join(self.output_names)} the path prescribes, so no "
                f"bounded input tracks the path exactly")

    def to_dict(self) -> dict:
        ts = self.singular_times
        return {"singular": bool(self.singular), "relative_degree": list(self.relative_degree), "by": self.by,
                "singular_times_s": [float(ts[0]), float(ts[-1])] if ts.size else [],
                "sigma_min_ratio_min": float(self.sigma_min_ratio.min()), "summary": self.summary()}


def _lie_derivatives(model: FlexibleModel, k_max: int):
    """(x, u, [y, L_f y, ..., L_f^k_max y]): each level built from the one below with u = 0 in it (below
    its degree an input's coefficient is zero, and for the mechanical plants here the coefficients
    of earlier inputs depend on q only, so dropping them changes no derivative by u at higher levels)."""
    L = model.layout
    x = ca.SX.sym("x", 2 * L.nq + model.n_z)
    u = ca.SX.sym("u", L.n_u)
    f = model.plant_rhs(x, u)
    levels = [model.output(x[: L.n_link])]
    for _ in range(k_max):
        levels.append(ca.jtimes(ca.substitute(levels[-1], u, ca.DM.zeros(L.n_u)), x, f))
    return x, u, levels


def decoupling_function(model: FlexibleModel, r: list[int], by: str = "outputs") -> ca.Function:
    """x -> the decoupling matrix (rows: outputs, columns: inputs) from Lie derivatives of model.plant_rhs.

    by "outputs": row i = d y_i^(r_i) / d u = L_g L_f^(r_i - 1) h_i (r: relative degree per output).
    by "inputs": column j = d y^(r_j) / d u_j (r: degree per input): the decoupling matrix of the
    plant with r_max - r_j integrators before input j (a dynamic extension: a direct drive, seen two
    derivatives before the elastic gears, gets one), which then has the vector relative degree r_max.
    """
    x, u, levels = _lie_derivatives(model, max(r))
    if by == "outputs":
        A = ca.vertcat(*[ca.jacobian(levels[ri][i], u) for i, ri in enumerate(r)])
    else:
        A = ca.horzcat(*[ca.jacobian(levels[rj], u[j]) for j, rj in enumerate(r)])
    return ca.Function("decoupling", [x], [A])


def decoupling_along(model: FlexibleModel, times: np.ndarray, states: np.ndarray) -> DecouplingReport:
    """The decoupling matrix at each row of ``states`` (x = [q; v; z], as ``model.plant_rhs``): by the
    relative degree of each output where that is regular at the first state, else by the degree of
    each input (a dynamic extension); ValueError if neither is regular there."""
    states = np.atleast_2d(np.asarray(states, float))
    L = model.layout
    A_, B_, C_ = plant_state_space(model, linearize(model, states[0, : L.nq], states[0, L.nq: 2 * L.nq]))[:3]
    candidates = [("outputs", relative_degree(A_, B_, C_)[0]),
                  ("inputs", relative_degree(A_.T, C_.T, B_.T)[0])]  # c A^(k-1) b_j, per column
    for by, r in candidates:
        if r is None:
            continue
        r = [int(k) for k in r]
        A = np.array(decoupling_function(model, r, by).map(len(states))(states.T))
        mats = A.reshape(L.n_u, len(states), L.n_u).transpose(1, 0, 2)
        svd = np.array([np.linalg.svd(m, compute_uv=False) for m in mats])
        if svd[0].min() > REGULAR_AT_START_RTOL * svd[0].max():
            sigma = svd.min(axis=1)
            det_sign = np.sign(np.linalg.det(mats))
            names = list(model.outputs) if by == "outputs" else [f"u_{model.chain.joints[i].name}" for i in L.actuated]
            return DecouplingReport(np.asarray(times, float), r, sigma / sigma[0], det_sign, list(model.outputs),
                                    by, names)
    raise ValueError("the decoupling matrix is singular already at the first state, by output and by input "
                     "degrees (no vector relative degree, even with a dynamic extension); not checked")
