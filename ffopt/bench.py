"""`ffopt bench`: BDF forms against SUNDIALS IDAS on E1 and E12, measured side by side in one run.

For every benchmark setting of seed 000 (sec. 7.2 and 7.4: E1 with k = 6, h = 5 ms and k = 3,
h = 3 ms; E12 with k = 3, h = 3 ms and k = 6, h = 1 ms) and every form I3 / I2 / I1:
- setup: static equilibrium and the symbolic DAE (ms);
- build: the BDF step function in CasADi's virtual machine (ms), and cold with C code generation
  and compilation into an empty cache (s; skipped with ``quick``);
- solve: the BDF stepping loop with its convergence check, compiled C and VM (median of repeats);
- total: the whole ``solve_inverse_bdf`` call with a warm cache (setup, solve, torque recovery);
- IDAS (variable order and step, rtol 1e-8) on the semi-explicit index-1 form (ffopt.dae.idas);
- IDAS / BDF: ratio of the solve times, compiled BDF and BDF in the VM, same run (IDAS itself is
  compiled C; its residual and Jacobian run in CasADi's VM: JIT-compiling them did not make it
  faster on E12, 16 vs 12 ms);
- accuracy: max |u - u_ref| / max |u_ref|, u_ref from BDF-6 on the I1 form at h = 1/16 ms;
- the seed's published Matlab times beside them;
- (not with ``quick``) a work-precision table: BDF-6 on I1 over steps and IDAS over tolerances.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.dae import bdf
from ffopt.dae.idas import solve_inverse_idas
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"  # the repository's problem files
# (label, problem file, [(order, step)]) -- the seed's settings, the main one first
SETTINGS = [
    ("E1", "e1_simplified.toml", [(6, 5e-3), (3, 3e-3)]),
    ("E12", "e12_line.toml", [(6, 1e-3), (3, 3e-3)]),
]
# Seed 000, Matlab times in s. E1 (sec. 7.2): HI (= I3) and DD (dummy derivatives, the
# counterpart of I1); ode15i on DD: "0.3ms" as printed (probably 0.3 s). E12 (sec. 7.4,
# nonlinear dynamics): I3 / I2 / I1; ode15i failed on E12.
SEED_TIMES = {
    ("E1", 6, 5e-3): {"I3": 3.8, "I1": 3.3, "IDAS": 0.3},
    ("E1", 3, 3e-3): {"I3": 6.0, "I1": 5.1, "IDAS": 0.3},
    ("E12", 3, 3e-3): {"I3": 38.0, "I2": 34.0, "I1": 43.0},
    ("E12", 6, 1e-3): {"I3": 152.0, "I2": 134.0, "I1": 136.0},
}
IDAS_RTOL = 1e-8
REFERENCE_STEP = 1e-3 / 16  # divides every benchmark step


@contextmanager
def _cold_cache():
    """An empty in-memory and on-disk BDF cache for the duration (forces code generation)."""
    saved_memory, saved_env = bdf._MEMORY_CACHE.copy(), os.environ.get("FFOPT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ffopt_bench_") as tmp:
        bdf._MEMORY_CACHE.clear()
        os.environ["FFOPT_CACHE_DIR"] = tmp
        try:
            yield
        finally:
            bdf._MEMORY_CACHE.clear()
            bdf._MEMORY_CACHE.update(saved_memory)
            if saved_env is None:
                os.environ.pop("FFOPT_CACHE_DIR", None)
            else:
                os.environ["FFOPT_CACHE_DIR"] = saved_env


def _timed(fn, repeats):
    """(last result, median wall time of the call, median of result.stats["time_solve_s"])."""
    runs, walls = [], []
    for _ in range(max(1, repeats)):
        tic = time.perf_counter()
        runs.append(fn())
        walls.append(time.perf_counter() - tic)
    return runs[-1], statistics.median(walls), statistics.median(r.stats["time_solve_s"] for r in runs)


def _rel_error(traj, u_ref, step):
    stride = int(round(step / REFERENCE_STEP))
    return float(np.abs(traj.u - u_ref[::stride]).max() / np.abs(u_ref).max())


def _bdf_row(p, order, h, form, repeats, quick, u_ref):
    guess = p.reference_spec.joint_guess

    def run(compile=True):
        return solve_inverse_bdf(p.model, p.reference, order, h, form, qa_guess=guess, compile=compile)

    build_c = None
    if not quick:
        with _cold_cache():
            build_c = run().stats["time_build_s"]
    bdf._MEMORY_CACHE.clear()
    build_vm = run(compile=False).stats["time_build_s"]
    run()  # load (or compile) outside the timed runs
    tr, total, solve_c = _timed(run, repeats)
    _, _, solve_vm = _timed(lambda: run(compile=False), max(1, repeats // 2))
    return {"solver": f"BDF {form}", "setup_s": tr.stats["time_setup_s"], "build_vm_s": build_vm,
            "build_c_s": build_c, "solve_s": solve_c, "solve_vm_s": solve_vm, "total_s": total,
            "compiled": tr.stats["compiled"], "rel_error_u": _rel_error(tr, u_ref, h)}


def _idas_row(p, h, repeats, u_ref):
    tr, total, solve = _timed(lambda: solve_inverse_idas(p.model, p.reference, h, rtol=IDAS_RTOL,
                                                         atol=IDAS_RTOL * 1e-2,
                                                         qa_guess=p.reference_spec.joint_guess), repeats)
    return {"solver": "IDAS (I1, index 1)", "setup_s": tr.stats["time_build_s"], "build_vm_s": None,
            "build_c_s": None, "solve_s": solve, "solve_vm_s": None, "total_s": total, "compiled": False,
            "rel_error_u": _rel_error(tr, u_ref, h), "idas_steps": tr.stats.get("n_steps_idas")}


def _problem_file(name: str) -> Path:
    for folder in (PROBLEMS, Path.cwd() / "problems"):
        if (folder / name).is_file():
            return folder / name
    raise ProblemError(f"ffopt bench: problem file {name} not found in {PROBLEMS} or ./problems; "
                       "run it from the repository root")


def bench_rows(quick: bool = False, repeats: int = 5):
    """One dict per (problem, order, step, solver) with times (s) and errors."""
    rows = []
    for label, file, settings in SETTINGS:
        p = load_problem(_problem_file(file))
        u_ref = solve_inverse_bdf(p.model, p.reference, 6, REFERENCE_STEP, "I1",
                                  qa_guess=p.reference_spec.joint_guess).u
        for order, h in settings[:1] if quick else settings:
            block = [_bdf_row(p, order, h, form, repeats, quick, u_ref) for form in ("I3", "I2", "I1")]
            block.append(_idas_row(p, h, repeats, u_ref))
            seed = SEED_TIMES[(label, order, h)]
            for r in block:
                r.update({"problem": label, "order": order, "step_ms": h * 1e3,
                          "seed_s": seed.get(r["solver"].split()[-1] if r["solver"].startswith("BDF") else "IDAS"),
                          "idas_over_bdf": block[-1]["solve_s"] / r["solve_s"] if r is not block[-1] else None,
                          "idas_over_bdf_vm": block[-1]["solve_s"] / r["solve_vm_s"] if r is not block[-1] else None})
            rows += block
    return rows


WP_STEPS = (2e-3, 1e-3, 5e-4, 2.5e-4)  # BDF-6 on I1 (compiled)
WP_RTOLS = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)  # IDAS on the index-1 form, output every 1 ms


def work_precision(repeats: int = 5) -> str:
    """Solve time against accuracy of u: BDF-6 (I1) over steps, IDAS over tolerances, same run.

    Compares the solvers at equal accuracy instead of at the seed's settings.
    """
    lines = [f"{'problem':<7s} {'solver':<9s} {'setting':>13s} {'solve[ms]':>9s} {'rel err u':>9s}"]
    for label, file, _ in SETTINGS:
        p = load_problem(_problem_file(file))
        g = p.reference_spec.joint_guess
        u_ref = solve_inverse_bdf(p.model, p.reference, 6, REFERENCE_STEP, "I1", qa_guess=g).u
        for h in WP_STEPS:
            solve_inverse_bdf(p.model, p.reference, 6, h, "I1", qa_guess=g)  # load outside the timing
            tr, _, solve = _timed(lambda: solve_inverse_bdf(p.model, p.reference, 6, h, "I1", qa_guess=g), repeats)
            lines.append(f"{label:<7s} {'BDF-6 I1':<9s} {f'h = {h * 1e3:g} ms':>13s} {solve * 1e3:9.2f} "
                         f"{_rel_error(tr, u_ref, h):9.2e}")
        for rtol in WP_RTOLS:
            tr, _, solve = _timed(lambda: solve_inverse_idas(p.model, p.reference, 1e-3, rtol=rtol, atol=rtol * 1e-2,
                                                             qa_guess=g), repeats)
            lines.append(f"{label:<7s} {'IDAS':<9s} {f'rtol = {rtol:g}':>13s} {solve * 1e3:9.2f} "
                         f"{_rel_error(tr, u_ref, 1e-3):9.2e}")
    return "\n".join(lines)


def _cell(value, fmt, width):
    return f"{'-' if value is None else format(value, fmt):>{width}s}"


COLUMNS = [  # (header, key, scale, format, width)
    ("problem", "problem", None, "s", 7), ("k", "order", None, "d", 2), ("h[ms]", "step_ms", None, "g", 5),
    ("solver", "solver", None, "s", 18), ("setup[ms]", "setup_s", 1e3, ".1f", 9),
    ("build VM[ms]", "build_vm_s", 1e3, ".0f", 12), ("build C[s]", "build_c_s", 1, ".2f", 10),
    ("solve C[ms]", "solve_s", 1e3, ".2f", 11), ("solve VM[ms]", "solve_vm_s", 1e3, ".1f", 12),
    ("total[ms]", "total_s", 1e3, ".1f", 9), ("IDAS/BDF", "idas_over_bdf", 1, ".2f", 8),
    ("IDAS/BDF VM", "idas_over_bdf_vm", 1, ".2f", 11),
    ("rel err u", "rel_error_u", 1, ".2e", 9), ("seed[s]", "seed_s", 1, ".1f", 7),
]


def format_table(rows) -> str:
    head = " ".join(f"{h:>{w}s}" if i > 3 else f"{h:<{w}s}" for i, (h, _, _, _, w) in enumerate(COLUMNS))
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for i, (_, key, scale, fmt, width) in enumerate(COLUMNS):
            v = r.get(key)
            if v is not None and scale is not None:
                v = v * scale
            cells.append(f"{v:<{width}{fmt}}" if i <= 3 and fmt == "s" else _cell(v, fmt, width))
        lines.append(" ".join(cells))
    return "\n".join(lines)


def run_bench(quick: bool = False, repeats: int = 5) -> str:
    """Run the benchmark and return the printed table (with machine, date and column notes)."""
    rows = bench_rows(quick, repeats)
    stamp = (f"{datetime.date.today()}, {platform.machine()} {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, CasADi {ca.__version__}, median of {repeats}")
    notes = ("setup = equilibrium + symbolic DAE; build VM / build C = step function for CasADi's VM / "
             "generated and compiled C into an empty cache; solve = BDF stepping incl. convergence check "
             "(IDAS: the integrator call); IDAS/BDF = IDAS solve / BDF solve C, IDAS/BDF VM = IDAS solve / BDF "
             f"solve VM; total = whole call, warm cache; IDAS rtol {IDAS_RTOL:g} on the "
             "semi-explicit I1 form; rel err u = max|u - u_ref| / max|u_ref|, u_ref = BDF-6 (I1) at h = "
             "1/16 ms; seed = Matlab times of seed 000 (E1: HI as I3, DD as I1, ode15i 0.3 [m]s as IDAS).")
    text = f"ffopt bench ({stamp})\n{format_table(rows)}\n{notes}"
    if not quick:
        text += f"\n\nWork-precision (E1, E12; median of {repeats}):\n{work_precision(repeats)}"
    return text
