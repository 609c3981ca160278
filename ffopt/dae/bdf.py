"""Constant-step k-step BDF solver for fully implicit, possibly high-index DAEs F(t, x, xdot) = 0.

Method (Moberg & Hanssen; Brenan, Campbell & Petzold): at t_i = t0 + i*h the derivative is
replaced by the BDF difference

    D_h x_i = (1/h) * sum_{l=0..k} alpha_l x_{i-l},

and F(t_i, x_i, D_h x_i) = 0 is solved for x_i by Newton's method with the exact sparse Jacobian
(alpha_0/h) F_xdot + F_x. Rows may be multiplied by a constant ``row_scale`` (e.g. (1/h)^p on
the algebraic rows) to improve the conditioning of that matrix on high-index problems; scaling
does not change the exact solution of the step equations.

Implementation: the whole stepping loop runs inside CasADi. One step is a Function (history,
t_i, c, r_i) -> (history shifted by the new x_i, diagnostics), iterated with ``Function.mapaccum``
in CasADi's virtual machine, or, compiled, by a C loop generated into the same library (called
through ctypes: no per-run graph of n_steps calls to build, no CasADi call overhead).
Inside a step, Newton is unrolled to ``max_newton_iter`` guarded iterations; each is a CasADi
Switch, so once the iteration has stopped the remaining ones cost nothing (CasADi's rootfinders
cannot report whether they converged, which is why the loop is written out). The step Function
does not depend on h, row_scale or the number of steps (they are run-time inputs), so one
compiled library serves every run of the same F, order and Newton settings. With
``compile=True`` it is C-code-generated, compiled once with the C compiler ($CC, default gcc)
and cached on disk in ``$FFOPT_CACHE_DIR`` (default ``~/.cache/ffopt``) under a hash of
``F.serialize()`` and the settings; without a working compiler CasADi's virtual machine is used
(with a warning). Built solvers are also kept in an in-process LRU cache.

Conventions:
- ``history0[j]`` is x(t0 - (j+1) h), i.e. rows x_{-1}, x_{-2}, ..., x_{-k}. Default: x0
  repeated, which is exact when the solution is at rest before t0.
- Newton starts from the polynomial extrapolation of the k previous values (degree k-1):
  x_i^(0) = sum_{j=1..k} (-1)^(j+1) C(k, j) x_{i-j}. On smooth solutions this is O(h^k) accurate,
  so most steps need one Newton step plus the evaluation that confirms it (E12: 2.0 Jacobian
  evaluations per step on average at k = 6, h = 1 ms).
- Newton stops (converged) when, at the current iterate, max|scaled residual| <= newton_tol or
  the componentwise backward error max_i |g_i| / (|J| (1 + |x|))_i <= 1e-14 (the residual is
  at roundoff level relative to the size of its row's terms), or when the last Newton step had
  max_j |dx_j| / (1 + |x_j|) <= step_tol. The absolute residual test alone is not enough: rows
  carry torques of order 1e5 N m, constraint rows are scaled by up to 1e6 and high-index
  Newton matrices have condition numbers of 1e11 (E12, I3, h = 1 ms), so the residual stalls
  at roundoff above any useful absolute tolerance while the iterate has stopped moving.
- A step counts as converged if its Newton iteration stopped by one of these tests within
  ``max_newton_iter`` iterations and x_i and its residual are finite. The first failing step
  raises ``SolverError``; ``BdfResult.newton_iterations`` gives the count per step.
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from math import comb
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.codegen import CFLAGS as _CFLAGS, CFLAGS_QUICK as _CFLAGS_QUICK, COMPILE_MODES, compile_mode  # noqa: F401
from ffopt.codegen import build_in_background as _build_in_background, cache_dir as _cache_dir
from ffopt.codegen import build_failure, compiler_message, write_source
from ffopt.codegen import compile_library as _compile_to, compiler as _compiler
from ffopt.errors import SolverError

BDF_ALPHA: dict[int, np.ndarray] = {
    1: np.array([1.0, -1.0]),
    2: np.array([3 / 2, -2.0, 1 / 2]),
    3: np.array([11 / 6, -3.0, 3 / 2, -1 / 3]),
    4: np.array([25 / 12, -4.0, 3.0, -4 / 3, 1 / 4]),
    5: np.array([137 / 60, -5.0, 5.0, -10 / 3, 5 / 4, -1 / 5]),
    6: np.array([147 / 60, -6.0, 15 / 2, -20 / 3, 15 / 4, -6 / 5, 1 / 6]),
}

# Compilation (ffopt.codegen): UR5, 6 axes: gcc -O0 1.9 s of CPU against -O2's 14.7 s; the -O0 loop runs 2.8x
# slower than -O2's, 0.32 s against 0.11 s (a loaded machine); CasADi's VM solves the UR5 line in 0.84 s in all.
_BACKWARD_ERROR_TOL = 1e-14  # residual relative to its row's terms: ~50 x machine epsilon
FLUSH_RELATIVE = 1e-100  # Newton-matrix entries this small relative to their row are zeroed (_flush_tiny)
MEMORY_CACHE: OrderedDict[str, "_BdfFunctions"] = OrderedDict()
# The compiled stepping loop and the CasADi functions in MEMORY_CACHE are shared by every plan in a process;
# their work memory is not safe for concurrent calls (two plans in the threads of one Dask worker crashed in
# the compiled loop), so the build and the stepping run under one lock (a BDF solve is milliseconds).
_SOLVE_LOCK = threading.RLock()
_MEMORY_CACHE_SIZE = 32
_SERIALIZED: OrderedDict[int, tuple[ca.Function, str | None]] = OrderedDict()
_KEYS: OrderedDict[tuple, tuple] = OrderedDict()
_CODE_VERSION = "bdf-9"  # bump when the generated step function changes


@dataclass
class BdfResult:
    """Solution on the grid t_i = t0 + i*h, i = 0..n_steps (row i of every array is step i)."""

    t: np.ndarray  # (n_steps+1,)
    x: np.ndarray  # (n_steps+1, n)
    xdot: np.ndarray  # (n_steps+1, n) BDF derivative D_h x_i; row 0 uses history0
    residual_norm: np.ndarray  # (n_steps+1,) max |F(t_i, x_i, D_h x_i)|, unscaled
    newton_converged: np.ndarray  # (n_steps+1,) bool; row 0 (given data) is always True
    wall_time_build: float  # s, building or loading (incl. compiling) the step function
    wall_time_solve: float  # s, stepping loop plus the convergence check
    compiled: bool  # True if the stepping ran in compiled C code
    newton_iterations: np.ndarray | None = None  # (n_steps+1,) Jacobian evaluations per step; row 0: 0
    extra: np.ndarray | None = None  # (n_steps+1, e) the ``extra`` outputs at every step
    cpu_time_solve: float | None = None  # s of CPU for what wall_time_solve measures (load-independent)
    compile_level: str = ""  # "O2", "O0" (FFOPT_COMPILE=quick) or "" (virtual machine: no compiler, or tiered
    # compilation's first run while -O2 is built in the background)


@dataclass
class _BdfFunctions:
    """Everything built for one (F, order, Newton settings): step and check functions."""

    step: ca.Function  # (hist[n*k], t, c[1+n], r[m]) -> (hist_new[n*k], diagnostics), c = [1/h, row_scale]
    post: ca.Function  # (x, t, hist, c, r) -> (F unscaled, D_h x), for the given data at t0
    compiled: bool
    level: str = ""  # "O2" or "O0" (compiled), "" (CasADi's virtual machine)
    marches: dict = field(default_factory=dict)  # n_steps -> march Function (building one costs ~5 ms)
    driver: object = None  # compiled: the C stepping loop (ctypes function), see _DRIVER
    pending: bool = False  # the virtual machine while the library is built in the background (tiered)

    def march(self, n_steps: int) -> ca.Function:
        """(start, t (1 x n_steps), c, r (m x n_steps)) -> (final history, diagnostics (3n+2 x n_steps))."""
        if n_steps not in self.marches:
            loop = self.step.mapaccum("bdf_loop", n_steps)
            start, t, c, r = (ca.MX.sym(*a) for a in (("start", self.step.size_in(0)), ("t", 1, n_steps),
                                                     ("c", self.step.size_in(2)),
                                                     ("r", self.step.size1_in(3), n_steps)))
            self.marches[n_steps] = ca.Function("bdf_march", [start, t, c, r],
                                                loop(start, t, ca.repmat(c, 1, n_steps), r))
        return self.marches[n_steps]


def _call_into_numpy(f: ca.Function, *args, status: list | None = None) -> list[np.ndarray]:
    """Evaluate ``f`` on NumPy arrays into NumPy arrays (dense, column-major) without DM copies.

    Converting a large DM result to NumPy costs more than the BDF loop itself (~1.5 ms for E12).
    A failed evaluation (e.g. a singular Newton matrix in CasADi's virtual machine) leaves NaN
    outputs and, with ``status`` given, appends CasADi's nonzero return code to it.
    """
    ins = [np.ascontiguousarray(np.asarray(a, dtype=float).T).ravel() for a in args]
    outs = [np.full(f.nnz_out(i), np.nan) for i in range(f.n_out())]
    buf, evaluate = f.buffer()
    for i, a in enumerate(ins):
        buf.set_arg(i, memoryview(a))
    for i, r in enumerate(outs):
        buf.set_res(i, memoryview(r))
    evaluate()
    if buf.ret() != 0:
        for r in outs:
            r[:] = np.nan
        if status is not None:
            status.append(buf.ret())
    return outs


def _march_in_vm(funcs: "_BdfFunctions", start, t, c, r, n_diag) -> np.ndarray:
    """The stepping loop in CasADi's virtual machine: one mapaccum call; if that call fails (a step's
    evaluation raised), step by step up to the failing step, whose row and the rest stay NaN (not
    converged), so the failure is named where it happened."""
    status: list = []
    _, out = _call_into_numpy(funcs.march(t.size), start, t[None, :], c, r.T, status=status)
    if not status:
        return out
    diag = np.full((t.size, n_diag), np.nan)
    hist = np.asarray(start, float)
    for i in range(t.size):
        step_status: list = []
        hist, diag[i] = _call_into_numpy(funcs.step, hist, [t[i]], c, r[i], status=step_status)
        if step_status:
            break
    return diag.ravel()


@dataclass(frozen=True, kw_only=True)
class BdfOptions:
    """The settings of ``solve_bdf`` beside its problem (F, the start, the grid, the order): ``row_scale``: (n,)
    constant row factors (default ones); ``history0``: (order, n) rows x(t0 - h), x(t0 - 2h), ... (default x0
    repeated); ``newton_tol`` applies to the scaled residual (max norm), ``step_tol`` to the Newton step relative
    to 1 + |x| componentwise, ``max_newton_iter`` counts Jacobian evaluations per step; ``compile``: the stepping
    loop as compiled C (else CasADi's virtual machine); ``cache_dir`` overrides $FFOPT_CACHE_DIR."""
    row_scale: np.ndarray | None = None
    history0: np.ndarray | None = None
    newton_tol: float = 1e-10
    step_tol: float = 1e-9
    max_newton_iter: int = 20
    compile: bool = True
    cache_dir: str | None = None


def solve_bdf(F: ca.Function, x0, t0: float, h: float, n_steps: int, order: int, *, inputs=None,
              extra: ca.Function | None = None, **options) -> BdfResult:
    """Solve F(t, x, xdot) = 0 with k-step BDF (k = ``order``) from t0 for ``n_steps`` steps of h.

    ``F``: casadi.Function (t: 1x1, x: n, xdot: n) -> (n residuals), or (t, x, xdot, r: m) with
    ``inputs`` (n_steps+1, m): known data at the grid points (row i at t_i), e.g. the reference
    path and its derivatives. Data passed this way is not part of the compiled code, so one
    library serves every path of the same model. ``extra``: optional Function (x, xdot) -> (e,)
    evaluated at every step inside the compiled loop (e.g. the motor torques from the solution),
    returned as ``BdfResult.extra`` (n_steps+1, e). ``x0``: x(t0). ``options``: ``BdfOptions`` by keyword
    (row_scale, history0, newton_tol, step_tol, max_newton_iter, compile, cache_dir).
    The result's ``newton_iterations`` gives the count per step.
    Raises ``SolverError`` naming the first step whose Newton iteration did not converge;
    ``ValueError`` for malformed arguments (TypeError for an unknown option).
    """
    o = BdfOptions(**options)
    row_scale, history0, newton_tol, step_tol = o.row_scale, o.history0, o.newton_tol, o.step_tol
    max_newton_iter, compile, cache_dir = o.max_newton_iter, o.compile, o.cache_dir
    n, m = _check_function(F)
    x0, hist0, scale = _check_arrays(n, order, x0, history0, row_scale, h, n_steps)
    r = _check_inputs(m, n_steps, inputs)
    n_e = _check_extra(extra, n)
    if int(max_newton_iter) != max_newton_iter or max_newton_iter < 1:
        raise ValueError(f"max_newton_iter must be a positive integer, got {max_newton_iter}")
    if not (newton_tol >= 0 and step_tol >= 0):
        raise ValueError(f"newton_tol and step_tol must be >= 0, got {newton_tol}, {step_tol}")
    with _SOLVE_LOCK:
        tic = time.perf_counter()
        funcs = _get_functions(F, order, (newton_tol, step_tol), max_newton_iter, compile, cache_dir, extra)
        t_build = time.perf_counter() - tic

        tic, cpu = time.perf_counter(), time.process_time()
        c = np.concatenate([[1.0 / h], scale])
        t = t0 + h * np.arange(n_steps + 1)
        start = np.concatenate([x0, hist0[:-1].ravel()])  # state before step 1: x_0, ..., x_{1-k}
        n_diag = 3 * n + 2 + n_e
        if funcs.driver is not None:
            out = _march_in_c(funcs.driver, start, t[1:], c, r[1:], n_diag)
        else:
            out = _march_in_vm(funcs, start, t[1:], c, r[1:], n_diag)
        out = out.reshape(n_steps, n_diag)  # column-major diagnostics: row i = step i+1
        x = np.vstack([x0, out[:, :n]])
        res0, xdot0, extra0 = _call_into_numpy(funcs.post, x0, [t[0]], hist0.ravel(), c, r[0])
    res = np.vstack([res0, out[:, n:2 * n]])
    xdot = np.vstack([xdot0, out[:, 2 * n:3 * n]])
    converged = _converged(res * scale, x, out[:, 3 * n])
    iterations = np.concatenate([[0], np.nan_to_num(out[:, 3 * n + 1], nan=-1.0)]).astype(int)  # -1: step failed
    t_solve, cpu = time.perf_counter() - tic, time.process_time() - cpu

    result = BdfResult(
        t=t,
        x=x,
        xdot=xdot,
        residual_norm=np.abs(res).max(axis=1),
        newton_converged=converged,
        wall_time_build=t_build,
        wall_time_solve=t_solve,
        compiled=funcs.compiled,
        newton_iterations=iterations,
        extra=np.vstack([extra0, out[:, 3 * n + 2:]]) if extra is not None else None,
        cpu_time_solve=cpu,
        compile_level=funcs.level,
    )
    _raise_on_failure(result, order, h)
    return result


# --- argument checks -------------------------------------------------------------------------


def _check_function(F) -> tuple[int, int]:
    """Return (n, m) after checking that F is (t: 1x1, x: n, xdot: n[, r: m]) -> (n,)."""
    if not isinstance(F, ca.Function) or F.n_in() not in (3, 4) or F.n_out() < 1:
        raise ValueError("F must be a casadi.Function (t, x, xdot) -> residual or (t, x, xdot, r) -> residual")
    n = F.numel_in(1)
    m = F.numel_in(3) if F.n_in() == 4 else 0
    shapes = [F.size_in(i) for i in range(F.n_in())] + [F.size_out(0)]
    if shapes != [(1, 1), (n, 1), (n, 1)] + ([(m, 1)] if F.n_in() == 4 else []) + [(n, 1)]:
        raise ValueError(f"F must map (1x1, {n}x1, {n}x1[, mx1]) -> {n}x1, got shapes {shapes}")
    return n, m


def _check_extra(extra, n) -> int:
    """Number of extra outputs per step after checking that ``extra`` is (x: n, xdot: n) -> (e,)."""
    if extra is None:
        return 0
    if not isinstance(extra, ca.Function) or extra.n_in() != 2 or extra.n_out() != 1 \
            or [extra.size_in(0), extra.size_in(1)] != [(n, 1), (n, 1)] or extra.size2_out(0) != 1:
        raise ValueError(f"extra must be a casadi.Function (x: {n}x1, xdot: {n}x1) -> column vector")
    return extra.size1_out(0)


def _check_inputs(m, n_steps, inputs) -> np.ndarray:
    """The per-step data (n_steps+1, m) for an F with an input r (an empty array for m = 0)."""
    if m == 0:
        if inputs is not None and np.size(inputs) > 0:
            raise ValueError("inputs given, but F has no input r: F must be (t, x, xdot, r) -> residual")
        return np.zeros((n_steps + 1, 0))
    if inputs is None:
        raise ValueError(f"F takes an input r ({m} entries per step): pass inputs (n_steps+1, {m})")
    r = np.asarray(inputs, dtype=float)
    if r.shape != (n_steps + 1, m) or not np.all(np.isfinite(r)):
        raise ValueError(f"inputs must be finite, shape ({n_steps + 1}, {m}), got {r.shape}")
    return r


def _check_arrays(n, order, x0, history0, row_scale, h, n_steps):
    """Validate and convert the numeric arguments; return x0, history0, row_scale arrays."""
    if order not in BDF_ALPHA:
        raise ValueError(f"BDF order must be 1..6, got {order}")
    if not (np.isfinite(h) and h > 0) or int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"need h > 0 and n_steps >= 1, got h={h}, n_steps={n_steps}")
    x0 = np.asarray(x0, dtype=float).reshape(-1)
    hist0 = np.tile(x0, (order, 1)) if history0 is None else np.asarray(history0, dtype=float)
    scale = np.ones(n) if row_scale is None else np.asarray(row_scale, dtype=float).reshape(-1)
    if x0.shape != (n,) or hist0.shape != (order, n) or scale.shape != (n,):
        raise ValueError(
            f"expected x0 ({n},), history0 ({order}, {n}), row_scale ({n},); got "
            f"{x0.shape}, {hist0.shape}, {scale.shape}"
        )
    if not (np.all(np.isfinite(scale)) and np.all(scale != 0)):
        raise ValueError("row_scale must be finite and nonzero")
    return x0, hist0, scale


