"""Direct collocation of the inverse-dynamics DAE into a sparse NLP (CasADi, exact derivatives).

Two formulations share one layout (states x and motor torques u at every collocation point):

- ``exact`` tracking: the index-reduced dummy-derivative form I1 of ``ffopt.dae.forms`` (the
  same function F(t, x, xdot) the BDF solver steps), with the position, velocity and
  acceleration constraints of the tool path (Moberg & Hanssen eq. 34) at every collocation point. u is
  tied to the states by the motor equations (Moberg & Hanssen eq. 1f), u = input_torque(q, v, a), so
  bounds on u act on the physical torques. Collocating the index-3 form instead loses order in
  the algebraic variables (u is the 4th derivative of the path for elastic gears) and gives
  torques that do not reproduce the path in simulation (see results/nlp.md).
- ``band`` / ``penalty`` tracking: the forward model x = [q; v], xdot_q = v,
  equations_of_motion(q, v, xdot_v, u) = 0, with u a free input, and the tool error
  Gamma(q) - theta(t) kept in a band (inequality) or penalised in the objective. This is the
  form for motions that cannot be tracked exactly under torque bounds.

DC-motor electrics (``model.drives``): u is the armature voltage and the currents are states (last
in x): in the exact form the I1 DAE's drive rows tie them to the motor equations and u is the
voltage recovered from the circuit, u = L i' + R i + C_v i_j vm; in the forward form the circuit
is a row i' = (u - R i - C_v i_j vm) / L. ``torque_max`` then bounds the torque i_j C_t i through
the current states, ``voltage_max`` bounds u.

Variables and rows are scaled: x = s_x * x_scaled (nominal values from the initial guess),
u = s_u * u_scaled, and each equation row is divided by its largest Jacobian entry at the
initial guess (one factor per equation, shared by all collocation points).

Derivatives: ``KernelAssembly`` and ``StructuredDerivatives`` assemble g, the Jacobian of g, f, its gradient
and the Hessian of the Lagrangian from small kernels: one interval's SX residual and derivatives (K
evaluations), one collocation point's output error (penalty and band rows), and the constant quadratic
objective and linear rows computed once. The kernels are compiled C (``ffopt.nlp.compiled``, cached on
disk) unless ``settings.compile`` is False. The Newton solver of square NLPs and the cyipopt backend use
them; nlpsol uses CasADi's AD of the whole MX graph (10x slower per Hessian on E12 than the kernels in
CasADi's virtual machine).

Held input (the [output] table, ``settings.hold``): the NLP plans exactly what a controller applies.
The free inputs are then the values Uc on the control grid of period sample_time (m intervals per
sample): one value per sample for ``zoh`` (piecewise constant), one per sample instant for ``linear``
(continuous piecewise linear, node values). The collocation-point torques U stay in the layout (so the
interval-wise derivatives are unchanged) and are tied to Uc by the linear rows U = Uc P' (P: the hold's
interpolation weights at the collocation times; a Radau point at an interval end belongs to the
sample on its left). Causal plans with a linear hold start from the rest torque (node 0 fixed). The
smoothness objective and the torque-rate bound then act on the control grid: slopes between the nodes
(linear), jumps from one sample to the next over the sample time (zoh, the first from the rest torque).

The parts: ``ffopt.nlp.grid`` (the collocation grid, the layout of w and the hold's control grid, immutable),
``ffopt.nlp.kernels`` (the model at one point and the kernels with their sparsity patterns), ``KernelAssembly``
(the kernels evaluated on the whole w, given the scales) and ``Transcription.build``, which returns the scaled
NLP with its scales (``ffopt.nlp.problem``); the transcription itself never changes after ``__init__``.

The horizon is [-pre_actuation_s, t_end + post_actuation_s]; the reference is held at its
end values outside [0, t_end]. ``noncausal`` frees the initial state (penalised towards rest)
so that unstable zero dynamics can be pre-actuated (stable inversion).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import casadi as ca
import numpy as np
import scipy.sparse

from ffopt.dae.forms import build_inverse_dae
from ffopt.errors import ProblemError
from ffopt.models.flexible import FlexibleModel
from ffopt.nlp.collocation import CollocationRule, collocation_rule
from ffopt.nlp.compiled import IntervalInputs
from ffopt.nlp.grid import Grid, HoldGrid
from ffopt.nlp.kernels import Kernels, PointModel
from ffopt.nlp.problem import NlpProblem, Scales
from ffopt.nlp.settings import OBJECTIVES, TRACKING, NlpSettings

REST_WEIGHT = 1e2  # weight of the rest conditions at the ends of a non-causal horizon

__all__ = ["REST_WEIGHT", "Guess", "KernelAssembly", "NlpProblem", "ObjectiveParts", "Scales", "SparseAssembly",
           "StructuredDerivatives", "Transcription", "check_formulation", "per_motor"]


@dataclass
class Guess:
    """Initial guess on the collocation times: x (n_x, Kd), u (N, Kd) and the start state x0."""

    x0: np.ndarray
    x: np.ndarray
    u: np.ndarray


def check_formulation(s: NlpSettings) -> None:
    """ProblemError unless nlp.tracking and nlp.objective name a formulation the transcription has."""
    if s.tracking not in TRACKING:
        raise ProblemError(f"nlp.tracking: must be one of {', '.join(TRACKING)}; got {s.tracking!r}")
    if s.objective not in OBJECTIVES:
        raise ProblemError(f"nlp.objective: must be one of {', '.join(OBJECTIVES)}; got {s.objective!r}")
    if s.objective == "tracking" and s.tracking == "exact":
        raise ProblemError("nlp.objective: 'tracking' needs nlp.tracking = 'band' or 'penalty'")


def per_motor(model: FlexibleModel, values, name: str) -> np.ndarray:
    """One positive value per motor, in the order of the actuated joints (never broadcast); ProblemError
    naming the setting ``name`` otherwise."""
    arr = np.atleast_1d(np.asarray(values, float)).ravel()
    n_u = model.layout.n_u
    if arr.size != n_u:
        motors = ", ".join(model.chain.joints[i].name for i in model.layout.actuated)
        raise ProblemError(f"{name}: expected {n_u} values (one per motor: {motors}), got {arr.size}")
    if np.any(arr <= 0):
        raise ProblemError(f"{name}: must be > 0, got {arr.tolist()}")
    return arr


class Transcription:
    """The collocation NLP of one problem: its grid, hold, point model and kernels (fixed at construction);
    ``build`` returns the scaled NLP, ``unpack`` maps a solution back."""

    def __init__(self, model: FlexibleModel, reference, settings: NlpSettings, q_rest: np.ndarray,
                 noncausal: bool = False, dummy: tuple[int, ...] | None = None, progress=None):
        """progress: called with a line before a stage that takes seconds (compiling the kernels)."""
        s = settings
        check_formulation(s)
        self.model, self.reference, self.settings = model, reference, s
        self.rule: CollocationRule = collocation_rule(s.scheme, s.degree)
        self.noncausal = noncausal
        self.exact = s.tracking == "exact"
        self.dae = build_inverse_dae(model, reference, "I1", dummy) if self.exact else None
        nq = model.layout.nq
        n_x = self.dae.n_x if self.exact else 2 * nq + model.n_z
        self.q_rest = np.asarray(q_rest, float)
        self.u_rest, z_rest = model.rest_input(self.q_rest)
        self.x_rest = np.concatenate([self.q_rest, np.zeros(n_x - nq - model.n_z), z_rest])
        self.points: PointModel = self._point_model(n_x)
        grid = Grid.over(self.rule, -float(s.pre_actuation_s), float(reference.t_end + s.post_actuation_s), s.step,
                         n_x, model.layout.n_u, len(model.outputs))
        self.hold: HoldGrid | None = self._hold_grid(grid)
        self.grid: Grid = grid.with_hold(self.hold)
        formulation = (s.scheme, s.degree, self.exact, self.dae.dummy if self.exact else None)
        self.kernels = Kernels(self.points, self.rule, model, reference, formulation, s.compile, progress)

    # the grid's sizes and times, by their usual names
    nq = property(lambda self: self.model.layout.nq)
    n_x = property(lambda self: self.grid.n_x)
    N = property(lambda self: self.grid.n_u)
    n_out = property(lambda self: self.grid.n_out)
    n_eq = property(lambda self: self.points.n_eq)
    K = property(lambda self: self.grid.K)
    d = property(lambda self: self.grid.d)
    h = property(lambda self: self.grid.h)
    t0 = property(lambda self: self.grid.t0)
    tf = property(lambda self: self.grid.tf)
    tc = property(lambda self: self.grid.tc)

    def per_motor(self, values, name: str) -> np.ndarray:
        """``per_motor`` of this transcription's model."""
        return per_motor(self.model, values, name)

    def _hold_grid(self, grid: Grid) -> HoldGrid | None:
        """The control grid of a held input (settings.hold), None without one."""
        s = self.settings
        if s.hold is None:
            return None
        from ffopt.io.problem import HOLDS, samples_per_period

        if s.hold not in HOLDS:
            raise ProblemError(f"output.hold: must be one of {', '.join(HOLDS)}; got {s.hold!r}")
        if self.exact:
            raise ProblemError("output.hold: a held input cannot track the path exactly (the motor equations fix u "
                               "at every collocation point); use nlp.tracking = 'penalty' or 'band'")
        m = samples_per_period(s.step if s.sample_time is None else s.sample_time, s.step,
                               "output.sample_time (with nlp.step)")
        return HoldGrid.on(s.hold, m, grid.t0, grid.h, grid.K, grid.d, grid.tc)

    # ------------------------------------------------------------------ model at one point
    def _point_model(self, n_x: int) -> PointModel:
        """eq(t, x, xdot, u) -> residual rows; err(t, x) -> Gamma(q) - theta(t); accel(x, xdot); input(x, xdot)."""
        m, nq = self.model, self.model.layout.nq
        t = ca.SX.sym("t")
        x, xd, u = ca.SX.sym("x", n_x), ca.SX.sym("xd", n_x), ca.SX.sym("u", m.layout.n_u)
        q, v = x[:nq], x[nq:2 * nq]
        if self.exact:
            a = self.dae.accel(x, xd)
            u_of_x = self.dae.inputs(x, xd)[0]
            eq = ca.vertcat(self.dae.F(t, x, xd), u - u_of_x)
        else:
            a = xd[nq:2 * nq]
            z = x[2 * nq:]
            eq = ca.vertcat(xd[:nq] - v, m.equations_of_motion(q, v, a, m.drive_torque_expr(z, u)))
            if m.drives is None:
                u_of_x = m.input_torque(q, v, a)
            else:  # the armature circuit
                vm = v[m.layout.motor_of_input]
                eq = ca.vertcat(eq, xd[2 * nq:] - m.drives.current_rate(vm, z, u))
                u_of_x = m.drives.voltage(vm, z, xd[2 * nq:])
        err = m.output(q[: m.layout.n_link]) - self.reference.expression(t, 0)
        return PointModel(
            eq=ca.Function("point_eq", [t, x, xd, u], [eq], ["t", "x", "xd", "u"], ["eq"]),
            err=ca.Function("point_err", [t, x], [err], ["t", "x"], ["err"]),
            accel=ca.Function("point_accel", [x, xd], [a], ["x", "xd"], ["a"]),
            input=ca.Function("point_input", [x, xd], [u_of_x], ["x", "xd"], ["u"]))

    def interval_function(self) -> ca.Function:
        """(x_start, X (n_x, d), U (N, d), t_k, h) -> (G (n_eq, d), E (n_out, d))."""
        return self.points.interval_function(self.rule)

    def assembly(self, scales: Scales) -> "KernelAssembly":
        """The kernels evaluated on the whole scaled w under ``scales``."""
        return KernelAssembly(self.grid, self.kernels, self.points.n_eq, scales.x, scales.u)

    # ------------------------------------------------------------------ guesses
    def rest_guess(self) -> Guess:
        n = len(self.tc)
        return Guess(self.x_rest.copy(), np.tile(self.x_rest[:, None], (1, n)),
                     np.tile(self.u_rest[:, None], (1, n)))

    def guess_from_trajectory(self, traj) -> Guess:
        """Interpolate a trajectory (e.g. the BDF solution) onto the collocation times.

        Outside the trajectory's time span its end values are held (rest before and after).
        """
        def interp(table, times):
            return np.column_stack([np.interp(times, traj.t, col) for col in np.asarray(table).T]).T

        tc = self.tc
        q, v, a = (interp(arr, tc) for arr in (traj.q, traj.v, traj.a))
        u = interp(traj.u, tc)
        z = interp(traj.current, tc) if self.model.n_z else np.zeros((0, len(tc)))
        if self.exact:
            x = np.vstack([q, v, a[list(self.dae.dummy)], z])
        else:
            x = np.vstack([q, v, z])
        # causal: the fixed rest state; non-causal: the trajectory's (held) value at t0
        x0 = x[:, 0].copy() if self.noncausal else self.x_rest.copy()
        return Guess(x0, x, u)

    # ------------------------------------------------------------------ the NLP
    def build(self, guess: Guess) -> NlpProblem:
        """The scaled NLP started at ``guess``; its ``scales`` map it back (``unpack``)."""
        s, g = self.settings, self.grid
        d, K, N, n_pts = g.d, g.K, g.n_u, g.n_pts
        sx = np.maximum(np.abs(np.column_stack([guess.x0, guess.x])).max(axis=1), 1e-2)
        su = np.maximum(np.abs(guess.u).max(axis=1), np.maximum(np.abs(self.u_rest), 1.0))
        assembly = KernelAssembly(g, self.kernels, self.points.n_eq, sx, su)

        w = ca.MX.sym("w", g.n_w)
        x0s, Xs, Us = w[g.x0], ca.reshape(w[g.X], g.n_x, n_pts), ca.reshape(w[g.U], N, n_pts)
        x0 = ca.DM(sx) * x0s
        X = ca.mtimes(ca.diag(ca.DM(sx)), Xs)
        U = ca.mtimes(ca.diag(ca.DM(su)), Us)
        Xall = ca.horzcat(x0, X)
        starts = Xall[:, list(range(0, n_pts, d))]
        tk = ca.DM(g.interval_starts()).T
        G, _ = self.interval_function().map(K)(starts, X, U, tk, g.h)
        # E by its own (small) map: derivatives of the objective and band rows then never pass
        # through the interval function of the dynamics (see StructuredDerivatives)
        E = self.points.err.map(n_pts)(ca.DM(g.tc).T, X)

        w0 = self._start_point(guess, sx, su)
        row_scale = self._row_scale(assembly, w0)
        g_parts, lbg, ubg = [ca.vec(ca.mtimes(ca.diag(ca.DM(row_scale)), G))], [np.zeros(self.n_eq * n_pts)], \
            [np.zeros(self.n_eq * n_pts)]
        if g.n_ctrl:  # U at the collocation points = the held input (linear rows, scaled units)
            Ucs = ca.reshape(w[g.Uc], N, g.n_ctrl)
            g_parts.append(ca.vec(Us - ca.mtimes(Ucs, ca.DM(self.hold.P.T.tocsc()))))
            lbg.append(np.zeros(N * n_pts))
            ubg.append(np.zeros(N * n_pts))
        band = None  # (first row, 1 / band half-width) of the band rows E / tol
        if s.tracking == "band":
            tol = s.band_mm * 1e-3
            band = (sum(int(p.numel()) for p in g_parts), 1.0 / tol)
            g_parts.append(ca.vec(E) / tol)
            lbg.append(-np.ones(g.n_out * n_pts))
            ubg.append(np.ones(g.n_out * n_pts))
        dt = np.diff(np.concatenate([[g.t0], g.tc]))
        Uall = ca.horzcat(ca.DM(self.u_rest), U)
        if g.n_ctrl:  # smoothness and rate on the control grid: slopes (linear), jumps per sample (zoh)
            dt = np.diff(self.hold.t_nodes)
            Uc = ca.mtimes(ca.diag(ca.DM(su)), Ucs)
            Uall = ca.horzcat(ca.DM(self.u_rest), Uc) if self.hold.kind == "zoh" else Uc
        dU = Uall[:, 1:] - Uall[:, :-1]
        if s.torque_rate_max is not None:
            rate = self.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
            g_parts.append(ca.vec(ca.mtimes(ca.diag(ca.DM(1.0 / rate)), dU) / ca.repmat(ca.DM(dt).T, N, 1)))
            lbg.append(-np.ones(N * dt.size))
            ubg.append(np.ones(N * dt.size))

        f_quad, weights = self._objective(x0, X, U, dU, dt, sx, su)
        f = f_quad if weights is None else f_quad + ca.sum2(ca.sum1(E**2) * ca.DM(weights).T)
        # Objective scaling: the smoothness Hessian grows like 1/dt; an unscaled one spoils the
        # KKT factorisation (MUMPS pivoting, linear convergence measured on E12 at h = 1 ms).
        tau = max(self.reference.t_motion_end - self.reference.t_motion_start, 1e-3)
        obj_scale = 1.0 / max(1.0, 2.0 * tau**2 / ((g.tf - g.t0) * dt.min()))
        f, f_quad = f * obj_scale, f_quad * obj_scale
        weights = None if weights is None else weights * obj_scale
        lbx, ubx = self._bounds(sx, su)
        info = {"n_intervals": K, "h": g.h, "degree": d,
                "formulation": "I1 (dummy derivatives)" if self.exact else "forward dynamics"}
        if len(g_parts) == 1:  # g = vec(diag(row_scale) G): g and its Jacobian by the interval kernels
            info["jac_g"] = lambda w_scaled: assembly.jacobian(w_scaled, row_scale)
            info["g"] = lambda w_scaled: assembly.residual(w_scaled, row_scale)
            if self.exact and not self.noncausal and self.n_eq == g.n_x + N:  # square by stages: Newton's step
                info["newton_step"] = lambda w_scaled, r: assembly.newton_step(w_scaled, r, row_scale)
        first = np.cumsum([0] + [int(p.numel()) for p in g_parts])  # the hold and rate rows are linear in w
        linear = [(int(first[i]), p) for i, p in enumerate(g_parts) if i > 0 and (band is None or first[i] != band[0])]
        info["derivatives"] = lambda: StructuredDerivatives(  # built on demand, after the solver set info["hessian"]
            assembly, w, ObjectiveParts(f_quad, weights), linear, band, row_scale,
            constraint_curvature=info.get("hessian", "exact") == "exact")
        return NlpProblem(w, f, ca.vertcat(*g_parts), lbx, ubx, np.concatenate(lbg), np.concatenate(ubg),
                          w0, info, Scales(sx, su, row_scale, obj_scale))

    def _start_point(self, guess: Guess, sx: np.ndarray, su: np.ndarray) -> np.ndarray:
        """The scaled w of ``guess``; with a hold, its held values from the guess (zoh: mean per sample; linear:
        at the nodes) and U from them."""
        g = self.grid
        w0 = np.concatenate([guess.x0 / sx, (guess.x / sx[:, None]).ravel(order="F"),
                             (guess.u / su[:, None]).ravel(order="F")])
        if not g.n_ctrl:
            return w0
        Uc0 = self.hold.initial_values(guess.u / su[:, None], g.t0, g.tc)
        if self.hold.kind == "linear" and not self.noncausal:
            Uc0[:, 0] = self.u_rest / su
        return np.concatenate([w0[: g.U.start], (self.hold.P @ Uc0.T).ravel(), Uc0.ravel(order="F")])

    def _row_scale(self, assembly: "KernelAssembly", w0) -> np.ndarray:
        """1 / (largest Jacobian entry of each equation over all points) at the initial guess."""
        J = assembly.jacobian(w0)
        row_max = np.asarray(abs(J).max(axis=1).todense()).ravel()
        per_eq = row_max.reshape(-1, self.n_eq).max(axis=0)
        return 1.0 / np.maximum(per_eq, 1e-12)

    def _objective(self, x0, X, U, dU, dt, sx, su):
        """(f_quad, weights): the objective is f_quad + sum_j weights[j] |E_j|^2 over the collocation points j,
        f_quad quadratic in w (smoothness or effort, the rest penalties of a non-causal horizon); weights None
        without a tracking penalty."""
        s, g = self.settings, self.grid
        T = g.tf - g.t0
        tau = max(self.reference.t_motion_end - self.reference.t_motion_start, 1e-3)
        quad = np.tile(self.rule.weights * g.h, g.K)  # quadrature weights of the collocation points
        inv_su = ca.diag(ca.DM(1.0 / su))
        if s.objective == "effort":
            f = ca.sum2(ca.sum1((inv_su @ (U - ca.DM(self.u_rest))) ** 2) * ca.DM(quad).T) / T
        elif s.objective == "smoothness":
            f = ca.sum2(ca.sum1((inv_su @ dU) ** 2) / ca.DM(dt).T) * tau**2 / T
        else:
            f = 1e-6 * ca.sum2(ca.sum1((inv_su @ dU) ** 2) / ca.DM(dt).T) * tau**2 / T
        weights = None
        if s.tracking == "penalty" or s.objective == "tracking":  # penalty_weight * int |E / e_scale|^2 dt / T
            weights = s.penalty_weight * quad / ((s.band_mm * 1e-3) ** 2 * T)
        if self.noncausal:
            nq = self.nq
            inv_sx = ca.DM(1.0 / sx)
            rest_end = X[nq:2 * nq, -1] * inv_sx[nq:2 * nq]
            f = f + REST_WEIGHT * (ca.sumsqr((x0 - ca.DM(self.x_rest)) * inv_sx) + ca.sumsqr(rest_end))
        return f, weights

    def _bounds(self, sx, su):
        s, g = self.settings, self.grid
        n_x, n_pts = g.n_x, g.n_pts
        n_u = n_pts + g.n_ctrl  # torques at the collocation points, then the held values
        lbx = np.full(g.n_w, -np.inf)
        ubx = -lbx
        if not self.noncausal or self.hold is not None:
            # a held input tracks by a tight penalty, which would outweigh the soft rest penalty of a
            # non-causal start: the pre-actuation then starts from rest, where the verification starts
            lbx[: n_x] = ubx[: n_x] = self.x_rest / sx
        i0 = g.U.start
        drives = self.model.drives
        if s.torque_max is not None and drives is None:
            tmax = self.per_motor(s.torque_max, "nlp.torque_max")
            lbx[i0:] = np.tile(-tmax / su, n_u)
            ubx[i0:] = np.tile(tmax / su, n_u)
        if s.torque_max is not None and drives is not None:  # |i_j C_t i| <= torque_max on the current states
            imax = self.per_motor(s.torque_max, "nlp.torque_max") / np.abs(drives.torque_per_ampere)
            cols = (np.arange(1, 1 + n_pts)[:, None] * n_x + (n_x - drives.n_states)
                    + np.arange(drives.n_states)[None, :]).ravel()
            zscale = sx[n_x - drives.n_states:]
            lbx[cols] = np.maximum(lbx[cols], np.tile(-imax / zscale, n_pts))
            ubx[cols] = np.minimum(ubx[cols], np.tile(imax / zscale, n_pts))
        if s.voltage_max is not None:
            vmax = self.per_motor(s.voltage_max, "nlp.voltage_max")
            lbx[i0:] = np.tile(-vmax / su, n_u)
            ubx[i0:] = np.tile(vmax / su, n_u)
        if self.hold is not None and self.hold.kind == "linear" and not self.noncausal:
            j0 = g.Uc.start  # from rest: the torque starts at the rest torque
            lbx[j0:j0 + g.n_u] = ubx[j0:j0 + g.n_u] = self.u_rest / su
        return lbx, ubx

    # ------------------------------------------------------------------ back to physics
    def unpack(self, w_opt: np.ndarray, scales: Scales) -> dict:
        """Solution on [t0, collocation times]: t, x, u, a, tool error E and residual G (w_opt scaled by
        ``scales``, those of the NLP ``build`` returned)."""
        g = self.grid
        w_opt = np.asarray(w_opt, float).ravel()
        nx, n_pts, N = g.n_x, g.n_pts, g.n_u
        sx, su = scales.x, scales.u
        x0 = w_opt[g.x0] * sx
        X = w_opt[g.X].reshape(n_pts, nx).T * sx[:, None]
        U = w_opt[g.U].reshape(n_pts, N).T * su[:, None]
        Uc = w_opt[g.Uc.start:].reshape(g.n_ctrl, N).T * su[:, None]
        Xall = np.column_stack([x0, X])
        xd = g.state_derivatives(Xall)
        xd0 = Xall[:, : g.d + 1] @ self.rule.deriv_start / g.h
        xd_all = np.column_stack([xd0, xd])
        a = np.array(self.points.accel.map(n_pts + 1)(Xall, xd_all))
        u0 = np.array(self.points.input(x0, xd0)).ravel()
        E = np.array(self.points.err.map(n_pts)(g.tc[None, :], X))  # once: not worth compiling the point kernels
        G = self.assembly(scales).residual(w_opt).reshape(n_pts, self.n_eq).T
        return {"t": np.concatenate([[g.t0], g.tc]), "x": Xall, "u": np.column_stack([u0, U]),
                "a": a, "E": E, "G": G, "u_held": Uc}


