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

Derivatives: ``G_jacobian`` and ``StructuredDerivatives`` assemble g, the Jacobian of g, f, its gradient
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

The horizon is [-pre_actuation_s, t_end + post_actuation_s]; the reference is held at its
end values outside [0, t_end]. ``noncausal`` frees the initial state (penalised towards rest)
so that unstable zero dynamics can be pre-actuated (stable inversion).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
import scipy.sparse

from ffopt.cache import per_model
from ffopt.dae.forms import build_inverse_dae
from ffopt.errors import ProblemError
from ffopt.models.flexible import FlexibleModel
from ffopt.nlp.collocation import CollocationRule, collocation_rule, collocation_times
from ffopt.nlp.compiled import IntervalInputs, IntervalKernel, compile_kernels
from ffopt.nlp.settings import OBJECTIVES, TRACKING, NlpSettings
_PATTERNS = {"jac": ("_jac_pattern",), "hess": ("_hess_pattern",), "pt": ("_err_jac_pattern", "_err_hess_pattern")}
REST_WEIGHT = 1e2  # weight of the rest conditions at the ends of a non-causal horizon


@dataclass
class NlpProblem:
    """A scaled NLP: min f(w) s.t. lbg <= g(w) <= ubg, lbx <= w <= ubx, with a start point."""

    w: ca.MX
    f: ca.MX
    g: ca.MX
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    w0: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def n_variables(self) -> int:
        return int(self.w.numel())

    @property
    def n_constraints(self) -> int:
        return int(self.g.numel())


@dataclass
class Guess:
    """Initial guess on the collocation times: x (n_x, Kd), u (N, Kd) and the start state x0."""

    x0: np.ndarray
    x: np.ndarray
    u: np.ndarray


_KERNEL_WHAT = {"jac": "interval Jacobians", "hess": "interval Hessians", "pt": "point output errors"}


