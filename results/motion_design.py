"""The fastest motion the arm allows, side by side with the rigid-robot peers (results/motion_design.md).

Along one path under one set of torque (and speed) limits, every plan is run on the elastic arm with the motor PD
(``ffopt.motion.evaluate.run_table``: the verification's protocol, then a settle window holding the final pose):

- TOPP-RA (Pham & Pham, a new approach to time-optimal path parameterization based on reachability analysis,
  IEEE T-RO 2018): the rigid robot's time-optimal law along the path, with the rigid feedforward (gravity
  share and motor references from the elastic statics, so no static offset is counted);
- TOPP-RA's law convolved with ZVD (Singer & Seering, preshaping command inputs to reduce system vibration,
  1990) and with EI (Singhose, Seering & Singer, residual vibration reduction using vector diagrams to
  generate shaped inputs, 1994) on the arm's lowest mode held by the PD at the path's end;
- Ruckig (Berscheid & Kröger, jerk-limited real-time trajectory generation with arbitrary target states, RSS
  2021) on the path parameter, its acceleration and jerk limits scaled until the rigid torques meet the bounds;
- ffopt's rest-to-rest plan of the problem's own duration (not for a problem with duration = "min", which has
  none), and ffopt's minimum-time plan (``ffopt.motion.min_time``).

Columns: move time, settled cycle time (motion start until the tool stays within the tolerance), worst tool
error during the move, residual after the table, peak torque over bound, the plan's CPU time (this process;
the machine is shared, so wall time says more about the load than about the method).

    python results/motion_design.py            # writes results/motion_design.md (E12, UR5, Panda, r3: minutes)
    python results/motion_design.py r3         # only the problems whose file name contains a word: the
                                               # tables on the console, results/motion_design.md not written
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

import ffopt
from ffopt.motion.evaluate import MotorTable, rigid_tool_path, run_table
from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.rest_to_rest import N_SHAPE
from ffopt.motion.min_time import MotionLimits, minimum_time
from ffopt.motion.peers import (PathLaw, PathSamples, rigid_motion, ruckig_within_bounds, topp_ra_law,
                                topp_ra_within_bounds)
from ffopt.reference.shaping import ei, zvd
from ffopt.sim.plant import pd_gains
from ffopt.sim.shaping import lowest_modes
from ffopt.sim.verify import tolerances

ROOT = Path(__file__).resolve().parents[1]


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (the verification's simulations run in workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
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
    table = MotorTable(t, pad(motion.u_table), pad(motion.qm), dqm, pad(motion.y), spec.rest_before,
                       spec.rest_before + law.duration, pad(rigid_tool_path(problem.model, motion.q)))
    run = run_table(problem, table, tol_mm, settle_s=15.0, end_guess=path.statics[2][-1])
    return {**run.to_dict(), "peak_over_bound": (np.abs(motion.u_table).max(0) / bounds).tolist(), "wall_s": wall_s}


def ffopt_row(problem, bounds, tol_mm, wall_s) -> dict:
    """An ffopt plan (BDF, rest to rest) run through the same protocol, and its own verdict."""
    tic = cpu_s()
    result = ffopt.plan(problem.with_values({"solver.method": "bdf"}))
    wall_s += cpu_s() - tic
    planned = result.problem  # with the time law the plan moves by (rest to rest reshapes it)
    tr, spec = result.trajectory, planned.reference_spec
    y_ref = np.asarray(planned.reference.evaluate(tr.t))
    tool_path = planned.reference.tool_path  # a joint-space path: the rigid tool point along it
    tool_ref = None if tool_path is None else np.asarray(tool_path.evaluate(tr.t))
    table = MotorTable(tr.t, tr.u, tr.qm, tr.dqm, y_ref, spec.rest_before, spec.rest_before + spec.duration, tool_ref)
    run = run_table(problem, table, tol_mm, settle_s=15.0)
    return {**run.to_dict(), "peak_over_bound": (np.abs(tr.u).max(0) / bounds).tolist(), "wall_s": wall_s,
            "verdict": result.verification.verdict.status}


def study(problem, terms=(8, 16)) -> list[tuple[str, dict]]:
    """All rows of one problem (its path, duration, tolerance and limits)."""
    limits = MotionLimits.of(problem)
    bounds = limits.torque_max
    tol = _tolerance_mm(problem)
    rows = []
    tic = cpu_s()
    path = PathSamples.of(problem)
    speed = None if limits.link_speed_max is None else limits.link_speed_max[path.actuated]
    topp = topp_ra_law(path, bounds, speed_max=speed)
    topp_s = cpu_s() - tic
    rows.append(("TOPP-RA time-optimal + rigid feedforward + PD", peer_row(problem, path, topp, bounds, tol, topp_s)))
    if max(rows[-1][1]["peak_over_bound"]) > 1.0 + 1e-3:  # its applied table exceeds a bound: also one within them
        tic = cpu_s()
        topp, lam = topp_ra_within_bounds(path, bounds, speed)
        rows.append((f"TOPP-RA within the bounds (its bounds x {lam:.3f}) + rigid feedforward + PD",
                     peer_row(problem, path, topp, bounds, tol, cpu_s() - tic)))
    q_end = static_equilibrium(problem.model, path.y[-1], path.statics[2][-1])
    gains = pd_gains(problem.model, q_end, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    f, zeta = lowest_modes(problem.model, q_end, *gains, 1)[0]
    for label, sh in (("ZVD", zvd(f, zeta)), ("EI (5 %)", ei(f, zeta))):
        rows.append((f"TOPP-RA convolved with {label} ({f:.3g} Hz, zeta {zeta:.2g}, PD-held)",
                     peer_row(problem, path, shaped_law(topp, sh), bounds, tol, topp_s)))
    tic = cpu_s()
    ruck = ruckig_within_bounds(path, bounds, speed)
    rows.append(("Ruckig, jerk-limited, torques within the bounds",
                 peer_row(problem, path, ruck, bounds, tol, cpu_s() - tic)))
    if not problem.reference_spec.minimum_time:  # duration = "min" (the r3): no duration of its own to plan at
        rows.append((f"ffopt rest to rest, the problem's {problem.reference_spec.duration:g} s",
                     ffopt_row(problem, bounds, tol, 0.0)))
    for n_shape in terms:
        tic = cpu_s()
        found = minimum_time(problem, n_shape=n_shape, lower_bound=False)
        row = ffopt_row(found.problem, bounds, tol, cpu_s() - tic)
        row["searches"] = len(found.searches)
        rows.append((f"ffopt minimum time ({n_shape} shaping terms)", row))
    tic = cpu_s()
    found = minimum_time(problem)  # the default: the smoothed time-optimal family where it rests, else the above
    row = ffopt_row(found.problem, bounds, tol, cpu_s() - tic)
    row["searches"] = len(found.searches)
    label = (f"ffopt minimum time (default: TOPP-RA's law smoothed over {1e3 * found.smoothing_s:.3g} ms)"
             if found.time_law == "spline" else
             f"ffopt minimum time (default: {N_SHAPE} shaping terms; the smoothed law does not rest)")
    rows.append((label, row))
    return rows, tol


def _tolerance_mm(problem) -> float:
    """The verification's tool tolerance (mm): the problem's, else its default (1e-4 of the reach)."""
    return tolerances(problem.model, problem.verification)[0]


def table(name: str, rows, bound_s: float) -> list[str]:
    out = [f"### {name}", "",
           "| plan | move [s] | settled cycle [s] | cycle / TOPP-RA move | during the move [mm] | after the table [mm] "
           "| peak / bound | plan CPU [s] |", "|---|---|---|---|---|---|---|---|"]
    for label, r in rows:
        cycle = r["settled_cycle_s"]
        cyc = "not settled in 15 s" if cycle is None else f"{cycle:.3f}"
        ratio = "" if cycle is None else f"{cycle / bound_s:.2f}"
        peak = ", ".join(f"{x:.2f}" for x in r["peak_over_bound"])
        verdict = f" ({r['verdict']})" if "verdict" in r else ""
        out.append(f"| {label}{verdict} | {r['move_s']:.3f} | {cyc} | {ratio} | {r['max_mm']:.3g} | "
                   f"{r['residual_mm']:.3g} | {peak} | {r['wall_s']:.1f} |")
    return out


PROBLEMS = (  # (title, file, values set, shaping terms of the minimum-time searches)
    ("E12 (Moberg & Hanssen) along its line, |u| <= [1.2e5, 7.5e4] N m (e12_torque_bounded.toml's bounds)",
     "e12_line.toml", {"nlp.torque_max": [1.2e5, 7.5e4]}, (8, 16, 24)),
    ("UR5 along its line, the URDF's effort and velocity limits", "ur5_line.toml", {"nlp.torque_max": "urdf"},
     (8, 16)),
    ("Panda along its line, the URDF's effort and velocity limits", "panda_line.toml", {"nlp.torque_max": "urdf"},
     (8, 16)),
    ("Manutec r3 (Modelica Standard Library RobotR3 data), the library's PTP demo in joint space, RobotR3's motor "
     "current and speed limits (manutec_r3_min_time.toml)", "manutec_r3_min_time.toml", {}, (8, 16)),
)

PROSE = """
## Reading the tables

