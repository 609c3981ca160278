"""Manutec r3 study: BDF-6 solve time, verified tool errors, rotor coupling full vs reduced.

    python results/manutec_r3_study.py            # writes results/manutec_r3.md (a few minutes)

Problems: problems/manutec_r3_benchmark.toml (Thuemmel, Otter & Bals' motion: every joint 0 -> 1
rad from t = 0.1 s, 1 s, then 0.5 s settling) and problems/manutec_r3_ptp.toml (the Modelica
library's PTP demo). Both use a degree-11 joint-space move until the Butterworth prefilter exists.
"""

from __future__ import annotations

import datetime
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import ffopt
from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.sim.plant import MotorPD, pd_gains, simulate

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "problems" / "manutec_r3_benchmark.toml"
PTP = ROOT / "problems" / "manutec_r3_ptp.toml"
REPEATS = 5


def coupled(problem, mode: str):
    return problem.with_chain(replace(problem.chain, rotor_coupling=mode))


def bdf(problem):
    return solve_inverse_bdf(problem.model, problem.reference, 6, 1e-3, "I1", None,
                             problem.reference_spec.joint_guess, True)


def timing_rows():
    """Cold compile (empty cache), first call in the process, then repeated calls."""
    rows = []
    for mode in ("reduced", "full"):
        p = coupled(ffopt.load_problem(BENCHMARK), mode)
        with tempfile.TemporaryDirectory() as cache:
            os.environ["FFOPT_CACHE_DIR"] = cache
            first = bdf(p)
            calls = []
            for _ in range(REPEATS):
                tic = time.perf_counter()
                tr = bdf(p)
                calls.append((time.perf_counter() - tic, tr.stats["time_solve_s"]))
        os.environ.pop("FFOPT_CACHE_DIR")
        whole, loop = np.array(calls).T
        rows.append((mode, first.stats["time_build_s"], first.stats["time_solve_s"], np.median(loop), loop.min(),
                     loop.max(), np.median(whole)))
    return rows


def verification_rows():
    rows = []
    for path in (BENCHMARK, PTP):
        for mode in ("reduced", "full"):
            r = ffopt.plan(coupled(ffopt.load_problem(path), mode))
            c = r.verification.cases
            rows.append((path.name, mode, r.trajectory.t[-1], c["feedforward_pd"].max_mm,
                         c["feedforward_open_loop"].max_mm, c["feedforward_open_loop_cubic_u"].max_mm,
                         c["rigid_feedforward_pd"].max_mm, c["pd_only"].max_mm,
                         c["payload_x0.5"].max_mm, c["payload_x2"].max_mm))
    return rows


def faster(problem, duration):
    spec = problem.reference_spec
    params = {**spec.params, "durations": np.full_like(spec.params["durations"], duration)}
    return replace(problem, reference_spec=replace(spec, duration=duration, params=params))


def coupling_rows():
    """Planned torques full vs reduced, and the reduced plan driving the full plant (PD loop)."""
    rows = []
    bench = ffopt.load_problem(BENCHMARK)
    for label, problem in (("benchmark, 1 s", bench), ("benchmark, 0.5 s", faster(bench, 0.5)),
                           ("benchmark, 0.33 s", faster(bench, 1 / 3)), ("library PTP", ffopt.load_problem(PTP))):
        full, red = coupled(problem, "full"), coupled(problem, "reduced")
        u_full, u_red = bdf(full), bdf(red)
        du = u_full.u - u_red.u
        peak = np.abs(u_full.u).max(axis=0)
        err = {name: plant_error(full, tr) for name, tr in (("full", u_full), ("reduced", u_red))}
        rows.append((label, np.abs(du).max(axis=0), np.sqrt((du**2).mean(axis=0)), peak, err["full"], err["reduced"]))
    return rows


def plant_error(problem, traj) -> float:
    """Max tool-point error (mm) of the plant of ``problem`` driven by traj.u + motor PD on traj.qm."""
    model, ref = problem.model, problem.reference
    y = np.asarray(ref.evaluate(traj.t))
    q0 = static_equilibrium(model, y[0], problem.reference_spec.joint_guess)
    kp, kd = pd_gains(model, q0, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    sim = simulate(model, traj.t, traj.u, q0, None, pd=MotorPD(kp, kd, traj.qm, traj.dqm), rtol=1e-9, atol=1e-11)
    tool_ref = np.asarray(ref.tool_path.evaluate(traj.t))
    return float(1000 * np.linalg.norm(sim.tool - tool_ref, axis=1).max())


def main():
    fmt = lambda v: " ".join(f"{x:.3g}" for x in v)  # noqa: E731
    out = [f"# Manutec r3\n\nMeasured {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores "
           f"(shared, loaded), Python {platform.python_version()}, by `python results/manutec_r3_study.py`. "
           "BDF-6, h = 1 ms, form I1, compiled stepping loop. Tool point = the 15 kg load point.\n",
           "## BDF-6 solve time, benchmark motion (1.6 s, 1600 steps)\n",
           "| rotor coupling | gcc compile (cold cache) [s] | first call in the process [ms] | "
           f"stepping loop, median of {REPEATS} [ms] | range [ms] | whole call, median [ms] |",
           "|---|---|---|---|---|---|"]
    for mode, build, first, med, lo, hi, whole in timing_rows():
        out.append(f"| {mode} | {build:.1f} | {1e3 * first:.0f} | {1e3 * med:.0f} | {1e3 * lo:.0f}-{1e3 * hi:.0f} "
                   f"| {1e3 * whole:.0f} |")
    out += ["\nThe first call after loading the compiled library costs several times a repeated one; the "
            "stepping loop alone is the figure comparable with the paper's 12 s (DASSL, 700 MHz Pentium III).\n",
            "## Verified tool error [mm] (`ffopt plan`, PD 5 Hz, rigid-model baseline)\n",
            "| problem | rotor coupling | t_end [s] | feedforward + PD | open loop (u linear) | open loop (u cubic) "
            "| rigid feedforward + PD | PD only | payload x0.5 | payload x2 | rigid / feedforward |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, mode, t_end, pd, ol, cub, rigid, pd_only, half, double in verification_rows():
        out.append(f"| {name} | {mode} | {t_end:.2f} | {pd:.3g} | {ol:.3g} | {cub:.3g} | {rigid:.3g} | {pd_only:.3g} "
                   f"| {half:.3g} | {double:.3g} | {rigid / pd:.0f} |")
    out += ["\n## Rotor coupling: full vs reduced planned torques (arm side, N m, axes 1..6)\n",
            "| motion | max abs difference | RMS difference | max difference, % of peak | peak (full) "
            "| reduced plan on the full plant + PD [mm] | full plan [mm] |", "|---|---|---|---|---|---|---|"]
    for label, dmax, drms, peak, e_full, e_red in coupling_rows():
        out.append(f"| {label} | {fmt(dmax)} | {fmt(drms)} | {fmt(100 * dmax / peak)} | {fmt(peak)} | {e_red:.3g} "
                   f"| {e_full:.3g} |")
    text = "\n".join(out) + "\n"
    (ROOT / "results" / "manutec_r3.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
