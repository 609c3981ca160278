"""Backend: the same collocation NLP written as a Pyomo (pyomo.dae) model, solved by IPOPT.

The model equations are not retyped: the CasADi point functions of the transcription (the
same model functions the BDF solver uses) are translated instruction by instruction into Pyomo
expressions. Time is a pyomo.dae ContinuousSet discretised by ``dae.collocation`` with
LAGRANGE-RADAU (the same nodes as ``ffopt.nlp.collocation``); the derivatives are Pyomo
DerivativeVars tied to the states by Pyomo's own collocation equations.

Pyomo's cyipopt route needs the compiled pynumero_ASL library, which is not installable here,
so the model is written as an AMPL .nl file (``model.write``, symbolic labels off) and read
back with ``casadi.NlpBuilder().import_nl``, then solved by IPOPT with the options of the other
backends. The solution is mapped back to the transcription's variable layout.
"""

from __future__ import annotations

import math
import os
import tempfile
import time

import casadi as ca
import numpy as np

from ffopt.errors import SolverError
from ffopt.nlp.backends.casadi_ipopt import IterationCallback, result_from_nlpsol
from ffopt.nlp.backends.common import NlpResult, ipopt_options, not_started
from ffopt.nlp.backends.isolated import run_isolated
from ffopt.nlp.monitor import SolveMonitor


# ----------------------------------------------------------------------------- SX -> Pyomo
def _unary(name):
    def op(a):
        if isinstance(a, (int, float)):
            return getattr(math, name)(a)
        import pyomo.environ as pyo

        return getattr(pyo, name)(a)
    return op


def _if_else_zero(c, a):
    if not isinstance(c, (int, float, bool)):
        raise SolverError("pyomo backend: a condition depends on NLP variables (if_else); not supported")
    return a if c else 0.0


_BINARY = {ca.OP_ADD: lambda a, b: a + b, ca.OP_SUB: lambda a, b: a - b, ca.OP_MUL: lambda a, b: a * b,
           ca.OP_DIV: lambda a, b: a / b, ca.OP_POW: lambda a, b: a ** b, ca.OP_CONSTPOW: lambda a, b: a ** b,
           ca.OP_LT: lambda a, b: float(a < b), ca.OP_LE: lambda a, b: float(a <= b),
           ca.OP_EQ: lambda a, b: float(a == b), ca.OP_NE: lambda a, b: float(a != b),
           ca.OP_AND: lambda a, b: float(bool(a) and bool(b)), ca.OP_OR: lambda a, b: float(bool(a) or bool(b)),
           ca.OP_IF_ELSE_ZERO: _if_else_zero,
           ca.OP_FMIN: lambda a, b: min(a, b), ca.OP_FMAX: lambda a, b: max(a, b)}
_UNARY = {ca.OP_NEG: lambda a: -a, ca.OP_SQ: lambda a: a * a, ca.OP_TWICE: lambda a: 2 * a,
          ca.OP_INV: lambda a: 1.0 / a, ca.OP_ASSIGN: lambda a: a, ca.OP_NOT: lambda a: float(not a),
          ca.OP_FABS: lambda a: abs(a)}
for _code, _name in ((ca.OP_SIN, "sin"), (ca.OP_COS, "cos"), (ca.OP_TAN, "tan"), (ca.OP_EXP, "exp"),
                     (ca.OP_LOG, "log"), (ca.OP_SQRT, "sqrt"), (ca.OP_TANH, "tanh"), (ca.OP_ASIN, "asin"),
                     (ca.OP_ACOS, "acos"), (ca.OP_ATAN, "atan"), (ca.OP_SINH, "sinh"), (ca.OP_COSH, "cosh")):
    _UNARY[_code] = _unary(_name)


