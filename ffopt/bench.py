"""`ffopt bench`: BDF forms against SUNDIALS IDAS on E1 and E12, measured side by side in one run.

For every benchmark setting of Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE
methods) (sec. 7.2 and 7.4: E1 with k = 6, h = 5 ms and k = 3, h = 3 ms; E12 with k = 3, h = 3 ms
and k = 6, h = 1 ms) and every form I3 / I2 / I1:
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
- the paper's published Matlab times beside them;
- (not with ``quick``) a work-precision table: BDF-6 on I1 over steps and IDAS over tolerances.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.dae import bdf
from ffopt.dae.idas import solve_inverse_idas
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem
from ffopt.settings.bench import BENCH_TABLES

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"  # the repository's problem files
# (label, problem file, [(order, step)]) -- Moberg & Hanssen's settings, the main one first
SETTINGS = [
    ("E1", "e1_simplified.toml", [(6, 5e-3), (3, 3e-3)]),
    ("E12", "e12_line.toml", [(6, 1e-3), (3, 3e-3)]),
]
# Moberg & Hanssen, Matlab times in s. E1 (sec. 7.2): HI (= I3) and DD (dummy derivatives, the
# counterpart of I1); ode15i on DD: "0.3ms" as printed (probably 0.3 s). E12 (sec. 7.4,
# nonlinear dynamics): I3 / I2 / I1; ode15i failed on E12.
PAPER_TIMES_S = {
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
    saved_memory, saved_env = bdf.MEMORY_CACHE.copy(), os.environ.get("FFOPT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ffopt_bench_") as tmp:
        bdf.MEMORY_CACHE.clear()
        os.environ["FFOPT_CACHE_DIR"] = tmp
        try:
            yield
        finally:
            bdf.MEMORY_CACHE.clear()
            bdf.MEMORY_CACHE.update(saved_memory)
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
        return solve_inverse_bdf(p.model, p.reference, BdfSettings(order=order, step=h, form=form),
                                 qa_guess=guess, compile=compile)

    build_c = None
    if not quick:
        with _cold_cache():
            build_c = run().stats["time_build_s"]
    bdf.MEMORY_CACHE.clear()
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
        u_ref = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=REFERENCE_STEP, form="I1"),
                                  qa_guess=p.reference_spec.joint_guess).u
        for order, h in settings[:1] if quick else settings:
            block = [_bdf_row(p, order, h, form, repeats, quick, u_ref) for form in ("I3", "I2", "I1")]
            block.append(_idas_row(p, h, repeats, u_ref))
            paper = PAPER_TIMES_S[(label, order, h)]
            for r in block:
                r.update({"problem": label, "order": order, "step_ms": h * 1e3,
                          "paper_s": paper.get(r["solver"].split()[-1] if r["solver"].startswith("BDF") else "IDAS"),
                          "idas_over_bdf": block[-1]["solve_s"] / r["solve_s"] if r is not block[-1] else None,
                          "idas_over_bdf_vm": block[-1]["solve_s"] / r["solve_vm_s"] if r is not block[-1] else None})
            rows += block
    return rows


WP_STEPS = (2e-3, 1e-3, 5e-4, 2.5e-4)  # BDF-6 on I1 (compiled)
WP_RTOLS = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)  # IDAS on the index-1 form, output every 1 ms


def work_precision(repeats: int = 5) -> str:
    """Solve time against accuracy of u: BDF-6 (I1) over steps, IDAS over tolerances, same run.

    Compares the solvers at equal accuracy instead of at the paper's settings.
    """
    lines = [f"{'problem':<7s} {'solver':<9s} {'setting':>13s} {'solve[ms]':>9s} {'rel err u':>9s}"]
    for label, file, _ in SETTINGS:
        p = load_problem(_problem_file(file))
        g = p.reference_spec.joint_guess
        u_ref = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=REFERENCE_STEP, form="I1"),
                                  qa_guess=g).u
        for h in WP_STEPS:
            solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h, form="I1"),
                              qa_guess=g)  # load outside the timing
            tr, _, solve = _timed(lambda: solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h, form="I1"),
                                                            qa_guess=g), repeats)
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
    ("rel err u", "rel_error_u", 1, ".2e", 9), ("paper[s]", "paper_s", 1, ".1f", 8),
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


TABLES = BENCH_TABLES


def run_bench(quick: bool = False, repeats: int = 5, tables=("forms",)) -> str:
    """Run the benchmark tables (``TABLES``: "forms" = BDF forms vs IDAS, "plan" = the whole
    `ffopt plan` process, "steps" / "bodies" = scaling laws, "nlp" = the NLP's paths on E12) and return the
    printed text."""
    unknown = [t for t in tables if t not in TABLES]
    if unknown:
        raise ProblemError(f"ffopt bench: unknown table {unknown[0]!r} (one of {', '.join(TABLES)})")
    # loop timings are of the -O2 build (tiered compilation would time the first -O0 build); the subprocess
    # rows of the plan table inherit this and so time a warm cache, which tiered compilation fills with -O2.
    # Only for the bench: a caller's process (a test session) gets its own setting back.
    before = os.environ.get("FFOPT_COMPILE")
    os.environ.setdefault("FFOPT_COMPILE", "sync")
    try:
        parts = [_forms_text(quick, repeats)] if "forms" in tables else []
        titles = {"plan": "Whole process: ffopt plan problems/e12_line.toml --no-plots (interpreter start to files "
                          "written)",
                  "steps": "Time against the number of steps (E12)", "bodies": "Time against the number of bodies",
                  "nlp": "The NLP's paths side by side (E12 bounded and exact)",
                  "motion": "Minimum-time moves against TOPP-RA and Ruckig (ffopt.motion.benchmark)"}
        for name in ("plan", "steps", "bodies", "nlp", "motion"):
            if name in tables:
                parts.append(f"{titles[name]} ({_stamp(repeats)}):\n" + SCALING_TABLES[name](repeats=repeats, **(
                    {} if name == "plan" else {"quick": quick})))
    finally:
        if before is None:
            os.environ.pop("FFOPT_COMPILE", None)
        else:
            os.environ["FFOPT_COMPILE"] = before
    return "\n\n".join(parts)


def _stamp(repeats: int) -> str:
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"{datetime.date.today()}, {platform.machine()} {os.cpu_count()} cores{load}, Python "
            f"{platform.python_version()}, CasADi {ca.__version__}, median of {repeats}")


def _forms_text(quick: bool, repeats: int) -> str:
    """The BDF-forms-against-IDAS table at Moberg & Hanssen's settings (and the work-precision table)."""
    rows = bench_rows(quick, repeats)
    stamp = (f"{datetime.date.today()}, {platform.machine()} {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, CasADi {ca.__version__}, median of {repeats}")
    notes = ("setup = equilibrium + symbolic DAE; build VM / build C = step function for CasADi's VM / "
             "generated and compiled C into an empty cache; solve = BDF stepping incl. convergence check "
             "(IDAS: the integrator call); IDAS/BDF = IDAS solve / BDF solve C, IDAS/BDF VM = IDAS solve / BDF "
             f"solve VM; total = whole call, warm cache; IDAS rtol {IDAS_RTOL:g} on the "
             "semi-explicit I1 form; rel err u = max|u - u_ref| / max|u_ref|, u_ref = BDF-6 (I1) at h = "
             "1/16 ms; paper = Matlab times of Moberg & Hanssen (E1: HI as I3, DD as I1, ode15i 0.3 [m]s as "
             "IDAS).")
    text = f"ffopt bench ({stamp})\n{format_table(rows)}\n{notes}"
    if not quick:
        text += f"\n\nWork-precision (E1, E12; median of {repeats}):\n{work_precision(repeats)}"
    return text


# --- scaling laws and the whole `ffopt plan` process ------------------------------------------
#
# One function per table; each measures its rows side by side in one run and prints the figures
# of the previous ffopt release (README before this table existed, or measured on that code the
# same day, say which) and of the papers where they exist. The NLP columns plug into
# STEP_SOLVERS / BODY_SOLVERS: name -> function (problem, step, repeats) -> seconds.

STEP_SIZES = (4e-3, 2e-3, 1e-3, 5e-4)  # s; E12 has 0.82 s of path: 205 .. 1640 steps
BODY_COUNTS = (2, 3, 4, 6, 8, 12)
# The code before the speed work, E12 on this machine kind, as results/README.md ("Speed", "Path check")
# and results/speed.md quote it (measured side by side with the new code, 2026-11-23, load 3-8 on 2 cores):
# BDF-6 at h = 1 ms: stepping loop 4.6 ms (min of 40), warm call 14 ms of CPU; the whole `ffopt plan
# problems/e12_line.toml --no-plots` 2.0-2.2 s CPU, 2.2-3.2 s wall at load 3 and 5.3 s at load 5, 131-137 MB;
# path check stage 0.9-1.05 s (before its batched march); verification (7 cases) 0.97 s at load 3, 1.9 s at
# load 5; NLP (README, "Optimization"): exact tracking 0.19 s (2 ms) and 0.40 s (1 ms), bounded 1.8 s (2 ms)
# and 3.3 s (1 ms).
PREVIOUS = {
    "plan_wall_s": "2.2-3.2 at load 3, 5.3 at load 5", "path_check_s": "0.9-1.05",
    "verification_s": "0.97 at load 3, 1.9 at load 5", "bdf_call_ms": "14", "bdf_loop_ms": "4.6",
    "plan_cpu_s": "2.0-2.2", "plan_rss_mb": "131-137", "help_wall_s": "0.48-0.84", "help_cpu_s": "0.21-0.25",
    "help_rss_mb": "40",
    # the Manutec r3 benchmark's whole plan process before the verification ran its cases side by side and the
    # plan stopped importing SciPy's optimize (2026-11-27, load 0.5; target < 1 s)
    "r3_wall_s": "1.40-1.64 (target < 1)",
}
NLP_PREVIOUS_S = {("NLP exact", 2e-3): 0.19, ("NLP exact", 1e-3): 0.40,
                  ("NLP bounded", 2e-3): 1.8, ("NLP bounded", 1e-3): 3.3}
# Moberg & Hanssen, E12 in Matlab (sec. 7.4): BDF-6 at 1 ms 134-152 s, BDF-3 at 3 ms 34-43 s.
PAPER_E12_S = {1e-3: "134-152 (k=6)", 3e-3: "34-43 (k=3)"}


def fitted_exponent(n, t) -> float:
    """p of t ~ n^p: the least-squares slope of log t against log n."""
    return float(np.polyfit(np.log(np.asarray(n, float)), np.log(np.asarray(t, float)), 1)[0])


def _bdf_times(problem, step: float, repeats: int, compile: bool = True) -> dict:
    """One warm-up call (compiles or loads), then the stepping loop and the whole call: CPU time (min
    of the repeats: what the work costs, least disturbed by other jobs) and wall time (median)."""
    g = problem.reference_spec.joint_guess

    def run():
        return solve_inverse_bdf(problem.model, problem.reference, BdfSettings(order=6, step=step, form="I1"),
                                 qa_guess=g, compile=compile)

    first = run()
    runs = [run() for _ in range(max(1, repeats))]
    return {"n_steps": first.stats["n_steps"], "n_x": first.stats["n_unknowns"], "build_s": first.stats["time_build_s"],
            "loop_cpu_s": min(r.stats["cpu_time_solve_s"] for r in runs),
            "loop_s": statistics.median(r.stats["time_solve_s"] for r in runs),
            "call_cpu_s": min(r.stats["cpu_time_total_s"] for r in runs),
            "call_s": statistics.median(r.stats["time_total_s"] for r in runs), "compiled": first.stats["compiled"],
            "newton_per_step": first.stats["newton_iterations_mean"]}


def _timed_call(fn, repeats: int) -> tuple[float, float]:
    """(min CPU s, median wall s) of fn() over the repeats."""
    cpu, wall = [], []
    for _ in range(max(1, repeats)):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), statistics.median(wall)


