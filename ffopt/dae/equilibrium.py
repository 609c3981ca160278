"""Consistent initial values: the robot at rest at the start of the path (Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), sec. 7.1).

At rest (v = a = 0) the link rows without u reduce to g(qa) = tau_a(q), and the tool must sit
at theta(t0): a square nonlinear system in q = [qa; qm], solved by Newton.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ffopt.cache import per_model
from ffopt.errors import PathError
from ffopt.models.chain import configuration_starts
from ffopt.models.flexible import FlexibleModel


def static_equilibrium(model: FlexibleModel, y_target: np.ndarray, qa_guess: np.ndarray | None = None,
                       where: str = "the start of the path") -> np.ndarray:
    """Configuration q = [qa; qm] at rest with the tool outputs at y_target: Newton from ``qa_guess``; without
    one (or where it does not converge and the guess is not given) from the starts of
    ``ffopt.models.chain.configuration_starts``, the first that converges."""
    L = model.layout
    G, solver = per_model(model, "static_equilibrium", lambda: static_solver(model))
    y_target = np.asarray(y_target, float).ravel()
    starts = [qa_guess] if qa_guess is not None else [q for _, q in configuration_starts(model.chain)]
    for start in starts:
        qa0 = np.zeros(L.n_link)
        g = np.asarray(start, float).ravel()  # a guess of the joint angles only leaves extra coordinates at rest
        qa0[: g.size] = g[: L.n_link]
        q0 = np.array(solver(np.concatenate([qa0, qa0[list(L.gear)]]), y_target)).ravel()
        resid = np.abs(np.array(G(q0, y_target))).max()
        if np.all(np.isfinite(q0)) and resid <= 1e-8 * static_torque_scale(model):
            return q0
    raise PathError(
        f"no static equilibrium with the tool at {np.round(1000 * y_target, 3).tolist()} mm at "
        f"{where} (residual {resid:.3g}"
        + ("" if qa_guess is not None else f"; {len(starts)} starts tried") + "): the point may be outside the "
        "workspace; check reference.start_mm and give reference.joint_guess near the intended configuration")


def static_torque_scale(model: FlexibleModel) -> float:
    """Residual scale of the link rows (N m): Newton stops on a step of ~1e-12 rad, which leaves a
    torque residual of stiffness x 1e-12 (2.4e-8 N m on the Manutec r3's 3.5e5 N m/rad gears)."""
    k = [j.stiffness for j in model.chain.joints] + [abs(g.stiffness).max() for g in model.chain.spring_groups]
    return max(1.0, 1e-4 * max(k))


def static_solver(model: FlexibleModel):
    """(G, Newton solver) for G(q, y) = [link rows at rest; output(qa) - y], built once per model."""
    L = model.layout
    q, y = model.q, ca.SX.sym("y", model.output.size1_out(0))
    zero = ca.SX.zeros(L.nq)
    residual = ca.vertcat(model.unactuated_link_rows(q, zero, zero), model.output(q[: L.n_link]) - y)
    G = ca.Function("static", [q, y], [ca.densify(residual)])  # a structural zero row (no gravity, no spring)
    solver = ca.rootfinder("static_eq", "newton", G, {"abstol": 1e-12, "max_iter": 100, "error_on_fail": False})
    return G, solver