# --- building the CasADi functions -----------------------------------------------------------


def _get_functions(F, order, tol, max_iter, compile, cache_dir, extra=None) -> _BdfFunctions:
    """Return the functions for this problem from memory, the disk cache, or a fresh build."""
    key = _problem_key(F, order, tol, max_iter, compile, extra)
    if key is not None and key in MEMORY_CACHE:
        MEMORY_CACHE.move_to_end(key)
        hit = MEMORY_CACHE[key]
        if not (hit.level == "O0" or hit.pending) or not _refresh_pending(hit, key, cache_dir):
            return hit
        MEMORY_CACHE.pop(key)  # the background -O2 build has finished: load it
    funcs = _load_compiled(key, cache_dir) if compile and key is not None else None
    if funcs is not None and funcs.level == "O0" and compile_mode() == "tiered":
        _resume_background_build(key, cache_dir)
    if funcs is None:  # not on disk: build the step symbolically (and compile it)
        funcs = build_bdf_functions(expanded_function(F), order, tol, max_iter, key, extra)
        if compile and key is not None and compile_mode() == "tiered":
            funcs = _in_vm_while_building(funcs, key, cache_dir)
        elif compile and key is not None:
            funcs = _compiled(funcs, key, cache_dir)
        elif compile:
            warnings.warn("F cannot be serialized; BDF runs in CasADi's virtual machine", RuntimeWarning)
    if key is not None:
        MEMORY_CACHE[key] = funcs
        while len(MEMORY_CACHE) > _MEMORY_CACHE_SIZE:
            MEMORY_CACHE.popitem(last=False)
    return funcs


