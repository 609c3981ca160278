"""Study (b): error vs step size for BDF order k = 1..6, with the observed orders.

    python results/studies/error_vs_step.py        (about 1 min; writes results/error_vs_step.md)

For E1 simplified (Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec.
7.2) with the paper's variants HI (original DAE), DD (automatic dummy derivatives), KM and DC, and
for E12 (sec. 7.4) with HI and DD: the torque error max|u - u_ref| / max|u_ref| on the coarse grid,
u_ref from BDF-6 on DD at h_min / 8. The observed order between h and h/2 is
log2(err(h) / err(h/2)).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np

from ffopt.errors import SolverError
from ffopt.settings.bdf import BdfSettings
from ffopt.io.problem import load_problem
from ffopt.replication.moberg_hanssen import solve_inverse_variant

ROOT = Path(__file__).resolve().parents[2]
CASES = [("E1 simplified", "e1_simplified.toml", ["HI", "DD", "KM", "DC"], [4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4]),
         ("E12", "e12_line.toml", ["HI", "DD"], [4e-3, 2e-3, 1e-3, 5e-4])]
REF_DIVISOR = 8


def errors(p, variant, order, steps, u_ref, h_ref):
    out = []
    for h in steps:
        stride = int(round(h / h_ref))
        try:
            tr = solve_inverse_variant(p.model, p.reference, variant, BdfSettings(order, h),
                                       p.reference_spec.joint_guess)
            out.append(float(np.abs(tr.u - u_ref[::stride]).max() / np.abs(u_ref).max()))
        except SolverError:
            out.append(np.nan)
    return out


def table(label, variant, errs_by_k, steps) -> list[str]:
    head = "| k | " + " | ".join(f"h = {h * 1e3:g} ms" for h in steps) + " | observed orders |"
    lines = [f"\n### {label}, {variant}\n", head, "|" + "---|" * (len(steps) + 2)]
    for k, errs in errs_by_k.items():
        e = np.array(errs)
        with np.errstate(invalid="ignore", divide="ignore"):
            orders = np.log2(e[:-1] / e[1:])
        cells = " | ".join("fail" if not np.isfinite(x) else f"{x:.2e}" for x in e)
        lines.append(f"| {k} | {cells} | {', '.join('-' if not np.isfinite(o) else f'{o:.2f}' for o in orders)} |")
    return lines


def main():
    lines = ["# Study (b): torque error vs BDF step size, k = 1..6\n",
             f"Generated {datetime.date.today()} by `python results/studies/error_vs_step.py`. Error = "
             "max|u - u_ref| / max|u_ref| on the step grid; u_ref = BDF-6 on the dummy-derivative (DD) system "
             f"at h_min/{REF_DIVISOR}. 'fail' = Newton did not converge. Observed order = log2(err(h)/err(h/2)) "
             "for consecutive columns."]
    for label, file, variants, steps in CASES:
        p = load_problem(ROOT / "problems" / file)
        h_ref = steps[-1] / REF_DIVISOR
        u_ref = solve_inverse_variant(p.model, p.reference, "DD", BdfSettings(6, h_ref), p.reference_spec.joint_guess).u
        for v in variants:
            errs = {k: errors(p, v, k, steps, u_ref, h_ref) for k in range(1, 7)}
            lines += table(label, v, errs, steps)
    lines.append(NOTES)
    text = "\n".join(lines) + "\n"
    (ROOT / "results" / "error_vs_step.md").write_text(text)
    print(text)


NOTES = """
## Reading the tables

- E1: the index-1 systems DD (automatic dummy derivatives) and DC (decoupled) show the full order
  k = 1..6 (k = 1 is still pre-asymptotic at these steps: errors of 10-50 %). HI (the original
  index-2 DAE) and KM reach order 4 at most: for k = 5, 6 their errors stall near order 4 with
  a 10-100x larger error than DD at h = 0.25 ms. The path is only C^5 where the motion starts
  (poly11 joined to rest), and BDF on the high-index system (HI) or with d BDF rows next to the
  derivative array (KM) propagates that non-smoothness into an initial layer (see also
  tests/test_convergence.py and results/bench.md).
- E12 (index 3, steps 4..0.5 ms): DD converges with order ~2.3-3.4 for k >= 3 in this range (not
  yet asymptotic for the 1.3-5 Hz structure over a 0.3 s motion); HI converges with order ~2.5-3.1
  down to 0.5 ms, but for k >= 4 its error at 0.5 ms is 6-25x DD's (5e-4 .. 2.8e-3 against
  8.5e-5 .. 1.2e-4): the I3 Newton matrix has condition ~1e14 there even with the default (1/h)^2
  scaling (results/conditioning.md), and roundoff amplified by the index takes over below about
  0.5 ms -- Moberg & Hanssen's "if the step size is too small, we lose numerical solvability"
  (sec. 3). (Before the time laws were evaluated in Bernstein form, their cancellation noise made
  HI diverge for k >= 3 already at 0.5 ms.)
- Errors near 1e-10 are at the level of the reference's own error; orders from them are noise.
"""


if __name__ == "__main__":
    main()
