"""Seed 000 sec. 7.2.5 reproduced: E1 simplified by HI, DD (43, 44, 48, 49), KM and DC.

    python results/seed_variants.py [--repeats N]     (writes results/seed_variants.md)

Two timings per variant: in ffopt's compiled BDF (C code) and in a plain Python Gauss-Newton
stepper shared with KM, which is the like-for-like comparison with the seed's Matlab solver
(KM needs the underdetermined minimum-norm step and only exists in the Python stepper).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from pathlib import Path

import numpy as np

from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.dae.seed_variants import solve_inverse_variant
from ffopt.errors import SolverError
from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
SEED = {(6, 5e-3): {"HI": 3.8, "DD": 3.3, "KM": 21.7, "DC": 6.8},
        (3, 3e-3): {"HI": 6.0, "DD": 5.1, "KM": 36.0, "DC": 7.7}}
VARIANTS = ["HI", "DD43", "DD44", "DD48", "DD49", "KM", "DC"]


def time_variant(p, v, k, h, engine, repeats):
    runs = [solve_inverse_variant(p.model, p.reference, v, k, h, p.reference_spec.joint_guess, engine=engine)
            for _ in range(repeats)]
    return runs[-1], statistics.median(r.stats["time_solve_s"] for r in runs)


def main(repeats: int):
    p = load_problem(ROOT / "problems" / "e1_simplified.toml")
    lines = [f"# Seed 000's E1 solver family, reproduced\n",
             f"Measured {datetime.date.today()} by `python results/seed_variants.py --repeats {repeats}` "
             "(median; shared 2-core machine, noisy). rel err u = max|u - u_ref| / max|u_ref|, u_ref from BDF-6 "
             "(I1) at h/8. Seed: Matlab, lsqnonlin/fsolve per step (sec. 7.2.5; DD = its fastest variant, (44)).\n"]
    for (k, h), seed in SEED.items():
        ref = solve_inverse_bdf(p.model, p.reference, 6, h / 8, "I1", qa_guess=p.reference_spec.joint_guess)
        lines += [f"\n## BDF-{k}, h = {h * 1e3:g} ms\n",
                  "| variant | compiled [ms] | Python stepper [ms] | Python / DD44 Python | seed [s] | seed / seed DD | rel err u |",
                  "|---|---|---|---|---|---|---|"]
        rows = {}
        for v in VARIANTS:
            try:
                t_c = None if v == "KM" else time_variant(p, v, k, h, "compiled", repeats)[1]
                tr, t_py = time_variant(p, v, k, h, "python", repeats)
                err = np.abs(tr.u[:, 0] - ref.u[::8, 0]).max() / np.abs(ref.u).max()
                rows[v] = (t_c, t_py, err)
            except SolverError as e:
                rows[v] = (None, None, f"no solution ({str(e).split(':')[0]})")
        dd = rows["DD44"][1]
        for v, (t_c, t_py, err) in rows.items():
            s = seed.get(v if not v.startswith("DD") else ("DD" if v == "DD44" else None))
            fmt = lambda x, f="{:.2f}": "-" if x is None else f.format(x)
            lines.append(f"| {v} | {fmt(None if t_c is None else t_c * 1e3)} | {fmt(None if t_py is None else t_py * 1e3)} | "
                         f"{fmt(None if t_py is None else t_py / dd)} | {fmt(s, '{:g}')} | "
                         f"{fmt(None if s is None else s / seed['DD'])} | {err if isinstance(err, str) else f'{err:.2e}'} |")
    lines += ["\nFindings: as in the seed, all variants but (48) give the same torques (to the BDF error of the "
              "step) and (48) has no solution: its step equations become singular as soon as the motion starts. "
              "The seed's other two timing findings are not reproduced as such: all square variants cost about "
              "the same here (differences of tens of percent that change between runs on this shared machine), "
              "so '(44) is fastest' is not a distinction we can confirm; and KM costs about the same as DD in the "
              "same Gauss-Newton stepper (1.0-1.1x), not the seed's 6.6-7x. Both use one factorisation per "
              "iteration on a small system (12 unknowns for KM's derivative array against 4); the seed's KM ran "
              "Matlab's lsqnonlin, whose overhead per call we do not have."]
    text = "\n".join(lines) + "\n"
    (ROOT / "results" / "seed_variants.md").write_text(text)
    print(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    main(ap.parse_args().repeats)