def _problem_key(F, order, tol, max_iter, compile, extra=None) -> str | None:
    """Hash of everything the step function depends on, or None if F (or extra) cannot be serialized.

    Remembered per (F, extra) object and settings: hashing the serialized functions costs ~0.2 ms."""
    memo = (id(F), id(extra), order, tuple(map(float, tol)), int(max_iter), bool(compile),
            _compiler() if compile else None)
    hit = _KEYS.get(memo)
    if hit is not None and hit[0] is F and hit[1] is extra:
        return hit[2]
    key = _hash_key(F, order, tol, max_iter, compile, extra)
    _KEYS[memo] = (F, extra, key)  # holding F and extra keeps their ids from being reused
    while len(_KEYS) > _MEMORY_CACHE_SIZE:
        _KEYS.popitem(last=False)
    return key


def _hash_key(F, order, tol, max_iter, compile, extra) -> str | None:
    text = _serialized(F)
    if extra is not None:
        more = _serialized(extra)
        text = None if text is None or more is None else f"{text}\nextra:\n{more}"
    if text is None:
        return None
    settings = (_CODE_VERSION, ca.__version__, order, repr(tuple(map(float, tol))), _BACKWARD_ERROR_TOL,
                int(max_iter), compile)
    if compile:
        settings += (_compiler(),) + _CFLAGS
    return hashlib.sha256((repr(settings) + text).encode()).hexdigest()


