"""Backend: IPOPT through its C interface (ctypes), on the transcription's kernels.

The same IPOPT, options and callbacks as the cyipopt backend, without cyipopt's copy loops: cyipopt hands
every Jacobian and Hessian value to IPOPT one element at a time through a Python object (E12 bounded at
2 ms: 7.6 ms per Jacobian of 110k entries inside IPOPT against 1.5 ms to compute it). Here the callbacks
write into IPOPT's arrays through numpy views (one memcpy each).

Two IPOPT libraries come with the dependencies: CasADi's (``casadi/libipopt.so``, IPOPT 3.14.19 with MUMPS
and SPRAL) and cyipopt's (``cyipopt_wheels.libs``, 3.14.11 with MUMPS). ``library`` picks one; which is
the default was measured (``ffopt bench --table nlp``, results/nlp.md).
"""

from __future__ import annotations

import ctypes
import glob
import os
import time
from functools import lru_cache

import numpy as np

from ffopt import interrupt
from ffopt.errors import SolverError
from ffopt.nlp.backends.callbacks import IpoptCallbacks, prepared_derivatives
from ffopt.nlp.backends.common import (IPOPT_STATUS_NAMES, SUCCESS_STATUSES, NlpResult, ipopt_options, not_started,
                                       run_ipopt_isolated)
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.problem import NlpProblem

BACKEND = "ipopt-c"
LIBRARIES = ("casadi", "cyipopt")
_dbl, _int, _bool = ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.c_bool  # ipnumber, ipindex (IpTypes.h)
_idx = ctypes.POINTER(ctypes.c_int)
_EVAL_F = ctypes.CFUNCTYPE(_bool, _int, _dbl, _bool, _dbl, ctypes.c_void_p)
_EVAL_GRAD_F = ctypes.CFUNCTYPE(_bool, _int, _dbl, _bool, _dbl, ctypes.c_void_p)
_EVAL_G = ctypes.CFUNCTYPE(_bool, _int, _dbl, _bool, _int, _dbl, ctypes.c_void_p)
_EVAL_JAC_G = ctypes.CFUNCTYPE(_bool, _int, _dbl, _bool, _int, _int, _idx, _idx, _dbl, ctypes.c_void_p)
_EVAL_H = ctypes.CFUNCTYPE(_bool, _int, _dbl, _bool, ctypes.c_double, _int, _dbl, _bool, _int, _idx, _idx, _dbl,
                           ctypes.c_void_p)
_INTERMEDIATE = ctypes.CFUNCTYPE(_bool, _int, _int, *([ctypes.c_double] * 8), _int, ctypes.c_void_p)



def library_path(library: str = "casadi") -> str:
    """Where the IPOPT shared library ``library`` ("casadi" or "cyipopt") is; SolverError if it is not."""
    if library == "casadi":
        import casadi

        paths = [os.path.join(os.path.dirname(casadi.__file__), "libipopt.so")]
    elif library == "cyipopt":
        import importlib.util

        spec = importlib.util.find_spec("cyipopt")
        root = os.path.dirname(os.path.dirname(spec.origin)) if spec and spec.origin else ""
        paths = sorted(glob.glob(os.path.join(root, "cyipopt_wheels.libs", "libipopt-*.so*")))
    else:
        raise SolverError(f"IPOPT library must be one of {', '.join(LIBRARIES)}, got {library!r}")
    found = [p for p in paths if os.path.exists(p)]
    if not found:
        raise SolverError(f"no IPOPT shared library of {library} found (looked for {paths or 'cyipopt_wheels.libs'}); "
                          "use nlp.backend = 'cyipopt' or 'casadi'")
    return found[0]


def _load_beside(path: str) -> None:
    """Load the libraries in ``path``'s folder (local scope), each once the ones it needs are loaded (their
    wheel-mangled names are found by their sonames then)."""
    pending = [p for p in glob.glob(os.path.join(os.path.dirname(path), "*.so*")) if p != path]
    while pending:
        left = []
        for dep in pending:
            try:
                ctypes.CDLL(dep)  # local: its symbols must not stand in for CasADi's MUMPS or BLAS
            except OSError:
                left.append(dep)
        if len(left) == len(pending):
            raise OSError(f"cannot load {', '.join(os.path.basename(p) for p in left)} beside {path}")
        pending = left


