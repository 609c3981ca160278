"""Interval kernels of the collocation NLP: one interval's residual rows, their Jacobian and the Hessian of
lam' rows (SX), evaluated for all K intervals straight from the scaled NLP vector w.

A kernel takes (xs, X, U, tk, h, sx, su, rs[, lam]): the scaled start state, collocation states and torques of
one interval, its start time, the step, the variable scales and the row scales (and the multipliers of its
rows). It returns the nonzeros of the row-scaled residual vec(diag(rs) G), of its Jacobian w.r.t. the scaled
[xs; vec(X); vec(U)], or of the lower triangle of the Hessian of lam' vec(diag(rs) G), so no scaling is left
to do in numpy. The interval's inputs are read from w at fixed strides (``IntervalInputs``): no copies.

Two evaluators give the same numbers: CasADi's virtual machine (a map of the SX function over K), and the
functions generated as C (``ffopt.codegen``), compiled once with gcc -O0 into the disk cache under a hash of
the serialized functions and called for all intervals by one C loop (ctypes, writing into numpy arrays).
On E12 (bounded, h = 2 ms) a Jacobian takes 1.5 ms and a Lagrangian Hessian 1.9 ms this way, against 9 and 19
ms before (results/nlp.md, "Compiled NLP kernels"). A failed build warns (RuntimeWarning) and falls back to the
virtual machine.
"""

from __future__ import annotations

import ctypes
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.codegen import CFLAGS_QUICK, available_cores, cache_dir, compile_library, compiler_message, library_key
from ffopt.progress import heartbeat

_CODE_VERSION = "nlp-kernels-1"
_LOADED: dict[str, ctypes.CDLL] = {}  # library path -> loaded library
_FAILED: set[str] = set()  # keys whose build failed in this process (warned once)

# One C loop per kernel: K calls of the generated function, input i of interval k at base[i] + k stride[i],
# the output of interval k at out + k out_stride. Returns 0, -1 (no memory) or k + 1 (interval k failed).
_BATCH = """
/* ffopt NLP interval kernel loop */
#include <stdlib.h>
CASADI_SYMBOL_EXPORT int {name}_batch(casadi_int K, const casadi_real** base, const casadi_int* stride,
                                      casadi_real* out, casadi_int out_stride) {{
  casadi_int sz_arg, sz_res, sz_iw, sz_w, k, i, n_in = {name}_n_in();
  int flag = 0, mem;
  {name}_work(&sz_arg, &sz_res, &sz_iw, &sz_w);
  const casadi_real** arg = (const casadi_real**) malloc(sizeof(casadi_real*) * sz_arg);
  casadi_real** res = (casadi_real**) malloc(sizeof(casadi_real*) * sz_res);
  casadi_int* iw = (casadi_int*) malloc(sizeof(casadi_int) * (sz_iw > 0 ? sz_iw : 1));
  casadi_real* w = (casadi_real*) malloc(sizeof(casadi_real) * (sz_w > 0 ? sz_w : 1));
  if (!arg || !res || !iw || !w) {{
    free((void*) arg); free(res); free(iw); free(w);
    return -1;
  }}
  {name}_incref();
  mem = {name}_checkout();
  for (k = 0; k < K && !flag; ++k) {{
    for (i = 0; i < n_in; ++i) arg[i] = base[i] + k * stride[i];
    res[0] = out + k * out_stride;
    if ({name}(arg, res, iw, w, mem)) flag = (int) (k + 1);
  }}
  {name}_release(mem);
  {name}_decref();
  free((void*) arg); free(res); free(iw); free(w);
  return flag;
}}
"""


@dataclass
class IntervalInputs:
    """Where each kernel input of interval k is: ``arrays[i][offsets[i] + k * strides[i]:][:sizes[i]]``."""

    arrays: list
    offsets: list
    strides: list
    sizes: list
    K: int

    def columns(self, i: int) -> np.ndarray:
        """Input i of all intervals as an (size, K) array (a strided view where possible), for CasADi's map."""
        a, o, s, n = self.arrays[i], self.offsets[i], self.strides[i], self.sizes[i]
        if s == 0:
            return a[o:o + n]
        view = np.lib.stride_tricks.as_strided(a[o:], shape=(self.K, n), strides=(s * a.itemsize, a.itemsize),
                                               writeable=False)
        return view.T