def _serialized(F: ca.Function) -> str | None:
    """F.serialize() (None if F cannot be serialized), remembered for the Function object:
    serializing E12's residual costs about a millisecond, a fifth of a whole BDF solve."""
    hit = _SERIALIZED.get(id(F))
    if hit is not None and hit[0] is F:
        return hit[1]
    try:
        text = F.serialize()
    except RuntimeError:
        text = None
    _SERIALIZED[id(F)] = (F, text)  # holding F keeps its id from being reused
    while len(_SERIALIZED) > _MEMORY_CACHE_SIZE:
        _SERIALIZED.popitem(last=False)
    return text


def expanded_function(F: ca.Function) -> ca.Function:
    """F as an SX function if it can be expanded (faster), else F itself."""
    if F.is_a("SXFunction"):
        return F
    try:
        return F.expand()
    except RuntimeError:
        return F


def _symbols(F, order):
    """Symbols (x, t, hist, c, r) and the expressions (xdot, residual) of one BDF step."""
    n, m = F.numel_in(1), (F.numel_in(3) if F.n_in() == 4 else 0)
    sym = ca.SX.sym if F.is_a("SXFunction") else ca.MX.sym
    x, t, hist, c, r = sym("x", n), sym("t"), sym("hist", n * order), sym("c", 1 + n), sym("r", m)
    alpha = BDF_ALPHA[order]
    past = ca.reshape(hist, n, order)  # columns x_{i-1}, ..., x_{i-k}
    xdot = (alpha[0] * x + ca.mtimes(past, ca.DM(alpha[1:]))) * c[0]
    return x, t, hist, c, r, xdot, (F(t, x, xdot, r) if F.n_in() == 4 else F(t, x, xdot))


