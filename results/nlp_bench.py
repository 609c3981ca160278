"""Benchmark of the collocation NLP (ffopt.nlp) against the BDF inverse, measured side by side.

Run:  /work/venv/bin/python results/nlp_bench.py [--quick]
Prints markdown tables (copied into results/nlp.md):
  1. E12: BDF-6 vs NLP (Radau IIA degree 3) warm-started from BDF vs cold (rest) start:
     IPOPT iterations, times, and the tool error of the torques RE-SIMULATED in the forward
     model (CVODES), open loop and with the motor PD loop: the tool point's distance from the path,
     as ``ffopt plan`` verifies (``max_tool_error_mm``). Never judged by constraint residuals.
  2. E12 with torque bounds (problems/e12_torque_bounded.toml): the trade-off tool error vs bound use.
  3. E1 non-minimum phase (problems/e1_nmp.toml): causal BDF vs non-causal NLP with pre-actuation.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import FfoptError
from ffopt.io.problem import load_problem
from ffopt.nlp.settings import NlpSettings
from ffopt.nlp.solve import choose_strategy, solve_inverse_nlp, warm_start_trajectory
from ffopt.sim.plant import MotorPD, pd_gains, simulate
from ffopt.sim.verify import tool_errors

ROOT = Path(__file__).resolve().parents[1]


def max_tool_error_mm(model, sim, y_ref) -> float:
    """Max tool error (mm) as ``ffopt plan`` verifies: the tool point's distance from the path over the position
    outputs (``ffopt.sim.verify.tool_errors``; angle outputs are measured apart, in mrad, and not reported here)."""
    return float(tool_errors(sim, np.asarray(y_ref), None, model.output_units)[0].max())


def verified_errors(problem, traj):
    """Max tool error (mm) of traj.u simulated from rest: open loop, and with the motor PD."""
    m, r = problem.model, problem.reference
    q0 = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), problem.reference_spec.joint_guess)
    y_ref = r.evaluate(traj.t)
    ol = simulate(m, traj.t, traj.u, q0)
    kp, kd = pd_gains(m, q0, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    cl = simulate(m, traj.t, traj.u, q0, pd=MotorPD(kp, kd, traj.qm, traj.dqm))
    return max_tool_error_mm(m, ol, y_ref), max_tool_error_mm(m, cl, y_ref)


def timed_nlp(problem, settings, warm):
    """(trajectory, wall time of the whole NLP call, verified open-loop error, with PD) in mm."""
    tic = time.perf_counter()
    traj = solve_inverse_nlp(problem.model, problem.reference, settings, problem.reference_spec.joint_guess, warm)
    total = time.perf_counter() - tic
    return (traj, total, *verified_errors(problem, traj))


def nlp_row(problem, settings, warm, label):
    traj, total, ol, pd = timed_nlp(problem, settings, warm)
    st = traj.stats
    return (f"| {label} | {st['iterations']} | {st['status']} | {st['n_variables']} | {st['time_solve_s']:.2f} | "
            f"{st['time_ipopt_s']:.2f} | {st['time_function_eval_s']:.2f} | {total:.2f} | "
            f"{np.abs(traj.u).max():.4g} | {ol:.4g} | {pd:.4g} |"), traj


def e12_table(steps, cold: bool):
    p = load_problem(ROOT / "problems/e12_line.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    print("\n### E12: BDF-6 vs collocation NLP (Radau IIA degree 3)\n")
    print("| method | IPOPT iter | status | variables | solve [s] | in IPOPT [s] | in functions [s] | "
          "total incl. build [s] | peak abs(u) [N m] | verified max err open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tic = time.perf_counter()
    bdf = solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g)
    t_bdf = time.perf_counter() - tic
    ol, pd = verified_errors(p, bdf)
    print(f"| BDF-6 I3 h=1 ms | - | ok | {bdf.stats['n_unknowns']} x {bdf.stats['n_steps']} steps | "
          f"{bdf.stats['time_solve_s']:.3f} | - | - | {t_bdf:.2f} | {np.abs(bdf.u).max():.4g} | {ol:.4g} | {pd:.4g} |")
    for h in steps:
        s = NlpSettings(step=h, strategy="causal", square_by_newton=False, max_wall_time_s=300.0)
        row, _ = nlp_row(p, s, bdf, f"NLP h={h * 1e3:g} ms, warm (BDF)")
        print(row, flush=True)
        if cold:
            try:
                row, _ = nlp_row(p, dataclasses.replace(s, warm_start="none"), None, f"NLP h={h * 1e3:g} ms, cold (rest)")
            except FfoptError as err:
                row = f"| NLP h={h * 1e3:g} ms, cold (rest) | failed: {err} |"
            print(row, flush=True)


def bounded_table():
    p = load_problem(ROOT / "problems/e12_torque_bounded.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    warm, _ = warm_start_trajectory(m, r, g, 1e-3)
    print("\n### E12 with torque bounds: tool error vs bound use (penalty tracking)\n")
    print("| torque_max [N m] | penalty weight | iter | solve [s] | peak abs(u) / unconstrained peak | planned max err [mm] | "
          "verified open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|")
    peak = np.abs(warm.u).max(axis=0)
    for weight in (1e3, 1e5):
        for frac in (None, 0.95, 0.88, 0.8):
            tmax = None if frac is None else tuple(float(x) for x in frac * peak)
            s = dataclasses.replace(p.nlp, strategy="causal", torque_max=tmax, penalty_weight=weight)
            traj = solve_inverse_nlp(m, r, s, g, warm)
            ol, pd = verified_errors(p, traj)
            st = traj.stats
            bound = "none" if tmax is None else f"{', '.join(f'{x:.4g}' for x in tmax)} ({frac:.0%} of peak)"
            use = ", ".join(f"{x:.0%}" for x in np.abs(traj.u).max(axis=0) / peak)
            print(f"| {bound} | {weight:g} | {st['iterations']} | "
                  f"{st['time_solve_s']:.2f} | {use} | "
                  f"{st['planned_tool_error_max_mm']:.4g} | {ol:.4g} | {pd:.4g} |", flush=True)


def nmp_table():
    p = load_problem(ROOT / "problems/e1_nmp.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    print("\n### E1 non-minimum phase: causal BDF vs non-causal NLP\n")
    s, info = choose_strategy(m, r, NlpSettings(step=1e-3), g)
    print(f"zero dynamics: {info['zero_dynamics']}; strategy {s.strategy}, pre/post-actuation "
          f"{s.pre_actuation_s:.3f} s\n")
    try:
        bdf = solve_inverse_bdf(m, r, BdfSettings(order=6, step=1e-3, form="I3"), qa_guess=g)
        print(f"BDF-6: peak |u| = {np.abs(bdf.u).max():.4g} N m")
    except FfoptError as err:
        print(f"BDF-6 (causal): diverges -- {err}\n")
    print("| method | IPOPT iter | status | variables | solve [s] | in IPOPT [s] | in functions [s] | "
          "total incl. build [s] | peak abs(u) [N m] | verified max err open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for h in (2e-3, 1e-3):
        row, _ = nlp_row(p, dataclasses.replace(s, step=h), None, f"NLP non-causal h={h * 1e3:g} ms (cold)")
        print(row, flush=True)


def speed_table(steps=(2e-3, 1e-3)):
    """Before/after of the E12 speed work, side by side in one run.

    exact: IPOPT (L-BFGS, CasADi nlpsol, the previous path) vs Newton + SuperLU on the square NLP;
    bounded (problems/e12_torque_bounded.toml): IPOPT via nlpsol with CasADi's Hessian of the mapped
    MX graph vs IPOPT via cyipopt with interval-wise assembled derivatives (same NLP, same options).
    """
    print("\n### E12 speed: before / after (same run)\n")
    print("| case | h [ms] | path | iter | transcription [s] | solver build [s] | solve [s] | in functions [s] | "
          "total NLP [s] | verified open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    exact = load_problem(ROOT / "problems/e12_line.toml")
    bounded = load_problem(ROOT / "problems/e12_torque_bounded.toml")
    warm, _ = warm_start_trajectory(exact.model, exact.reference, exact.reference_spec.joint_guess, 1e-3)
    cases = []
    for h in steps:
        s = NlpSettings(step=h, strategy="causal", backend="casadi", max_wall_time_s=300.0)
        cases += [("exact", h, exact, dataclasses.replace(s, square_by_newton=False), "IPOPT L-BFGS (nlpsol)"),
                  ("exact", h, exact, s, "Newton + SuperLU")]
        sb = dataclasses.replace(bounded.nlp, strategy="causal", step=h)
        cases += [("bounded 88 %", h, bounded, dataclasses.replace(sb, backend="casadi"),
                   "IPOPT, nlpsol (CasADi MX derivatives)"),
                  ("bounded 88 %", h, bounded, dataclasses.replace(sb, backend="cyipopt"),
                   "IPOPT, cyipopt (interval-wise derivatives)")]
    for name, h, p, s, label in cases:
        traj, total, ol, pd = timed_nlp(p, s, warm)
        st = traj.stats
        print(f"| {name} | {h * 1e3:g} | {label} | {st['iterations']} | {st['time_transcription_s']:.2f} | "
              f"{st['time_build_s']:.2f} | {st['time_solve_s']:.2f} | {st['time_function_eval_s']:.2f} | {total:.2f} | "
              f"{ol:.4g} | {pd:.4g} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="E12 at 2 ms only, no cold start at 1 ms")
    ap.add_argument("--bounded-only", action="store_true", help="only the torque-bound trade-off table")
    ap.add_argument("--speed-only", action="store_true", help="only the before/after speed table")
    args = ap.parse_args()
    speed_table()
    if args.speed_only:
        return
    if not args.bounded_only:
        e12_table([2e-3] if args.quick else [2e-3, 1e-3], cold=True)
    bounded_table()
    if args.bounded_only:
        return
    nmp_table()


if __name__ == "__main__":
    main()
