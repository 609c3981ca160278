"""Compile an exported folder (``ffopt export``) and call it from Python through ctypes.

``compile_folder`` builds the shared library (and the harness) with the system C compiler under
``-O2 -std=c99 -Wall -Wextra -Werror``; ``ExportedInverse`` loads the library and runs
``ffopt_init`` / ``ffopt_step`` / ``ffopt_reset``; ``run_harness`` runs the compiled harness and parses
its timing line.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ffopt.errors import SolverError
from ffopt.export.generate import CFLAGS

SOURCES = ("ffopt_inverse.c", "ffopt_generated.c")
OVER_BUDGET = 3  # the harness's exit status when a call took longer than the sample time
STATUS = {0: "ok", 1: "Newton did not converge", 2: "not finite", 3: "evaluation failed", 4: "not initialized",
          5: "work arrays too small"}


def compiler() -> str | None:
    """The C compiler: $CC, else gcc, else cc (None if none is found)."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@dataclass
class Build:
    library: Path
    harness: Path
    warnings: str  # the compilers' stderr (empty: no warnings)


def compile_folder(folder, cc: str | None = None, build_dir=None) -> Build:
    """Compile the exported folder: lib ffopt_inverse (shared) and the harness, into ``build_dir``
    (default folder/build). Raises OSError with the compiler's message on any warning or error."""
    folder = Path(folder)
    cc = cc or compiler()
    if cc is None:
        raise OSError("no C compiler found ($CC, gcc or cc)")
    build = Path(build_dir) if build_dir is not None else folder / "build"
    build.mkdir(parents=True, exist_ok=True)
    lib, harness = build / "libffopt_inverse.so", build / "ffopt_harness"
    objects = [str(build / (Path(s).stem + ".o")) for s in SOURCES]
    messages = []
    commands = [[cc, *CFLAGS, "-fPIC", "-c", "-o", o, str(folder / s)] for s, o in zip(SOURCES, objects)]
    commands += [[cc, *CFLAGS, "-shared", "-fPIC", "-o", str(lib), *objects, "-lm"],
                 [cc, *CFLAGS, "-o", str(harness), str(folder / "harness.c"), *objects, "-lm"]]
    for cmd in commands:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise OSError(f"{' '.join(cmd)}:\n{proc.stderr.strip()}")
        messages.append(proc.stderr.strip())
    return Build(lib, harness, "\n".join(m for m in messages if m))