def _nlp_time(problem, step: float, repeats: int) -> tuple[float, float]:
    """(CPU s, wall s) of plan(method="nlp") at collocation step h: transcription, warm start, solver."""
    from ffopt.plan import plan

    return _timed_call(lambda: plan(problem, method="nlp", step=step, verify=False), repeats)


STEP_SOLVERS = {  # column -> (problem file, function (problem, step, repeats) -> (CPU s, wall s), repeats cap)
    "NLP exact": ("e12_line.toml", _nlp_time, 1),
    "NLP bounded": ("e12_torque_bounded.toml", _nlp_time, 1),
}
BODY_SOLVERS: dict = {}  # the NLP against the number of bodies: name -> (function as above, repeats cap)


def _cpu_wall(cpu: float, wall: float, scale: float, before=None) -> str:
    text = f"{cpu * scale:.4g} / {wall * scale:.4g}"
    return text + (f" (was {before})" if before is not None else "")


def steps_table(repeats: int = 5, quick: bool = False) -> str:
    """E12, time against the number of steps (h = 4, 2, 1, 0.5 ms): BDF-6 (I1) loop and whole call,
    the STEP_SOLVERS columns, each with its fitted exponent (expected 1: linear in the steps)."""
    p = load_problem(_problem_file("e12_line.toml"))
    steps = STEP_SIZES[1:3] if quick else STEP_SIZES
    bdf_rows = [_bdf_times(p, h, repeats) for h in steps]
    cols = {"BDF loop [ms]": ([(r["loop_cpu_s"], r["loop_s"]) for r in bdf_rows], 1e3, {1e-3: PREVIOUS["bdf_loop_ms"]}),
            "BDF call [ms]": ([(r["call_cpu_s"], r["call_s"]) for r in bdf_rows], 1e3, {1e-3: PREVIOUS["bdf_call_ms"]})}
    for name, (file, fn, cap) in ({} if quick else STEP_SOLVERS).items():
        q = load_problem(_problem_file(file))
        fn(q, steps[0], 1)  # warm-up: the one-time builds of a process are not what scales with the steps
        cols[f"{name} [s]"] = ([fn(q, h, min(repeats, cap)) for h in steps], 1.0,
                               {h: NLP_PREVIOUS_S[(name, h)] for h in steps if (name, h) in NLP_PREVIOUS_S})
    n = [r["n_steps"] for r in bdf_rows]
    newton = [r["n_steps"] * r["newton_per_step"] for r in bdf_rows]
    width = 30
    lines = [f"{'h[ms]':>6s} {'steps':>6s} {'Newton/step':>11s} " + " ".join(f"{c + ' CPU / wall':>{width}s}" for c in cols)]
    for i, h in enumerate(steps):
        cells = [_cpu_wall(*v[i], scale, prev.get(h)) for v, scale, prev in cols.values()]
        lines.append(f"{h * 1e3:6g} {n[i]:6d} {bdf_rows[i]['newton_per_step']:11.2f} " + " ".join(f"{x:>{width}s}" for x in cells))
    lines.append(f"{'exponent in steps (CPU)':>25s} " + " ".join(
        f"{fitted_exponent(n, [c for c, _ in v]):>{width}.2f}" for v, _, _ in cols.values()))
    loop_cpu = [c for c, _ in cols["BDF loop [ms]"][0]]
    lines.append(f"{'BDF loop against Newton iterations':>34s}: exponent {fitted_exponent(newton, loop_cpu):.2f}, "
                 f"{1e6 * min(c / k for c, k in zip(loop_cpu, newton)):.2f}-"
                 f"{1e6 * max(c / k for c, k in zip(loop_cpu, newton)):.2f} us of CPU per iteration")
    lines.append(f"t ~ steps^exponent, fitted to the CPU times; a larger step needs more Newton iterations per step "
                 f"(the extrapolated start is further off), so the loop grows a little slower than the steps. "
                 f"loop = the compiled stepping loop with its checks; "
                 f"call = solve_inverse_bdf (equilibrium, path data, loop, torque recovery), warm; BDF: CPU min / wall "
                 f"median of {repeats}; NLP: plan(method='nlp') incl. its BDF warm start, one run after a warm-up. was: the code "
                 "before the speed work as results/README.md quotes it (loop: min of 40 runs; call: CPU; NLP: wall). "
                 "Moberg & Hanssen (Matlab, E12): "
                 + ", ".join(f"h = {h * 1e3:g} ms: {s} s" for h, s in PAPER_E12_S.items()) + ".")
    return "\n".join(lines)


