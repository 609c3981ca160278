"""A census of the default plan over random elastic arms: every drawn arm is planned with no overrides
and its outcome written as one JSON line, failures included (a survey, not a test: the tests in
tests/test_random_arms.py fail on the first arm that misses).

    python results/random_arm_survey.py [--n 30] [--kinds planar2,spatial3] [--seed 20261126] [--out FILE]

The arms are those of tests/random_arms.py (``drawn_arms``: a function of the seed, the strategies and
the hypothesis version), so a line here names the same arm as the slow test of the same n, kinds and
seed. Each arm is written before its plan (a line {"arm": ...}), so one that never returns can be
replayed on its own; then a line with its kind, joints, method, the reason for it, the PD-verified
tool error during the move and after the table, the verdict against the plan's tolerance, and the
time, or the error message.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from random_arms import KINDS, drawn_arms, problem_of  # noqa: E402

import ffopt  # noqa: E402


def survey_one(arm: dict) -> dict:
    meta = arm["meta"]
    tic = time.perf_counter()
    try:
        result = ffopt.plan(problem_of(arm))
    except ffopt.FfoptError as err:
        return {**meta, "error": str(err)[:300], "time_s": time.perf_counter() - tic}
    ver = result.verification
    pd = ver.cases["feedforward_pd"]
    choice = result.method_choice or {}
    dec = result.trajectory.stats.get("decoupling") or {}
    return {**meta, "method": result.trajectory.method, "reason": choice.get("reason"),
            "attempts": len(choice.get("attempts", [])), "pd_mm": pd.max_mm,
            "residual_mm": pd.settle.residual_mm, "tolerance_mm": ver.verdict.tolerance_mm, "status": ver.status,
            "singular_decoupling": bool(dec.get("singular")), "time_s": time.perf_counter() - tic}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30, help="number of arms (default 30)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated kinds (default {','.join(KINDS)})")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file (default: standard output)")
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    out = open(args.out, "a") if args.out else sys.stdout
    try:
        for k, arm in enumerate(drawn_arms(args.n, kinds, args.seed)):
            out.write(json.dumps({"k": k, "arm": arm}, default=float) + "\n")
            out.flush()
            out.write(json.dumps({"k": k, **survey_one(arm)}, default=float) + "\n")
            out.flush()
    finally:
        if args.out:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
