"""Every shipped problem with the defaults: the verdict, the tool error during the move and after the
table (motor PD case), whether the plan ends at rest, and what the rest-to-rest shaping did.

    python results/rest_to_rest.py [--exact] [PROBLEM ...]   > table (markdown)

--exact: the same with solver.end_at_rest = false (the exact-tracking plans of the given time laws).
Regenerates the tables of results/rest_to_rest.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import ffopt

ROOT = Path(__file__).resolve().parents[1]


def row(path: Path, exact: bool) -> str:
    problem = ffopt.load_problem(path)
    if exact:
        problem = problem.with_values({"solver.end_at_rest": False})
    tic = time.perf_counter()
    try:
        r = ffopt.plan(problem, verify=True)
    except ffopt.FfoptError as err:
        return f"| {path.stem} | failed: {str(err)[:80]} | | | | | | |"
    wall = time.perf_counter() - tic
    ver = r.verification
    pd = ver.cases["feedforward_pd"]
    end = ver.end_state
    rest = r.method_choice.get("rest_to_rest", {})
    shaped = "shaped" if rest.get("shaped") else ("-" if not rest else f"not shaped: {rest.get('reason', '')[:60]}")
    peak = abs(r.trajectory.u).max()
    at_rest = "yes" if end["at_rest"] else f"no: {end['link_speed_max_rad_s']:.2g} rad/s"
    return (f"| {path.stem} | {r.trajectory.method} | {ver.status} ({ver.verdict.tolerance_mm:.3g} mm) | "
            f"{pd.max_mm:.3g} | {pd.settle.residual_mm:.3g} | "
            f"{at_rest} | {peak:.4g} | "
            f"{shaped} | {wall:.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exact", action="store_true", help="solver.end_at_rest = false")
    ap.add_argument("problems", nargs="*", help="problem files (default: problems/*.toml)")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.problems] or sorted((ROOT / "problems").glob("*.toml"))
    print("| problem | method | verdict (tolerance) | PD max during move [mm] | PD residual after [mm] | "
          "ends at rest | peak input | rest-to-rest | wall [s] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        print(row(p, args.exact), flush=True)
    load = os.getloadavg()[0]
    print(f"\n(load average {load:.1f} on {os.cpu_count()} cores; wall times include the planning, the shaping "
          "and the default verification)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
