"""Plans that hold on the robot as it is: move time against the worst residual over parameter ranges (issue 30).

Every plan runs on every plant of the ranges (``ffopt.motion.uncertainty``: the box's vertices, then a scrambled
Sobol design; 64 plants) through ``ffopt.motion.monte_carlo``: the nominal controller (the verification's motor
PD, the nominal hold of the end pose), the table, then the settle window. Residual after the table = the tool's
largest distance from where that plant comes to rest under the nominal hold (the static offset a heavier or
softer plant has under the PD is reported apart: no time law changes it).

Rows: today's rest-to-rest plan; ``solver.robust_rest`` (ZVD on the PD-held mode and the zero dynamics; Singer &
Seering, preshaping command inputs to reduce system vibration); ffopt plans of the path convolved with EI and
two-hump EI on the PD-held mode (Singhose, Seering & Singer, residual vibration reduction using vector diagrams to
generate shaped inputs; Vaughan, Yano & Singhose, comparison of robust input shapers) made rest to rest; EI on the
rigid feedforward (the rigid robot's torques along the EI-shaped law, ``ffopt.motion.peers``); and the
worst-case-robust plan (``ffopt.plan.worst_case.robust_rest_plan``).

Run: python results/robust.py   (writes results/robust.md)
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

import ffopt
from ffopt.motion.monte_carlo import Table, monte_carlo, table_of_plan
from ffopt.plan.worst_case import _design_text, pd_held_mode, robust_rest_plan
from ffopt.motion.uncertainty import Plant, plants, uncertainty_from_dict

ROOT = Path(__file__).resolve().parents[1]
H = 1e-3
PROCESSES = 2


def say(line: str) -> None:
    print(time.strftime("%H:%M:%S"), line, flush=True)


def measured(label, problem, table, p0, ranges, wall_s, verdict) -> dict:
    mc = monte_carlo(problem, table, plants(p0, ranges, build=False), processes=PROCESSES)
    s = mc.stats
    say(f"{label}: move {table.t_motion_end - table.t_start:.3g} s, worst {s['residual_mm']['worst']:.3g} mm "
        f"({mc.wall_s:.1f} s Monte Carlo)")
    return {"label": label, "move_s": table.t_motion_end - table.t_start, "worst_mm": s["residual_mm"]["worst"],
            "p95_mm": s["residual_mm"]["p95"], "median_mm": s["residual_mm"]["median"],
            "move_worst_mm": s["max_mm"]["worst"], "verdict": verdict, "wall_s": wall_s, "mc_s": mc.wall_s,
            "worst_plant": mc.worst.label, "offset_worst_mm": s["static_offset_mm"]["worst"],
            "tol_mm": mc.tolerance_mm}


def ffopt_row(label, problem, p0, ranges) -> dict:
    tic = time.perf_counter()
    result = ffopt.plan(problem, verify=True)
    wall = time.perf_counter() - tic
    return measured(label, result.problem, table_of_plan(result.problem, result.trajectory), p0, ranges, wall,
                    result.verification.verdict.status)


def shaped_row(label, kind, p0, ranges) -> dict:
    f, z = pd_held_mode(p0)
    try:
        p = p0.with_values({"reference.shaper": kind, "reference.shaper_modes": [[f, z]]})
        return ffopt_row(label, p, p0, ranges)
    except (ValueError, ffopt.errors.ProblemError) as err:  # e.g. no two-hump EI at this damping
        return {"label": label, "error": str(err).splitlines()[0]}


def rigid_ei_row(label, p0, ranges) -> dict:
    """EI on the rigid feedforward: the problem's time law convolved with EI on the PD-held mode, the rigid
    robot's torques along it with the elastic statics (``ffopt.motion.peers.rigid_motion``)."""
    from ffopt.motion.peers import PathLaw, PathSamples, rigid_motion
    from ffopt.reference.shaping import ei
    from ffopt.reference.time_laws import get_time_law

    tic = time.perf_counter()
    spec = p0.reference_spec
    T, law = spec.duration, get_time_law(spec.time_law)
    sh = ei(*pd_held_mode(p0))
    t = np.arange(0.0, T + sh.duration + H / 2, H)

    def part(k):
        tau = np.clip((t - sh.times[k]) / T, 0.0, 1.0)
        inside = (t >= sh.times[k]) & (t <= sh.times[k] + T)
        return law(tau), law(tau, 1) / T * inside, law(tau, 2) / T ** 2 * inside

    parts = [part(k) for k in range(len(sh.times))]
    shaped = PathLaw("ei", t, *(sum(a * p[i] for a, p in zip(sh.amplitudes, parts)) for i in range(3)))
    motion = rigid_motion(PathSamples.of(p0), shaped)
    n0, n1 = int(round(spec.rest_before / H)), int(round(spec.rest_after / H))

    def pad(a):
        return np.vstack([np.repeat(a[:1], n0, 0), a, np.repeat(a[-1:], n1, 0)])

    dqm = np.vstack([np.zeros((n0, motion.dqm.shape[1])), motion.dqm, np.zeros((n1, motion.dqm.shape[1]))])
    tt = np.arange(len(t) + n0 + n1) * H
    table = Table(tt, pad(motion.u_table), pad(motion.qm), dqm, pad(motion.y), spec.rest_before,
                  spec.rest_before + shaped.duration)
    nominal = monte_carlo(p0, table, [Plant("nominal", np.zeros(0), {})], processes=1)
    tol = nominal.tolerance_mm
    verdict = (f"nominal {nominal.runs[0].max_mm:.3g} mm during, {nominal.runs[0].residual_mm:.3g} mm after"
               + (" (within)" if max(nominal.runs[0].max_mm, nominal.runs[0].residual_mm) <= tol else ""))
    return measured(label, p0, table, p0, ranges, time.perf_counter() - tic, verdict)


