"""Canadarm plans checked on the geometrically exact beam: which plan holds beyond its own model.
Writes results/canadarm_refined.md (results/canadarm.py includes it in results/canadarm.md).

    python results/canadarm_refined.py [NAME ...]      (about 15-25 min for all on a shared 2-core machine)
    python results/canadarm_refined.py --table         (the page from the stored rows, results/canadarm/refined.json)

Each option is planned by the non-causal NLP of problems/canadarm_tool_path.toml with one change (the beam
model of the links: modes, static tip shapes, kinematics; or the move's duration) and verified with the default
cases; the verification runs the judged case (plan torques + joint PD) on the exact beam (each link rigid
segments joined by springs EI / l, 4, 8, 16 (32) per link, Richardson-extrapolated in their count:
ffopt.sim.refined) and judges it there. Errors are the tool error in mm during the move and the residual after
the table (settle window), on the planning model and on the extrapolated exact beam; each run also states the
largest tip deflection of a link (% of its length) and the chord shortening it brings.
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
# name: (modes per link, static tip shapes, kinematics, move duration [s], text)
OPTIONS = {
    "cf2_linear": (2, False, "linear", 8.0, "2 clamped-free modes, linear kinematics (the paper's model)"),
    "s2_linear": (2, True, "linear", 8.0, "2 static-shape modes, linear kinematics (shipped until 2026-11-28)"),
    "s2_linear_16s": (2, True, "linear", 16.0, "2 static-shape modes, linear kinematics, move 16 s instead of 8 s"),
    "s2": (2, True, "second_order", 8.0, "2 static-shape modes, second-order kinematics (shipped)"),
    "s4": (4, True, "second_order", 8.0, "2 clamped-free modes + 2 static shapes, second-order kinematics"),
}


def variant(problem, modes: int, static: bool, kinematics: str, duration: float):
    links = tuple(replace(k, modes=modes, static_correction=static, damping_ratio=(0.0,) * modes, kinematics=kinematics)
                  for k in problem.flexible_links)
    params = dict(problem.reference_spec.params)
    if "durations" in params:  # a joint move: every joint's duration
        params["durations"] = np.full_like(params["durations"], duration)
    spec = replace(problem.reference_spec, duration=duration, params=params)
    return replace(problem, flexible_links=links, reference_spec=spec, raw=None)


def run(name: str) -> dict:
    modes, static, kinematics, duration, text = OPTIONS[name]
    problem = variant(load_problem(PROBLEM), modes, static, kinematics, duration)
    tic = time.perf_counter()
    res = ffopt.plan(problem, verify=False)
    plan_s = time.perf_counter() - tic
    from ffopt.sim.verify import verify

    tic = time.perf_counter()
    rep = verify(problem.model, problem.reference, res.trajectory, replace(problem.verification, cases="default"))
    pd = rep.cases["feedforward_pd"]
    return {"name": name, "text": text, "plan_s": plan_s, "verify_s": time.perf_counter() - tic,
            "status": rep.status, "tolerance_mm": rep.verdict.tolerance_mm, "pd_max_mm": pd.max_mm,
            "pd_residual_mm": None if pd.settle is None else pd.settle.residual_mm,
            "refined": rep.refined.to_dict(), "peak_torque_Nm": np.abs(res.trajectory.u).max(axis=0).tolist()}


def table(rows) -> list[str]:
    out = ["| plan | plan [s] | own model: move / after [mm] | largest deflection [% of length] / chord shortening "
           "[mm] | exact beam, 4 / 8 / 16 (/ 32) segments: move [mm] | extrapolated: move / after [mm] | verify [s] | "
           "verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ref = r["refined"]
        own = ref["planning_model"]
        raw = " / ".join(f"{x['max_mm']:.3g}" for x in ref["refinements"])
        ext = ref["extrapolated"][-1] if ref["extrapolated"] else ref["refinements"][-1]
        state = "converged" if ref["converged"] else "settled" if ref.get("verdict_settled") else "not converged"
        out.append(f"| {r['text']} | {r['plan_s']:.0f} | {r['pd_max_mm']:.3g} / {r['pd_residual_mm']:.3g} | "
                   f"{100 * own['deflection_ratio']:.3g} / {own['chord_shortening_mm']:.3g} | {raw} | "
                   f"{ext['max_mm']:.3g} / {ext['residual_mm']:.3g} ({state}) | {r['verify_s']:.0f} | {r['status']} |")
    return out


def prose(rows) -> list[str]:
    """The section's text around the table, with the numbers of ``rows``."""
    by = {r["name"]: r for r in rows}

    def judged(name):
        return by[name]["refined"]["judged_mm"] if name in by else float("nan")

    def shortening(name):
        return by[name]["refined"]["planning_model"]["chord_shortening_mm"] if name in by else float("nan")

    return [
        "Every flexible-link plan is also run (its torques with the joint PD, through the move and the 17 s settle "
        "window) on a geometrically exact beam: each link a chain of rigid rods joined by springs EI / l, nothing "
        "linearised, 4, 8, 16 (32) rods per link and the Richardson extrapolation of the tool path from each pair "
        "(`ffopt.sim.refined`, `verification.refined` in summary.json); the verdict judges the extrapolated beam. "
        "Tolerance 1.5 mm (1e-4 of the reach).", "",
        f"**Why linear plans miss.** The plan bends link 1 by about 5.5 % of its length; a link bent that far is "
        f"shorter along its chord by {shortening('s2_linear'):.3g} mm (the integral of w'^2 / 2), and the links "
        "beyond it move with it. A model linear in its modal coordinates (Mohan & Saha's) cannot show that, and "
        "adding modes does not help: the 2-static-shape plan on linear kinematics tracks to 0.05 mm on its own "
        f"model and misses by {judged('s2_linear'):.3g} mm on the exact beam (it was reported as 0.31 mm and "
        "verified when the verification refined only the modes). A 16 s move bends the links 4x less and the "
        f"shortening falls 16x, but the plan still misses by {judged('s2_linear_16s'):.3g} mm. The paper's "
        f"2 clamped-free modes add a second error, their 20 % too stiff tip compliance: {judged('cf2_linear'):.3g} mm.",
        "",
        "**What holds.** Second-order kinematics (`flexible.kinematics = \"second_order\"`, the default: the "
        "foreshortening, the tip's third-order turn and the fourth-order bending energy) on the same 2 static-shape "
        f"modes: {judged('s2'):.3g} mm on the exact beam (shipped); with 2 clamped-free modes more per link "
        f"{judged('s4'):.3g} mm (the rest of the 2-mode plan's error is its modal truncation). The second-order plan "
        "costs about twice the linear one (its equations are 2.6x larger).", ""]


def main(names):
    tic = time.perf_counter()
    store = ROOT / "results" / "canadarm" / "refined.json"  # rows of earlier runs are kept (rerun one by name)
    rows = json.loads(store.read_text()) if store.exists() else []
    for name in names:
        rows = [r for r in rows if r["name"] != name] + [run(name)]
        rows.sort(key=lambda r: list(OPTIONS).index(r["name"]))
        store.write_text(json.dumps(rows, indent=1))
    lines = ["# Canadarm plans on the exact beam", "", "## Plans that hold on the beam", ""] + prose(rows) + table(rows)
    lines += ["", f"_Generated {datetime.date.today()} on {platform.machine()}, {platform.python_version()}, "
              f"ffopt {ffopt.__version__} (this run: {', '.join(names) or 'the page only'}, {time.perf_counter() - tic:.0f} s) on a shared "
              "2-core machine; plan times are wall times with other jobs running._", ""]
    (ROOT / "results" / "canadarm_refined.md").write_text("\n".join(lines))


if __name__ == "__main__":
    # NAME ...: plan and verify those options (the others' rows are kept); --table: rewrite the page from the rows
    main([] if sys.argv[1:] == ["--table"] else sys.argv[1:] or list(OPTIONS))