def elastic_chain_problem(n_bodies: int, step: float = 1e-3):
    """A planar chain of ``n_bodies`` equal links, every joint an elastic gear, gravity in the plane.

    1.2 m of reach and 24 kg in total whatever n (links of 1.2/n m and 24/n kg, uniform rods), gear
    stiffness 2e4 N m/rad, damping 20 N m s/rad, motor inertia 0.5 kg m^2 (arm side). Outputs: the
    tool x and z and the link angles of joints 3..n; the reference is a joint move of 0.3 s mapped to
    them (the first two joints follow the tool, the others their own angle), with rests of 0.05 and
    0.15 s: 500 steps at 1 ms for every n.
    """
    from ffopt.io.problem import problem_from_dict

    n = int(n_bodies)
    if n < 2:
        raise ProblemError(f"elastic_chain_problem: need at least 2 bodies, got {n}")
    length, mass = 1.2 / n, 24.0 / n
    joints = [{"name": f"q{i + 1}", "kind": "elastic_gear", "axis": [0.0, 1.0, 0.0],
               "origin": [0.0, 0.0, 0.3] if i == 0 else [length, 0.0, 0.0], "mass": mass,
               "com": [length / 2, 0.0, 0.0],
               "inertia_diag": [1e-3 * mass, mass * length**2 / 12, mass * length**2 / 12],
               "stiffness": 2.0e4, "damping": 20.0, "motor_inertia": 0.5} for i in range(n)]
    data = {"name": f"planar elastic chain, {n} bodies",
            "model": {"gravity": [0.0, 0.0, -9.81], "outputs": ["x", "z"] + [f"q{i + 1}" for i in range(2, n)],
                      "tool_origin": [length, 0.0, 0.0], "joints": joints},
            "reference": {"kind": "joint_ptp", "q_start_deg": [-20.0, 70.0] + [10.0] * (n - 2),
                          "q_end_deg": [20.0, 90.0] + [-10.0] * (n - 2), "duration": 0.3, "rest_before": 0.05,
                          "rest_after": 0.15},
            "solver": {"method": "bdf", "order": 6, "step": step, "form": "I1"}}
    return problem_from_dict(data, source=f"<elastic chain of {n} bodies>")