class KernelAssembly:
    """The dynamics rows vec(diag(row_scale) G), their Jacobian and Hessian, and the output errors of the whole
    scaled w, assembled from K evaluations of the interval kernels (K d of the point kernels) under the variable
    scales sx, su. The kernels read their inputs from w in place (layout: ``ffopt.nlp.grid``)."""

    def __init__(self, grid: Grid, kernels: Kernels, n_eq: int, sx: np.ndarray, su: np.ndarray):
        self.grid, self.kernels, self.n_eq = grid, kernels, n_eq
        self.sx, self.su = sx, su

    def point_inputs(self, w_scaled, a=None, mu=None) -> IntervalInputs:
        """The point kernels' inputs of every collocation point (t_j, x_j, sx[, a_j, mu_j]) from the scaled w."""
        nx, n_pts = self.grid.n_x, self.grid.n_pts
        w = np.ascontiguousarray(w_scaled, dtype=float).ravel()
        inputs = IntervalInputs(arrays=[self.grid.tc, w, self.sx], offsets=[0, nx, 0], strides=[1, nx, 0],
                                sizes=[1, nx, nx], K=n_pts)
        for arr, n in ((a, 1), (mu, self.grid.n_out)):
            if arr is not None:
                _append_input(inputs, arr, n)
        return inputs

    def interval_inputs(self, w_scaled, row_scale=None, lam=None) -> IntervalInputs:
        """The interval kernels' inputs of every interval, read from the scaled w (layout [x0; X; U; Uc]) in
        place: interval k starts at the point before it (x0 for k = 0), its X and U blocks are contiguous."""
        g = self.grid
        d, K, nx, N = g.d, g.K, g.n_x, g.n_u
        w = np.ascontiguousarray(w_scaled, dtype=float).ravel()
        rs = np.ones(self.n_eq) if row_scale is None else np.asarray(row_scale, float)
        inputs = IntervalInputs(
            arrays=[w, w, w, g.interval_starts(), np.array([g.h]), self.sx, self.su, rs],
            offsets=[0, nx, nx * (1 + K * d), 0, 0, 0, 0, 0], strides=[nx * d, nx * d, N * d, 1, 0, 0, 0, 0],
            sizes=[nx, nx * d, N * d, 1, 1, nx, N, self.n_eq], K=K)
        if lam is not None:  # multipliers of vec(diag(rs) G), interval by interval
            _append_input(inputs, lam, self.n_eq * d)
        return inputs

    @cached_property
    def jacobian_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """Global (row, column) of every local Jacobian nonzero of every interval, in the kernels' order."""
        rows, cols = self.kernels.jacobian().patterns["jac"]
        grow = rows[:, None] + self.n_eq * self.grid.d * np.arange(self.grid.K)[None, :]
        return grow.ravel(order="F"), self.grid.interval_columns(cols).ravel(order="F")

    @cached_property
    def hessian_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """Global (row, column) of every local nonzero of the Hessian's lower triangle of every interval."""
        r, c = self.kernels.hessian().patterns["hess"]
        return self.grid.interval_columns(r).ravel(order="F"), self.grid.interval_columns(c).ravel(order="F")

    def residual(self, w_scaled: np.ndarray, row_scale=None) -> np.ndarray:
        """vec(diag(row_scale) G) at the scaled w, by the interval kernel (row_scale None: unscaled rows)."""
        return self.kernels.jacobian()["res"].evaluate(self.interval_inputs(w_scaled, row_scale))

    def hessian_values(self, w_scaled, lam_G, row_scale=None) -> np.ndarray:
        """Values at ``hessian_indices`` of the lower triangle of the Hessian of sum lam_G * vec(diag(row_scale)
        G) w.r.t. the scaled w (row_scale None: unscaled rows)."""
        return self.kernels.hessian()["hess"].evaluate(self.interval_inputs(w_scaled, row_scale, lam_G))

    def jacobian_values(self, w_scaled: np.ndarray, row_scale=None) -> np.ndarray:
        """Nonzeros of d vec(diag(row_scale) G) / d w (w scaled) at ``jacobian_indices``."""
        return self.kernels.jacobian()["jac"].evaluate(self.interval_inputs(w_scaled, row_scale))

    def jacobian(self, w_scaled: np.ndarray, row_scale=None) -> scipy.sparse.csc_matrix:
        """d vec(diag(row_scale) G) / d w (w scaled) as a sparse matrix, assembled interval by interval."""
        rows, cols = self.jacobian_indices
        vals = self.jacobian_values(w_scaled, row_scale)
        shape = (self.n_eq * self.grid.n_pts, np.asarray(w_scaled).size)
        return scipy.sparse.csc_matrix((vals, (rows, cols)), shape)

    def newton_step(self, w_scaled: np.ndarray, residual: np.ndarray, row_scale) -> np.ndarray:
        """The Newton step -J^-1 residual of the square NLP g = vec(diag(row_scale) G) = 0 (causal exact
        tracking: x0 fixed, X and U free), by block forward substitution in stage order.

        Ordered interval by interval, J is block lower bidiagonal: interval k's rows depend on its own
        states and torques (a square block A_k, d (n_x + N) wide, nonsingular: given its start state the
        collocation equations fix them, as one implicit Runge-Kutta step of the DAE) and on its start
        state, the last state of interval k - 1 (B_k). So step_k = A_k^-1 (-r_k - B_k s_{k-1}), s_{k-1} the
        step of that state: one batched dense solve, then a recursion over the n_x-vectors s_k."""
        g = self.grid
        d, K, nx, N = g.d, g.K, g.n_x, g.n_u
        rows, cols = self.kernels.jacobian().patterns["jac"]
        n_rows, n_local = self.n_eq * d, nx * (1 + d) + N * d
        L = np.zeros((K, n_rows, n_local))
        L[:, rows, cols] = self.jacobian_values(w_scaled, row_scale).reshape(K, -1)
        rhs = np.concatenate([-np.asarray(residual, float).reshape(K, n_rows, 1), L[:, :, :nx]], axis=2)
        C = np.linalg.solve(L[:, :, nx:], rhs)  # [A_k^-1 (-r_k), A_k^-1 B_k]
        c, D = C[:, :, 0], C[:, :, 1:]
        last = slice(nx * (d - 1), nx * d)  # the interval's last state: the next one's start
        c_last, D_last = c[:, last], D[:, last, :]
        s = np.zeros((K, nx))  # the step of each interval's start state (x0 fixed: 0)
        for k in range(1, K):
            s[k] = c_last[k - 1] - D_last[k - 1].dot(s[k - 1])
        steps = c - np.einsum("kij,kj->ki", D, s)
        return np.concatenate([steps[:, :nx * d].ravel(), steps[:, nx * d:].ravel()])


