"""MUMPS's scaling inside IPOPT on the NLPs ffopt solves: none (ICNTL(8) = 0, ffopt's earlier choice) against
the iterative row and column scaling (8, ffopt's default since 2026-11-27), each plan with the defaults.

    python results/mumps_scaling.py [--n 30] [--seed 20261126] [--no-canadarm]

The NLP plans: the non-minimum-phase arms among the first n drawn by tests/random_arms.py (``drawn_arms``, the
arms of results/random_arm_survey.py and the slow random-arm tests), and the shipped problems that plan by the
NLP. Per plan and setting: the NLP stage's wall time, IPOPT iterations, the PD-verified tool error during the
move and the verdict. The setting is switched by replacing ``ipopt_options`` in the IPOPT backends (a study,
not an option users need).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from random_arms import KINDS, drawn_arms, problem_of  # noqa: E402

import ffopt  # noqa: E402
from ffopt.nlp.backends import casadi_ipopt, common, cyipopt_backend, ipopt_c  # noqa: E402

SETTINGS = {"none (0)": 0, "row and column (8)": 8}
SHIPPED = ("e12_torque_bounded", "e1_nmp", "e12_held", "canadarm_tool_path")


def with_scaling(value: int):
    def options(*args, **kwargs):
        opts = common.ipopt_options(*args, **kwargs)
        if "mumps_scaling" in opts:
            opts["mumps_scaling"] = value
        return opts
    return options


def run(problem) -> dict:
    tic = time.perf_counter()
    result = ffopt.plan(problem, progress=False)
    st, ver = result.trajectory.stats, result.verification
    return {"method": result.trajectory.method, "nlp_s": st.get("time_nlp_stage_s", float("nan")),
            "iterations": st.get("iterations_total"), "pd_mm": ver.cases["feedforward_pd"].max_mm,
            "status": ver.status, "wall_s": time.perf_counter() - tic}


def plans(n: int, seed: int, canadarm: bool):
    """(label, problem) of every NLP plan: the drawn arms that plan by the NLP, then the shipped NLP problems."""
    from ffopt.auto_method import _analyse

    for k, arm in enumerate(drawn_arms(n, KINDS, seed)):
        problem = problem_of(arm)
        if _analyse(problem)[1] is False:  # non-minimum phase: method auto plans it by the NLP
            yield f"arm {k} ({arm['meta']['kind']})", problem
    for name in SHIPPED:
        if canadarm or name != "canadarm_tool_path":
            yield name, ffopt.load_problem(ROOT / "problems" / f"{name}.toml")


def settings_table(settings: dict, patch, run, cell, figure: str, argv=None, doc: str = __doc__) -> int:
    """Every NLP plan of ``plans`` under each of ``settings`` ({label: value}): ``patch(value)`` switches the setting,
    ``run(problem)`` plans (a dict with ``figure``, iterations, pd_mm, status), ``cell(r)`` formats one result. Prints
    a markdown table, with the total and the slowest of ``figure`` per setting. Shared with results/ipopt_refinement.py."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--no-canadarm", action="store_true", help="leave out the Canadarm (the longest plan)")
    args = ap.parse_args(argv)
    print("| plan | " + " | ".join(f"{s}: {cell.__doc__}" for s in settings) + " |")
    print("|---|" + "---|" * len(settings))
    totals = {s: [] for s in settings}
    for label, problem in plans(args.n, args.seed, not args.no_canadarm):
        cells = []
        for name, value in settings.items():
            patch(value)
            r = run(problem)
            totals[name].append(r[figure])
            cells.append(cell(r) + ("" if r["status"] == "verified" else f" ({r['status']})"))
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    print(f"| total {figure}, slowest | " + " | ".join(f"{sum(t):.1f} s, {max(t):.1f} s" for t in totals.values())
          + " |")
    print(f"\n(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {figure} of the last attempt)")
    return 0


def _cell(r) -> str:
    """NLP s / iterations / PD mm"""
    return f"{r['nlp_s']:.1f} / {r['iterations']} / {r['pd_mm']:.3g}"


def _patch(value: int) -> None:
    cyipopt_backend.ipopt_options = casadi_ipopt.ipopt_options = ipopt_c.ipopt_options = with_scaling(value)


def main(argv=None) -> int:
    return settings_table(SETTINGS, _patch, run, _cell, "nlp_s", argv)


if __name__ == "__main__":
    sys.exit(main())