def robust_row(label, p0, ranges, **kw) -> tuple[dict, object]:
    tic = time.perf_counter()
    r = robust_rest_plan(p0, ranges, processes=PROCESSES, samples=0, progress=_quiet, **kw)
    wall = time.perf_counter() - tic
    row = ffopt_row(label, r.problem, p0, ranges)
    row["wall_s"] += wall
    row["rounds"] = r.rounds
    row["design"] = _design_text(r.shaper)
    return row, r


def _quiet(line: str) -> None:
    if "rest-to-rest: iteration" not in line:
        say(line)


def study(path: Path, ranges_table: dict, robust_kw: list[tuple[str, dict]], peers: bool = True) -> list[dict]:
    p0 = ffopt.load_problem(str(path))
    ranges = uncertainty_from_dict(ranges_table, p0)
    rows = [ffopt_row("rest to rest (today's default plan)", p0, p0, ranges)]
    if not peers:
        return rows + [robust_row(label, p0, ranges, **kw)[0] for label, kw in robust_kw]
    rows += [
            ffopt_row("robust_rest: ZVD on the PD-held mode and the zero dynamics",
                      p0.with_values({"solver.robust_rest": True}), p0, ranges),
            shaped_row("EI on the PD-held mode, rest to rest", "ei", p0, ranges),
            shaped_row("two-hump EI on the PD-held mode, rest to rest", "ei2", p0, ranges),
            rigid_ei_row("EI on the rigid feedforward", p0, ranges)]
    for label, kw in robust_kw:
        rows.append(robust_row(label, p0, ranges, **kw)[0])
    return rows


def design_lines(row: dict) -> list[str]:
    """The worst-case search's candidates: design, base law, worst vertex residual."""
    out = [f"Candidates of \"{row['label']}\" (each made rest to rest on the nominal model, run on the vertices):",
           "", "| shaper design | base law [s] | worst vertex residual [mm] | at rest |", "|---|---|---|---|"]
    for d in row["rounds"]:
        if "design" not in d:
            continue
        what = "the problem's own law" if d["design"] is None else \
            f"{d['design'][0]} at {d['design'][1][0][0]:.4g} Hz, damping {d['design'][1][0][1]:.3g}"
        out.append(f"| {what} | {d['base_s']:.3g} | {fmt(d['worst_vertex_mm'])} ({d['worst_label']}) | "
                   f"{'yes' if d['at_rest'] else 'no'} |")
    return out