def _append_input(inputs: IntervalInputs, arr, size: int) -> None:
    """One more kernel input, ``size`` numbers per interval (point) read from ``arr`` in order."""
    inputs.arrays.append(np.ascontiguousarray(arr, dtype=float))
    inputs.offsets.append(0)
    inputs.strides.append(size)
    inputs.sizes.append(size)


class SparseAssembly:
    """A fixed sparsity pattern assembled from (possibly repeated) index pairs: repeated entries sum."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):
        keys = np.asarray(rows, np.int64) * shape[1] + np.asarray(cols, np.int64)
        unique, self._inverse = np.unique(keys, return_inverse=True)
        self.rows, self.cols, self.shape = unique // shape[1], unique % shape[1], shape

    def values(self, vals: np.ndarray) -> np.ndarray:
        return np.bincount(self._inverse, weights=vals, minlength=self.rows.size)


@dataclass
class ObjectiveParts:
    """The scaled objective as f_quad(w) + sum_j weights[j] |E_j|^2: f_quad quadratic in w (MX), E_j the output
    error at collocation point j (weights None: no tracking penalty)."""

    f_quad: ca.MX
    weights: np.ndarray | None


class StructuredDerivatives:
    """f, its gradient, g, the Jacobian of g and the Hessian of the Lagrangian, all from small kernels.

    - the dynamics rows vec(diag(row_scale) G): the interval kernels (``KernelAssembly``);
    - the output error E_j (tracking penalty, band rows E_j / tol): the point kernels;
    - the quadratic part of the objective 0.5 w'Qw + b'w + c and the linear rows A w + a (hold and torque-rate
      rows): Q, b, c, A, a computed once (CasADi AD of those small parts, at w = 0).

    On E12 (h = 2 ms, penalty tracking) one Hessian takes ~0.002 s compiled instead of 0.19 s for CasADi's
    Hessian of the whole mapped graph (results/nlp.md).
    """

    def __init__(self, assembly: KernelAssembly, w: ca.MX, objective: ObjectiveParts, linear: list, band,
                 row_scale, constraint_curvature: bool = True):
        """constraint_curvature False: the Hessian leaves out the dynamics rows' second derivatives (their kernels are
        then never built: Gauss-Newton or L-BFGS, ``ffopt.nlp.solve.hessian_mode``)."""
        grid = assembly.grid
        self._curvature = constraint_curvature
        self.assembly, n_pts, n_w = assembly, grid.n_pts, int(w.numel())
        self.n_G, self.n_pts, self.n_w, self.n_x, self.n_out = assembly.n_eq * n_pts, n_pts, n_w, grid.n_x, grid.n_out
        self._row_scale, self._band, self._weights = row_scale, band, objective.weights
        uses_error = band is not None or objective.weights is not None
        self.n_g = self.n_G + sum(int(p.numel()) for _, p in linear) + (grid.n_out * n_pts if band is not None else 0)
        H, grad = ca.hessian(objective.f_quad, w)
        c, b, Q = (ca.Function("quad", [w], [objective.f_quad, grad, H])(np.zeros(n_w)))
        self._c, self._b = float(c), np.array(b).ravel()
        self._Q = scipy.sparse.csc_matrix(Q.sparse())
        Q_low = scipy.sparse.tril(self._Q).tocoo()
        self._A, self._a, lin_rows = self._linear_rows(w, linear)
        J_parts = [assembly.jacobian_indices, (self._A.row, self._A.col)]
        H_parts = [assembly.hessian_indices] if constraint_curvature else []
        H_parts.append((Q_low.row, Q_low.col))
        self._lin_rows = lin_rows
        if uses_error:
            patterns = assembly.kernels.point().patterns
            pts = np.arange(n_pts)[None, :]
            er, ec = (np.asarray(i)[:, None] for i in patterns["err_jac"])
            hr, hc = (np.asarray(i)[:, None] for i in patterns["err_hess"])
            nx = grid.n_x
            if band is not None:
                J_parts.append(((band[0] + grid.n_out * pts + er).ravel(order="F"), (nx * (1 + pts) + ec).ravel(order="F")))
            H_parts.append(((nx * (1 + pts) + hr).ravel(order="F"), (nx * (1 + pts) + hc).ravel(order="F")))
        self._Q_low_vals = Q_low.data
        self._A_vals = self._A.data
        self.jac = SparseAssembly(*(np.concatenate(x) for x in zip(*J_parts)), (self.n_g, n_w))
        self.hess = SparseAssembly(*(np.concatenate(x) for x in zip(*H_parts)), (n_w, n_w))

    def _linear_rows(self, w, linear):
        """(A (coo), a, rows): the linear rows A w + a of g and their global row indices."""
        if not linear:
            return scipy.sparse.coo_matrix((0, self.n_w)), np.zeros(0), np.zeros(0, np.int64)
        expr = ca.vertcat(*(p for _, p in linear))
        a, A = ca.Function("lin", [w], [expr, ca.jacobian(expr, w)])(np.zeros(self.n_w))
        rows = np.concatenate([first + np.arange(int(p.numel())) for first, p in linear])
        A = scipy.sparse.csr_matrix(A.sparse())
        A_global = scipy.sparse.coo_matrix((A.tocoo().data, (rows[A.tocoo().row], A.tocoo().col)), (self.n_g, self.n_w))
        return A_global, np.array(a).ravel(), rows

    # ---------------------------------------------------------------- the output error at the points
    def _point_kernel(self, name: str, w, a=None, mu=None) -> np.ndarray:
        return self.assembly.kernels.point()[name].evaluate(self.assembly.point_inputs(w, a, mu))

    def objective(self, w) -> float:
        # no BLAS calls (np.dot, @ on vectors) here: on a loaded machine a threaded BLAS's dot of 15k numbers took
        # 1.5 ms instead of 0.02 ms, and its spinning worker threads slowed IPOPT's factorisations down
        w = np.asarray(w, float)
        f = self._c + float(np.sum(w * (self._b + 0.5 * (self._Q @ w))))
        if self._weights is not None:
            E = self._point_kernel("err", w).reshape(self.n_pts, -1)
            f += float(np.sum(self._weights[:, None] * E * E))
        return f

    def gradient(self, w) -> np.ndarray:
        w = np.asarray(w, float)
        grad = self._Q @ w + self._b
        if self._weights is not None:  # d/dx_j of weights_j |E_j|^2, x_j contiguous in w
            grad[self.n_x: self.n_x * (1 + self.n_pts)] += self._point_kernel("err_grad", w, self._weights)
        return grad

    def constraints(self, w) -> np.ndarray:
        w = np.asarray(w, float)
        g = np.empty(self.n_g)
        g[: self.n_G] = self.assembly.residual(w, self._row_scale)
        if self._lin_rows.size:
            g[self._lin_rows] = (self._A @ w)[self._lin_rows] + self._a
        if self._band is not None:
            first, inv_tol = self._band
            g[first: first + self.n_out * self.n_pts] = self._point_kernel("err", w) * inv_tol
        return g

    def jacobian_values(self, w) -> np.ndarray:
        parts = [self.assembly.jacobian_values(w, self._row_scale), self._A_vals]
        if self._band is not None:
            parts.append(self._point_kernel("err_jac", w) * self._band[1])
        return self.jac.values(np.concatenate(parts))

    def hessian_values(self, w, lam, sigma) -> np.ndarray:
        lam = np.asarray(lam, float).ravel()
        parts = [self.assembly.hessian_values(w, lam[: self.n_G], self._row_scale)] if self._curvature else []
        parts.append(sigma * self._Q_low_vals)
        if self._weights is not None or self._band is not None:  # sigma weights_j |E_j|^2 + lam_band_j' E_j / tol
            a = sigma * self._weights if self._weights is not None else np.zeros(self.n_pts)
            mu = np.zeros(self.n_pts * self.n_out)
            if self._band is not None:
                first, inv_tol = self._band
                mu = lam[first: first + self.n_out * self.n_pts] * inv_tol
            parts.append(self._point_kernel("err_hess", w, a, mu))
        return self.hess.values(np.concatenate(parts))