def run_harness(build: Build, folder, reference=None, runs: int = 20, budget_us: float | None = None
                ) -> tuple[dict, np.ndarray]:
    """Run the harness on ``reference`` (rows of FFOPT_N_REF; default the folder's reference.bin).
    ``budget_us``: the time a call may take (default: the sample time).
    Returns (timing {steps, median_us, worst_us, worst_call_us, worst_call_step, worst_call_run,
    over_budget_calls, over_budget_steps, runs, newton_mean, newton_max, budget_us, over_budget_line}, the
    output rows [u, qm, dqm, iterations, status] per sample). The harness exits 3 when a call took longer than
    the sample time (budget_us): the timing then holds its stderr line as ``over_budget_line``."""
    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text())
    ref_path = folder / "reference.bin"
    out_path = Path(build.harness).parent / "harness_out.bin"
    if reference is not None:
        ref_path = Path(build.harness).parent / "harness_reference.bin"
        np.ascontiguousarray(reference, dtype="<f8").tofile(ref_path)
    budget = [] if budget_us is None else [repr(float(budget_us))]
    proc = subprocess.run([str(build.harness), str(ref_path), str(out_path), str(runs), *budget],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode not in (0, OVER_BUDGET):
        raise SolverError(f"the exported harness failed: {proc.stderr.strip()}")
    words = proc.stdout.split()
    timing = {k: float(v) for k, v in zip(words[::2], words[1::2])}
    timing["over_budget_line"] = proc.stderr.strip() if proc.returncode == OVER_BUDGET else ""
    rows = np.fromfile(out_path, dtype="<f8").reshape(-1, 3 * meta["n_u"] + 2)
    return timing, rows


class ExportedInverse:
    """The compiled exported inverse model: ``init``, ``step``, ``reset``, ``run``."""

    def __init__(self, folder, library=None):
        self.folder = Path(folder)
        self.meta = json.loads((self.folder / "meta.json").read_text())
        if library is None:
            library = compile_folder(self.folder).library
        self.lib = ctypes.CDLL(str(library))
        n = self.meta["n_u"]
        self.n_u, self.n_ref = n, self.meta["n_ref"]

        class Output(ctypes.Structure):
            _fields_ = [("u", ctypes.c_double * n), ("qm", ctypes.c_double * n), ("dqm", ctypes.c_double * n),
                        ("newton_iterations", ctypes.c_int), ("status", ctypes.c_int)]

        self._Output = Output
        for name in ("ffopt_state_size", "ffopt_output_size"):
            getattr(self.lib, name).restype = ctypes.c_ulong
        if self.lib.ffopt_output_size() != ctypes.sizeof(Output):
            raise OSError("the compiled ffopt_output differs from meta.json's sizes")
        words = -(-self.lib.ffopt_state_size() // 8)
        self._state = (ctypes.c_double * words)()  # 8-byte aligned
        self._out = Output()
        dptr = ctypes.POINTER(ctypes.c_double)
        self.lib.ffopt_init.argtypes = [ctypes.c_void_p, dptr, ctypes.POINTER(Output)]
        self.lib.ffopt_reset.argtypes = [ctypes.c_void_p, ctypes.POINTER(Output)]
        self.lib.ffopt_step.argtypes = [ctypes.c_void_p, dptr, ctypes.POINTER(Output)]
        for f in (self.lib.ffopt_init, self.lib.ffopt_reset, self.lib.ffopt_step):
            f.restype = ctypes.c_int
        self._x = (ctypes.c_double * self.meta["n_x"])()
        if hasattr(self.lib, "ffopt_solution"):  # exports of ffopt before it have no ffopt_solution
            self.lib.ffopt_solution.argtypes = [ctypes.c_void_p, dptr]
            self.lib.ffopt_solution.restype = ctypes.c_int

    def _result(self) -> dict:
        o = self._out
        return {"u": np.array(o.u), "qm": np.array(o.qm), "dqm": np.array(o.dqm),
                "newton_iterations": o.newton_iterations, "status": o.status}

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise SolverError(f"exported inverse: {what} failed: {STATUS.get(status, status)} (status {status})")

    def init(self, y_start=None) -> dict:
        """ffopt_init: at rest at the problem's start pose (None) or with the outputs at ``y_start``."""
        arg = None
        if y_start is not None:
            y = np.ascontiguousarray(y_start, dtype=float)
            if y.size != self.meta["n_out"]:
                raise ValueError(f"y_start needs {self.meta['n_out']} entries, got {y.size}")
            self._y = y
            arg = y.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        self._check(self.lib.ffopt_init(self._state, arg, ctypes.byref(self._out)), "ffopt_init")
        return self._result()

    def reset(self) -> dict:
        self._check(self.lib.ffopt_reset(self._state, ctypes.byref(self._out)), "ffopt_reset")
        return self._result()

    def step(self, ref) -> dict:
        r = np.ascontiguousarray(ref, dtype=float)
        if r.size != self.n_ref:
            raise ValueError(f"a reference sample needs {self.n_ref} entries, got {r.size}")
        status = self.lib.ffopt_step(self._state, r.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                     ctypes.byref(self._out))
        self._check(status, "ffopt_step")
        return self._result()

    def solution(self) -> np.ndarray:
        """ffopt_solution: the full state x of the last step (after init / reset: the start state);
        x[:nq] the link and motor angles, x[nq:2 nq] their speeds."""
        if not hasattr(self.lib, "ffopt_solution"):
            raise OSError(f"{self.folder}: the exported code has no ffopt_solution (exported by an older ffopt): "
                          "export it again")
        self._check(self.lib.ffopt_solution(self._state, self._x), "ffopt_solution")
        return np.array(self._x)

    def run(self, reference, y_start=None) -> dict:
        """init, then a step per row 1.. of ``reference`` (rows of n_ref; row 0 is the start). Arrays per
        sample (row 0 from init): u, qm, dqm (n_rows, n_u), newton_iterations (n_rows,)."""
        ref = np.asarray(reference, dtype=float)
        rows = [self.init(y_start)]
        for i in range(1, len(ref)):
            try:
                rows.append(self.step(ref[i]))
            except SolverError as err:
                raise SolverError(f"{err} at sample {i} (t = {i * self.meta['sample_time']:g} s)") from None
        return {k: np.array([row[k] for row in rows]) for k in ("u", "qm", "dqm", "newton_iterations")}


def library_for(folder, say=lambda msg: None) -> Path:
    """The compiled library of an exported folder: folder/build/libffopt_inverse.so if it is newer than the
    folder's sources, else compiled now (``compile_folder``)."""
    folder = Path(folder)
    lib = folder / "build" / "libffopt_inverse.so"
    sources = [folder / s for s in (*SOURCES, "ffopt_inverse.h", "ffopt_generated.h")]
    if lib.is_file() and all(lib.stat().st_mtime >= s.stat().st_mtime for s in sources if s.is_file()):
        return lib
    say(f"compiling {folder} (the system C compiler, {' '.join(CFLAGS)})")
    return compile_folder(folder).library


START_TOL = 1e-6  # exported start state against PROBLEM's static equilibrium (relative to max(1, |x|))


def exported_trajectory(folder, problem, say=lambda msg: None):
    """Run the exported inverse model of ``folder`` (``ffopt export``) sample by sample on ``problem``'s
    reference, as a controller runs it online: ffopt_init, then per sample the reference sample in and the
    torques and motor references out (ffopt_step), and the state of each step (ffopt_solution).

    Returns (Trajectory on the grid t_i = i h, source text): what ``ffopt.closed_loop.simulate(...,
    exported=folder)`` uses in place of a plan's table. The reference is ``problem``'s (its time law as
    given: a rest-to-rest move needs the shaped problem, a plan folder's problem.toml). Raises ProblemError
    if the folder was exported for other joints, outputs or another robot (start state), SolverError if a
    step fails."""
    import json

    from ffopt.errors import ProblemError
    from ffopt.export.generate import inverse_functions, reference_samples
    from ffopt.trajectory import Trajectory

    folder = Path(folder)
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        raise ProblemError(f"--exported {folder}: no meta.json there: not a folder written by ffopt export")
    meta = json.loads(meta_path.read_text())
    model = problem.model
    L = model.layout
    inputs = [model.chain.joints[i].name for i in L.actuated]
    for what, have, want in (("inputs", meta["input_names"], inputs), ("outputs", meta["output_names"],
                                                                       list(model.outputs))):
        if list(have) != list(want):
            raise ProblemError(f"--exported {folder}: exported for {what} {list(have)}, but {problem.source} has "
                               f"{list(want)}: simulate it with the problem it was exported from")
    if problem.solver.form != meta["form"]:
        problem = problem.with_solver(form=meta["form"])
    h = float(meta["sample_time"])
    dae, _, _, q0 = inverse_functions(problem)
    t, r = reference_samples(problem, h, dae)
    if r.shape[1] != meta["n_ref"] or dae.n_x != meta["n_x"]:
        raise ProblemError(f"--exported {folder}: its reference sample has {meta['n_ref']} values and its state "
                           f"{meta['n_x']}, {problem.source}'s form {meta['form']} {r.shape[1]} and {dae.n_x}: "
                           "exported from another robot")
    inv = ExportedInverse(folder, library_for(folder, say))
    y0 = r[0, :meta["n_out"]]
    same_start = np.allclose(y0, meta["y0"], rtol=0, atol=1e-12)
    first = inv.init(None if same_start else y0)
    x_start, x_want = inv.solution(), dae.initial_state(q0)
    gap = float(np.max(np.abs(x_start - x_want) / np.maximum(1.0, np.abs(x_want))))
    if not gap <= START_TOL:
        raise ProblemError(f"--exported {folder}: its start state (static equilibrium at the path's start) differs "
                           f"from {problem.source}'s by {gap:.3g} (relative): exported from another robot or "
                           "model; export it again from this problem")
    say(f"running the exported inverse ({meta['problem']}, BDF-{meta['order']}, form {meta['form']}, "
        f"h = {h * 1e3:g} ms) on {len(t) - 1} reference samples of {problem.source}")
    n = len(t)
    u, x, iters = np.empty((n, L.n_u)), np.empty((n, dae.n_x)), np.zeros(n, int)
    u[0], x[0] = first["u"], x_start
    for i in range(1, n):
        try:
            out = inv.step(r[i])
        except SolverError as err:
            raise SolverError(f"{err} at sample {i} (t = {t[i]:g} s)") from None
        u[i], x[i], iters[i] = out["u"], inv.solution(), out["newton_iterations"]
    nq, motor = L.nq, L.motor_of_input
    q, v = x[:, :nq], x[:, nq:2 * nq]
    tool = np.array(model.tool_position.map(n)(q[:, :L.n_link].T)).T
    traj = Trajectory(t=t, u=u, q=q, v=v, a=np.full_like(q, np.nan), qm=q[:, motor], dqm=v[:, motor],
                      y_ref=np.asarray(problem.reference.evaluate(t)), tool=tool,
                      coordinate_names=model.coordinate_names(), output_names=list(model.outputs),
                      method=f"exported bdf{meta['order']}-{meta['form']}",
                      stats={"newton_iterations_mean": float(iters[1:].mean()) if n > 1 else 0.0,
                             "newton_iterations_max": int(iters.max())},
                      input_names=inputs, link_names=model.coordinate_names()[:L.n_link],
                      link_units=getattr(model, "link_units", None), hold="linear", input_unit=model.input_unit)
    return traj, f"{folder} (exported C, run sample by sample)"
