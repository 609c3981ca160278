"""The collocation NLP ordered stage by stage, for a structure-exploiting interior point (fatrop).

``Transcription.build`` lays the variables out by kind (x0, all collocation states, all
torques); a general sparse solver does not care. A stage-structured interior point (fatrop:
Vanroye, Sathya, De Schutter & Decré, "FATROP: A Fast Constrained Optimal Control Problem
Solver for Robot Trajectory Optimization and Control", IROS 2023; shipped in the casadi wheel)
factorises the KKT system by a Riccati recursion over stages instead, and needs:

- variables ordered [y_0, c_0, y_1, c_1, ..., y_{S-1}, c_{S-1}, y_S] (stage "states" y_s and
  "controls" c_s),
- constraints ordered [gap_0, path_0, gap_1, path_1, ...], the gap-closing rows of stage s being
  y_{s+1} - F_s(y_s, c_s) = 0 (coefficient +1 on y_{s+1}), the path rows depending on (y_s, c_s),
- an objective that is a sum of stage terms l_s(y_s, c_s).

A stage is one collocation interval by default (``intervals`` > 1 groups several; measured:
no gain, see results/nlp.md):

- y_s = [x at the stage start; u at the previous collocation point] (scaled). The previous torque
  is a state so that the smoothness objective and the torque-rate rows, which difference u across
  the stage boundary, stay stage-wise. y_0 holds the start state and the rest torque (fixed).
- c_s = [vec(X_s); vec(U_s)]: the M d collocation states and torques of the stage.
- gap: y_{s+1} = [X_s[:, -1]; U_s[:, -1]] (Radau: the last node is the interval end).
- path: the row-scaled collocation equations, the band rows and the torque-rate rows.

Scaling, bounds, objective and start point are those of ``Transcription.build`` (same NLP, same
optimum); the solution maps back to the transcription's layout (``StageLayout.to_transcription``)
so that ``Transcription.unpack`` and everything downstream are shared with the IPOPT backends.

Derivatives are CasADi's AD of the mapped stage function (nlpsol builds them).
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.nlp.problem import NlpProblem, Scales
from ffopt.nlp.transcription import REST_WEIGHT, Transcription


class StageLayout:
    """Index maps between the transcription's layout and the stage layout."""

    def __init__(self, tr: Transcription, M: int):
        self.tr, self.M = tr, M
        nx, N, d, K = tr.n_x, tr.N, tr.d, tr.K
        if K % M:
            raise ValueError(f"intervals per stage {M} does not divide the {K} intervals")
        self.S, self.P = K // M, M * d  # stages, collocation points per stage
        self.ny, self.nc = nx + N, (nx + N) * self.P
        self.n_stage = self.ny + self.nc
        self.n_w = self.S * self.n_stage + self.ny
        n_pts = K * d
        iX0, iU0 = nx, nx * (1 + n_pts)  # first collocation state / torque in the transcription's w
        s = np.arange(self.S)
        P = self.P
        cX = iX0 + (s[:, None] * P * nx + np.arange(P * nx)[None, :])
        cU = iU0 + (s[:, None] * P * N + np.arange(P * N)[None, :])
        self.c_src = np.hstack([cX, cU])  # (S, nc): c_s from the transcription's w
        self.c_dst = s[:, None] * self.n_stage + self.ny + np.arange(self.nc)[None, :]
        # y_s for s >= 1 (and y_S): the last collocation state and torque of stage s - 1
        t = np.arange(1, self.S + 1)
        yX = iX0 + ((t[:, None] * P - 1) * nx + np.arange(nx)[None, :])
        yU = iU0 + ((t[:, None] * P - 1) * N + np.arange(N)[None, :])
        self.y_src = np.hstack([yX, yU])  # (S, ny)
        self.y_dst = t[:, None] * self.n_stage + np.arange(self.ny)[None, :]

    def from_transcription(self, w: np.ndarray, u_prev0: np.ndarray) -> np.ndarray:
        """Stage-layout vector from a transcription-layout one (y_0's torque part: u_prev0)."""
        nx, out = self.tr.n_x, np.zeros(self.n_w)
        out[:nx] = w[:nx]
        out[nx: self.ny] = u_prev0
        out[self.c_dst.ravel()] = w[self.c_src.ravel()]
        out[self.y_dst.ravel()] = w[self.y_src.ravel()]
        return out

    def to_transcription(self, v: np.ndarray) -> np.ndarray:
        """Transcription-layout vector from a stage-layout one (the y_s copies are dropped)."""
        tr = self.tr
        w = np.zeros(tr.n_x * (1 + tr.K * tr.d) + tr.N * tr.K * tr.d)
        w[: tr.n_x] = v[: tr.n_x]
        w[self.c_src.ravel()] = v[self.c_dst.ravel()]
        return w


