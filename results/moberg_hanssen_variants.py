"""Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 7.2.5 reproduced:
E1 simplified by HI, DD (automatic; 43, 44, 48, 49), KM and DC.

    python results/moberg_hanssen_variants.py [--repeats N] [--write]
    (prints the tables; --write: into moberg_hanssen_variants.md)

Three timings per variant (median of N runs, solve phase only):
- compiled: ffopt's CasADi stepping compiled to C (KM: its own mapaccum loop, ffopt.replication.kunkel_mehrmann);
- Python GN: one Python Gauss-Newton stepper with exact Jacobians and lstsq steps, shared by all;
- scipy: scipy.optimize.least_squares per step with finite-difference Jacobians (dogleg for the
  square systems, like Matlab fsolve; trust-region reflective for KM's underdetermined one, like
  lsqnonlin): the paper's own set-up, so the column to compare with the paper's seconds. Its count
  of residual evaluations (finite differences included) is the machine-independent cost.
"DD" in the paper's tables is its fastest hand-made system, (44); ratios are to DD44.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from pathlib import Path

import numpy as np

import ffopt.replication.moberg_hanssen as sv
import ffopt.replication.python_bdf as steppers
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import SolverError
from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
PAPER_TIMES_S = {(6, 5e-3): {"HI": 3.8, "DD44": 3.3, "KM": 21.7, "DC": 6.8},
        (3, 3e-3): {"HI": 6.0, "DD44": 5.1, "KM": 36.0, "DC": 7.7}}
VARIANTS = ["HI", "DD", "DD43", "DD44", "DD48", "DD49", "KM", "DC"]
ENGINES = ["compiled", "python", "scipy"]


def time_variant(p, v, k, h, engine, repeats):
    """(last trajectory, median solve seconds) or raises SolverError."""
    runs = [sv.solve_inverse_variant(p.model, p.reference, v, BdfSettings(k, h), p.reference_spec.joint_guess,
                                     engine=engine)
            for _ in range(repeats)]
    return runs[-1], statistics.median(r.stats["time_solve_s"] for r in runs)


def km_dogbox(p, k, h, repeats):
    """KM with the dogleg least squares of the square systems instead of lsqnonlin's trf."""
    saved, steppers.LSQ_METHOD_UNDERDETERMINED = steppers.LSQ_METHOD_UNDERDETERMINED, "dogbox"
    try:
        return time_variant(p, "KM", k, h, "scipy", repeats)[1]
    finally:
        steppers.LSQ_METHOD_UNDERDETERMINED = saved


def fmt(x, spec="{:.3g}"):
    return "-" if x is None else spec.format(x)


def table(p, k, h, repeats):
    ref = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h / 8, form="I1"),
                            qa_guess=p.reference_spec.joint_guess)
    u_ref, u_peak = ref.u[::8, 0], np.abs(ref.u).max()
    rows, notes, evals, size = {}, {}, {}, {}
    for v in VARIANTS:
        times, err = {}, None
        for engine in ENGINES:
            try:
                tr, times[engine] = time_variant(p, v, k, h, engine, repeats)
                err = np.abs(tr.u[:, 0] - u_ref).max()
                if engine == "scipy":
                    evals[v] = tr.stats["residual_evaluations"]
                    size[v] = f"{tr.stats['unknowns']} x {tr.stats['equations']}"
            except SolverError as e:
                times[engine] = None
                notes.setdefault(v, []).append(f"{engine}: {str(e).split(';')[0].split('. Try')[0]}")
        rows[v] = (times, err)
    dd = rows["DD44"][0]
    paper = PAPER_TIMES_S[(k, h)]
    out = [f"\n## BDF-{k}, h = {h * 1e3:g} ms (u_ref: BDF-6, I1 form, h/8; peak |u_ref| = {u_peak:.4g} N m)\n",
           "| variant | unknowns x eqs | compiled [ms] | Python GN [ms] | scipy [s] | scipy / DD44 | scipy F evals "
           "| evals / DD44 | paper [s] | paper / paper DD | max abs(u - u_ref) [N m] | relative to peak |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for v, (times, err) in rows.items():
        c, py, sc = times["compiled"], times["python"], times["scipy"]
        s = paper.get(v)
        ev = evals.get(v)
        out.append(f"| {v} | {size.get(v, '-')} | {fmt(c and c * 1e3)} | {fmt(py and py * 1e3)} | {fmt(sc)} | "
                   f"{fmt(sc and dd['scipy'] and sc / dd['scipy'], '{:.2f}')} | {fmt(ev, '{:d}')} | "
                   f"{fmt(ev and ev / evals['DD44'], '{:.2f}')} | {fmt(s, '{:g}')} | "
                   f"{fmt(s and s / paper['DD44'], '{:.2f}')} | {fmt(err, '{:.4g}')} | "
                   f"{fmt(err and err / u_peak, '{:.2e}') if err is not None else 'no solution'} |")
    t_dog = km_dogbox(p, k, h, repeats)
    out.append(f"\nKM with dogleg least squares (like the square systems) instead of lsqnonlin's trust-region "
               f"reflective: {t_dog:.3g} s = {t_dog / dd['scipy']:.2f} x DD44.")
    for v, ns in notes.items():
        out.append(f"\n{v} failed in {len(ns)} of {len(ENGINES)} engines:\n" + "\n".join(f"- {n}" for n in ns))
    return out


def main(repeats: int):
    p = load_problem(ROOT / "problems" / "e1_simplified.toml")
    lines = ["# Moberg & Hanssen's E1 solver family, reproduced\n",
             f"Measured {datetime.date.today()} by `python results/moberg_hanssen_variants.py --repeats {repeats}` "
             "(median solve time; shared 2-core machine, timings noisy by tens of percent). Columns: see the "
             "script's docstring; `scipy` is the like-for-like column for the Matlab fsolve/lsqnonlin solver of "
             "Moberg & Hanssen, inverse dynamics of flexible manipulators (sec. 7.2.5); `paper` = their Matlab "
             "times. DD = automatic dummy derivatives (ffopt.dae.dummy_derivatives), DD43..DD49 = the paper's "
             "hand-made systems (43), (44), (48), (49); the paper's 'DD' timing is (44)."]
    for k, h in PAPER_TIMES_S:
        lines += table(p, k, h, repeats)
    text = "\n".join(lines) + "\n"
    print(text)
    return text


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", action="store_true",
                    help="rewrite the tables of results/moberg_hanssen_variants.md, keeping its hand-written "
                         "'## Findings'")
    args = ap.parse_args()
    text = main(args.repeats)
    if args.write:
        md = ROOT / "results" / "moberg_hanssen_variants.md"
        old = md.read_text() if md.exists() else ""
        findings = old[old.index("## Findings"):] if "## Findings" in old else ""
        md.write_text(text + ("\n" + findings if findings else ""))