def build_bdf_functions(F, order, tol, max_iter, key, extra=None) -> _BdfFunctions:
    """Build the step function: guarded Newton iterations, history shift, per-step diagnostics.

    Second output of the step: [x_i (n), F unscaled (n), D_h x_i (n), converged (0/1), Newton
    iterations (Jacobian evaluations), extra(x_i, D_h x_i)], computed in the same compiled call.
    """
    n, m = F.numel_in(1), (F.numel_in(3) if F.n_in() == 4 else 0)
    hist, t, c, r = ca.MX.sym("hist", n * order), ca.MX.sym("t"), ca.MX.sym("c", 1 + n), ca.MX.sym("r", m)
    p = ca.vertcat(t, hist, c, r)
    weights = [(-1) ** (j + 1) * comb(order, j) for j in range(1, order + 1)]
    x = ca.mtimes(ca.reshape(hist, n, order), ca.DM(weights))  # extrapolation: the Newton start
    done, iterations = ca.MX(0), ca.MX(0)
    guarded = _guarded_newton_iteration(F, order, tol)
    for _ in range(int(max_iter)):
        x, done, evaluated = guarded(done, x, p)
        iterations += evaluated
    res, xdot = _residual_function(F, order)(x, p)
    name = f"bdf_step_{key[:16]}" if key else "bdf_step"
    shifted = ca.vertcat(x, hist[: n * (order - 1)]) if order > 1 else x
    derived = (lambda xi, xdi: ca.MX(0, 1)) if extra is None else expanded_function(extra)
    diag = ca.densify(ca.vertcat(x, res, xdot, done, iterations, derived(x, xdot)))
    step = ca.Function(name, [hist, t, c, r], [shifted, diag])
    xs, ts, hs, cs, rs = (ca.MX.sym("x", n), ca.MX.sym("t"), ca.MX.sym("hist", n * order), ca.MX.sym("c", 1 + n),
                          ca.MX.sym("r", m))
    res0, xdot0 = _residual_function(F, order)(xs, ca.vertcat(ts, hs, cs, rs))
    post = ca.Function(_post_name(name), [xs, ts, hs, cs, rs],
                       [ca.densify(res0), ca.densify(xdot0), ca.densify(derived(xs, xdot0))])
    return _BdfFunctions(step=step, post=post, compiled=False)