@dataclass
class StageNlp:
    """The stage-ordered NLP: variables W, objective f and constraints g (MX), bounds, start point,
    and fatrop's structure (N stages; nx, nu, ng per stage; which rows are equalities)."""

    w: ca.MX
    f: ca.MX
    g: ca.MX
    layout: StageLayout
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    w0: np.ndarray
    equality: list
    n_stages: int
    nx: list
    nu: list
    ng: list

    def structure_options(self) -> dict:
        """The structure given explicitly (fatrop's structure_detection = 'manual')."""
        return {"structure_detection": "manual", "N": self.n_stages, "nx": self.nx, "nu": self.nu, "ng": self.ng}


def _stage_function(tr: Transcription, M: int, scales: Scales) -> tuple[ca.Function, list, list, list]:
    """(y, c, t_s) -> (path rows, [X[:, -1]; U[:, -1]], objective term) of M intervals (SX);
    with the path rows' bounds and equality flags."""
    s, d, nx, N = tr.settings, tr.d, tr.n_x, tr.N
    P = M * d
    ny, nc = nx + N, (nx + N) * P
    sx, su, row_scale = scales.x, scales.u, scales.rows
    T = tr.tf - tr.t0
    tau = max(tr.reference.t_motion_end - tr.reference.t_motion_start, 1e-3)
    dt = np.tile(tr.h * np.diff(np.concatenate([[0.0], tr.rule.tau])), M)  # spacing of the points
    quad = np.tile(tr.rule.weights * tr.h, M)
    y, c, ts = ca.SX.sym("y", ny), ca.SX.sym("c", nc), ca.SX.sym("ts")
    x = ca.DM(sx) * y[:nx]
    u_prev = ca.DM(su) * y[nx:]
    Xs = ca.reshape(c[: nx * P], nx, P)
    Us = ca.reshape(c[nx * P:], N, P)
    X = ca.diag(ca.DM(sx)) @ Xs
    U = ca.diag(ca.DM(su)) @ Us
    interval = tr.interval_function()
    Gs, Es = [], []
    for i in range(M):
        start = x if i == 0 else X[:, i * d - 1]
        G, E = interval(start, X[:, i * d:(i + 1) * d], U[:, i * d:(i + 1) * d], ts + i * tr.h, tr.h)
        Gs.append(G)
        Es.append(E)
    G, E = ca.horzcat(*Gs), ca.horzcat(*Es)
    path = [ca.vec(ca.diag(ca.DM(row_scale)) @ G)]
    lbp, ubp = [np.zeros(tr.n_eq * P)], [np.zeros(tr.n_eq * P)]
    eq = [True] * (tr.n_eq * P)
    if s.tracking == "band":
        path.append(ca.vec(E) / (s.band_mm * 1e-3))
        lbp.append(-np.ones(tr.n_out * P))
        ubp.append(np.ones(tr.n_out * P))
        eq += [False] * (tr.n_out * P)
    Uall = ca.horzcat(u_prev, U)
    dU = Uall[:, 1:] - Uall[:, :-1]
    if s.torque_rate_max is not None:
        rate = tr.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
        path.append(ca.vec(ca.diag(ca.DM(1.0 / rate)) @ dU / ca.repmat(ca.DM(dt).T, N, 1)))
        lbp.append(-np.ones(N * P))
        ubp.append(np.ones(N * P))
        eq += [False] * (N * P)
    inv_su = ca.diag(ca.DM(1.0 / su))
    smooth = ca.sum2(ca.sum1((inv_su @ dU) ** 2) / ca.DM(dt).T) * tau**2 / T
    if s.objective == "effort":
        fk = ca.sum2(ca.sum1((inv_su @ (U - ca.DM(tr.u_rest))) ** 2) * ca.DM(quad).T) / T
    elif s.objective == "smoothness":
        fk = smooth
    else:
        fk = 1e-6 * smooth
    if s.tracking == "penalty" or s.objective == "tracking":
        fk = fk + s.penalty_weight * ca.sum2(ca.sum1((E / (s.band_mm * 1e-3)) ** 2) * ca.DM(quad).T) / T
    last = ca.vertcat(Xs[:, P - 1], Us[:, P - 1])
    fun = ca.Function("stage", [y, c, ts], [ca.vertcat(*path), last, fk], ["y", "c", "ts"], ["path", "last", "f"])
    return fun, np.concatenate(lbp), np.concatenate(ubp), eq