def bodies_table(repeats: int = 5, quick: bool = False) -> str:
    """Chains of 2..12 bodies (elastic_chain_problem), BDF-6 (I1) at 1 ms: one BDF step, the whole BDF
    call and the whole plan (path check, BDF, default verification) with fitted growth exponents."""
    from ffopt.plan import plan

    counts = BODY_COUNTS[:3] if quick else BODY_COUNTS
    rows = []
    for n in counts:
        p = elastic_chain_problem(n)
        r = _bdf_times(p, 1e-3, repeats, compile=not quick)
        r["plan_cpu_s"], r["plan_s"] = _timed_call(lambda: plan(p, compile=not quick), max(1, repeats // 2))
        r.update(n=n, step_cpu_us=1e6 * r["loop_cpu_s"] / r["n_steps"], step_us=1e6 * r["loop_s"] / r["n_steps"])
        for name, (fn, cap) in BODY_SOLVERS.items():
            r[name] = fn(p, 1e-3, min(repeats, cap))
        rows.append(r)
    extra = list(BODY_SOLVERS)
    w = 22
    lines = [f"{'bodies':>6s} {'unknowns':>8s} {'first build[s]':>14s} {'BDF step[us] CPU / wall':>{w + 2}s} "
             f"{'BDF call[ms] CPU / wall':>{w + 2}s} {'plan[s] CPU / wall':>{w}s}" + "".join(f" {c + '[s]':>{w}s}" for c in extra)]
    for r in rows:
        lines.append(f"{r['n']:6d} {r['n_x']:8d} {r['build_s']:14.2f} {_cpu_wall(r['step_cpu_us'], r['step_us'], 1):>{w + 2}s} "
                     f"{_cpu_wall(r['call_cpu_s'], r['call_s'], 1e3):>{w + 2}s} {_cpu_wall(r['plan_cpu_s'], r['plan_s'], 1):>{w}s}"
                     + "".join(f" {_cpu_wall(*r[c], 1):>{w}s}" for c in extra))
    n = [r["n"] for r in rows]
    fits = [fitted_exponent(n, [r[k] for r in rows]) for k in ("step_cpu_us", "call_cpu_s", "plan_cpu_s")]
    lines.append(f"{'exponent (CPU)':>30s} {fits[0]:{w + 2}.2f} {fits[1]:{w + 2}.2f} {fits[2]:{w}.2f}"
                 + "".join(f" {fitted_exponent(n, [r[c][0] for r in rows]):{w}.2f}" for c in extra))
    lines.append(f"t ~ bodies^exponent, fitted to the CPU times (target: at most quadratic growth). Planar "
                 f"chains of elastic-gear joints (ffopt.bench.elastic_chain_problem), 500 steps of 1 ms, "
                 f"{'in CasADi VM (quick)' if quick else 'compiled C'}; first build = generating and compiling the step "
                 f"function (or loading it from the disk cache); BDF: CPU min / wall median of {repeats}; plan (path "
                 f"check, BDF, default verification): of {max(1, repeats // 2)}.")
    return "\n".join(lines)


# Runs one command and reports its wall time, CPU time and peak RSS. A small launcher process starts
# it: Linux counts the RSS of the process a child was forked from into the child's peak, so a
# child spawned from this (large) benchmark process would report at least this process's size.
_LAUNCHER = """
import os, sys, time
tic = time.perf_counter()
pid = os.posix_spawn(sys.executable, [sys.executable, *sys.argv[1:]], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - tic
print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
"""


def _run_process(args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of ``python args`` (stdout discarded); RuntimeError if it fails."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    fields = proc.stdout.strip().splitlines()[-1].split() if proc.stdout.strip() else []
    if proc.returncode != 0 or len(fields) != 4 or fields[3] != "0":
        err = proc.stderr.strip().splitlines()
        raise RuntimeError(f"python {' '.join(args)} failed: {err[-1] if err else proc.stdout.strip()}")
    wall, cpu, rss, _ = map(float, fields)
    return wall, cpu, rss


def settle_overhead_line(repeats: int = 5) -> str:
    """The default verification of the E12 plan with and without the settle window after the table,
    timed alternately in one process (CPU time, median): what the window costs."""
    from dataclasses import replace

    from ffopt.io.problem import load_problem
    from ffopt.plan import plan
    from ffopt.sim.verify import verify

    problem = load_problem(_problem_file("e12_line.toml"))
    result = plan(problem, verify=False)
    settings = result.problem.verification
    times = {"without": [], "with": []}
    for _ in range(max(2, repeats)):
        for label, ver in (("without", replace(settings, settle_s=0.0)), ("with", settings)):
            t0 = time.process_time()
            report = verify(result.problem.model, result.problem.reference, result.trajectory, ver)
            times[label].append(time.process_time() - t0)
    a, b = statistics.median(times["without"]), statistics.median(times["with"])
    return (f"E12 default verification, CPU (median of {max(2, repeats)}, alternating): {1e3 * a:.0f} ms without the "
            f"settle window, {1e3 * b:.0f} ms with it ({report.settle['window_s']:.2f} s window): x{b / a:.2f} "
            "(target: at most x1.3)")


def compiled_verification_lines(repeats: int = 5) -> list[str]:
    """The default verification (open loop and motor PD, each with its settle window) of E12 and the Manutec
    r3 with the plant in CasADi's virtual machine and compiled (ffopt.sim.plant.compiled_plant), timed
    alternately in one process after a warm-up that builds (or loads) the library: CPU time, median; and
    that both give the same errors."""
    from ffopt.io.problem import load_problem
    from ffopt.plan import plan
    from ffopt.sim.verify import verify

    lines = []
    for name in ("e12_line.toml", "manutec_r3_benchmark.toml"):
        result = plan(load_problem(_problem_file(name)), verify=False)
        args = (result.problem.model, result.problem.reference, result.trajectory, result.problem.verification)
        reports = {c: verify(*args, compile=c) for c in (False, True)}  # warm-up: builds or loads the library
        times = {False: [], True: []}
        for _ in range(max(2, repeats)):
            for c in (False, True):
                t0 = time.process_time()
                verify(*args, compile=c)
                times[c].append(time.process_time() - t0)
        vm, cc = statistics.median(times[False]), statistics.median(times[True])
        same = all(reports[True].cases[k].max_mm == reports[False].cases[k].max_mm for k in reports[False].cases)
        lines.append(f"{name[:-5]} default verification, CPU (median of {max(2, repeats)}, alternating): "
                     f"{1e3 * vm:.0f} ms in CasADi's VM, {1e3 * cc:.0f} ms compiled (gcc -O0): x{vm / cc:.1f}; "
                     f"tool errors {'identical' if same else 'DIFFERENT'}")
    return lines


def plan_process_table(repeats: int = 5) -> str:
    """The whole `ffopt plan problems/e12_line.toml --no-plots` process (interpreter start to files
    written) with the default and with the full verification, and `ffopt --help`: wall, CPU, peak
    RSS; and the stage times from summary.json; beside the previous release."""
    import json

    problem = str(_problem_file("e12_line.toml"))
    cli = ["-m", "ffopt.cli.main"]
    rows, stages = [], {}
    with tempfile.TemporaryDirectory(prefix="ffopt_bench_plan_") as tmp:
        for label, extra in (("plan, default verification", []), ("plan, --verify full", ["--verify", "full"])):
            out = Path(tmp) / label.split(",")[1].strip().replace(" ", "_").replace("-", "")
            args = cli + ["plan", problem, "--no-plots", "--quiet", "--force", "--out", str(out), *extra]
            _run_process(args)  # compiled code and bytecode in their caches: the runs a user repeats
            runs = [_run_process(args) for _ in range(max(1, repeats))]
            rows.append((label, runs))
            if not extra:
                s = json.loads((out / "summary.json").read_text())
                stages = {**s["wall_time_s"], "bdf_call": s["solver"]["time_total_s"], "bdf_loop": s["solver"]["time_solve_s"]}
        r3 = cli + ["plan", str(_problem_file("manutec_r3_benchmark.toml")), "--no-plots", "--quiet", "--force",
                    "--out", str(Path(tmp) / "r3")]
        _run_process(r3)
        rows.append(("plan, Manutec r3 benchmark", [_run_process(r3) for _ in range(max(1, repeats))]))
        rows.append(("ffopt --help", [_run_process(cli + ["--help"]) for _ in range(max(1, repeats))]))
    med = [[statistics.median(x[i] for x in runs) for i in range(3)] for _, runs in rows]
    prev = [(PREVIOUS["plan_wall_s"], PREVIOUS["plan_cpu_s"], PREVIOUS["plan_rss_mb"]),
            (PREVIOUS["plan_wall_s"] + " (then the default)", PREVIOUS["plan_cpu_s"], PREVIOUS["plan_rss_mb"]),
            (PREVIOUS["r3_wall_s"], "-", "-"),
            (PREVIOUS["help_wall_s"], PREVIOUS["help_cpu_s"], PREVIOUS["help_rss_mb"])]
    lines = [f"{'process':30s} {'wall[s]':>8s} {'range':>13s} {'CPU[s]':>7s} {'RSS[MB]':>8s}   previous release: wall / CPU / RSS"]
    for (label, runs), (w, c, m), before in zip(rows, med, prev):
        walls = [r[0] for r in runs]
        lines.append(f"{label:30s} {w:8.3f} {f'{min(walls):.2f}-{max(walls):.2f}':>13s} {c:7.3f} {m:8.1f}   "
                     f"{before[0]} s / {before[1]} s / {before[2]} MB")
    lines.append(f"stages of the default plan (summary.json, last run): path check {1e3 * stages.get('path_check', 0):.1f} ms "
                 f"(previous {PREVIOUS['path_check_s']} s), inverse dynamics {1e3 * stages.get('inverse_dynamics', 0):.1f} ms "
                 f"(BDF call {1e3 * stages.get('bdf_call', 0):.1f} ms, loop {1e3 * stages.get('bdf_loop', 0):.1f} ms; previous call "
                 f"{PREVIOUS['bdf_call_ms']} ms), verification {1e3 * stages.get('verification', 0):.0f} ms "
                 f"(previous, 7 cases: {PREVIOUS['verification_s']} s), rest-to-rest shaping "
                 f"{1e3 * stages.get('rest_to_rest', 0):.0f} ms.")
    lines.append(settle_overhead_line(repeats))
    lines.extend(compiled_verification_lines(repeats))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = " PYTHONDONTWRITEBYTECODE is set: ffopt's modules are compiled from source in every process." \
        if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""
    lines.append(f"median of {max(1, repeats)} processes after one warm-up (compile cache filled); load average "
                 f"{load:.1f} on {os.cpu_count()} cores (wall ~ CPU on a quiet machine).{note}")
    return "\n".join(lines)




# --------------------------------------------------------------------------- the NLP's paths side by side
# The NLP at compiled speed (issue 22, item 4): E12 bounded (penalty tracking, torque bounds) and exact, each
# path measured in this run. The code before that work (d662e6a, its `plan_nlp` measured the same way on
# 2026-11-27 at load 0.6-1.2, min of 3): bounded 1.22 s (2 ms) and 2.42 s (1 ms), exact 0.30 s (1 ms) of CPU;
# verified then (open loop / PD, mm): 0.15120 / 0.06247, 0.05553 / 0.05491, 0.01175 / 0.00717.
NLP_BEFORE_CPU_S = {("bounded", 2e-3): 1.22, ("bounded", 1e-3): 2.42, ("exact", 1e-3): 0.30}
NLP_TARGET_CPU_S = {("bounded", 2e-3): 0.6, ("bounded", 1e-3): 1.2, ("exact", 1e-3): 0.15}
NLP_PATHS = (  # (case, step, label, nlp changes, Newton's step by stages)
    ("bounded", 2e-3, "ipopt-c (C interface), kernels compiled (default)", {}, True),
    ("bounded", 2e-3, "cyipopt, kernels compiled", {"backend": "cyipopt"}, True),
    ("bounded", 2e-3, "ipopt-c, kernels in CasADi's VM", {"compile": False}, True),
    ("bounded", 2e-3, "ipopt-c, CasADi's IPOPT with SPRAL", {"linear_solver": "spral"}, True),
    ("bounded", 2e-3, "nlpsol (CasADi AD), MUMPS", {"backend": "casadi"}, True),
    ("bounded", 2e-3, "nlpsol (CasADi AD), SPRAL", {"backend": "casadi", "linear_solver": "spral"}, True),
    ("bounded", 1e-3, "ipopt-c (C interface), kernels compiled (default)", {}, True),
    ("bounded", 1e-3, "cyipopt, kernels compiled", {"backend": "cyipopt"}, True),
    ("bounded", 1e-3, "ipopt-c, kernels in CasADi's VM", {"compile": False}, True),
    ("bounded", 1e-3, "ipopt-c, CasADi's IPOPT with SPRAL", {"linear_solver": "spral"}, True),
    ("exact", 1e-3, "Newton, stage-wise step, compiled (default)", {}, True),
    ("exact", 1e-3, "Newton + SuperLU, compiled", {}, False),
    ("exact", 1e-3, "Newton + SuperLU, kernels in CasADi's VM", {"compile": False}, False),
)
NLP_CASE_FILES = {"bounded": "e12_torque_bounded.toml", "exact": "e12_line.toml"}


@contextmanager
def _newton_by_superlu(active: bool):
    """Newton's step by SuperLU instead of stage-wise block substitution (the path before it), for a row."""
    from ffopt.nlp.backends import newton

    saved = newton.stage_solver
    if active:
        newton.stage_solver = lambda problem, free: None
    try:
        yield
    finally:
        newton.stage_solver = saved


def _cpu_with_children() -> float:
    """CPU s of this process and its reaped children (the IPOPT worker process of cyipopt and nlpsol)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _verified_mm(problem, traj) -> tuple[float, float]:
    """Max tool error (mm) of the plan's torques re-simulated from rest, open loop and with the motor PD."""
    from ffopt.models.equilibrium import static_equilibrium
    from ffopt.sim.plant import MotorPD, pd_gains, simulate
    from ffopt.sim.verify import tool_errors

    m, r = problem.model, problem.reference
    q0 = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), problem.reference_spec.joint_guess)
    y_ref = np.asarray(r.evaluate(traj.t))
    kp, kd = pd_gains(m, q0, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    sims = (simulate(m, traj.t, traj.u, q0), simulate(m, traj.t, traj.u, q0, pd=MotorPD(kp, kd, traj.qm, traj.dqm)))
    return tuple(float(tool_errors(s, y_ref, None, m.output_units)[0].max()) for s in sims)


def _nlp_path_row(case: str, step: float, changes: dict, by_stages: bool, repeats: int) -> dict:
    """One NLP path: plan_nlp (strategy, BDF warm start, transcription, solve) after a warm-up (compiled
    kernels in the cache): CPU of this process and its worker (min), wall (median), iterations, verified errors."""
    from ffopt.nlp.solve import plan_nlp

    problem = load_problem(_problem_file(NLP_CASE_FILES[case])).with_nlp(step=step, **changes)
    cpu, wall = [], []
    with _newton_by_superlu(not by_stages):
        plan_nlp(problem)
        for _ in range(max(1, repeats)):
            c, w = _cpu_with_children(), time.perf_counter()
            traj = plan_nlp(problem)
            cpu.append(_cpu_with_children() - c)
            wall.append(time.perf_counter() - w)
    st = traj.stats
    return {"cpu": min(cpu), "wall": statistics.median(wall), "iterations": st["iterations"],
            "in_solver": st["time_ipopt_s"],
            "solver": st.get("nlp_solver", ""), "linear_solver": st.get("linear_solver", "-"),
            "verified": _verified_mm(problem, traj)}


def nlp_paths_table(repeats: int = 3, quick: bool = False) -> str:
    """E12 bounded (2 and 1 ms) and exact (1 ms): every NLP path side by side in this run, with the verified
    errors of its plan (re-simulated open loop and with the motor PD); the code before, and the targets."""
    rows = [(case, h, label, _nlp_path_row(case, h, changes, stages, min(repeats, 3)))
            for case, h, label, changes, stages in NLP_PATHS if not quick or "default" in label]
    lines = [f"{'case':8s} {'h[ms]':>5s} {'path':50s} {'iter':>4s} {'CPU[s]':>7s} {'wall[s]':>7s} {'solver[s]':>9s} "
             f"{'open loop[mm]':>13s} {'PD[mm]':>8s}   before / target CPU[s]"]
    for case, h, label, r in rows:
        ref = (f"{NLP_BEFORE_CPU_S[(case, h)]:g} / {NLP_TARGET_CPU_S[(case, h)]:g}" if "default" in label
               and (case, h) in NLP_BEFORE_CPU_S else "")
        lines.append(f"{case:8s} {h * 1e3:5g} {label:50s} {r['iterations']:4d} {r['cpu']:7.3f} {r['wall']:7.3f} "
                     f"{r['in_solver']:9.3f} "
                     f"{r['verified'][0]:13.5f} {r['verified'][1]:8.5f}   {ref}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines.append(f"plan_nlp (zero dynamics, BDF warm start, transcription, solve) after one warm-up: CPU of this "
                 f"process and its IPOPT worker, min of {min(repeats, 3)}; wall median; load average {load:.1f} on "
                 f"{os.cpu_count()} cores; solver: wall time inside IPOPT (MUMPS or SPRAL, its own linear algebra) or "
                 "Newton's linear algebra, without function evaluations (last run). Verified: max tool error of the planned torques re-simulated from rest "
                 "(CVODES). before: the code before the compiled kernels (d662e6a), measured the same way.")
    return "\n".join(lines)


def motion_table(repeats: int = 3, quick: bool = False) -> str:
    from ffopt.motion.benchmark import motion_table as table  # toppra and ruckig: the optional extra .[peers]

    return table(repeats=repeats, quick=quick)


SCALING_TABLES = {"plan": plan_process_table, "steps": steps_table, "bodies": bodies_table, "nlp": nlp_paths_table,
                  "motion": motion_table}