class Transcription:
    """The collocation NLP of one problem; builds the CasADi NLP and maps solutions back."""

    def __init__(self, model: FlexibleModel, reference, settings: NlpSettings, q_rest: np.ndarray,
                 noncausal: bool = False, dummy: tuple[int, ...] | None = None, progress=None):
        """progress: called with a line before a stage that takes seconds (compiling the kernels)."""
        self.say = progress or (lambda msg: None)
        s = settings
        if s.tracking not in TRACKING:
            raise ProblemError(f"nlp.tracking: must be one of {', '.join(TRACKING)}; got {s.tracking!r}")
        if s.objective not in OBJECTIVES:
            raise ProblemError(f"nlp.objective: must be one of {', '.join(OBJECTIVES)}; got {s.objective!r}")
        if s.objective == "tracking" and s.tracking == "exact":
            raise ProblemError("nlp.objective: 'tracking' needs nlp.tracking = 'band' or 'penalty'")
        self.model, self.reference, self.settings = model, reference, s
        self.rule: CollocationRule = collocation_rule(s.scheme, s.degree)
        self.noncausal = noncausal
        L = model.layout
        self.nq, self.N, self.n_out = L.nq, L.n_u, len(model.outputs)
        self.t0 = -float(s.pre_actuation_s)
        self.tf = float(reference.t_end + s.post_actuation_s)
        self.K = max(1, int(round((self.tf - self.t0) / s.step)))
        self.h = (self.tf - self.t0) / self.K
        self.tc = collocation_times(self.rule, self.t0, self.h, self.K)
        self.d = self.rule.degree
        self.q_rest = np.asarray(q_rest, float)
        self.u_rest, z_rest = model.rest_input(self.q_rest)
        self.exact = s.tracking == "exact"
        if self.exact:
            self.dae = build_inverse_dae(model, reference, "I1", dummy)
            self.n_x = self.dae.n_x
        else:
            self.dae = None
            self.n_x = 2 * self.nq + model.n_z
        self.x_rest = np.concatenate([self.q_rest, np.zeros(self.n_x - self.nq - model.n_z), z_rest])
        self._point = self._point_functions()
        self._hold_grid()

    def _hold_grid(self):
        """The control grid of a held input: nodes (interval indices), times and weights P (Kd, n_ctrl)."""
        s = self.settings
        self.hold = s.hold
        if s.hold is None:
            self.n_ctrl, self.P = 0, None
            return
        from ffopt.io.problem import HOLDS, samples_per_period
        from ffopt.trajectory import sample_nodes

        if s.hold not in HOLDS:
            raise ProblemError(f"output.hold: must be one of {', '.join(HOLDS)}; got {s.hold!r}")
        if self.exact:
            raise ProblemError("output.hold: a held input cannot track the path exactly (the motor equations fix u "
                               "at every collocation point); use nlp.tracking = 'penalty' or 'band'")
        self.m = samples_per_period(s.step if s.sample_time is None else s.sample_time, s.step,
                                    "output.sample_time (with nlp.step)")
        self.nodes = sample_nodes(self.K, self.m)
        self.t_nodes = self.t0 + self.h * self.nodes
        k = np.repeat(np.arange(self.K), self.d)  # interval of each collocation point
        sample = np.searchsorted(self.nodes, k, side="right") - 1
        n_pts = self.K * self.d
        rows = np.arange(n_pts)
        if s.hold == "zoh":
            self.n_ctrl = len(self.nodes) - 1
            P = scipy.sparse.csr_matrix((np.ones(n_pts), (rows, sample)), (n_pts, self.n_ctrl))
        else:
            self.n_ctrl = len(self.nodes)
            theta = (self.tc - self.t_nodes[sample]) / (self.t_nodes[sample + 1] - self.t_nodes[sample])
            P = scipy.sparse.csr_matrix((np.concatenate([1.0 - theta, theta]),
                                         (np.concatenate([rows, rows]), np.concatenate([sample, sample + 1]))),
                                        (n_pts, self.n_ctrl))
        self.P = P  # sparse (Kd, n_ctrl): U = Uc P'
        self._sample_of_point = sample

    # ------------------------------------------------------------------ model at one point
    def _point_functions(self):
        """eq(t, x, xdot, u) -> residual rows; err(t, x) -> Gamma(q) - theta(t); accel(x, xdot)."""
        m, nq = self.model, self.nq
        t = ca.SX.sym("t")
        x, xd, u = ca.SX.sym("x", self.n_x), ca.SX.sym("xd", self.n_x), ca.SX.sym("u", self.N)
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
        return {
            "eq": ca.Function("point_eq", [t, x, xd, u], [eq], ["t", "x", "xd", "u"], ["eq"]),
            "err": ca.Function("point_err", [t, x], [err], ["t", "x"], ["err"]),
            "accel": ca.Function("point_accel", [x, xd], [a], ["x", "xd"], ["a"]),
            "input": ca.Function("point_input", [x, xd], [u_of_x], ["x", "xd"], ["u"]),
        }

    @property
    def n_eq(self) -> int:
        return int(self._point["eq"].size1_out(0))

    def interval_function(self) -> ca.Function:
        """(x_start, X (n_x, d), U (N, d), t_k, h) -> (G (n_eq, d), E (n_out, d))."""
        d, r = self.d, self.rule
        xs = ca.SX.sym("xs", self.n_x)
        X = ca.SX.sym("X", self.n_x, d)
        U = ca.SX.sym("U", self.N, d)
        tk, h = ca.SX.sym("tk"), ca.SX.sym("h")
        P = ca.horzcat(xs, X)
        G, E = [], []
        for j in range(d):
            xd = P @ ca.DM(r.deriv[:, j]) / h
            tj = tk + r.tau[j] * h
            G.append(self._point["eq"](tj, X[:, j], xd, U[:, j]))
            E.append(self._point["err"](tj, X[:, j]))
        return ca.Function("interval", [xs, X, U, tk, h], [ca.horzcat(*G), ca.horzcat(*E)],
                           ["xs", "X", "U", "tk", "h"], ["G", "E"])

    def _scaled_interval(self):
        """One interval in the NLP's scaled variables: the inputs (xs, X, U, tk, h, sx, su, rs) of the kernels
        (``ffopt.nlp.compiled``), the row-scaled residual vec(diag(rs) G) and the variables [xs; X; U] (SX)."""
        d, nx, N = self.d, self.n_x, self.N
        xs, X, U = ca.SX.sym("xs", nx), ca.SX.sym("X", nx * d), ca.SX.sym("U", N * d)
        tk, h = ca.SX.sym("tk"), ca.SX.sym("h")
        sx, su, rs = ca.SX.sym("sx", nx), ca.SX.sym("su", N), ca.SX.sym("rs", self.n_eq)
        G, _ = self.interval_function()(sx * xs, ca.reshape(X, nx, d) * ca.repmat(sx, 1, d),
                                        ca.reshape(U, N, d) * ca.repmat(su, 1, d), tk, h)
        return [xs, X, U, tk, h, sx, su, rs], ca.vec(G * ca.repmat(rs, 1, d)), ca.vertcat(xs, X, U)

    def kernels(self, which: str) -> dict[str, IntervalKernel]:
        """The interval kernels (``ffopt.nlp.compiled``), built on first use and compiled if settings.compile:
        ``"jac"`` and ``"hess"`` of one interval, ``"pt"`` of one collocation point. Assembling the NLP's derivatives from K evaluations of
        these small functions avoids CasADi's AD of the whole MX graph (0.5 s to build at h = 1 ms on E12,
        and 0.2 s per evaluation)."""
        cache = self.__dict__.setdefault("_kernel_cache", {})
        if which in cache:
            return cache[which]
        s = self.settings
        compile = s.compile and not getattr(self, "_compile_failed", False)
        # per model and reference (the path enters the output error): a replan pays only for the numbers
        key = ("nlp_kernels", which, s.scheme, s.degree, self.exact, self.dae.dummy if self.exact else None, compile)
        by_reference = per_model(self.model, key, weakref.WeakKeyDictionary)
        hit = by_reference.get(self.reference)
        if hit is None:
            build = {"jac": self._jacobian_kernel_functions, "hess": self._hessian_kernel_functions,
                     "pt": self._point_kernel_functions}[which]
            kernels = {name: IntervalKernel(f) for name, f in build().items()}
            if compile:  # one warning if it fails, then the VM for the rest
                self._compile_failed = not compile_kernels(kernels, which, lambda: self.say(
                    f"compiling the NLP's {_KERNEL_WHAT[which]} to C (once per model; cached)"), self.say)
            patterns = {name: getattr(self, name) for name in _PATTERNS[which]}
            hit = by_reference[self.reference] = (kernels, patterns)
        kernels, patterns = hit
        self.__dict__.update(patterns)
        cache[which] = kernels
        return kernels

    def _jacobian_kernel_functions(self) -> dict[str, ca.Function]:
        """The row-scaled residual of one interval ("res") and its Jacobian ("jac") w.r.t. the scaled
        [xs; X; U], pattern in ``self._jac_pattern``."""
        ins, Gs, v = self._scaled_interval()
        J = ca.jacobian(Gs, v)
        self._jac_pattern = tuple(np.array(i) for i in J.sparsity().get_triplet())
        return {"res": ca.Function("nlp_res", ins, [Gs]), "jac": ca.Function("nlp_jac", ins, [ca.vertcat(*J.nonzeros())])}

    def _hessian_kernel_functions(self) -> dict[str, ca.Function]:
        """The lower triangle of the Hessian of lam' vec(diag(rs) G) of one interval ("hess"), pattern in
        ``self._hess_pattern``."""
        ins, Gs, v = self._scaled_interval()
        lam = ca.SX.sym("lam", Gs.numel())
        H = ca.tril(ca.hessian(ca.dot(lam, Gs), v)[0])
        self._hess_pattern = tuple(np.array(i) for i in H.sparsity().get_triplet())
        return {"hess": ca.Function("nlp_hess", ins + [lam], [ca.vertcat(*H.nonzeros())])}

    def _point_kernel_functions(self) -> dict[str, ca.Function]:
        """Kernels of one collocation point j (inputs t, scaled x_j, sx): the output error E_j ("err"), its
        Jacobian w.r.t. x_j ("err_jac", pattern ``self._err_jac_pattern``), the gradient of a |E_j|^2
        ("err_grad", input a) and the lower triangle of the Hessian of a |E_j|^2 + mu' E_j ("err_hess", inputs
        a, mu; pattern ``self._err_hess_pattern``): the tracking penalty and the band rows."""
        t, xs, sx = ca.SX.sym("t"), ca.SX.sym("xs", self.n_x), ca.SX.sym("sx", self.n_x)
        a, mu = ca.SX.sym("a"), ca.SX.sym("mu", self.n_out)
        E = self._point["err"](t, sx * xs)
        J = ca.jacobian(E, xs)
        H = ca.tril(ca.hessian(a * ca.sumsqr(E) + ca.dot(mu, E), xs)[0])
        self._err_jac_pattern = tuple(np.array(i) for i in J.sparsity().get_triplet())
        self._err_hess_pattern = tuple(np.array(i) for i in H.sparsity().get_triplet())
        return {"err": ca.Function("nlp_err", [t, xs, sx], [E]),
                "err_jac": ca.Function("nlp_err_jac", [t, xs, sx], [ca.vertcat(*J.nonzeros())]),
                "err_grad": ca.Function("nlp_err_grad", [t, xs, sx, a], [ca.gradient(a * ca.sumsqr(E), xs)]),
                "err_hess": ca.Function("nlp_err_hess", [t, xs, sx, a, mu], [ca.vertcat(*H.nonzeros())])}

    def _point_inputs(self, w_scaled, a=None, mu=None) -> IntervalInputs:
        """The point kernels' inputs of every collocation point (t_j, x_j, sx[, a_j, mu_j]) from the scaled w."""
        nx, n_pts = self.n_x, self.K * self.d
        w = np.ascontiguousarray(w_scaled, dtype=float).ravel()
        inputs = IntervalInputs(arrays=[self.tc, w, self.sx], offsets=[0, nx, 0], strides=[1, nx, 0],
                                sizes=[1, nx, nx], K=n_pts)
        for arr, n in ((a, 1), (mu, self.n_out)):
            if arr is not None:
                inputs.arrays.append(np.ascontiguousarray(arr, dtype=float))
                inputs.offsets.append(0)
                inputs.strides.append(n)
                inputs.sizes.append(n)
        return inputs

    def _jacobian_assembly(self):
        """Global (row, column) indices of every local Jacobian nonzero of every interval."""
        if hasattr(self, "_jac_rows"):
            return
        self.kernels("jac")
        rows, cols = self._jac_pattern
        grow = rows[:, None] + self.n_eq * self.d * np.arange(self.K)[None, :]
        self._jac_rows, self._jac_cols = grow.ravel(order="F"), self._local_to_global(cols).ravel(order="F")

    def _local_to_global(self, local: np.ndarray) -> np.ndarray:
        """Global w indices (n_local, K) of the local interval columns [xs; vec(X); vec(U)]."""
        d, K, nx, N = self.d, self.K, self.n_x, self.N
        n_state, k = nx * (d + 1), np.arange(K)[None, :]
        local = np.asarray(local)[:, None]
        return np.where(local < n_state, local + nx * d * k, nx * (1 + K * d) + N * d * k + (local - n_state))

    def _kernel_inputs(self, w_scaled, row_scale=None, lam=None) -> IntervalInputs:
        """The kernels' inputs of every interval, read from the scaled w (layout [x0; X; U; Uc]) in place:
        interval k starts at the point before it (x0 for k = 0), its X and U blocks are contiguous."""
        d, K, nx, N = self.d, self.K, self.n_x, self.N
        w = np.ascontiguousarray(w_scaled, dtype=float).ravel()
        rs = np.ones(self.n_eq) if row_scale is None else np.asarray(row_scale, float)
        inputs = IntervalInputs(
            arrays=[w, w, w, self.t0 + self.h * np.arange(K), np.array([self.h]), self.sx, self.su, rs],
            offsets=[0, nx, nx * (1 + K * d), 0, 0, 0, 0, 0], strides=[nx * d, nx * d, N * d, 1, 0, 0, 0, 0],
            sizes=[nx, nx * d, N * d, 1, 1, nx, N, self.n_eq], K=K)
        if lam is not None:  # multipliers of vec(diag(rs) G), interval by interval
            n = self.n_eq * d
            inputs.arrays.append(np.ascontiguousarray(lam, dtype=float))
            inputs.offsets.append(0)
            inputs.strides.append(n)
            inputs.sizes.append(n)
        return inputs

    @property
    def column_scale(self) -> np.ndarray:
        """Physical value per unit of each scaled variable."""
        return np.concatenate([np.tile(self.sx, 1 + self.K * self.d), np.tile(self.su, self.K * self.d + self.n_ctrl)])

    def G_residual(self, w_scaled: np.ndarray, row_scale=None) -> np.ndarray:
        """vec(diag(row_scale) G) at the scaled w, by the interval kernel (row_scale None: unscaled rows)."""
        return self.kernels("jac")["res"].evaluate(self._kernel_inputs(w_scaled, row_scale))

    def G_hessian_values(self, w_scaled, lam_G, row_scale=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, cols, values) of the lower triangle of the Hessian of sum lam_G * vec(diag(row_scale) G)
        w.r.t. the scaled w (row_scale None: unscaled rows)."""
        kernel = self.kernels("hess")["hess"]
        if not hasattr(self, "_hess_rows"):
            r, c = self._hess_pattern
            self._hess_rows = self._local_to_global(r).ravel(order="F")
            self._hess_cols = self._local_to_global(c).ravel(order="F")
        vals = kernel.evaluate(self._kernel_inputs(w_scaled, row_scale, lam_G))
        return self._hess_rows, self._hess_cols, vals

    def G_jacobian_values(self, w_scaled: np.ndarray, row_scale=None) -> np.ndarray:
        """Nonzeros of d vec(diag(row_scale) G) / d w (w scaled) at (self._jac_rows, self._jac_cols)."""
        self._jacobian_assembly()
        return self.kernels("jac")["jac"].evaluate(self._kernel_inputs(w_scaled, row_scale))

    def G_jacobian(self, w_scaled: np.ndarray, row_scale=None) -> scipy.sparse.csc_matrix:
        """d vec(diag(row_scale) G) / d w (w scaled) as a sparse matrix, assembled interval by interval."""
        vals = self.G_jacobian_values(w_scaled, row_scale)
        shape = (self.n_eq * self.K * self.d, np.asarray(w_scaled).size)
        return scipy.sparse.csc_matrix((vals, (self._jac_rows, self._jac_cols)), shape)

    def newton_step(self, w_scaled: np.ndarray, residual: np.ndarray, row_scale) -> np.ndarray:
        """The Newton step -J^-1 residual of the square NLP g = vec(diag(row_scale) G) = 0 (causal exact
        tracking: x0 fixed, X and U free), by block forward substitution in stage order.

        Ordered interval by interval, J is block lower bidiagonal: interval k's rows depend on its own
        states and torques (a square block A_k, d (n_x + N) wide, nonsingular: given its start state the
        collocation equations fix them, as one implicit Runge-Kutta step of the DAE) and on its start
        state, the last state of interval k - 1 (B_k). So step_k = A_k^-1 (-r_k - B_k s_{k-1}), s_{k-1} the
        step of that state: one batched dense solve, then a recursion over the n_x-vectors s_k."""
        d, K, nx, N = self.d, self.K, self.n_x, self.N
        rows, cols = self._jac_pattern
        n_rows, n_local = self.n_eq * d, nx * (1 + d) + N * d
        L = np.zeros((K, n_rows, n_local))
        L[:, rows, cols] = self.G_jacobian_values(w_scaled, row_scale).reshape(K, -1)
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

        q, v, a = (interp(arr, self.tc) for arr in (traj.q, traj.v, traj.a))
        u = interp(traj.u, self.tc)
        z = interp(traj.current, self.tc) if self.model.n_z else np.zeros((0, len(self.tc)))
        if self.exact:
            x = np.vstack([q, v, a[list(self.dae.dummy)], z])
        else:
            x = np.vstack([q, v, z])
        # causal: the fixed rest state; non-causal: the trajectory's (held) value at t0
        x0 = x[:, 0].copy() if self.noncausal else self.x_rest.copy()
        return Guess(x0, x, u)

    # ------------------------------------------------------------------ the NLP
    def build(self, guess: Guess) -> NlpProblem:
        s, d, K, N = self.settings, self.d, self.K, self.N
        n_pts = K * d
        sx = np.maximum(np.abs(np.column_stack([guess.x0, guess.x])).max(axis=1), 1e-2)
        su = np.maximum(np.abs(guess.u).max(axis=1), np.maximum(np.abs(self.u_rest), 1.0))
        self.sx, self.su = sx, su

        w = ca.MX.sym("w", self.n_x * (1 + n_pts) + N * (n_pts + self.n_ctrl))
        x0s, Xs, Us = self._split(w)
        x0 = ca.DM(sx) * x0s
        X = ca.mtimes(ca.diag(ca.DM(sx)), Xs)
        U = ca.mtimes(ca.diag(ca.DM(su)), Us)
        Xall = ca.horzcat(x0, X)
        starts = Xall[:, list(range(0, n_pts, d))]
        tk = ca.DM(self.t0 + self.h * np.arange(K)).T
        G, _ = self.interval_function().map(K)(starts, X, U, tk, self.h)
        # E by its own (small) map: derivatives of the objective and band rows then never pass
        # through the interval function of the dynamics (see StructuredDerivatives)
        E = self._point["err"].map(n_pts)(ca.DM(self.tc).T, X)

        w0 = np.concatenate([guess.x0 / sx, (guess.x / sx[:, None]).ravel(order="F"),
                             (guess.u / su[:, None]).ravel(order="F")])
        if self.n_ctrl:  # the hold's values from the guess (zoh: mean per sample; linear: at the nodes), U from them
            us = guess.u / su[:, None]
            if self.hold == "zoh":
                counts = np.bincount(self._sample_of_point, minlength=self.n_ctrl)
                Uc0 = np.vstack([np.bincount(self._sample_of_point, weights=row, minlength=self.n_ctrl)
                                 for row in us]) / np.maximum(counts, 1)
            else:
                Uc0 = np.vstack([np.interp(self.t_nodes, np.concatenate([[self.t0], self.tc]),
                                           np.concatenate([[row[0]], row])) for row in us])
            if self.hold == "linear" and not self.noncausal:
                Uc0[:, 0] = self.u_rest / su
            w0 = np.concatenate([w0[: self.n_x * (1 + n_pts)], (self.P @ Uc0.T).ravel(),
                                 Uc0.ravel(order="F")])
        row_scale = self._row_scale(w0)
        g_parts, lbg, ubg = [ca.vec(ca.mtimes(ca.diag(ca.DM(row_scale)), G))], [np.zeros(self.n_eq * n_pts)], \
            [np.zeros(self.n_eq * n_pts)]
        if self.n_ctrl:  # U at the collocation points = the held input (linear rows, scaled units)
            Ucs = ca.reshape(w[self.n_x * (1 + n_pts) + N * n_pts:], N, self.n_ctrl)
            g_parts.append(ca.vec(Us - ca.mtimes(Ucs, ca.DM(self.P.T.tocsc()))))
            lbg.append(np.zeros(N * n_pts))
            ubg.append(np.zeros(N * n_pts))
        band = None  # (first row, 1 / band half-width) of the band rows E / tol
        if s.tracking == "band":
            tol = s.band_mm * 1e-3
            band = (sum(int(p.numel()) for p in g_parts), 1.0 / tol)
            g_parts.append(ca.vec(E) / tol)
            lbg.append(-np.ones(self.n_out * n_pts))
            ubg.append(np.ones(self.n_out * n_pts))
        dt = np.diff(np.concatenate([[self.t0], self.tc]))
        Uall = ca.horzcat(ca.DM(self.u_rest), U)
        if self.n_ctrl:  # smoothness and rate on the control grid: slopes (linear), jumps per sample (zoh)
            dt = np.diff(self.t_nodes)
            Uc = ca.mtimes(ca.diag(ca.DM(su)), Ucs)
            Uall = ca.horzcat(ca.DM(self.u_rest), Uc) if self.hold == "zoh" else Uc
        dU = Uall[:, 1:] - Uall[:, :-1]
        if s.torque_rate_max is not None:
            rate = self._per_motor(s.torque_rate_max, "nlp.torque_rate_max")
            g_parts.append(ca.vec(ca.mtimes(ca.diag(ca.DM(1.0 / rate)), dU) / ca.repmat(ca.DM(dt).T, N, 1)))
            lbg.append(-np.ones(N * dt.size))
            ubg.append(np.ones(N * dt.size))

        f_quad, weights = self._objective(x0, X, U, dU, dt)
        f = f_quad if weights is None else f_quad + ca.sum2(ca.sum1(E**2) * ca.DM(weights).T)
        # Objective scaling: the smoothness Hessian grows like 1/dt; an unscaled one spoils the
        # KKT factorisation (MUMPS pivoting, linear convergence measured on E12 at h = 1 ms).
        tau = max(self.reference.t_motion_end - self.reference.t_motion_start, 1e-3)
        obj_scale = 1.0 / max(1.0, 2.0 * tau**2 / ((self.tf - self.t0) * dt.min()))
        f, f_quad = f * obj_scale, f_quad * obj_scale
        weights = None if weights is None else weights * obj_scale
        lbx, ubx = self._bounds(guess, sx, su)
        info = {"row_scale": row_scale, "objective_scale": obj_scale, "n_intervals": K, "h": self.h, "degree": d,
                "formulation": "I1 (dummy derivatives)" if self.exact else "forward dynamics"}
        if len(g_parts) == 1:  # g = vec(diag(row_scale) G): g and its Jacobian by the interval kernels
            info["jac_g"] = lambda w_scaled: self.G_jacobian(w_scaled, row_scale)
            info["g"] = lambda w_scaled: self.G_residual(w_scaled, row_scale)
            if self.exact and not self.noncausal and self.n_eq == self.n_x + N:  # square by stages: Newton's step
                info["newton_step"] = lambda w_scaled, r: self.newton_step(w_scaled, r, row_scale)
        first = np.cumsum([0] + [int(p.numel()) for p in g_parts])  # the hold and rate rows are linear in w
        linear = [(int(first[i]), p) for i, p in enumerate(g_parts) if i > 0 and (band is None or first[i] != band[0])]
        info["derivatives"] = lambda: StructuredDerivatives(  # built on demand
            self, w, ObjectiveParts(f_quad, weights), linear, band, row_scale)
        return NlpProblem(w, f, ca.vertcat(*g_parts), lbx, ubx, np.concatenate(lbg), np.concatenate(ubg),
                          w0, info)

    def _split(self, w):
        n_pts, nx, N = self.K * self.d, self.n_x, self.N
        x0s = w[:nx]
        Xs = ca.reshape(w[nx:nx * (1 + n_pts)], nx, n_pts)
        Us = ca.reshape(w[nx * (1 + n_pts): nx * (1 + n_pts) + N * n_pts], N, n_pts)
        return x0s, Xs, Us

    def _row_scale(self, w0) -> np.ndarray:
        """1 / (largest Jacobian entry of each equation over all points) at the initial guess."""
        J = self.G_jacobian(w0)
        row_max = np.asarray(abs(J).max(axis=1).todense()).ravel()
        per_eq = row_max.reshape(-1, self.n_eq).max(axis=0)
        return 1.0 / np.maximum(per_eq, 1e-12)

    def _per_motor(self, values, name) -> np.ndarray:
        arr = np.atleast_1d(np.asarray(values, float)).ravel()
        if arr.size != self.N:  # never broadcast: a value per motor, in the order of the actuated joints
            motors = ", ".join(self.model.chain.joints[i].name for i in self.model.layout.actuated)
            raise ProblemError(f"{name}: expected {self.N} values (one per motor: {motors}), got {arr.size}")
        if np.any(arr <= 0):
            raise ProblemError(f"{name}: must be > 0, got {arr.tolist()}")
        return arr

    def _objective(self, x0, X, U, dU, dt):
        """(f_quad, weights): the objective is f_quad + sum_j weights[j] |E_j|^2 over the collocation points j,
        f_quad quadratic in w (smoothness or effort, the rest penalties of a non-causal horizon); weights None
        without a tracking penalty."""
        s = self.settings
        T = self.tf - self.t0
        tau = max(self.reference.t_motion_end - self.reference.t_motion_start, 1e-3)
        quad = np.tile(self.rule.weights * self.h, self.K)  # quadrature weights of the collocation points
        inv_su = ca.diag(ca.DM(1.0 / self.su))
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
            inv_sx = ca.DM(1.0 / self.sx)
            rest_end = X[self.nq:2 * self.nq, -1] * inv_sx[self.nq:2 * self.nq]
            f = f + REST_WEIGHT * (ca.sumsqr((x0 - ca.DM(self.x_rest)) * inv_sx) + ca.sumsqr(rest_end))
        return f, weights

    def _bounds(self, guess, sx, su):
        s = self.settings
        n_pts = self.K * self.d
        n_u = n_pts + self.n_ctrl  # torques at the collocation points, then the held values
        lbx = np.full(self.n_x * (1 + n_pts) + self.N * n_u, -np.inf)
        ubx = -lbx
        if not self.noncausal or self.hold is not None:
            # a held input tracks by a tight penalty, which would outweigh the soft rest penalty of a
            # non-causal start: the pre-actuation then starts from rest, where the verification starts
            lbx[: self.n_x] = ubx[: self.n_x] = self.x_rest / sx
        i0 = self.n_x * (1 + n_pts)
        drives = self.model.drives
        if s.torque_max is not None and drives is None:
            tmax = self._per_motor(s.torque_max, "nlp.torque_max")
            lbx[i0:] = np.tile(-tmax / su, n_u)
            ubx[i0:] = np.tile(tmax / su, n_u)
        if s.torque_max is not None and drives is not None:  # |i_j C_t i| <= torque_max on the current states
            imax = self._per_motor(s.torque_max, "nlp.torque_max") / np.abs(drives.torque_per_ampere)
            cols = (np.arange(1, 1 + n_pts)[:, None] * self.n_x + (self.n_x - drives.n_states)
                    + np.arange(drives.n_states)[None, :]).ravel()
            zscale = sx[self.n_x - drives.n_states:]
            lbx[cols] = np.maximum(lbx[cols], np.tile(-imax / zscale, n_pts))
            ubx[cols] = np.minimum(ubx[cols], np.tile(imax / zscale, n_pts))
        if s.voltage_max is not None:
            vmax = self._per_motor(s.voltage_max, "nlp.voltage_max")
            lbx[i0:] = np.tile(-vmax / su, n_u)
            ubx[i0:] = np.tile(vmax / su, n_u)
        if self.hold == "linear" and not self.noncausal:  # from rest: the torque starts at the rest torque
            j0 = i0 + self.N * n_pts
            lbx[j0:j0 + self.N] = ubx[j0:j0 + self.N] = self.u_rest / su
        return lbx, ubx

    # ------------------------------------------------------------------ back to physics
    def state_derivatives(self, Xall: np.ndarray) -> np.ndarray:
        """xdot at the collocation points (n_x, Kd) from states [x0, X] (n_x, 1 + Kd)."""
        d = self.d
        P = np.stack([Xall[:, k * d: k * d + d + 1] for k in range(self.K)])  # (K, n_x, d+1)
        return np.concatenate(list(P @ self.rule.deriv / self.h), axis=1)

    def unpack(self, w_opt: np.ndarray) -> dict:
        """Solution on [t0, collocation times]: t, x, u, a, tool error E and residual G."""
        w_opt = np.asarray(w_opt, float).ravel()
        nx, n_pts, N = self.n_x, self.K * self.d, self.N
        x0 = w_opt[:nx] * self.sx
        X = w_opt[nx:nx * (1 + n_pts)].reshape(n_pts, nx).T * self.sx[:, None]
        U = w_opt[nx * (1 + n_pts): nx * (1 + n_pts) + N * n_pts].reshape(n_pts, N).T * self.su[:, None]
        Uc = w_opt[nx * (1 + n_pts) + N * n_pts:].reshape(self.n_ctrl, N).T * self.su[:, None]
        Xall = np.column_stack([x0, X])
        xd = self.state_derivatives(Xall)
        xd0 = Xall[:, : self.d + 1] @ self.rule.deriv_start / self.h
        xd_all = np.column_stack([xd0, xd])
        a = np.array(self._point["accel"].map(n_pts + 1)(Xall, xd_all))
        u0 = np.array(self._point["input"](x0, xd0)).ravel()
        E = np.array(self._point["err"].map(n_pts)(self.tc[None, :], X))  # once: not worth compiling the point kernels
        G = self.G_residual(w_opt).reshape(n_pts, self.n_eq).T
        return {"t": np.concatenate([[self.t0], self.tc]), "x": Xall, "u": np.column_stack([u0, U]),
                "a": a, "E": E, "G": G, "u_held": Uc}


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

    - the dynamics rows vec(diag(row_scale) G): the interval kernels (``Transcription.kernels``);
    - the output error E_j (tracking penalty, band rows E_j / tol): the point kernels;
    - the quadratic part of the objective 0.5 w'Qw + b'w + c and the linear rows A w + a (hold and torque-rate
      rows): Q, b, c, A, a computed once (CasADi AD of those small parts, at w = 0).

    On E12 (h = 2 ms, penalty tracking) one Hessian takes ~0.002 s compiled instead of 0.19 s for CasADi's
    Hessian of the whole mapped graph (results/nlp.md).
    """

    def __init__(self, tr: "Transcription", w: ca.MX, objective: ObjectiveParts, linear: list, band, row_scale):
        self.tr, n_pts, n_w = tr, tr.K * tr.d, int(w.numel())
        self.n_G, self.n_pts, self.n_w = tr.n_eq * n_pts, n_pts, n_w
        self._row_scale, self._band, self._weights = row_scale, band, objective.weights
        uses_error = band is not None or objective.weights is not None
        self.n_g = self.n_G + sum(int(p.numel()) for _, p in linear) + (tr.n_out * n_pts if band is not None else 0)
        H, grad = ca.hessian(objective.f_quad, w)
        c, b, Q = (ca.Function("quad", [w], [objective.f_quad, grad, H])(np.zeros(n_w)))
        self._c, self._b = float(c), np.array(b).ravel()
        self._Q = scipy.sparse.csc_matrix(Q.sparse())
        Q_low = scipy.sparse.tril(self._Q).tocoo()
        self._A, self._a, lin_rows = self._linear_rows(w, linear)
        tr._jacobian_assembly()
        J_parts = [(tr._jac_rows, tr._jac_cols), (self._A.row, self._A.col)]
        H_parts = [tr.G_hessian_values(np.ones(n_w), np.zeros(self.n_G), row_scale)[:2], (Q_low.row, Q_low.col)]
        self._lin_rows = lin_rows
        if uses_error:
            tr.kernels("pt")
            pts = np.arange(n_pts)[None, :]
            er, ec = (np.asarray(i)[:, None] for i in tr._err_jac_pattern)
            hr, hc = (np.asarray(i)[:, None] for i in tr._err_hess_pattern)
            if band is not None:
                J_parts.append(((band[0] + tr.n_out * pts + er).ravel(order="F"), (tr.n_x * (1 + pts) + ec).ravel(order="F")))
            H_parts.append(((tr.n_x * (1 + pts) + hr).ravel(order="F"), (tr.n_x * (1 + pts) + hc).ravel(order="F")))
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
    def _error(self, w) -> np.ndarray:
        return self.tr.kernels("pt")["err"].evaluate(self.tr._point_inputs(w))

    def objective(self, w) -> float:
        # no BLAS calls (np.dot, @ on vectors) here: on a loaded machine a threaded BLAS's dot of 15k numbers took
        # 1.5 ms instead of 0.02 ms, and its spinning worker threads slowed IPOPT's factorisations down
        w = np.asarray(w, float)
        f = self._c + float(np.sum(w * (self._b + 0.5 * (self._Q @ w))))
        if self._weights is not None:
            E = self._error(w).reshape(self.n_pts, -1)
            f += float(np.sum(self._weights[:, None] * E * E))
        return f

    def gradient(self, w) -> np.ndarray:
        w = np.asarray(w, float)
        grad = self._Q @ w + self._b
        if self._weights is not None:  # d/dx_j of weights_j |E_j|^2, x_j contiguous in w
            tr = self.tr
            g_pts = tr.kernels("pt")["err_grad"].evaluate(tr._point_inputs(w, self._weights))
            grad[tr.n_x: tr.n_x * (1 + self.n_pts)] += g_pts
        return grad

    def constraints(self, w) -> np.ndarray:
        w = np.asarray(w, float)
        g = np.empty(self.n_g)
        g[: self.n_G] = self.tr.G_residual(w, self._row_scale)
        if self._lin_rows.size:
            g[self._lin_rows] = (self._A @ w)[self._lin_rows] + self._a
        if self._band is not None:
            first, inv_tol = self._band
            g[first: first + self.tr.n_out * self.n_pts] = self._error(w) * inv_tol
        return g

    def jacobian_values(self, w) -> np.ndarray:
        tr = self.tr
        parts = [tr.G_jacobian_values(w, self._row_scale), self._A_vals]
        if self._band is not None:
            parts.append(tr.kernels("pt")["err_jac"].evaluate(tr._point_inputs(w)) * self._band[1])
        return self.jac.values(np.concatenate(parts))

    def hessian_values(self, w, lam, sigma) -> np.ndarray:
        tr, lam = self.tr, np.asarray(lam, float).ravel()
        parts = [tr.G_hessian_values(w, lam[: self.n_G], self._row_scale)[2], sigma * self._Q_low_vals]
        if self._weights is not None or self._band is not None:  # sigma weights_j |E_j|^2 + lam_band_j' E_j / tol
            a = sigma * self._weights if self._weights is not None else np.zeros(self.n_pts)
            mu = np.zeros(self.n_pts * tr.n_out)
            if self._band is not None:
                first, inv_tol = self._band
                mu = lam[first: first + tr.n_out * self.n_pts] * inv_tol
            parts.append(tr.kernels("pt")["err_hess"].evaluate(tr._point_inputs(w, a, mu)))
        return self.hess.values(np.concatenate(parts))