@lru_cache(maxsize=None)
def load_library(library: str = "casadi") -> ctypes.CDLL:
    """The IPOPT library with the C interface's signatures declared (IpStdCInterface.h, IPOPT 3.14)."""
    path = library_path(library)
    if library == "cyipopt":  # its MUMPS, OpenBLAS and Fortran runtime sit beside it (found via cyipopt's module)
        _load_beside(path)
    lib = ctypes.CDLL(path)
    lib.CreateIpoptProblem.restype = ctypes.c_void_p
    lib.CreateIpoptProblem.argtypes = [_int, _dbl, _dbl, _int, _dbl, _dbl, _int, _int, _int,
                                       _EVAL_F, _EVAL_G, _EVAL_GRAD_F, _EVAL_JAC_G, _EVAL_H]
    lib.FreeIpoptProblem.argtypes = [ctypes.c_void_p]
    lib.FreeIpoptProblem.restype = None
    for name, value_type in (("Str", ctypes.c_char_p), ("Num", ctypes.c_double), ("Int", _int)):
        fn = getattr(lib, f"AddIpopt{name}Option")
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p, value_type], _bool
    lib.SetIntermediateCallback.argtypes, lib.SetIntermediateCallback.restype = [ctypes.c_void_p, _INTERMEDIATE], _bool
    lib.IpoptSolve.argtypes = [ctypes.c_void_p, _dbl, _dbl, _dbl, _dbl, _dbl, _dbl, ctypes.c_void_p]
    lib.IpoptSolve.restype = ctypes.c_int
    lib.GetIpoptCurrentIterate.argtypes = [ctypes.c_void_p, _bool, _int, _dbl, _dbl, _dbl, _int, _dbl, _dbl]
    lib.GetIpoptCurrentIterate.restype = _bool
    return lib


def available(library: str = "casadi") -> bool:
    try:
        load_library(library)
    except (SolverError, OSError, AttributeError):
        return False
    return True


def library_for(linear_solver: str = "mumps") -> str:
    """The IPOPT library for a linear solver: cyipopt's for MUMPS (E12 bounded, 2 ms: 0.64 s of CPU against
    1.23 s with CasADi's, whose threaded OpenBLAS spins on every core, 0.69 s wall), CasADi's for SPRAL."""
    return "cyipopt" if linear_solver == "mumps" and available("cyipopt") else "casadi"


def solve(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w0: np.ndarray | None = None,
          library: str = "casadi", linear_solver: str = "mumps") -> NlpResult:
    """IPOPT through its C interface, in a worker process (``common.run_ipopt_isolated``)."""
    load_library(library)  # a missing library is said here, not in the worker
    w_start = problem.w0 if w0 is None else w0
    if problem.info.get("derivatives") is not None:  # loading or building the kernels and their sparsity: ~1 s
        monitor.note("NLP: the interval kernels of IPOPT's derivatives and their sparsity")
    derivatives = prepared_derivatives(problem)
    return run_ipopt_isolated(lambda mon: _solve(problem, warm, tol, mon, w_start, library, linear_solver, derivatives),
                              w_start, monitor, BACKEND, "IPOPT via ctypes")


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_dbl)


class _Callbacks:
    """The C callbacks around the NLP's callback object (``callbacks.IpoptCallbacks``: the same kernels and monitor); an
    exception inside one is kept, IPOPT is told the evaluation failed, and ``_solve`` raises it again."""

    def __init__(self, problem: NlpProblem, monitor: SolveMonitor, lib, derivatives=None):
        self.cb = IpoptCallbacks(problem, monitor, derivatives)
        self.cb.ipopt = self  # its intermediate() asks get_current_iterate()
        self.lib, self.handle, self.error = lib, None, None
        self.n, self.m = problem.n_variables, problem.n_constraints
        rows, cols = self.cb.jacobianstructure()
        self.jac_structure = (np.asarray(rows, np.int32), np.asarray(cols, np.int32))
        rows, cols = self.cb.hessianstructure()
        self.hess_structure = (np.asarray(rows, np.int32), np.asarray(cols, np.int32))
        self.c_functions = (_EVAL_F(self._guard(self.eval_f)), _EVAL_G(self._guard(self.eval_g)),
                            _EVAL_GRAD_F(self._guard(self.eval_grad_f)), _EVAL_JAC_G(self._guard(self.eval_jac_g)),
                            _EVAL_H(self._guard(self.eval_h)))
        self.c_intermediate = _INTERMEDIATE(self._guard(self.cb.intermediate))

    def _guard(self, fn):
        def call(*args):
            try:
                return bool(fn(*args))
            except BaseException as err:  # noqa: BLE001 - raised again after IpoptSolve returns
                self.error = self.error or err
                return False
        return call

    def _x(self, n, x) -> np.ndarray:
        return np.ctypeslib.as_array(x, (n,)).copy()  # the kernels may keep w; IPOPT reuses its buffer

    def eval_f(self, n, x, new_x, obj, _):
        obj[0] = self.cb.objective(self._x(n, x))
        return True

    def eval_grad_f(self, n, x, new_x, out, _):
        np.ctypeslib.as_array(out, (n,))[:] = self.cb.gradient(self._x(n, x))
        return True

    def eval_g(self, n, x, new_x, m, out, _):
        np.ctypeslib.as_array(out, (m,))[:] = self.cb.constraints(self._x(n, x))
        return True

    def eval_jac_g(self, n, x, new_x, m, nele, rows, cols, values, _):
        if not values:  # IPOPT asks for the structure first
            np.ctypeslib.as_array(rows, (nele,))[:], np.ctypeslib.as_array(cols, (nele,))[:] = self.jac_structure
            return True
        np.ctypeslib.as_array(values, (nele,))[:] = self.cb.jacobian(self._x(n, x))
        return True

    def eval_h(self, n, x, new_x, sigma, m, lam, new_lam, nele, rows, cols, values, _):
        if not values:
            np.ctypeslib.as_array(rows, (nele,))[:], np.ctypeslib.as_array(cols, (nele,))[:] = self.hess_structure
            return True
        lam = np.ctypeslib.as_array(lam, (m,)).copy() if m else np.zeros(0)
        np.ctypeslib.as_array(values, (nele,))[:] = self.cb.hessian(self._x(n, x), lam, sigma)
        return True

    def get_current_iterate(self) -> dict | None:
        """The iterate in the NLP's own scaling, as cyipopt's Problem.get_current_iterate gives it."""
        x, g = np.empty(self.n), np.empty(self.m)
        null = ctypes.cast(None, _dbl)
        ok = self.lib.GetIpoptCurrentIterate(self.handle, False, self.n, _ptr(x), null, null, self.m,
                                             _ptr(g) if self.m else null, null)
        return {"x": x, "g": g} if ok else None