class SxTranslator:
    """Evaluate a CasADi SX Function on Python floats / Pyomo expressions (dense outputs)."""

    def __init__(self, fun: ca.Function):
        outs = [ca.densify(o) for o in fun.call(fun.sx_in())]
        self.fun = ca.Function(fun.name() + "_dense", fun.sx_in(), outs)
        f = self.fun
        self.code = [(f.instruction_id(k), f.instruction_input(k), f.instruction_output(k),
                      f.instruction_constant(k) if f.instruction_id(k) == ca.OP_CONST else None)
                     for k in range(f.n_instructions())]
        self.n_work = f.sz_w()

    def __call__(self, *args):
        f = self.fun
        args = [[a] if isinstance(a, (int, float)) else a for a in args]
        outs = [[0.0] * f.nnz_out(i) for i in range(f.n_out())]
        w = [0.0] * max(self.n_work, 1)
        for op, ins, outs_idx, const in self.code:
            if op == ca.OP_INPUT:
                w[outs_idx[0]] = args[ins[0]][ins[1]]
            elif op == ca.OP_OUTPUT:
                outs[outs_idx[0]][outs_idx[1]] = w[ins[0]]
            elif op == ca.OP_CONST:
                w[outs_idx[0]] = const
            elif op in _BINARY:
                w[outs_idx[0]] = _BINARY[op](w[ins[0]], w[ins[1]])
            elif op in _UNARY:
                w[outs_idx[0]] = _UNARY[op](w[ins[0]])
            else:
                raise SolverError(f"pyomo backend: CasADi operation {op} not supported by the translator")
        return outs


# ----------------------------------------------------------------------------- the Pyomo model
def build_pyomo_model(tr, nlp):
    """pyomo.dae model of the transcription's scaled NLP (same variables, rows, objective)."""
    import pyomo.dae as dae
    import pyomo.environ as pyo

    s = tr.settings
    nx, N, n_out = tr.n_x, tr.N, tr.n_out
    sx, su = nlp.scales.x, nlp.scales.u
    row_scale = nlp.scales.rows
    m = pyo.ConcreteModel()
    # time in units of collocation intervals, s = (t - t0) / h: pyomo.dae rounds its points to
    # ~1e-6, which is then 1e-6 of an interval rather than 1e-6 s
    m.t = dae.ContinuousSet(bounds=(0, tr.K))
    m.I, m.J = pyo.RangeSet(0, nx - 1), pyo.RangeSet(0, N - 1)
    m.x = pyo.Var(m.I, m.t)
    m.dx = dae.DerivativeVar(m.x, wrt=m.t)
    m.u = pyo.Var(m.J, m.t)
    pyo.TransformationFactory("dae.collocation").apply_to(m, nfe=tr.K, ncp=tr.d, scheme="LAGRANGE-RADAU")
    times = sorted(m.t)
    phys = tr.t0 + tr.h * np.array(times, float)
    if len(times) != len(tr.tc) + 1 or np.abs(phys[1:] - tr.tc).max() > 2e-6 * tr.h:
        raise SolverError("pyomo backend: pyomo.dae collocation points differ from the transcription's")
    tc = times[1:]

    eq = SxTranslator(tr.points.eq)
    err = SxTranslator(tr.points.err)
    m.eq = pyo.ConstraintList()
    E = []
    for p, t in enumerate(tc):
        x = [sx[i] * m.x[i, t] for i in range(nx)]
        xd = [sx[i] / tr.h * m.dx[i, t] for i in range(nx)]
        u = [su[j] * m.u[j, t] for j in range(N)]
        for r, expr in enumerate(eq(float(phys[p + 1]), x, xd, u)[0]):
            m.eq.add(row_scale[r] * expr == 0)
        E.append(err(float(phys[p + 1]), x)[0])
    t0 = times[0]
    for i in range(nx):
        m.dx[i, t0].fix(0.0)  # not part of the NLP (no collocation equation at t0)
    for j in range(N):
        m.u[j, t0].fix(tr.u_rest[j] / su[j])
    if not tr.noncausal:
        for i in range(nx):
            m.x[i, t0].fix(tr.x_rest[i] / sx[i])
    if s.torque_max is not None:
        tmax = tr.per_motor(s.torque_max, "nlp.torque_max")
        for j in range(N):
            for t in tc:
                m.u[j, t].setlb(-tmax[j] / su[j])
                m.u[j, t].setub(tmax[j] / su[j])
    if s.tracking == "band":
        tol = s.band_mm * 1e-3
        m.band = pyo.ConstraintList()
        for e in E:
            for k in range(n_out):
                m.band.add(pyo.inequality(-1.0, e[k] / tol, 1.0))
    all_t = times
    dt = np.diff(phys)
    dU = [[su[j] * (m.u[j, all_t[p + 1]] - m.u[j, all_t[p]]) for p in range(len(tc))] for j in range(N)]
    if s.torque_rate_max is not None:
        rate = tr.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
        m.rate = pyo.ConstraintList()
        for j in range(N):
            for p in range(len(tc)):
                m.rate.add(pyo.inequality(-1.0, dU[j][p] / (rate[j] * dt[p]), 1.0))
    m.obj = pyo.Objective(expr=_objective(tr, nlp, m, dU, E, dt, tc))
    return m


