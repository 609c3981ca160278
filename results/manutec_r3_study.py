"""Manutec r3 study: BDF-6 solve time, verified tool errors, the Butterworth prefilter (order and
cutoff), rotor coupling full vs reduced, nonlinear gears.

    python results/manutec_r3_study.py            # writes results/manutec_r3.md (about 15 min)

Problems: problems/manutec_r3_benchmark.toml (Thuemmel, Otter & Bals' motion: every joint 0 -> 1
rad from t = 0.1 s, a minimum-time raw move through a 10 Hz Butterworth prefilter, then 0.5 s of
rest), manutec_r3_ptp.toml (the Modelica library's PTP demo through the same filter),
manutec_r3_step.toml (a raw unit step through a 3 Hz filter) and manutec_r3_nonlinear.toml.
"""

from __future__ import annotations

import datetime
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import tomllib

import numpy as np

import ffopt
from ffopt.io.problem import problem_from_dict
from ffopt.reference.prefilter import Butterworth
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.sim.plant import MotorPD, SimulationOptions, pd_gains, simulate

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "problems" / "manutec_r3_benchmark.toml"
PTP = ROOT / "problems" / "manutec_r3_ptp.toml"
STEP = ROOT / "problems" / "manutec_r3_step.toml"
NONLINEAR = ROOT / "problems" / "manutec_r3_nonlinear.toml"
REPEATS = 5


def coupled(problem, mode: str):
    """The same problem (and reference) on the robot with the other rotor model."""
    return problem.with_chain(replace(problem.chain, rotor_coupling=mode))


def bdf(problem):
    return solve_inverse_bdf(problem.model, problem.reference, BdfSettings(order=6, step=1e-3, form="I1"),
                             qa_guess=problem.reference_spec.joint_guess, compile=True)


def timing_rows():
    """Cold compile (empty cache), first call in the process, then repeated calls."""
    rows = []
    for mode in ("reduced", "full"):
        p = variant(BENCHMARK, coupling=mode)
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
        rows.append((mode, p.reference.prefilter["order"], first.stats["n_steps"], first.stats["time_build_s"],
                     first.stats["time_solve_s"], np.median(loop), loop.min(), loop.max(), np.median(whole)))
    return rows


def verification_row(problem, label, mode):
    r = ffopt.plan(problem, verify="full")  # the baselines and payload cases are the full set
    c = r.verification.cases
    return (label, mode, r.trajectory.t[-1], r.problem.reference.prefilter["order"], c["feedforward_pd"].max_mm,
            c["feedforward_open_loop"].max_mm, c["feedforward_open_loop_cubic_u"].max_mm,
            c["rigid_feedforward_pd"].max_mm, c["pd_only"].max_mm, c["payload_x0.5"].max_mm, c["payload_x2"].max_mm,
            np.abs(r.trajectory.u).max(axis=0))


def verification_rows():
    rows = []
    for path in (BENCHMARK, PTP):
        for mode in ("reduced", "full"):
            rows.append(verification_row(variant(path, coupling=mode), path.name, mode))
    for path in (STEP, NONLINEAR):
        rows.append(verification_row(ffopt.load_problem(path), path.name, "reduced"))
    return rows


def variant(path, coupling=None, **reference):
    """The problem of ``path`` with [reference] keys changed (None deletes a key) and the rotor model
    ``coupling``; the filter order is derived for that model (full coupling: 6 for a raw ptp, the
    undamped inverse differentiates the path 6 times)."""
    d = tomllib.loads(Path(path).read_text())
    if coupling is not None:
        d["model"]["rotor_coupling"] = coupling
    for key, value in reference.items():
        if value is None:
            d["reference"].pop(key, None)
        else:
            d["reference"][key] = value
    return problem_from_dict(d, source=str(path))


def faster(path, factor, coupling=None):
    """The raw move ``factor`` x faster (speed limits x factor, acceleration limits x factor^2), the cutoff
    x factor (the filter scaled in time likewise)."""
    r = tomllib.loads(Path(path).read_text())["reference"]
    return variant(path, coupling, speed_max_rad_s=[factor * x for x in r["speed_max_rad_s"]],
                   acceleration_max_rad_s2=[factor**2 * x for x in r["acceleration_max_rad_s2"]],
                   cutoff_hz=factor * r["cutoff_hz"])


