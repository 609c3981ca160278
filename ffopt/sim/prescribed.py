"""Prescribed joint motion: the joints driven along given laws, the elastic coordinates free.

For benchmarks in which a hub is turned along a known law and the flexible structure answers (Kane, Ryan &
Banerjee's spin-up of a cantilever beam on a rotating base): the joints in ``laws`` follow theta(t) exactly
(whatever torque it takes), every passive coordinate of the model (passive joints, modal coordinates, the hinges
of a segmented beam) obeys its rows of the equations of motion.
Integrated by CVODES, one grid interval a call (a model that diverges stops where it does, its later rows NaN),
the free coordinates' mass matrix factorised at run time (long chains stay cheap).
"""

from __future__ import annotations

from typing import Callable

import casadi as ca
import numpy as np

DIVERGED = 1e6  # a free coordinate (m, rad) or its rate beyond this: the model has diverged, stop there



def simulate_prescribed(model, laws: dict[int, Callable], t: np.ndarray, rtol: float = 1e-8,
                        atol: float = 1e-10) -> np.ndarray:
    """Passive coordinates of ``model`` on the grid ``t`` while each link coordinate i in ``laws`` follows
    laws[i](t) (a function of a CasADi symbol returning the angle; its derivatives by AD). Every other link
    coordinate must be passive. Returns q_link (n, n_link): the prescribed angles and the free coordinates,
    starting at rest undeformed; rows after a failure of the integration (a model that diverges) are NaN."""
    L = model.layout
    free = [i for i in range(L.n_link) if i not in laws]
    if L.nq != L.n_link or set(free) - set(L.passive):
        raise ValueError("prescribed motion needs every joint that is not prescribed to be passive, and no motors")
    t = np.asarray(t, float)
    t0, s = ca.SX.sym("t0"), ca.SX.sym("s")
    tt = t0 + s
    p, dp, ap = ca.SX.sym("p", len(free)), ca.SX.sym("dp", len(free)), ca.SX.sym("ap", len(free))
    q, v, a = [ca.SX(0)] * L.n_link, [ca.SX(0)] * L.n_link, [ca.SX(0)] * L.n_link
    for i, law in laws.items():
        th = law(tt)
        dth = ca.jacobian(th, s)
        q[i], v[i], a[i] = th, dth, ca.jacobian(dth, s)
    for r, i in enumerate(free):
        q[i], v[i], a[i] = p[r], dp[r], ap[r]
    res = model.equations_of_motion(ca.vertcat(*q), ca.vertcat(*v), ca.vertcat(*a), ca.DM.zeros(L.n_u))[free]
    # accelerations of the free coordinates: M_ff ap = -res(ap = 0), M_ff factorised at run time (MX), so that
    # a long chain's solve is not one huge expression
    parts = ca.Function("parts", [p, dp, t0, s], [ca.jacobian(res, ap), ca.substitute(res, ap, ca.SX.zeros(len(free)))])
    x, t0m, sm = ca.MX.sym("x", 2 * len(free)), ca.MX.sym("t0"), ca.MX.sym("s")
    M, b = parts(x[: len(free)], x[len(free):], t0m, sm)
    ode = ca.vertcat(x[len(free):], -ca.solve(M, b, "qr"))
    h = np.diff(t)
    if np.ptp(h) > 1e-9 * h.max():
        raise ValueError("prescribed motion needs an evenly spaced grid")
    step = ca.integrator("prescribed", "cvodes", {"x": x, "p": t0m, "t": sm, "ode": ode}, 0.0, float(h[0]),
                         {"reltol": rtol, "abstol": atol, "max_num_steps": 20000})
    X = np.full((len(t), 2 * len(free)), np.nan)
    X[0] = 0.0
    for k in range(len(t) - 1):  # one interval a call: a model that diverges stops where it does
        try:
            X[k + 1] = np.array(step(x0=X[k], p=t[k])["xf"]).ravel()
        except RuntimeError:  # CVODES gave up: the model diverges (or is too stiff for the tolerances)
            break
        if not np.all(np.isfinite(X[k + 1])) or np.abs(X[k + 1]).max() > DIVERGED:
            X[k + 1] = np.nan
            break
    law_values = ca.Function("laws", [s], [ca.vertcat(*[laws[i](s) for i in laws])])
    Q = np.zeros((len(t), L.n_link))
    Q[:, list(laws)] = np.array(law_values.map(len(t))(t[None, :])).T
    Q[:, free] = X[:, : len(free)]
    return Q
