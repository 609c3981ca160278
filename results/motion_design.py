"""The fastest motion the arm allows, side by side with the rigid-robot peers (results/motion_design.md).

Along one path under one set of torque (and speed) limits, every plan is run on the elastic arm with the motor PD
(``ffopt.motion.evaluate.run_table``: the verification's protocol, then a settle window holding the final pose):

- TOPP-RA (Pham & Pham, a new approach to time-optimal path parameterization based on reachability analysis,
  IEEE T-RO 2018): the rigid robot's time-optimal law along the path, with the rigid feedforward (gravity
  share and motor references from the elastic statics, so no static offset is counted);
- TOPP-RA's law convolved with ZVD (Singer & Seering, preshaping command inputs to reduce system vibration,
  1990) and with EI (Singhose, Seering & Singer, residual vibration reduction using vector diagrams to
  generate shaped inputs, 1994) on the arm's lowest mode held by the PD at the path's end;
- Ruckig (Berscheid & Kroeger, jerk-limited real-time trajectory generation with arbitrary target states, RSS
  2021) on the path parameter, its acceleration and jerk limits scaled until the rigid torques meet the bounds;
- ffopt's rest-to-rest plan of the problem's own duration, and ffopt's minimum-time plan
  (``ffopt.motion.min_time``).

Columns: move time, settled cycle time (motion start until the tool stays within the tolerance), worst tool
error during the move, residual after the table, peak torque over bound, plan wall time.

    python results/motion_design.py            # writes results/motion_design.md (E12, a few minutes)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import ffopt
from ffopt.motion.evaluate import run_table
from ffopt.motion.min_time import minimum_time
from ffopt.motion.peers import PathLaw, PathSamples, rigid_motion, ruckig_law, topp_ra_law
from ffopt.reference.shaping import ei, zvd
from ffopt.sim.plant import pd_gains
from ffopt.sim.shaping import lowest_modes

ROOT = Path(__file__).resolve().parents[1]
H = 1e-3  # table step of the peers (s)


def shaped_law(law: PathLaw, shaper) -> PathLaw:
    """The law convolved with the shaper's impulses: sigma_s(t) = sum_i A_i sigma(t - t_i) (and its derivatives)."""
    t = np.arange(0.0, law.duration + shaper.duration + H / 2, H)
    parts = [law.resampled(t - ti) for ti in shaper.times]
    inside = [(t - ti >= 0) for ti in shaper.times]
    return PathLaw(f"{law.name}+{shaper.name}", t,
                   sum(a * p.sigma for a, p in zip(shaper.amplitudes, parts)),
                   sum(a * p.rate * m for a, p, m in zip(shaper.amplitudes, parts, inside)),
                   sum(a * p.acceleration * m for a, p, m in zip(shaper.amplitudes, parts, inside)))


def peer_row(problem, path, law, bounds, tol_mm, wall_s) -> dict:
    """A peer's law with the rigid feedforward and the PD on the elastic arm."""
    spec = problem.reference_spec
    t_motion = np.arange(0.0, law.duration + H / 2, H)
    motion = rigid_motion(path, law.resampled(t_motion))
    n0, n1 = int(round(spec.rest_before / H)), int(round(spec.rest_after / H))

    def pad(a):
        return np.vstack([np.repeat(a[:1], n0, 0), a, np.repeat(a[-1:], n1, 0)])

    t = np.arange(len(t_motion) + n0 + n1) * H
    dqm = np.vstack([np.zeros((n0, motion.dqm.shape[1])), motion.dqm, np.zeros((n1, motion.dqm.shape[1]))])
    run = run_table(problem, t, pad(motion.u_table), pad(motion.qm), dqm, pad(motion.y), spec.rest_before,
                    spec.rest_before + law.duration, tol_mm, settle_s=15.0, end_guess=path.statics[2][-1])
    return {**run.to_dict(), "peak_over_bound": (np.abs(motion.u_table).max(0) / bounds).tolist(), "wall_s": wall_s}


def ffopt_row(problem, bounds, tol_mm, wall_s) -> dict:
    """An ffopt plan (BDF, rest to rest) run through the same protocol, and its own verdict."""
    tic = time.perf_counter()
    result = ffopt.plan(problem.with_values({"solver.method": "bdf"}))
    wall_s += time.perf_counter() - tic
    planned = result.problem  # with the time law the plan moves by (rest to rest reshapes it)
    tr, spec = result.trajectory, planned.reference_spec
    y_ref = np.asarray(planned.reference.evaluate(tr.t))
    run = run_table(problem, tr.t, tr.u, tr.qm, tr.dqm, y_ref, spec.rest_before, spec.rest_before + spec.duration,
                    tol_mm, settle_s=15.0)
    return {**run.to_dict(), "peak_over_bound": (np.abs(tr.u).max(0) / bounds).tolist(), "wall_s": wall_s,
            "verdict": result.verification.verdict.status}