def _post_name(step_name: str) -> str:
    return step_name.replace("bdf_step", "bdf_post")


def _residual_function(F, order) -> ca.Function:
    """(x, p) -> (F unscaled, D_h x) with p = [t; hist; c; r]."""
    x, t, hist, c, r, xdot, res = _symbols(F, order)
    return ca.Function("bdf_residual", [x, ca.vertcat(t, hist, c, r)], _shared([res, xdot]))


def _guarded_newton_iteration(F, order, tol) -> ca.Function:
    """(done, x, p) -> (x', done', evaluated): one Newton iteration unless ``done``.

    An iteration evaluates the scaled residual g and its Jacobian J at x. It stops without a step
    if max |g| <= newton_tol or the componentwise backward error max_i |g_i| / (|J| (1 + |x|))_i
    is at roundoff level; otherwise it takes the step dx = J^-1 g (sparse QR) and stops if
    max |dx_j| / (1 + |x_j|) <= step_tol. Both branches are short-circuited (CasADi Switch), so
    converged steps cost nothing further.
    """
    x, t, hist, c, r, _, res = _symbols(F, order)
    p = ca.vertcat(t, hist, c, r)
    g = c[1:] * res
    J = _flush_tiny(ca.jacobian(g, x))
    size = ca.mtimes(ca.fabs(J), 1 + ca.fabs(x))  # the size of each row's terms
    backward = ca.mmax(ca.fabs(g) / ca.fmax(size, 1e-300))
    small = ca.logic_or(ca.mmax(ca.fabs(g)) <= tol[0], backward <= _BACKWARD_ERROR_TOL)
    residual_and_jacobian = ca.Function("bdf_g_J", [x, p], _shared([g, J, small]))

    xm, pm, gm = ca.MX.sym("x", x.numel()), ca.MX.sym("p", p.numel()), ca.MX.sym("g", x.numel())
    Jm = ca.MX.sym("J", J.sparsity())
    x_new = xm - ca.solve(Jm, gm, "qr")
    small_step = ca.mmax(ca.fabs(x_new - xm) / (1 + ca.fabs(xm))) <= tol[1]
    take_step = ca.Function("bdf_take_step", [xm, gm, Jm], [x_new, small_step])
    stop = ca.Function("bdf_stop", [xm, gm, Jm], [xm, ca.MX(1)])
    step_or_stop = ca.Function.if_else("bdf_step_or_stop", stop, take_step)

    gi, Ji, smalli = residual_and_jacobian(xm, pm)
    xi, donei = step_or_stop(smalli, xm, gi, Ji)
    iterate = ca.Function("bdf_iterate", [xm, pm], [xi, donei, ca.MX(1)])
    idle = ca.Function("bdf_idle", [xm, pm], [xm, ca.MX(1), ca.MX(0)])
    return ca.Function.if_else("bdf_newton_iteration", idle, iterate)


def _shared(expressions: list) -> list:
    """SX expressions with their common subexpressions merged (CasADi's cse), so each is evaluated
    once: the residual, its derivatives and the Jacobian repeat many of the same terms. Merging
    identical operations on identical operands changes no result (same operations, same order);
    E12's residual + Jacobian shrinks from 2189 to 1266 operations, a 6-axis arm's from 37001 to
    26858, which speeds up the loop and the C compiler alike."""
    if not hasattr(ca, "cse") or not all(isinstance(e, ca.SX) for e in expressions):
        return expressions
    return list(ca.cse(expressions))


def _flush_tiny(J):
    """J with entries below FLUSH_RELATIVE x (their row's largest) set to exact zeros.

    CasADi's sparse Householder QR squares the entries of a column to get its norm. Where the
    solution is at rest, velocity-dependent entries (Coriolis terms, ~|v|) decay to 1e-160 and
    below; their squares underflow, the reflector's 1/(s v0) overflows, and the QR returns NaN on a
    perfectly conditioned matrix (a 2-link elastic arm, form I1, ~66 ms into the final rest). Such
    entries are far below the roundoff of their row, so zeroing them leaves the Newton step
    unchanged to machine precision; exact zeros take QR's sigma == 0 branch.
    """
    if not isinstance(J, ca.SX) or J.nnz() == 0:
        return J
    rows, _ = J.sparsity().get_triplet()
    nz = [J.nz[k] for k in range(J.nnz())]
    row_max = [ca.SX(0.0)] * J.size1()
    for v, r in zip(nz, rows):
        row_max[r] = ca.fmax(row_max[r], ca.fabs(v))
    flushed = [ca.if_else(ca.fabs(v) <= FLUSH_RELATIVE * row_max[r], 0.0, v) for v, r in zip(nz, rows)]
    return ca.SX(J.sparsity(), ca.vertcat(*flushed))


