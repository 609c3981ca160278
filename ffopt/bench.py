"""`ffopt bench`: BDF forms against SUNDIALS IDAS on E1 and E12, measured side by side in one run.

For every benchmark setting of seed 000 (sec. 7.4: E1 with k = 6, h = 5 ms and k = 3, h = 3 ms;
E12 with k = 3, h = 3 ms and k = 6, h = 1 ms) and every form I3 / I2 / I1:
- BDF solve time (median over repeats) in compiled C code and in CasADi's virtual machine, and
  the one-off build time (symbolic set-up plus, on the first run on a machine, the C compiler);
- IDAS on the index-1 semi-explicit form (ffopt.dae.idas), rtol 1e-8, same output grid;
- the ratio IDAS / compiled BDF (same run, same machine state);
- accuracy: max |u - u_ref| / max |u_ref| with u_ref from BDF-6 on the I1 form with h/8;
- the seed's published Matlab times beside them.
"""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from ffopt.dae.idas import solve_inverse_idas
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.io.problem import load_problem

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
# (label, problem file, [(order, step)]) -- the seed's settings
SETTINGS = [
    ("E1", "e1_simplified.toml", [(6, 5e-3), (3, 3e-3)]),
    ("E12", "e12_line.toml", [(3, 3e-3), (6, 1e-3)]),
]
# Seed 000, sec. 7.4, Matlab times in s. E1: HI (= I3) and DD (dummy derivatives, the
# counterpart of I1); ode15i on DD took "0.3ms" as printed (probably 0.3 s). E12: I3/I2/I1.
SEED_TIMES = {
    ("E1", 6, 5e-3): {"I3": 3.8, "I1": 3.3},
    ("E1", 3, 3e-3): {"I3": 6.0, "I1": 5.1},
    ("E12", 3, 3e-3): {"I3": 38.0, "I2": 34.0, "I1": 43.0},
    ("E12", 6, 1e-3): {"I3": 152.0, "I2": 134.0, "I1": 136.0},
}
IDAS_RTOL = 1e-8


def _median_solve(fn, repeats):
    """(last trajectory, median of its stats["time_solve_s"]) over ``repeats`` calls."""
    runs = [fn() for _ in range(max(1, repeats))]
    return runs[-1], statistics.median(r.stats["time_solve_s"] for r in runs)


def _rel_error(traj, u_ref, stride):
    return float(np.abs(traj.u - u_ref[::stride]).max() / np.abs(u_ref).max())


def bench_rows(quick: bool = False, repeats: int = 5):
    """One dict per (problem, order, step, solver) with times and errors."""
    rows = []
    for label, file, settings in SETTINGS:
        p = load_problem(PROBLEMS / file)
        guess = p.reference_spec.joint_guess
        for order, h in settings[-1:] if quick else settings:
            u_ref = solve_inverse_bdf(p.model, p.reference, 6, h / 8, "I1", qa_guess=guess).u
            for form in ("I1",) if quick else ("I3", "I2", "I1"):
                tic = time.perf_counter()  # first call: build (and compile unless cached)
                solve_inverse_bdf(p.model, p.reference, order, h, form, qa_guess=guess)
                t_first = time.perf_counter() - tic
                tr, t_c = _median_solve(
                    lambda: solve_inverse_bdf(p.model, p.reference, order, h, form, qa_guess=guess), repeats)
                _, t_vm = _median_solve(lambda: solve_inverse_bdf(p.model, p.reference, order, h, form,
                                                                  qa_guess=guess, compile=False), repeats // 2)
                rows.append({"problem": label, "order": order, "step_ms": h * 1e3, "solver": f"BDF {form}",
                             "time_s": t_c, "time_vm_s": t_vm,
                             "first_call_s": t_first, "compiled": tr.stats["compiled"],
                             "rel_error_u": _rel_error(tr, u_ref, 8),
                             "seed_s": SEED_TIMES[(label, order, h)].get(form)})
            idas, t_idas = _median_solve(lambda: solve_inverse_idas(
                p.model, p.reference, h, rtol=IDAS_RTOL, atol=IDAS_RTOL * 1e-2, qa_guess=guess), repeats)
            rows.append({"problem": label, "order": order, "step_ms": h * 1e3, "solver": "IDAS (I1, index 1)",
                         "time_s": t_idas, "time_vm_s": None, "first_call_s": None, "compiled": False,
                         "rel_error_u": _rel_error(idas, u_ref, 8), "seed_s": None,
                         "idas_steps": idas.stats.get("n_steps_idas")})
    return rows


def format_table(rows) -> str:
    head = (f"{'problem':8s} {'k':>2s} {'h [ms]':>6s} {'solver':20s} {'solve [ms]':>10s} {'VM [ms]':>8s} "
            f"{'IDAS/BDF':>8s} {'rel err u':>9s} {'seed [s]':>8s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        idas = next(x for x in rows if x["problem"] == r["problem"] and x["order"] == r["order"]
                    and x["step_ms"] == r["step_ms"] and x["solver"].startswith("IDAS"))
        ratio = "" if r is idas else f"{idas['time_s'] / r['time_s']:8.2f}"
        vm = "" if r["time_vm_s"] is None else f"{r['time_vm_s'] * 1e3:8.1f}"
        seed = "" if r["seed_s"] is None else f"{r['seed_s']:8.1f}"
        lines.append(f"{r['problem']:8s} {r['order']:2d} {r['step_ms']:6g} {r['solver']:20s} "
                     f"{r['time_s'] * 1e3:10.2f} {vm:>8s} {ratio:>8s} {r['rel_error_u']:9.2e} {seed:>8s}")
    return "\n".join(lines)


def run_bench(quick: bool = False, repeats: int = 5) -> str:
    rows = bench_rows(quick, repeats)
    stamp = f"{datetime.date.today()} {platform.machine()} Python {platform.python_version()}, median of {repeats}"
    notes = ("solve = BDF stepping incl. convergence check (compiled C unless 'VM'); IDAS rtol "
             f"{IDAS_RTOL:g} on the semi-explicit I1 form; rel err u = max|u - u_ref| / max|u_ref| with u_ref "
             "from BDF-6 (I1) at h/8; seed = Matlab times of seed 000 sec. 7.4 (E1: HI as I3, DD as I1).")
    return f"ffopt bench ({stamp})\n{format_table(rows)}\n{notes}"