def _objective(tr, nlp, m, dU, E, dt, tc):
    """The transcription's objective (``Transcription._objective``), term by term."""
    s = tr.settings
    T = tr.tf - tr.t0
    tau = max(tr.reference.t_motion_end - tr.reference.t_motion_start, 1e-3)
    quad = np.tile(tr.rule.weights * tr.h, tr.K)
    N, su = tr.N, nlp.scales.u
    smooth = sum((dU[j][p] / su[j]) ** 2 / dt[p] for j in range(N) for p in range(len(tc))) * tau**2 / T
    if s.objective == "effort":
        f = sum(quad[p] * ((su[j] * m.u[j, t] - tr.u_rest[j]) / su[j]) ** 2
                for j in range(N) for p, t in enumerate(tc)) / T
    elif s.objective == "smoothness":
        f = smooth
    else:
        f = 1e-6 * smooth
    if s.tracking == "penalty" or s.objective == "tracking":
        e_scale = s.band_mm * 1e-3
        f = f + s.penalty_weight * sum(quad[p] * (e / e_scale) ** 2 for p, es in enumerate(E) for e in es) / T
    if tr.noncausal:
        from ffopt.nlp.transcription import REST_WEIGHT

        t0, tf = min(m.t), max(m.t)
        nq, sx = tr.nq, nlp.scales.x
        f = f + REST_WEIGHT * (sum((m.x[i, t0] - tr.x_rest[i] / sx[i]) ** 2 for i in range(tr.n_x))
                               + sum(m.x[i, tf] ** 2 for i in range(nq, 2 * nq)))
    return nlp.scales.objective * f


# ----------------------------------------------------------------------------- .nl -> CasADi -> IPOPT
def solve_transcription(tr, nlp, warm: bool, tol: float, monitor: SolveMonitor) -> NlpResult:
    """Build the Pyomo model, write and import the .nl file, solve with IPOPT: in a worker process
    (``backends/isolated.py``), because the .nl writer and CasADi's set-up of the imported model are
    long single calls that neither a limit nor Ctrl-C could otherwise stop."""
    res = run_isolated(lambda mon: _solve(tr, nlp, warm, tol, mon), monitor, "pyomo backend")
    if res is not None:
        return res
    note = ("the limit was reached while the pyomo backend was still setting up (Pyomo's .nl writer and CasADi's "
            "derivatives of the imported model take minutes for large grids)" if not monitor.history else
            "the pyomo worker was ended at the limit")
    return not_started(nlp.w0, "pyomo", monitor, note)


