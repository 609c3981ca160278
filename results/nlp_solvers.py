"""NLP solvers side by side: IPOPT (the default paths) vs fatrop on the stage-ordered NLP.

Run:  PYTHONPATH=. python results/nlp_solvers.py [--quick]
Prints markdown tables (copied into results/nlp.md, section "NLP solvers"):
  1. E12 torque bounded (problems/e12_torque_bounded.toml, h = 2 and 1 ms), E12 exact tracking
     (problems/e12_line.toml with the NLP, h = 1 ms) and E1 non-minimum phase (problems/e1_nmp.toml,
     non-causal, h = 2 ms): per backend the iterations, solver set-up, solve time, time per
     iteration, whole NLP call, and the tool error of the torques RE-SIMULATED open loop and with
     the motor PD (the verification of ``ffopt plan``).
  2. Warm start from the BDF solution in form I1 vs I3: iterations and NLP time.
Backends: auto (Newton for a square NLP, else IPOPT via cyipopt with interval-wise derivatives),
casadi (IPOPT via nlpsol, CasADi AD), fatrop (CasADi's fatrop plugin on ffopt.nlp.stages).
--quick: only the 2 ms cases.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path


from ffopt.errors import FfoptError
from ffopt.io.problem import load_problem
from ffopt.nlp.solve import choose_strategy, solve_inverse_nlp, warm_start_trajectory
from nlp_bench import verified_errors  # results/nlp_bench.py, beside this script (sys.path[0])

ROOT = Path(__file__).resolve().parents[1]
FATROP_MAX_ITER = 60




def case(name, step, **changes):
    p = load_problem(ROOT / "problems" / name)
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    s = dataclasses.replace(p.nlp, step=step, max_wall_time_s=600.0, **changes)
    s, _ = choose_strategy(m, r, s, g)
    return p, s


def run(p, s, warm):
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    tic = time.perf_counter()
    traj = solve_inverse_nlp(m, r, s, g, warm)
    return traj, time.perf_counter() - tic


def solver_table(quick: bool, skip: int = 0):
    print("\n### NLP solvers side by side (one run)\n")
    print("| problem | h [ms] | backend | solver | iter | set-up [s] | solve [s] | per iter [s] | whole NLP call [s] | "
          "planned err [mm] | verified open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = [("e12_torque_bounded.toml", 2e-3, {}), ("e12_torque_bounded.toml", 1e-3, {}),
             ("e12_line.toml", 1e-3, {"strategy": "causal"}), ("e1_nmp.toml", 2e-3, {})]
    for name, step, changes in cases[skip:]:
        if quick and step < 2e-3:
            continue
        p, s = case(name, step, **changes)
        warm = None
        if s.strategy == "causal":
            warm, _ = warm_start_trajectory(p.model, p.reference, p.reference_spec.joint_guess, p.solver.step)
        for backend in ("auto", "casadi", "fatrop"):
            # fatrop has no wall-time limit: cap its iterations (the converging cases need <= 15)
            sb = dataclasses.replace(s, backend=backend, max_iter=FATROP_MAX_ITER if backend == "fatrop" else s.max_iter)
            try:
                traj, total = run(p, sb, warm)
            except FfoptError as err:
                print(f"| {name} | {step * 1e3:g} | {backend} | failed: {str(err)[:120]} |", flush=True)
                continue
            st = traj.stats
            ol, pd = verified_errors(p, traj)
            it = max(int(st["iterations"]), 1)
            print(f"| {name} | {step * 1e3:g} | {backend} | {st['nlp_method']} ({st['backend']}) | {st['iterations']} | "
                  f"{st['time_build_s']:.2f} | {st['time_solve_s']:.2f} | {st['time_solve_s'] / it:.3f} | {total:.2f} | "
                  f"{st['planned_tool_error_max_mm']:.4g} | {ol:.4g} | {pd:.4g} |", flush=True)


def warm_table(quick: bool):
    print("\n### Warm start: BDF-6 solution in form I1 vs I3 (backend auto)\n")
    print("| problem | h [ms] | warm start | BDF [s] | solver | iter | solve [s] | verified open loop [mm] |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [("e12_torque_bounded.toml", 2e-3, {}), ("e12_torque_bounded.toml", 1e-3, {}),
             ("e12_line.toml", 1e-3, {"strategy": "causal"}),
             ("e12_line.toml", 1e-3, {"strategy": "causal", "square_by_newton": False}),
             ("e1_complete.toml", 2e-3, {"strategy": "causal", "tracking": "penalty", "torque_max": (3.0e4,)})]
    for name, step, changes in cases:
        if quick and step < 2e-3:
            continue
        p, s = case(name, step, backend="auto", **changes)
        for form in ("I3", "I1"):
            tic = time.perf_counter()
            warm, info = warm_start_trajectory(p.model, p.reference, p.reference_spec.joint_guess, p.solver.step, form)
            t_bdf = time.perf_counter() - tic
            if warm is None:
                print(f"| {name} | {step * 1e3:g} | {form}: {info['bdf_status']} | {t_bdf:.2f} | - | - | - | - |")
                continue
            traj, _ = run(p, s, warm)
            st = traj.stats
            ol, _ = verified_errors(p, traj)
            label = name + ("" if s.square_by_newton else " (IPOPT, no Newton)")
            print(f"| {label} | {step * 1e3:g} | {form} | {t_bdf:.2f} | {st['nlp_method']} | {st['iterations']} | "
                  f"{st['time_solve_s']:.2f} | {ol:.4g} |", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["solvers", "warm"])
    ap.add_argument("--skip", type=int, default=0, help="skip the first SKIP cases of the solver table")
    a = ap.parse_args()
    if a.only != "warm":
        solver_table(a.quick, a.skip)
    if a.only != "solvers":
        warm_table(a.quick)