def build_stages(tr: Transcription, nlp: NlpProblem, intervals: int = 1) -> StageNlp:
    """The stage-ordered NLP of a built transcription (``tr.build`` must have run: scales, bounds).

    intervals: collocation intervals per stage (must divide the number of intervals)."""
    nx = tr.n_x
    lay = StageLayout(tr, intervals)
    ny, S, ns = lay.ny, lay.S, lay.n_stage
    stage, lbp, ubp, eq = _stage_function(tr, intervals, nlp.scales)
    W = ca.MX.sym("W", lay.n_w)
    body = ca.reshape(W[: S * ns], ns, S)
    Y, C, yS = body[:ny, :], body[ny:, :], W[S * ns:]
    ts = ca.DM(tr.t0 + tr.h * intervals * np.arange(S)).T
    path, last, F = stage.map(S)(Y, C, ts)
    g = ca.vec(ca.vertcat(ca.horzcat(Y[:, 1:], yS) - last, path))  # per stage: gap rows, then path rows
    f = ca.sum2(F)
    if tr.noncausal:  # the rest penalties of Transcription._objective: start state (y_0), end velocities (y_S)
        f = f + REST_WEIGHT * (ca.sumsqr(Y[:nx, 0] - ca.DM(tr.x_rest / nlp.scales.x)) + ca.sumsqr(yS[tr.nq:2 * tr.nq]))
    f = f * nlp.scales.objective
    lbx, ubx = np.full(lay.n_w, -np.inf), np.full(lay.n_w, np.inf)
    lbx[:nx], ubx[:nx] = nlp.lbx[:nx], nlp.ubx[:nx]
    lbx[nx:ny] = ubx[nx:ny] = tr.u_rest / nlp.scales.u  # the torque before the horizon: rest (as in build)
    lbx[lay.c_dst.ravel()] = nlp.lbx[lay.c_src.ravel()]
    ubx[lay.c_dst.ravel()] = nlp.ubx[lay.c_src.ravel()]
    w0 = lay.from_transcription(nlp.w0, tr.u_rest / nlp.scales.u)
    lb_stage = np.concatenate([np.zeros(ny), lbp])
    ub_stage = np.concatenate([np.zeros(ny), ubp])
    return StageNlp(W, f, g, lay, lbx, ubx, np.tile(lb_stage, S), np.tile(ub_stage, S), w0,
                    ([True] * ny + eq) * S, S, [ny] * (S + 1), [lay.nc] * S + [0], [lbp.size] * S + [0])
