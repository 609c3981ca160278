"""Consistent initial values: the robot at rest at the start of the path (seed 000, sec. 7.1).

At rest (v = a = 0) the link rows without u reduce to g(qa) = tau_a(q), and the tool must sit
at theta(t0): a square nonlinear system in q = [qa; qm], solved by Newton.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ffopt.errors import PathError
from ffopt.models.flexible import FlexibleModel


def _equilibrium_functions(model: FlexibleModel) -> tuple[ca.Function, ca.Function]:
    """(residual G(q, y), Newton rootfinder q(q_guess, y)), built once per model and kept on it.

    Building them costs ~1.5 ms; the zero-dynamics analysis solves one equilibrium per path point.
    """
    cached = getattr(model, "_ffopt_equilibrium", None)
    if cached is None:
        L = model.layout
        q, y = model.q, ca.SX.sym("y", len(model.outputs))
        zero = ca.SX.zeros(L.nq)
        res = ca.vertcat(model.unactuated_link_rows(q, zero, zero), model.output(q[: L.n_link]) - y)
        G = ca.Function("static", [q, y], [res])
        solver = ca.rootfinder("static_eq", "newton", G, {"abstol": 1e-12, "max_iter": 100, "error_on_fail": False})
        cached = model._ffopt_equilibrium = (G, solver)
    return cached


def static_equilibrium(model: FlexibleModel, y_target: np.ndarray, qa_guess: np.ndarray | None = None,
                       where: str = "the start of the path") -> np.ndarray:
    """Configuration q = [qa; qm] at rest with the tool outputs at y_target."""
    L = model.layout
    G, solver = _equilibrium_functions(model)
    y_target = np.asarray(y_target, float).ravel()
    qa0 = np.zeros(L.n_link) if qa_guess is None else np.asarray(qa_guess, float)
    guess = np.concatenate([qa0, qa0[list(L.gear)]])
    q0 = np.array(solver(guess, y_target)).ravel()
    resid = np.abs(np.array(G(q0, y_target))).max()
    if not np.all(np.isfinite(q0)) or resid > 1e-8:
        raise PathError(
            f"no static equilibrium with the tool at {np.round(1000 * y_target, 3).tolist()} mm at "
            f"{where} (residual {resid:.3g}): the point may be outside the workspace; check reference.start_mm "
            "and give reference.joint_guess near the intended configuration")
    return q0