# --- compilation and disk cache --------------------------------------------------------------


def _so_path(key: str, cache_dir, quick: bool = False) -> Path:
    return _cache_dir(cache_dir) / f"bdf_{key[:32]}{'_O0' if quick else ''}.so"


def _load_compiled(key: str, cache_dir) -> _BdfFunctions | None:
    """The compiled step and check functions from the disk cache (-O2, else -O0), or None if not there.

    Loading skips the symbolic build of the step (Newton iterations, Jacobian, QR: tens of ms)."""
    name = f"bdf_step_{key[:16]}"
    for quick in (False, True):
        so_path = _so_path(key, cache_dir, quick)
        if not so_path.exists():
            continue
        try:
            step = ca.external(name, str(so_path))
            return _BdfFunctions(step=step, post=ca.external(_post_name(name), str(so_path)), compiled=True,
                                 level="O0" if quick else "O2", driver=_load_driver(so_path, name))
        except (RuntimeError, OSError, AttributeError):  # an older layout or a damaged file: build anew
            so_path.unlink(missing_ok=True)
    return None


def _in_vm_while_building(funcs: _BdfFunctions, key: str, cache_dir) -> _BdfFunctions:
    """Tiered compilation's first run of a step: CasADi's virtual machine now (a single plan's BDF solve there
    costs less than gcc -O0: E12 0.08 s against 0.24 s, UR5 0.84 s against 1.9 s, measured 2026-11-27), the C
    source written and -O2 built in the background; the solves after it switch to the library once it is
    there (``_refresh_pending``). A build that failed before is reported, not retried."""
    failure = build_failure(_so_path(key, cache_dir))
    if failure is not None:
        _warn_compile_failed(failure)
        return funcs
    try:
        source = _so_path(key, cache_dir).with_suffix(".c")
        if not source.exists():
            write_source((funcs.step, funcs.post), source, _driver_source(funcs.step))
        _build_in_background(source, _so_path(key, cache_dir))
    except (OSError, RuntimeError) as err:
        _warn_compile_failed(compiler_message(err))
        return funcs
    funcs.pending = True
    return funcs


def _refresh_pending(hit: _BdfFunctions, key: str, cache_dir) -> bool:
    """Whether the -O2 library of a step running in the VM or at -O0 is there now (then it is loaded); a
    failed background build is reported once and the step stays where it is; a skipped one is resumed."""
    if _so_path(key, cache_dir).exists():
        return True
    if hit.pending:
        failure = build_failure(_so_path(key, cache_dir))
        if failure is not None:
            hit.pending = False
            _warn_compile_failed(failure)
        elif compile_mode() == "tiered":
            _resume_background_build(key, cache_dir)
    return False


def _warn_compile_failed(message: str) -> None:
    warnings.warn(f"compiling the BDF step failed ({message}); using CasADi's virtual machine", RuntimeWarning)


def _resume_background_build(key: str, cache_dir) -> None:
    """Start the -O2 build of a library loaded at -O0 whose build was skipped (one background build per cache
    at a time, ``ffopt.codegen.build_in_background``) from the C source kept beside it."""
    source = _so_path(key, cache_dir).with_suffix(".c")
    if source.exists():
        _build_in_background(source, _so_path(key, cache_dir))


def _compiled(funcs: _BdfFunctions, key: str, cache_dir) -> _BdfFunctions:
    """Swap the step and check functions for compiled ones, compiled now into the disk cache (FFOPT_COMPILE
    sync: -O2; quick: -O0; tiered compilation runs the VM first, ``_in_vm_while_building``)."""
    quick = compile_mode() != "sync"
    so_path = _so_path(key, cache_dir, quick)
    try:
        if not so_path.exists():
            _compile_to((funcs.step, funcs.post), so_path, _driver_source(funcs.step),
                        _CFLAGS_QUICK if quick else _CFLAGS)
        step = ca.external(funcs.step.name(), str(so_path))
        post = ca.external(funcs.post.name(), str(so_path))
        driver = _load_driver(so_path, funcs.step.name())
    except (OSError, RuntimeError, AttributeError, subprocess.SubprocessError) as err:
        _warn_compile_failed(compiler_message(err))
        return funcs
    return _BdfFunctions(step=step, post=post, compiled=True, level="O0" if quick else "O2", driver=driver)