def ur5_text(rows: list[dict]) -> str:
    plain, robust = rows[0], rows[-1]
    where = "within" if plain["worst_mm"] <= plain["tol_mm"] else "above"
    return (f"UR5: its lowest PD-held mode is well damped (2.0 Hz, damping 0.41), yet with the payload the plain "
            f"plan's worst residual, {fmt(plain['worst_mm'])} mm, is {where} the tolerance {plain['tol_mm']:.3g} mm; "
            "the "
            f"worst-case planner's {robust['design']} brings it to {fmt(robust['worst_mm'])} mm in a "
            f"{robust['move_s']:.3g} s move (the scan's best at its edge, the design damping at its cap of 0.5). The "
            f"static offset of the 5 kg payload under the PD, up to {fmt(robust['offset_worst_mm'])} mm, is left out "
            "as for E12.")


def fmt(x) -> str:
    return "" if x is None else f"{x:.2g}" if abs(x) < 0.01 else f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def table_lines(title: str, rows: list[dict]) -> list[str]:
    out = [f"### {title}", "", "| plan | move [s] | worst after the table [mm] | 95 % after [mm] | worst during the "
           "move [mm] | nominal verdict | plan wall [s] |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['label']} | | | | | {r['error']} | |")
            continue
        out.append(f"| {r['label']} | {r['move_s']:.3g} | {fmt(r['worst_mm'])} ({r['worst_plant']}) | "
                   f"{fmt(r['p95_mm'])} | {fmt(r['move_worst_mm'])} | {r['verdict']} | {r['wall_s']:.1f} |")
    return out


READING = [
    "## Reading",
    "",
    "- **Shaping on the nominal mode is not enough.** Over the vertices the PD-held lowest mode moves from 0.82 to "
    "1.09 Hz (nominal 0.948 Hz, -14 % / +15 %), and the 5-7 Hz modes (damping 0.1-0.2) ring too on the plants "
    "whose base law ends fast. EI at the nominal mode leaves 27-30 mm; the worst-case plan designs the EI for "
    "1.15 x the mode's frequency with 1.4 x its damping (a scan of the design frequency, then of the damping at the "
    "best one; each candidate rest to rest on the nominal model and run on the 16 vertices) and gives the base law "
    "the rest of the move: 6.4 mm in 1.35 s, the issue's target (at most 7 mm in at most 1.35 s). The minimum is "
    "sharp (6.4 mm at 1.09 Hz, 6.8 at 1.08, 12.5 at 1.14; 8.6 mm at damping 0.107, 7.2 at 0.215): the worst "
    "vertex switches between the stiff-q1 plants, whose mode is fast, and the soft, heavy ones.",
    "- **Scenario rows refine, they do not rescue.** The rest search with the closed-loop end states of the worst "
    "vertices as extra rows (Gramian-weighted, finite-difference Jacobians) lowered the worst vertex residual "
    "by ~25 % on an EI-shaped path whose base law is 0.37 s (11.1 -> 8.4 mm). Alone, without a shaper, in a "
    "1.05 s move it went from 199 to 191 mm, and on EI at the nominal mode with the 0.3 s base law from 29.9 to "
    "29.0 mm: the residual left there is in the lowest mode, and the base law's 8 shaping terms move it in "
    "two directions only (the linear model asked for coefficients ~100x the law's to cancel it; measured "
    "2026-11-28).",
    "- **Insensitivity (derivative) conditions** of the end state with respect to the parameters are the "
    "scenario rows at infinitesimal perturbations; with the authority measured above they would fare as the "
    "scenario rows did and were not pursued.",
    "- **Stretch (1.05 s): not reached.** EI on the lowest mode takes 0.85-1.06 s, leaving base laws of 0.05-0.2 "
    "s: the shortest of them do not rest on the nominal model at all, the others excite the 5-7 Hz modes hard "
    "(the best: 33 mm).",
    "- **Robust rest (ZVD on both modes) is as bad as EI at the nominal mode** on these ranges (28 mm in 1.49 s): "
    "the ranges (+-20 %) are wider than ZVD's +-15 % band, and shaping the 8 Hz zero dynamics does not touch the "
    "PD-held modes that ring.",
    "- **EI on the rigid feedforward** leaves 47 mm on the plants and already 19 mm on the nominal plant (the "
    "rigid model's torques excite the arm): ffopt's exact-tracking plans start from zero on the nominal model.",
    "- **Static offset.** A plant 20 % heavier at q3 rests up to 55 mm from the end point under the nominal hold "
    "(the PD's finite stiffness against the added gravity load): integral action or a payload estimate removes "
    "it, not the time law.",
]