- **The lower bound.** TOPP-RA's move is time-optimal for the rigid robot under the same torque (and speed)
  limits: its path acceleration jumps (bang-bang). Under exact tracking of an elastic-gear arm the motor torque
  carries the path's 4th time derivative (through the gear's deflection, Moberg & Hanssen's relative degree), so
  a bounded torque needs a time law whose 4th derivative is bounded: the elastic arm's shortest exact-tracking
  move is strictly longer than the rigid bound, by more the softer the gears against the motor inertias (E12:
  motor inertia 100 kg m^2 behind 1e5 N m/rad). The target of 1.15x the rigid bound (ffopt's shortest
  settled cycle over TOPP-RA's move): E12 {e12}, UR5 {ur5}, Panda {panda}, Manutec r3 {manutec}. On E12 no
  motion reaches it: a free-final-time OCP over every motion along the line finds 1.29x
  (`results/min_time_ocp.md`).
- **The law families.** By default ffopt smooths TOPP-RA's own law: its acceleration convolved with a B-spline
  kernel (a spline law, C^8), stretched until every limit holds, the kernel width searched (a wider kernel asks
  less of the gears but lengthens the move). Exact tracking of it ends at rest where the arm has no internal
  dynamics left moving (the UR5, the Panda, the r3). E12's passive-body mode rings after it, so there the search
  falls back to smooth polynomials (C^7 at the rests) with n free shaping terms, the least largest limit ratio
  found by a sequential LP, which also bring that mode to rest; more terms come closer to the bang-bang shape
  (E12: the rows with 8, 16, 24 terms; with 32 the LP did not converge within its 30 iterations and found
  0.288 s). The polynomial rows are shown for every arm.
- **What the user sees.** Against the peers on the elastic arm the settled cycle counts: the rigid time-optimal
  move leaves E12 swinging for seconds, and input shaping on the PD-held mode (ZVD, EI) adds a period and
  still leaves the gear deflections of a bang-bang torque; ffopt's plans are within the tolerance when the move
  ends, so their settled cycle is the move.
- **Rows.** Peers: the rigid law through `ffopt.motion.peers` (TOPP-RA's at 400 path intervals; Ruckig's
  acceleration and jerk scaled until the applied torques meet the bounds). Where TOPP-RA's applied table (the
  gravity share swapped for the elastic arm's statics) exceeds a bound (the r3's axis 3), a row with TOPP-RA's
  bounds scaled until it does not follows the lower-bound row, and the shaped rows shape that law; the ratios
  are to the lower bound. ffopt: `ffopt.motion.min_time` then
  `ffopt.plan` of the problem it returns (the verdict in brackets is that plan's own verification).
"""


def main() -> None:
    tic = time.perf_counter()
    load = os.getloadavg()
    only = sys.argv[1:]
    lines = [
        "# Motion design: minimum-time rest-to-rest moves against TOPP-RA and Ruckig",
        "",
        "Generated by `python results/motion_design.py` (load average {load} on {cores} cores at the start, {end_load} at "
        "the end, {secs} s of wall time; CPU times below are this process's).",
        "Every plan runs on the elastic arm with the verification's motor PD and a 15 s settle window holding the",
        "final pose (`ffopt.motion.evaluate.run_table`). Peers: the rigid robot's law (TOPP-RA, Ruckig) with the rigid",
        "feedforward (gravity share and motor references from the elastic statics). ffopt: the exact-tracking BDF",
        "plan, rest to rest (the verdict in brackets is its own verification's). Settled cycle: from the motion's",
        "start until the tool stays within the tolerance of the end point for good.",
        "",
    ]
    ratios = {}
    for title, name, values, terms in PROBLEMS:
        if only and not any(o in name for o in only):
            continue
        problem = ffopt.load_problem(ROOT / "problems" / name).with_values(values)
        rows, tol = study(problem, terms)  # rows[0]: TOPP-RA's rigid time-optimal move, the lower bound
        best = min(r["move_s"] for label, r in rows if label.startswith("ffopt minimum"))
        ratios[name.split("_")[0]] = f"{best / rows[0][1]['move_s']:.2f}x"
        lines += [*table(f"{title}, tolerance {tol:.3g} mm", rows, rows[0][1]["move_s"]), ""]
        print("\n".join(lines[-len(rows) - 5:]), flush=True)
    lines.append(PROSE.format(**{k: ratios.get(k, "(not run)") for k in ("e12", "ur5", "panda", "manutec")}))
    lines[2] = lines[2].format(load=f"{load[0]:.2f}", end_load=f"{os.getloadavg()[0]:.2f}", cores=os.cpu_count(), secs=f"{time.perf_counter() - tic:.0f}")
    if not only:
        (ROOT / "results" / "motion_design.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