def ruckig_within(path, bounds, a_ref: float) -> PathLaw:
    """Ruckig on the path parameter with acceleration lam a_ref and jerk lam^1.5 a_ref / 0.02 s, lam the largest
    (bisection) whose rigid torques stay within the bounds."""
    def peak(lam):
        law = ruckig_law(1e3, lam * a_ref, lam ** 1.5 * a_ref / 0.02)
        motion = rigid_motion(path, law.resampled(np.arange(0.0, law.duration + H / 2, H)))
        return float((np.abs(motion.u_table).max(0) / bounds).max()), law

    lo, hi = 0.05, 2.0
    for _ in range(30):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if peak(mid)[0] <= 1.0 else (lo, mid)
        if hi / lo < 1.001:
            break
    return peak(lo)[1]


def study(name: str, problem, bounds) -> list[tuple[str, dict]]:
    """All rows of one problem (its path, duration and tolerance)."""
    tol = problem.verification.tolerance_mm or 0.22
    rows = []
    tic = time.perf_counter()
    path = PathSamples.of(problem)
    topp = topp_ra_law(path, bounds)
    topp_s = time.perf_counter() - tic
    rows.append(("TOPP-RA time-optimal + rigid feedforward + PD", peer_row(problem, path, topp, bounds, tol, topp_s)))
    q_end = path.statics[2][-1]
    from ffopt.dae.equilibrium import static_equilibrium
    q_end = static_equilibrium(problem.model, path.y[-1], q_end)
    gains = pd_gains(problem.model, q_end, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    f, zeta = lowest_modes(problem.model, q_end, *gains, 1)[0]
    for label, sh in (("ZVD", zvd(f, zeta)), ("EI (5 %)", ei(f, zeta))):
        rows.append((f"TOPP-RA convolved with {label} ({f:.3g} Hz, zeta {zeta:.2g}, PD-held)",
                     peer_row(problem, path, shaped_law(topp, sh), bounds, tol, topp_s)))
    tic = time.perf_counter()
    ruck = ruckig_within(path, bounds, float(np.abs(topp.acceleration).max()))
    rows.append(("Ruckig, jerk-limited, torques within the bounds",
                 peer_row(problem, path, ruck, bounds, tol, time.perf_counter() - tic)))
    rows.append((f"ffopt rest to rest, the problem's {problem.reference_spec.duration:g} s",
                 ffopt_row(problem, bounds, tol, 0.0)))
    for n_shape in (8, 16):
        tic = time.perf_counter()
        found = minimum_time(problem, n_shape=n_shape, lower_bound=False)
        row = ffopt_row(found.problem, bounds, tol, time.perf_counter() - tic)
        row["searches"] = len(found.searches)
        rows.append((f"ffopt minimum time ({n_shape} shaping terms)", row))
    return rows


def table(name: str, rows, bound_s: float) -> list[str]:
    out = [f"### {name}", "",
           "| plan | move [s] | settled cycle [s] | cycle / TOPP-RA move | during the move [mm] | after the table [mm] "
           "| peak / bound | plan wall [s] |", "|---|---|---|---|---|---|---|---|"]
    for label, r in rows:
        cycle = r["settled_cycle_s"]
        cyc = "not settled in 15 s" if cycle is None else f"{cycle:.3f}"
        ratio = "" if cycle is None else f"{cycle / bound_s:.2f}"
        peak = ", ".join(f"{x:.2f}" for x in r["peak_over_bound"])
        verdict = f" ({r['verdict']})" if "verdict" in r else ""
        out.append(f"| {label}{verdict} | {r['move_s']:.3f} | {cyc} | {ratio} | {r['max_mm']:.3g} | "
                   f"{r['residual_mm']:.3g} | {peak} | {r['wall_s']:.1f} |")
    return out


def main() -> None:
    tic = time.perf_counter()
    load = os.getloadavg()
    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    bounds = np.array([1.2e5, 7.5e4])  # e12_torque_bounded.toml's nlp.torque_max
    problem = problem.with_values({"nlp.torque_max": bounds.tolist()})
    rows = study("E12", problem, bounds)
    bound_s = rows[0][1]["move_s"]
    lines = [
        "# Motion design: minimum-time rest-to-rest moves against TOPP-RA and Ruckig",
        "",
        "Generated by `python results/motion_design.py` "
        f"(load average {load[0]:.2f} on {os.cpu_count()} cores at the start, {time.perf_counter() - tic:.0f} s).",
        "Every plan runs on the elastic arm with the verification's motor PD and a 15 s settle window holding the",
        "final pose (`ffopt.motion.evaluate.run_table`). Peers: the rigid robot's law (TOPP-RA, Ruckig) with the rigid",
        "feedforward (gravity share and motor references from the elastic statics). ffopt: the exact-tracking BDF",
        "plan, rest to rest. Settled cycle: from the motion's start until the tool stays within the tolerance.",
        "",
        *table("E12 (Moberg & Hanssen) along its line, |u| <= [1.2e5, 7.5e4] N m, tolerance 0.22 mm", rows, bound_s),
        "",
    ]
    (ROOT / "results" / "motion_design.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