def with_order(path, n):
    """The problem with filter order n, even below the required order (which a problem file refuses)."""
    p = variant(path, rest_after=0.2)
    spec, prm = p.reference_spec, p.reference_spec.params
    settle = Butterworth(n, prm["cutoff_hz"]).settling_time(prm["profile"], prm["info"]["settle_tolerance"])
    params = {**prm, "order": n, "settling_time": settle, "info": {**prm["info"], "order": n}}
    return replace(p, reference_spec=replace(spec, params=params))


def order_rows():
    """BDF-6 torque error against h = 0.25 ms for filter orders around the derived one (raw step at 3 Hz,
    raw ptp at 10 Hz), relative to each axis's peak torque."""
    rows = []
    for path, orders in ((STEP, (4, 5, 6, 7)), (BENCHMARK, (2, 3, 4, 5, 6))):
        for n in orders:
            p = with_order(path, n)
            us = {h: solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h, form="I1"),
                                       qa_guess=p.reference_spec.joint_guess, compile=True)
                  for h in (4e-3, 2e-3, 1e-3, 2.5e-4)}
            ref = us.pop(2.5e-4)
            peak = np.abs(ref.u).max(axis=0)
            errs = []
            for h, tr in us.items():
                keep = tr.t <= ref.t[-1] - 1e-9
                idx = np.round(tr.t[keep] / 2.5e-4).astype(int)
                errs.append(float((np.abs(tr.u[keep] - ref.u[idx]) / peak).max()))
            info = p.reference_spec.params["info"]
            rows.append((path.name, info["raw"], info["cutoff_hz"], n, info["order_required"], info["order_default"],
                         errs))
    return rows


def cutoff_rows():
    """Delay against torque: the benchmark's raw ptp and the raw step through several cutoffs (derived order)."""
    rows = []
    for path, cutoffs in ((BENCHMARK, (5.0, 10.0, 20.0)), (STEP, (2.0, 3.0, 7.0))):
        for fc in cutoffs:
            p = variant(path, cutoff_hz=fc)
            r = ffopt.plan(p, verify="full")  # rigid_feedforward_pd is in the full set
            info, c = p.reference.prefilter, r.verification.cases
            speed = np.abs(p.reference.joint.evaluate(r.trajectory.t, 1)).max()
            rows.append((info["raw"], fc, info["order"], info["delay_s"], info["settling_time_s"], p.reference.t_end,
                         info["overshoot"], speed, np.abs(r.trajectory.u).max(axis=0), c["feedforward_pd"].max_mm,
                         c["rigid_feedforward_pd"].max_mm))
    return rows


def coupling_rows():
    """Planned torques full vs reduced, and the reduced plan driving the full plant (PD loop)."""
    rows = []
    motions = (("benchmark", variant(BENCHMARK, "full")), ("benchmark 2x faster", faster(BENCHMARK, 2.0, "full")),
               ("benchmark 3x faster", faster(BENCHMARK, 3.0, "full")), ("library PTP", variant(PTP, "full")))
    for label, full in motions:
        red = coupled(full, "reduced")  # the same reference (order derived for the full model) on both
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
    sim = simulate(model, traj.t, traj.u, q0, None, pd=MotorPD(kp, kd, traj.qm, traj.dqm),
                   options=SimulationOptions(rtol=1e-9, atol=1e-11))
    tool_ref = np.asarray(ref.tool_path.evaluate(traj.t))
    return float(1000 * np.linalg.norm(sim.tool - tool_ref, axis=1).max())