def _set_options(lib, handle, options: dict) -> None:
    for key, value in options.items():
        if isinstance(value, str):
            ok = lib.AddIpoptStrOption(handle, key.encode(), value.encode())
        elif isinstance(value, (bool, int, np.integer)):
            ok = lib.AddIpoptIntOption(handle, key.encode(), int(value))
        else:
            ok = lib.AddIpoptNumOption(handle, key.encode(), float(value))
        if not ok:
            raise SolverError(f"IPOPT refused the option {key} = {value!r}")


def _solve(problem: NlpProblem, warm: bool, tol: float, monitor: SolveMonitor, w_start: np.ndarray,
           library: str = "casadi", linear_solver: str = "mumps", derivatives=None) -> NlpResult:
    """IPOPT through its C interface in this process (derivatives: the kernels, if made already)."""
    lib = load_library(library)
    tic = time.perf_counter()
    calls = _Callbacks(problem, monitor, lib, derivatives)
    big = 1e19  # IPOPT's infinity
    bounds = [np.ascontiguousarray(np.clip(b, -big, big), float)
              for b in (problem.lbx, problem.ubx, problem.lbg, problem.ubg)]
    n, m = calls.n, calls.m
    handle = lib.CreateIpoptProblem(n, _ptr(bounds[0]), _ptr(bounds[1]), m, _ptr(bounds[2]), _ptr(bounds[3]),
                                    len(calls.jac_structure[0]), len(calls.hess_structure[0]), 0, *calls.c_functions)
    if not handle:
        raise SolverError(f"IPOPT ({library}) could not create the problem ({n} variables, {m} constraints)")
    calls.handle = handle
    try:
        lib.SetIntermediateCallback(handle, calls.c_intermediate)
        t_build = time.perf_counter() - tic
        if monitor.expired():
            return not_started(w_start, BACKEND, monitor,
                               "the limit was used up while the derivatives were set up", t_build)
        _set_options(lib, handle, ipopt_options(warm, tol, monitor.remaining_iterations(), monitor.remaining_time(),
                                                problem.info.get("hessian", "exact"), monitor.remaining_cpu_time(),
                                                linear_solver))
        x = np.array(w_start, float, copy=True)
        g, obj = np.zeros(max(m, 1)), np.zeros(1)
        mult_g, mult_lower, mult_upper = np.zeros(max(m, 1)), np.zeros(n), np.zeros(n)  # a warm start reads them
        monitor.begin("IPOPT via ctypes")
        tic = time.perf_counter()
        with interrupt.deferred():  # never a KeyboardInterrupt inside a callback
            code = lib.IpoptSolve(handle, _ptr(x), _ptr(g), _ptr(obj), _ptr(mult_g), _ptr(mult_lower), _ptr(mult_upper),
                                  None)
        wall = time.perf_counter() - tic
    finally:
        lib.FreeIpoptProblem(handle)
    if calls.error is not None:
        raise calls.error
    status = IPOPT_STATUS_NAMES.get(code, f"IPOPT return code {code}")
    monitor.end_run(calls.cb.iterations)
    return NlpResult(w=x, f=float(obj[0]), status=status, success=status in SUCCESS_STATUSES,
                     iterations=calls.cb.iterations, time_total_s=wall, time_function_eval_s=calls.cb.time_eval,
                     time_build_s=t_build, backend=BACKEND, g=g[:m], lbg=problem.lbg, ubg=problem.ubg,
                     extra={"ipopt_library": library})


__all__ = ["BACKEND", "LIBRARIES", "available", "library_for", "load_library", "solve"]