# The stepping loop in C: n_steps calls of the generated step function, the history carried from
# one step's output into the next step's input; diagnostics of step i at diag + n_diag * i.
# Returns 0, or i + 1 if the step function failed at step i (as CasADi's own evaluation would).
_DRIVER = """
/* ffopt BDF stepping loop */
#include <stdlib.h>
#include <string.h>
CASADI_SYMBOL_EXPORT int {step}_march(const casadi_real* start, const casadi_real* t, const casadi_real* c,
                                      const casadi_real* r, casadi_int n_steps, casadi_real* hist_out,
                                      casadi_real* diag) {{
  casadi_int sz_arg, sz_res, sz_iw, sz_w, i;
  int flag = 0, mem;
  casadi_real *cur, *next, *swap;
  {step}_work(&sz_arg, &sz_res, &sz_iw, &sz_w);
  const casadi_real** arg = (const casadi_real**) malloc(sizeof(casadi_real*) * sz_arg);
  casadi_real** res = (casadi_real**) malloc(sizeof(casadi_real*) * sz_res);
  casadi_int* iw = (casadi_int*) malloc(sizeof(casadi_int) * (sz_iw > 0 ? sz_iw : 1));
  casadi_real* w = (casadi_real*) malloc(sizeof(casadi_real) * (sz_w > 0 ? sz_w : 1));
  casadi_real* hist = (casadi_real*) malloc(sizeof(casadi_real) * 2 * {n_hist});
  if (!arg || !res || !iw || !w || !hist) {{
    free((void*) arg); free(res); free(iw); free(w); free(hist);
    return -1;
  }}
  {step}_incref();
  mem = {step}_checkout();
  cur = hist;
  next = hist + {n_hist};
  memcpy(cur, start, sizeof(casadi_real) * {n_hist});
  for (i = 0; i < n_steps && !flag; ++i) {{
    arg[0] = cur; arg[1] = t + i; arg[2] = c; arg[3] = r + {m} * i;
    res[0] = next; res[1] = diag + {n_diag} * i;
    if ({step}(arg, res, iw, w, mem)) flag = (int) (i + 1);
    swap = cur; cur = next; next = swap;
  }}
  if (!flag) memcpy(hist_out, cur, sizeof(casadi_real) * {n_hist});
  {step}_release(mem);
  {step}_decref();
  free((void*) arg); free(res); free(iw); free(w); free(hist);
  return flag;
}}
"""


def _driver_source(step: ca.Function) -> str:
    dense = all(step.sparsity_in(i).is_dense() for i in range(4)) and all(
        step.sparsity_out(i).is_dense() for i in range(2))
    if not dense:
        raise RuntimeError("the BDF step function has sparse inputs or outputs")
    return _DRIVER.format(step=step.name(), n_hist=step.nnz_in(0), m=step.nnz_in(3), n_diag=step.nnz_out(1))


def _load_driver(so_path: Path, step_name: str):
    """The compiled stepping loop of library ``so_path`` as a ctypes function."""
    import ctypes

    fn = getattr(ctypes.CDLL(str(so_path)), f"{step_name}_march")
    ptr = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ptr, ptr, ptr, ptr, ctypes.c_longlong, ptr, ptr]
    fn.restype = ctypes.c_int
    return fn


def _march_in_c(driver, start, t, c, r, n_diag) -> np.ndarray:
    """Run the compiled loop over the steps t (n_steps,), inputs r (n_steps, m); diagnostics (n_steps, n_diag)."""
    import ctypes

    ptr = ctypes.POINTER(ctypes.c_double)
    arrays = [np.ascontiguousarray(a, dtype=float) for a in (start, t, c, r)]
    hist = np.empty(arrays[0].size)
    diag = np.empty((t.size, n_diag))
    flag = driver(*(a.ctypes.data_as(ptr) for a in arrays), t.size, hist.ctypes.data_as(ptr), diag.ctypes.data_as(ptr))
    if flag < 0:
        raise MemoryError("the compiled BDF stepping loop could not allocate its work arrays")
    if flag > 0:  # step `flag` failed to evaluate: it and the steps after it did not converge
        diag[flag - 1:] = np.nan
    return diag


# --- convergence check -----------------------------------------------------------------------


def _converged(scaled_res, x, newton_done) -> np.ndarray:
    """Per-step convergence flags (see the module docstring); row 0 (given data) is always True."""
    finite = np.all(np.isfinite(scaled_res), axis=1) & np.all(np.isfinite(x), axis=1)
    ok = finite.copy()
    ok[1:] &= newton_done > 0.5
    ok[0] = True
    return ok


def _raise_on_failure(result: BdfResult, order: int, h: float) -> None:
    """Raise SolverError naming the first step whose Newton iteration did not converge."""
    failed = np.flatnonzero(~result.newton_converged)
    if failed.size == 0:
        return
    i = failed[0]
    raise SolverError(
        f"BDF-{order} Newton iteration did not converge at t = {result.t[i]:.6g} "
        f"(step {i} of {len(result.t) - 1}, h = {h:.3g}, {failed.size} failed steps): "
        f"max |F| = {result.residual_norm[i]:.3g}. Try a smaller/larger step h, a lower "
        "order, a different row scaling power p, or a lower-index formulation.",
        failed_time_s=float(result.t[i]), order=int(order), step=float(h))