class IntervalKernel:
    """One SX kernel (output: a dense column of nonzeros) evaluated for K intervals."""

    def __init__(self, fun: ca.Function):
        self.fun, self.n_out = fun, int(fun.nnz_out(0))
        self._maps: dict[int, ca.Function] = {}
        self._batch = None  # the compiled loop (ctypes), once loaded
        self._seconds = 0.0  # how long its last compiled evaluation took in one thread (about)

    def evaluate(self, inputs: IntervalInputs) -> np.ndarray:
        """Output of every interval, (n_out * K,) interval by interval."""
        if self._batch is not None:
            return self._evaluate_compiled(inputs)
        K = inputs.K
        if K not in self._maps:
            self._maps[K] = self.fun.map(K)
        args = [inputs.columns(i) for i in range(len(inputs.arrays))]
        return np.asarray(self._maps[K](*args)).ravel(order="F")

    def _evaluate_compiled(self, inputs: IntervalInputs) -> np.ndarray:
        """The C loop over the intervals, split over one thread per core when there is enough work (ctypes
        releases the GIL; the generated functions keep no state, each call has its own work arrays)."""
        n = len(inputs.arrays)
        arrays = [np.ascontiguousarray(a, dtype=float) for a in inputs.arrays]
        stride = (ctypes.c_longlong * n)(*inputs.strides)
        out = np.empty(self.n_out * inputs.K)
        tic = time.perf_counter()
        parts = _parts(inputs.K, available_cores() if self._seconds > THREAD_MIN_SECONDS else 1)
        flags = [0] * len(parts)

        def run(j: int) -> None:
            first, count = parts[j]
            base = (ctypes.POINTER(ctypes.c_double) * n)(
                *(ctypes.cast(a.ctypes.data + 8 * (o + first * s), ctypes.POINTER(ctypes.c_double))
                  for a, o, s in zip(arrays, inputs.offsets, inputs.strides)))
            at = out[first * self.n_out:].ctypes.data_as(ctypes.POINTER(ctypes.c_double))
            flags[j] = self._batch(count, base, stride, at, self.n_out)

        threads = [threading.Thread(target=run, args=(j,)) for j in range(1, len(parts))]
        for th in threads:
            th.start()
        run(0)
        for th in threads:
            th.join()
        self._seconds = (time.perf_counter() - tic) * len(parts)  # as if in one thread
        for (first, _), flag in zip(parts, flags):
            if flag < 0:
                raise MemoryError("the compiled NLP kernel could not allocate its work arrays")
            if flag > 0:  # as CasADi's own evaluation: an interval whose function failed gives NaN
                out[(first + flag - 1) * self.n_out:] = np.nan
                break
        return out


# A kernel whose last evaluation took longer than this splits its intervals over threads (a thread costs
# ~0.1 ms; E12's bounded Jacobian takes 1.5 ms in one, a 6-axis arm's Hessian of 1150 intervals 1.6 s).
THREAD_MIN_SECONDS = 0.005


def _parts(K: int, threads: int) -> list[tuple[int, int]]:
    """(first interval, count) for each of ``threads`` threads (at most one per interval)."""
    n = max(1, min(threads, K))
    edges = np.linspace(0, K, n + 1).round().astype(int)
    return [(int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:])]


def compile_kernels(kernels: dict[str, IntervalKernel], tag: str, before_compiling=None, progress=None) -> bool:
    """Compile the kernels' functions into one library of the disk cache (gcc -O0, once per hash of the
    serialized functions) and switch them to it. False (and a RuntimeWarning, once per process) if the
    build or the loading fails: the kernels stay in CasADi's virtual machine, with the same numbers.
    ``before_compiling``: called when the library is not in the cache yet (a progress line: seconds of gcc);
    ``progress``: told every 1.5 s how long gcc has been running."""
    funs = [k.fun for k in kernels.values()]
    key = library_key(funs, _CODE_VERSION, CFLAGS_QUICK, tag)
    if key is None:
        return False
    if key in _FAILED:
        return False
    so = cache_dir() / f"nlp_{tag}_{key[:32]}.so"
    named = [_renamed(f, f"{f.name()}_{key[:12]}") for f in funs]  # unique symbols per library
    try:
        if not so.exists():
            if before_compiling is not None:
                before_compiling()
            source = "".join(_BATCH.format(name=f.name()) for f in named)
            with heartbeat(progress, lambda elapsed: f"compiling the NLP's {tag} kernels: {elapsed:.0f} s"):
                compile_library(named, so, extra_source=source, flags=CFLAGS_QUICK)
        lib = _LOADED.get(str(so)) or ctypes.CDLL(str(so))
        _LOADED[str(so)] = lib
        batches = [_batch_function(lib, f.name()) for f in named]
    except (OSError, RuntimeError, AttributeError, subprocess.SubprocessError) as err:
        _FAILED.add(key)
        warnings.warn(f"compiling the NLP's interval derivatives failed ({compiler_message(err)}); "
                      "they run in CasADi's virtual machine (slower, same numbers)", RuntimeWarning, stacklevel=2)
        return False
    for kernel, batch in zip(kernels.values(), batches):
        kernel._batch = batch
    return True


def _renamed(fun: ca.Function, name: str) -> ca.Function:
    args = fun.sx_in()
    return ca.Function(name, args, fun.call(args))


def _batch_function(lib: ctypes.CDLL, name: str):
    fn = getattr(lib, f"{name}_batch")
    ptr = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ctypes.c_longlong, ctypes.POINTER(ptr), ctypes.POINTER(ctypes.c_longlong), ptr, ctypes.c_longlong]
    fn.restype = ctypes.c_int
    return fn


def library_path(tag: str, kernels: dict[str, IntervalKernel]) -> Path | None:
    """The library ``compile_kernels`` uses for these kernels (for tests and benchmarks)."""
    key = library_key([k.fun for k in kernels.values()], _CODE_VERSION, CFLAGS_QUICK, tag)
    return None if key is None else cache_dir() / f"nlp_{tag}_{key[:32]}.so"