def _solve(tr, nlp, warm: bool, tol: float, monitor: SolveMonitor) -> NlpResult:
    tic = time.perf_counter()
    m = build_pyomo_model(tr, nlp)
    index = _initialise(tr, nlp, m)
    if monitor.expired():
        return not_started(nlp.w0, "pyomo", monitor, "the limit was reached while Pyomo built the model")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ffopt_nlp.nl")
        _, smap_id = m.write(path, format="nl", io_options={"symbolic_solver_labels": False})
        builder = ca.NlpBuilder()
        builder.import_nl(path)
    smap = m.solutions.symbol_map[smap_id]
    order = _nl_order(smap, index, builder)
    x = ca.vertcat(*builder.x)
    if monitor.expired():
        return not_started(nlp.w0, "pyomo", monitor, "the limit was reached while the .nl file was written and read")
    lbx, ubx, lbg, ubg = (np.array(b, float) for b in (builder.x_lb, builder.x_ub, builder.g_lb, builder.g_ub))
    callback = IterationCallback(monitor, lbx, ubx, lbg, ubg)
    solver = ca.nlpsol("ffopt_pyomo", "ipopt", {"x": x, "f": builder.f, "g": ca.vertcat(*builder.g)},
                       {"ipopt": ipopt_options(warm, tol, monitor.remaining_iterations(), monitor.remaining_time(),
                                                    max_cpu_time=monitor.remaining_cpu_time()),
                        "print_time": False, "iteration_callback": callback,
                        "expand": True})  # .nl expressions are scalar MX graphs: SX is far faster
    t_build = time.perf_counter() - tic
    if monitor.expired():
        return not_started(nlp.w0, "pyomo", monitor, "the limit was reached while CasADi set up IPOPT", t_build)
    monitor.begin("IPOPT via CasADi (Pyomo model)")
    tic = time.perf_counter()
    sol = solver(x0=_start_values(smap, builder), lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
    # (the objective in the .nl file is the scaled one already)
    res = result_from_nlpsol(solver, sol, "pyomo", time.perf_counter() - tic, t_build, lbg, ubg)
    monitor.end_run(res.iterations)
    x_opt = res.w
    res.w = nlp.w0.copy()  # .nl variables back to the transcription's layout
    for k, target in enumerate(order):
        if target >= 0:
            res.w[target] = x_opt[k]
    return res


def _initialise(tr, nlp, m) -> dict:
    """Start values from the transcription's w0; map id(pyomo var) -> index in w (or -1)."""
    nx, N, n_pts = tr.n_x, tr.N, tr.K * tr.d
    w0 = nlp.w0
    X0 = w0[:nx]
    X = w0[nx:nx * (1 + n_pts)].reshape(n_pts, nx).T
    U = w0[nx * (1 + n_pts):].reshape(n_pts, N).T
    Xall = np.column_stack([X0, X]) * nlp.scales.x[:, None]
    xd = tr.grid.state_derivatives(Xall) * tr.h / nlp.scales.x[:, None]  # d/ds, s = (t - t0) / h
    times = sorted(m.t)
    index = {}
    for i in range(nx):
        m.x[i, times[0]].set_value(X0[i], skip_validation=True)
        index[id(m.x[i, times[0]])] = i
        for p, t in enumerate(times[1:]):
            m.x[i, t].set_value(X[i, p], skip_validation=True)
            m.dx[i, t].set_value(xd[i, p], skip_validation=True)
            index[id(m.x[i, t])] = nx + p * nx + i
            index[id(m.dx[i, t])] = -1
    for j in range(N):
        for p, t in enumerate(times[1:]):
            m.u[j, t].set_value(U[j, p], skip_validation=True)
            index[id(m.u[j, t])] = nx * (1 + n_pts) + p * N + j
    return index


def _start_values(smap, builder) -> np.ndarray:
    """The Pyomo variables' values in .nl order (the transcription's start point)."""
    x0 = np.array(builder.x_init, float)
    for label, obj in smap.bySymbol.items():
        if label.startswith("v") and label[1:].isdigit() and int(label[1:]) < len(x0):
            obj = obj() if callable(obj) and not hasattr(obj, "value") else obj
            if obj.value is not None:
                x0[int(label[1:])] = obj.value
    return x0


def _nl_order(smap, index: dict, builder) -> list[int]:
    """For each .nl variable (v0, v1, ...): its index in the transcription's w (-1: Pyomo-only)."""
    order = [-1] * len(builder.x)
    for obj_id, label in smap.byObject.items():
        if label.startswith("v") and label[1:].isdigit() and int(label[1:]) < len(order):
            order[int(label[1:])] = index.get(obj_id, -1)
    return order
