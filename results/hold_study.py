"""What is planned is what is applied: the [output] sample time and hold on E12 (Moberg & Hanssen's E12).

For each grid (2 ms and 1 ms) and each representation of the torque table:
- ``points``: no [output] table (today's default): the table on the solver's own points (BDF steps,
  or every collocation point of the NLP), linear in between;
- ``linear``: [output] hold = "linear" at sample_time = the step: node values, linear in between;
- ``zoh``: [output] hold = "zoh": one value per sample, held.
BDF: BDF-6 on form I1 at the step, and at a quarter / an eighth of it, resampled to the sample period
and hold (ffopt.trajectory.resample_to_hold; linear: the L2 projection of the BDF torque onto the
continuous piecewise-linear functions on the samples (its node values when the grids coincide); zoh:
the average of the BDF torque over each sample). NLP: Radau-3 collocation; with a hold the input lives on the control grid (exact for
the hold) and exact tracking becomes penalised tracking (ffopt.nlp.solve.held_settings).
Every plan is re-simulated (CVODES, rtol 1e-9) open loop and with the 5 Hz motor PD, with the same
hold; the PD references between samples are the planned motion (cubic Hermite of the planned motor
angle, speed, acceleration) -- the column ``PD lin. ref`` repeats the PD case with references linear
between the samples, to show what that costs. Tool errors are maxima over the table's rows, in mm.

Run: PYTHONPATH=. python results/hold_study.py [STEP_MS ...]  (prints markdown tables; ~3 min on 2 shared
cores for the default steps 2 and 1 ms)
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from ffopt.io.problem import load_problem
from ffopt.plan import plan
from ffopt.sim.verify import verify


def evaluate(problem, method, step, hold, solver_step=None):
    p = problem.with_values({"solver.method": method})
    if hold != "points":
        p = p.with_values({"output.hold": hold, "output.sample_time": step})
    if method == "bdf":
        p = p.with_values({"solver.form": "I1", "solver.step": solver_step or step})
        kw = {}
    else:
        p = p.with_values({"nlp.step": step, "nlp.backend": "auto"})
        kw = {"step": None}
    tic = time.perf_counter()
    r = plan(p, verify="default", **kw)
    wall = time.perf_counter() - tic
    tr = r.trajectory
    cases = r.verification.cases
    row = {"rows": len(tr.t), "planned": tr.stats.get("planned_tool_error_max_mm"),
           "open": cases["feedforward_open_loop"].max_mm, "pd": cases["feedforward_pd"].max_mm,
           "wall": wall, "peak": np.abs(tr.torques).max(axis=0)}
    if hold != "points":  # the PD case with references linear between the samples
        plain = replace(tr, stats={k: v for k, v in tr.stats.items() if k != "hold"})
        rep = verify(p.model, p.reference, plain, replace(p.verification, cases="default"), hold=hold)
        row["pd_lin"] = rep.cases["feedforward_pd"].max_mm
    du = np.abs(np.diff(tr.u, axis=0)).max(axis=0)  # largest change between rows (roughness of the table)
    row["du"] = du
    return row


def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}g}"


def table(name, problem, steps, methods):
    print(f"\n### {name}\n")
    print("| step | method | representation | rows | planned [mm] | open loop [mm] | motor PD [mm] | PD lin. ref [mm] "
          "| max row-to-row du [N m] | wall [s] |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for step in steps:
        for method, solver_step, label in methods(step):
            for hold in ("points", "linear", "zoh"):
                if solver_step is not None and hold == "points":
                    continue
                r = evaluate(problem, method, step, hold, solver_step)
                print(f"| {step * 1e3:g} ms | {label} | {hold} | {r['rows']} | {fmt(r['planned'])} | {fmt(r['open'])} "
                      f"| {fmt(r['pd'])} | {fmt(r.get('pd_lin'))} | {', '.join(f'{x:.3g}' for x in r['du'])} "
                      f"| {r['wall']:.1f} |", flush=True)


def main(argv):
    steps = [float(s) * 1e-3 for s in argv] or [2e-3, 1e-3]
    line = load_problem("problems/e12_line.toml")
    table("E12 straight line (problems/e12_line.toml)", line, steps,
          lambda h: [("bdf", None, "BDF-6 I1, h = step"), ("bdf", h / 4, "BDF-6 I1, h = step/4"),
                     ("bdf", h / 8, "BDF-6 I1, h = step/8"),
                     ("nlp", None, "NLP Radau-3")])
    nmp = load_problem("problems/e1_nmp.toml")
    table("E1 non-minimum phase (problems/e1_nmp.toml: non-causal NLP with pre-actuation)", nmp, steps,
          lambda h: [("nlp", None, "NLP Radau-3")])
    bounded = load_problem("problems/e12_torque_bounded.toml")
    table("E12 torque bounded (problems/e12_torque_bounded.toml: penalised tracking as in the file)", bounded,
          steps, lambda h: [("nlp", None, "NLP Radau-3")])


if __name__ == "__main__":
    main(sys.argv[1:])