def main():
    fmt = lambda v: " ".join(f"{x:.3g}" for x in v)  # noqa: E731
    out = [f"# Manutec r3\n\nMeasured {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores "
           f"(shared, loaded), Python {platform.python_version()}, by `python results/manutec_r3_study.py`. "
           "BDF-6, h = 1 ms, form I1, compiled stepping loop. Tool point = the 15 kg load point. References: a raw "
           "move (the Modelica library's synchronised PTP profile, or a step) through a Butterworth prefilter "
           "(Thuemmel, Otter & Bals eq. 12), order derived from the model.\n",
           "## BDF-6 solve time, benchmark motion\n",
           "| rotor coupling | filter order | steps | gcc compile (cold cache) [s] | first call in the process [ms] | "
           f"stepping loop, median of {REPEATS} [ms] | range [ms] | whole call, median [ms] |",
           "|---|---|---|---|---|---|---|---|"]
    for mode, order, steps, build, first, med, lo, hi, whole in timing_rows():
        out.append(f"| {mode} | {order} | {steps} | {build:.1f} | {1e3 * first:.0f} | {1e3 * med:.0f} | "
                   f"{1e3 * lo:.0f}-{1e3 * hi:.0f} | {1e3 * whole:.0f} |")
    out += ["\nThe first call after loading the compiled library costs several times a repeated one; the "
            "stepping loop alone is the figure comparable with the paper's 12 s (DASSL, 700 MHz Pentium III). The "
            "horizon is the raw move (0.1 + 0.767 s), the filter's settling (order 4: 0.34 s; order 6: 0.48 s) and "
            "0.5 s of rest. With full rotor coupling the derived order is 6 (its inverse without the gear dampers "
            "differentiates the path 6 times), hence the longer horizon.\n",
            "## Verified tool error [mm] (`ffopt plan`, PD 5 Hz, rigid-model baseline)\n",
            "| problem | rotor coupling | t_end [s] | filter order | feedforward + PD | open loop (u linear) "
            "| open loop (u cubic) | rigid feedforward + PD | PD only | payload x0.5 | payload x2 | rigid / feedforward "
            "| peak torque [N m] |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, mode, t_end, order, pd, ol, cub, rigid, pd_only, half, double, peak in verification_rows():
        out.append(f"| {name} | {mode} | {t_end:.3f} | {order} | {pd:.3g} | {ol:.3g} | {cub:.3g} | {rigid:.3g} "
                   f"| {pd_only:.3g} | {half:.3g} | {double:.3g} | {rigid / pd:.0f} | {fmt(peak)} |")
    out += ["\n## Prefilter order: BDF-6 torque error against h = 0.25 ms (max over axes, / each axis's peak)\n",
            "| problem | raw | cutoff [Hz] | order | required | derived | h = 4 ms | h = 2 ms | h = 1 ms |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, raw, fc, n, req, default, errs in order_rows():
        out.append(f"| {name} | {raw} | {fc:g} | {n} | {req} | {default} | {fmt(errs)} |")
    out += ["\nBelow the required order the path's 4th derivative jumps where the raw profile does, the exact "
            "torque jumps (a damper D || K smooths it only over D/K = 0.1-1.3 ms on these gears) and BDF's "
            "torque errs by 5-46 % near the jump, by 1e-3..1e-2 at the required order; the derived order (one more) gives 3e-4..5e-6.\n",
            "## Prefilter cutoff: delay against torque (derived order)\n",
            "| raw | cutoff [Hz] | order | delay [ms] | settling [s] | t_end [s] | overshoot | peak joint speed "
            "[rad/s] | peak torque [N m] | feedforward + PD [mm] | rigid + PD [mm] |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for raw, fc, n, delay, settle, t_end, over, speed, peak, pd, rigid in cutoff_rows():
        out.append(f"| {raw} | {fc:g} | {n} | {1e3 * delay:.0f} | {settle:.3f} | {t_end:.3f} | {over:.2%} | "
                   f"{speed:.3g} | {fmt(peak)} | {pd:.3g} | {rigid:.3g} |")
    out += ["\n## Rotor coupling: full vs reduced planned torques (arm side, N m, axes 1..6)\n",
            "| motion | max abs difference | RMS difference | max difference, % of peak | peak (full) "
            "| reduced plan on the full plant + PD [mm] | full plan [mm] |", "|---|---|---|---|---|---|---|"]
    for label, dmax, drms, peak, e_full, e_red in coupling_rows():
        out.append(f"| {label} | {fmt(dmax)} | {fmt(drms)} | {fmt(100 * dmax / peak)} | {fmt(peak)} | {e_red:.3g} "
                   f"| {e_full:.3g} |")
    out += ["\nBoth plans of a row follow the same reference, filtered with the order derived for the full model "
            "(6; the faster rows scale the speed and acceleration limits and the cutoff). With the reduced model's "
            "order 4 instead, the full plan's axis-2 torque differed from the reduced one by 0.87 % and 4.5 % of its "
            "peak at 2x and 3x speed (measured in a first run of this study): BDF's error at a filter order too low "
            "for the coupled inverse, not the coupling."]
    text = "\n".join(out) + "\n"
    (ROOT / "results" / "manutec_r3.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
