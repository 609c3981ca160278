"""The zeros of every shipped problem against the stability regions of BDF-1..6 at its step.

    python results/bdf_stability.py [PROBLEM ...]   > table (markdown)

For each problem: the zero dynamics along the path (``ffopt.analysis.linear.zero_dynamics``, the
21 points method auto uses), the largest root modulus of BDF-k's characteristic polynomial over
every zero z at h z (h = solver.step), and the order method auto runs (``ffopt.auto_method``: the
highest stable order <= solver.order, margin: a factor 10 of spurious growth over the path).
A modulus above 1 means BDF-k amplifies the zero's mode by that factor per step.
Regenerates the table of results/bdf_stability.md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import ffopt
from ffopt.analysis.linear import zero_dynamics
from ffopt.analysis.stability import bdf_root_modulus, choose_order
from ffopt.auto_method import ZERO_DYNAMICS_POINTS, stability_margin

ROOT = Path(__file__).resolve().parents[1]


def row(path: Path) -> str:
    p = ffopt.load_problem(path)
    s = p.solver
    tic = time.perf_counter()
    try:
        zd = zero_dynamics(p.model, p.reference, p.reference_spec.joint_guess, n_points=ZERO_DYNAMICS_POINTS,
                           cross_check=False)
    except ffopt.FfoptError as err:
        return f"| {path.stem} | {s.step * 1e3:g} | | analysis failed: {str(err)[:50]} |" + " |" * 9
    zs = np.array([z for zk in zd.zeros for z in zk if np.isfinite(z)])
    n_zeros = len(zd.zeros[0]) if zd.zeros else 0
    if zs.size == 0:
        mods = ["-"] * 6
        worst = "none"
    else:
        mods = [f"{bdf_root_modulus(k, s.step * zs).max():.4g}" for k in range(1, 7)]
        z = zd.worst_zero
        worst = f"{z.real:.4g}{z.imag:+.4g}j"
    margin = stability_margin(p, s.step)
    choice = choose_order(zd.times, zd.zeros, s.order, s.step, margin)
    chosen = "none" if choice.order is None else f"BDF-{choice.order}" + (
        f" at {choice.step * 1e3:g} ms" if choice.step != s.step else "")
    phase = "min. phase" if zd.minimum_phase else "NON-MIN. PHASE"
    mods = [f"**{m}**" if m != "-" and float(m) > 1 + margin else m for m in mods]
    return (f"| {path.stem} | {s.step * 1e3:g} | {n_zeros} | {worst} ({phase}) | " + " | ".join(mods)
            + f" | {s.method}, BDF-{s.order} | {chosen} | {time.perf_counter() - tic:.2f} |")


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted((ROOT / "problems").glob("*.toml"))
    print("| problem | h (ms) | zeros per point | worst zero (rad/s) | BDF-1 | BDF-2 | BDF-3 | BDF-4 | BDF-5 | "
          "BDF-6 | file's method, order | auto's order | analysis (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        print(row(path), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