UR5_RANGES = {"ranges": {"model.joints.*.stiffness": "+-20%", "model.payload.mass": [0.0, 5.0]}}
E12_RANGES = {"ranges": {"model.joints.*.stiffness": "+-20%", "model.joints.q3.mass": "+-20%"}}


def main() -> None:
    load = os.getloadavg()
    tic = time.perf_counter()
    rows = study(ROOT / "problems" / "e12_line.toml", E12_RANGES,
                 [("worst case (ffopt.plan.worst_case.robust_rest_plan), 1.35 s", {}),
                  ("worst case, stretch: a 1.05 s move", {"move_s": 1.05})])
    mc_s = [r["mc_s"] for r in rows if "mc_s" in r]
    ur5 = study(ROOT / "problems" / "ur5_line.toml", UR5_RANGES,
                [("worst case (ffopt.plan.worst_case.robust_rest_plan)", {})], peers=False)
    lines = ["# Robust plans: move time against the worst residual over parameter ranges", "",
             f"Generated by `python results/robust.py` on {datetime.date.today().isoformat()} "
             f"({os.cpu_count()} cores shared with other jobs; load average {load[0]:.2f} / {load[1]:.2f} / "
             f"{load[2]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
             f"{time.perf_counter() - tic:.0f} s).", "",
             "Every plan is run on 64 plants (the 16 vertices of the box, then 48 points of a scrambled Sobol "
             "design, seed 0) with the nominal controller: the verification's 5 Hz motor PD, the table, then the "
             "settle window under the nominal hold. **after the table** = the tool's largest distance from where "
             "that plant comes to rest (the static offset of a heavier or softer plant under the PD, up to "
             f"{max(r.get('offset_worst_mm', 0) for r in rows):.0f} mm here, is no time law's doing and is left "
             "out); **during the move** = the largest tool error against the timed path; the nominal verdict is "
             "ffopt's verification of the plan on the planning model.",
             "",
             *table_lines("E12 line, every stiffness and body q3's mass +-20 % (64 plants: 16 vertices + 48 Sobol)",
                          rows), "",
             *design_lines(rows[-2]), "",
             *table_lines("UR5 line (problems/ur5_line.toml), every gear stiffness +-20 %, a payload of 0-5 kg at the "
                          "flange (64 plants: 32 vertices, capped, + 32 Sobol)", ur5), "",
             ur5_text(ur5), "",
             "Manutec r3: its shipped problems move through a prefilter (reference.kind = \"prefilter\"), which has "
             "no time law to shape; not in this study.", "",
             f"Monte Carlo of 64 E12 plants: {min(mc_s):.1f}-{max(mc_s):.1f} s on {PROCESSES} processes (the "
             "target: under 60 s on two cores); each plant ~0.2 s of CVODES (CasADi's virtual machine, not "
             "compiled: 64 plants would compile 64 libraries). Plan wall: ffopt.plan with its verification (the "
             "rest-to-rest "
             "searches made afresh: this run's rest-law cache was empty; compiled BDF code and plants cached), for the "
             "worst case plus its search.", "", *READING]
    (ROOT / "results" / "robust.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
