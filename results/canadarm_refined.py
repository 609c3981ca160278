"""Canadarm plans checked on the beam (refined models): which plan holds beyond its own truncation.
Writes results/canadarm_refined.md (results/canadarm.py includes it in results/canadarm.md).

    python results/canadarm_refined.py        (about 20-30 min on a shared 2-core machine)

Each option is planned by the non-causal NLP of problems/canadarm_tool_path.toml with one change (the beam
model of the links, or the move's duration) and verified with the default cases; the verification runs the
judged case (plan torques + joint PD) on refined models (the link's clamped-free modes plus more and the
static tip shapes xi^2, xi^3: ffopt.sim.refined) until its error converges. Errors are the tool error in mm
during the move and the residual after the table (settle window), on the planning model and on the last
refined model.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import ffopt
from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "canadarm_tool_path.toml"
# name: (modes per link, static tip shapes, move duration [s], text)
OPTIONS = {
    "cf2": (2, False, 8.0, "2 clamped-free modes (the paper's model; shipped before)"),
    "cf3": (3, False, 8.0, "3 clamped-free modes"),
    "cf2_16s": (2, False, 16.0, "2 clamped-free modes, move 16 s instead of 8 s"),
    "s2": (2, True, 8.0, "2 static-shape modes (xi^2, xi^3; shipped)"),
}


def variant(problem, modes: int, static: bool, duration: float):
    links = tuple(replace(k, modes=modes, static_correction=static, damping_ratio=(0.0,) * modes)
                  for k in problem.flexible_links)
    params = dict(problem.reference_spec.params)
    if "durations" in params:  # a joint move: every joint's duration
        params["durations"] = np.full_like(params["durations"], duration)
    spec = replace(problem.reference_spec, duration=duration, params=params)
    return replace(problem, flexible_links=links, reference_spec=spec, raw=None)


def run(name: str) -> dict:
    modes, static, duration, text = OPTIONS[name]
    problem = variant(load_problem(PROBLEM), modes, static, duration)
    tic = time.perf_counter()
    res = ffopt.plan(problem, verify=False)
    plan_s = time.perf_counter() - tic
    from ffopt.sim.verify import verify

    tic = time.perf_counter()
    rep = verify(problem.model, problem.reference, res.trajectory, problem.verification, cases="default")
    pd = rep.cases["feedforward_pd"]
    return {"name": name, "text": text, "plan_s": plan_s, "verify_s": time.perf_counter() - tic,
            "status": rep.status, "tolerance_mm": rep.verdict.tolerance_mm, "pd_max_mm": pd.max_mm,
            "pd_residual_mm": None if pd.settle is None else pd.settle.residual_mm,
            "refined": rep.refined.to_dict(), "peak_torque_Nm": np.abs(res.trajectory.u).max(axis=0).tolist()}


def table(rows) -> list[str]:
    out = ["| plan | plan [s] | own model: move / after [mm] | refined models: move / after [mm] | converged | "
           "verdict |", "|---|---|---|---|---|---|"]
    for r in rows:
        ref = r["refined"]
        seq = "; ".join(f"{x['basis']}: {x['max_mm']:.3g} / {x['residual_mm']:.3g}" for x in ref["refinements"])
        out.append(f"| {r['text']} | {r['plan_s']:.0f} | {r['pd_max_mm']:.3g} / {r['pd_residual_mm']:.3g} | {seq} | "
                   f"{'yes' if ref['converged'] else 'no'} | {r['status']} |")
    return out


def main(names):
    tic = time.perf_counter()
    store = ROOT / "results" / "canadarm" / "refined.json"  # rows of earlier runs are kept (rerun one by name)
    rows = json.loads(store.read_text()) if store.exists() else []
    for name in names:
        rows = [r for r in rows if r["name"] != name] + [run(name)]
        rows.sort(key=lambda r: list(OPTIONS).index(r["name"]))
        store.write_text(json.dumps(rows, indent=1))
    lines = ["# Canadarm plans on the beam", "", "## Plans that hold on the beam", ""] + table(rows)
    lines += ["", f"_Generated {datetime.date.today()} on {platform.machine()}, {platform.python_version()}, "
              f"ffopt {ffopt.__version__} (this run: {', '.join(names)}, {time.perf_counter() - tic:.0f} s) on a shared "
              "2-core machine; plan times are wall times with other jobs running._", ""]
    (ROOT / "results" / "canadarm_refined.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:] or list(OPTIONS))
