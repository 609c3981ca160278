"""DC: BDF on the decoupled system of Moberg & Hanssen, inverse dynamics of flexible manipulators
(DAE methods), eq. 20-21, sec. 7.2.4 (the form (14) of their sec. 4.2).

The variables split into differential x_d and algebraic x_a = [q_S; v_S], with S the link
coordinates whose derivatives are dummy derivatives (ffopt.analysis.structural; for E1 the
paper takes S = {q2}, x_a = [x2, x4], eq. 20). The algebraic part x_a = G2(t, x_d) is

    Gamma(q_S, q_o) = theta(t)                              -> q_S  (eq. 20a, implicit)
    v_S = J_S^{-1} (theta' - J_o v_o)                       (eq. 20b, explicit)
    a_S = J_S^{-1} (theta'' - (dJ/dt) v - J_o a_o)          ("derivatives included")

and the ODE (eq. 21) is the rest of the original DAE with x_a inserted: the kinematic rows of
the other coordinates and the link rows without u,

    0 = G1(t, x_d, x_d') = [q_o' - v_o;  link rows(q, v, a)].

Only x_d is advanced by the BDF formula; q_S is solved from (20a) at each t_i in the same Newton
iteration (it never appears differentiated, so this equals evaluating G2 by a nested Newton).
Solved through ffopt.replication.moberg_hanssen.solve_inverse_variant(..., "DC", ...).
"""

from __future__ import annotations

import casadi as ca

from ffopt.errors import ProblemError
from ffopt.models.flexible import FlexibleModel


def _assemble(nq, S, other, part_S, part_o):
    out = ca.SX.zeros(nq)
    out[S] = part_S
    out[other] = part_o
    return out


def decoupled_dae(model: FlexibleModel, reference, S: list[int]):
    """(F(t, X, Xdot), states_fun: (t, X, Xdot) -> (q, v, a)) with X = [q_o; v_o; q_S]."""
    L = model.layout
    nq, n_link = L.nq, L.n_link
    S = list(S)
    if len(S) != len(model.outputs) or any(i >= n_link for i in S):
        raise ProblemError(f"DC needs one algebraic link coordinate per output; got {S} for outputs {model.outputs}")
    other = [i for i in range(nq) if i not in S]
    no = len(other)
    t = ca.SX.sym("t")
    X, Xd = ca.SX.sym("x", 2 * no + len(S)), ca.SX.sym("xdot", 2 * no + len(S))
    qo, vo, qS = X[:no], X[no:2 * no], X[2 * no:]
    q = _assemble(nq, S, other, qS, qo)
    y = model.output(q[:n_link])
    J = ca.jacobian(y, q)  # columns of motor coordinates are zero
    JS, Jo = J[:, S], J[:, other]
    vS = ca.solve(JS, reference.expression(t, 1) - Jo @ vo)
    v = _assemble(nq, S, other, vS, vo)
    ao = Xd[no:2 * no]
    w = ca.SX.sym("w", nq)  # independent velocity symbol: (dJ/dt) v = d(J w)/dq v at w = v
    Jdot_v = ca.substitute(ca.jacobian(J @ w, q) @ w, w, v)
    aS = ca.solve(JS, reference.expression(t, 2) - Jdot_v - Jo @ ao)
    a = _assemble(nq, S, other, aS, ao)
    res = ca.vertcat(Xd[:no] - vo, model.unactuated_link_rows(q, v, a), y - reference.expression(t, 0))
    if res.shape[0] != X.shape[0]:
        raise ProblemError(f"DC: {res.shape[0]} equations for {X.shape[0]} unknowns with algebraic set {S}")
    F = ca.Function("decoupled_dae", [t, X, Xd], [res], ["t", "x", "xdot"], ["res"])
    states = ca.Function("decoupled_states", [t, X, Xd], [q, v, a], ["t", "x", "xdot"], ["q", "v", "a"])
    return F, states, other


def default_algebraic_set(model: FlexibleModel, prefer) -> list[int]:
    """The paper's choices: q2 (passive) for E1 (sec. 5.1.1), the actuated links otherwise (sec. 5.2.3)."""
    L = model.layout
    if prefer is None:
        e1_type = L.n_link == 2 and L.n_motor == 0 and L.passive == (1,) and len(model.outputs) == 1
        prefer = "passive" if e1_type else "actuated"
    if prefer == "passive":
        order = list(L.passive) + list(L.actuated)
    elif prefer == "actuated":
        order = list(L.actuated) + list(L.passive)
    else:
        names = model.coordinate_names()
        order = [names.index(p) for p in prefer]
    return sorted(order[: len(model.outputs)])
