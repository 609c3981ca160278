"""The parameters of problems/jankowski_2link.toml: the gear stiffnesses fitted to the paper's
frequencies, and the measurements behind the choice of the drives and the move time.

Jankowski & Van Brussel (discrete-time inverse dynamics control of flexible joint robots) quote
"natural frequencies of the robotic system calculated along the desired trajectory approximately
equal to 11.1 Hz and 22.5 Hz", the sampling period H = 10 ms, alpha = 15, and maximum end-effector
errors of 0.093 / 0.043 / 0.028 mm for inner steps h = H/2, H/4, H/6; no physical parameters.

1. Gear stiffnesses. The arm (links, masses, ratio) is chosen for a lab-size arm (see the problem
   file); the two arm-side stiffnesses K1, K2 are fitted so that the two natural frequencies of the
   arm linearised at static equilibria along the path with the motors clamped
   (ffopt.analysis.linear.eigenfrequencies, condition "clamped", 21 points), averaged over the path,
   are 11.1 and 22.5 Hz: a least-squares fit in log K (SciPy). Clamped motors: the drive constants
   do not enter.

2. Drives and move time. Two errors add up in the closed loop: the backward-Euler step error, which
   falls like h, and the error of holding the voltage over a sample H, which does not depend on h.
   Inside a sample the ideal voltage ramps (mostly the back EMF C_v x motor speed of the
   accelerating rotor); held at its mid-sample value, it drives the rotor, whose speed follows the
   voltage with the mechanical time constant tau_m = I_r R / (C_t C_v), off its ideal motion: the
   torque error is a saw tooth, zero at mid-sample, and the rotor angle drifts by about H^3 / 12 x
   acceleration / tau_m per sample (a mean speed error of H^2 / 12 x acceleration / tau_m; 0.25 mrad/s
   for 1.5 rad/s^2, H = 10 ms, tau_m = 50 ms). The controller measures that drift at every
   sample and the closed loop turns it into a tracking error; a short electrical time constant
   tau_e = L / R passes the voltage steps to the current unfiltered. So the sampling floor (the error
   as h -> 0, measured with h = H/20) falls with tau_m while the step error hardly changes, and
   the slower the drive against H, the more the error falls like h, as the paper's numbers do
   (they leave little room for a floor). tau_e is bounded the
   other way: the controller forgets the measured currents (the paper's sec. 5) while the held
   voltage drives them, and the sampled loop loses stability once tau_e reaches a few ms
   (``sampled_loop_spectral_radius``); so it does for a fast drive (tau_m of 10 ms). The move
   time t_f sets the level of both errors (shorter moves, larger errors) and their ratio only
   weakly (the step error falls a little faster with longer moves); it is the one value chosen by
   the paper's error level, at h = H/2.

    python results/jankowski/parameters.py            # fit + drive tables -> results/jankowski/parameters.md
    python results/jankowski/parameters.py --fit      # the stiffness fit only (paste K1, K2 into the file)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

import ffopt
from ffopt.analysis.linear import eigenfrequencies
from ffopt.control.discrete_inverse import (PAPER_MAX_ERROR_MM, ControllerSettings, run_closed_loop,
                                            sampled_loop_spectral_radius)
from ffopt.errors import SolverError

TARGET_HZ = np.array([11.1, 22.5])
HERE = Path(__file__).resolve().parent
PROBLEM = HERE.parents[1] / "problems" / "jankowski_2link.toml"
JOINTS = ("q1", "q2")
FLOOR_SUBSTEPS = 20  # h = H/20: the step error is below 10 % of the floor there


def clamped_modes(problem, k1: float, k2: float) -> np.ndarray:
    """(21, 2) clamped-motor frequencies (Hz) along the path for gear stiffnesses k1, k2."""
    p = problem.with_values({"model.joints.q1.stiffness": float(k1), "model.joints.q2.stiffness": float(k2)})
    fr = eigenfrequencies(p.model, p.reference, p.reference_spec.joint_guess, 21, conditions=("clamped",))
    return np.array([f[:2] for f in fr.all_undamped_hz["clamped"]])


def fit(problem) -> tuple[float, float, np.ndarray]:
    res = least_squares(lambda lk: clamped_modes(problem, *np.exp(lk)).mean(axis=0) / TARGET_HZ - 1.0,
                        np.log([1.0e4, 3.0e3]), xtol=1e-12, ftol=1e-12)
    k1, k2 = np.exp(res.x)
    return float(k1), float(k2), clamped_modes(problem, k1, k2)


# ---------------------------------------------------------------------- drive time constants
def drive_constants(problem) -> dict:
    """Electrical and mechanical time constants (s) of the first joint's drive."""
    j = problem.model.chain.joints[0]
    e = j.electrics
    return {"tau_e": e.inductance / e.resistance,
            "tau_m": j.rotor_inertia * e.resistance / (e.torque_constant * e.back_emf_constant)}


def with_drive(problem, tau_m: float | None = None, tau_e: float | None = None, duration: float | None = None):
    """The problem with the motor-side inertia set for mechanical time constant tau_m, the inductance
    for electrical time constant tau_e (torque constant and resistance kept), and the move time."""
    values = {}
    for name in JOINTS:
        j = next(x for x in problem.model.chain.joints if x.name == name)
        e = j.electrics
        if tau_m is not None:
            inertia = tau_m * e.torque_constant * e.back_emf_constant / e.resistance
            values[f"model.joints.{name}.rotor_inertia"] = inertia
        if tau_e is not None:
            values[f"model.joints.{name}.electrics.inductance"] = tau_e * e.resistance
    if duration is not None:
        values["reference.duration"] = duration
    return problem.with_values(values)


def errors(problem, substeps=(2, 4, 6)) -> dict:
    """Max tool error (mm) for each H/h, the floor (h = H/20), the backward-Euler part at H/2
    (max_t |e_H/2(t) - e_floor(t)|) and the loop's spectral radius (h = H/2); NaN where the loop
    diverges."""
    guess = problem.reference_spec.joint_guess
    out, runs = {}, {}
    for m in (*substeps, FLOOR_SUBSTEPS):
        try:
            runs[m] = run_closed_loop(problem.model, problem.reference, ControllerSettings(substeps=m), guess=guess)
            out[m] = runs[m].max_error_mm
        except SolverError:
            out[m] = float("nan")
    both = 2 in runs and FLOOR_SUBSTEPS in runs
    out["step"] = float(np.linalg.norm(runs[2].position_error_mm - runs[FLOOR_SUBSTEPS].position_error_mm,
                                       axis=1).max()) if both else float("nan")
    out["rho"] = sampled_loop_spectral_radius(problem.model, problem.reference, ControllerSettings(substeps=2),
                                              guess=guess)[0]
    return out


def row(label: str, e: dict, substeps=(2, 6)) -> str:
    floor = e[FLOOR_SUBSTEPS]
    cells = [f"{e[m]:.4f}" for m in substeps]
    share = floor / e[substeps[-1]]
    return (f"| {label} | " + " | ".join(cells) + f" | {floor:.4f} | {e['step']:.4f} | {share:.0%} | {e['rho']:.3f} |")


def drive_tables(problem) -> list[str]:
    const = drive_constants(problem)
    tm, te, tf = const["tau_m"], const["tau_e"], problem.reference_spec.duration
    head = ("| {} | H/2 [mm] | H/6 [mm] | floor, h = H/20 [mm] | backward-Euler part at H/2 [mm] | floor / error "
            "at H/6 | spectral radius of the loop (H/2) |\n|---|---|---|---|---|---|---|")
    lines = ["## Mechanical time constant tau_m = I_r R / (C_t C_v)", "",
             f"Motor-side inertia varied, tau_e = {te * 1e3:g} ms, move of {tf:g} s (paper: 0.093 / 0.028 mm).", "",
             head.format("tau_m")]
    for t_m in (0.010, 0.030, tm, 0.100):
        lines.append(row(f"{t_m * 1e3:g} ms" + (" (problem)" if np.isclose(t_m, tm) else ""),
                         errors(with_drive(problem, tau_m=t_m), (2, 6)), (2, 6)))
    lines += ["", "## Electrical time constant tau_e = L / R", "",
              f"Inductance varied, tau_m = {tm * 1e3:g} ms, move of {tf:g} s; a radius above 1 is an unstable loop "
              "(nan: Newton fails once the motion has diverged).", "", head.format("tau_e")]
    for t_e in (0.0005, te, 0.003, 0.005):
        lines.append(row(f"{t_e * 1e3:g} ms" + (" (problem)" if np.isclose(t_e, te) else ""),
                         errors(with_drive(problem, tau_e=t_e), (2, 6)), (2, 6)))
    lines += ["", "## Move time", "", f"tau_m = {tm * 1e3:g} ms, tau_e = {te * 1e3:g} ms.", "",
              "| t_f | H/2 [mm] | H/4 [mm] | H/6 [mm] | floor [mm] | backward-Euler part at H/2 [mm] | floor / error "
              "at H/6 | radius |", "|---|---|---|---|---|---|---|---|"]
    for d in sorted({1.0, 1.5, 2.0, 3.0, tf}):
        lines.append(row(f"{d:g} s" + (" (problem)" if np.isclose(d, tf) else ""),
                         errors(with_drive(problem, duration=d)), (2, 4, 6)))
    paper = " / ".join(f"{PAPER_MAX_ERROR_MM[m]}" for m in (2, 4, 6))
    lines += ["", f"Paper: {paper} mm for h = H/2, H/4, H/6."]
    return lines


def main(fit_only: bool):
    problem = ffopt.load_problem(PROBLEM)
    k1, k2, modes = fit(problem)
    fit_lines = [f"K1 = {k1:.6g} N m/rad, K2 = {k2:.6g} N m/rad (arm side)"]
    for j, name in enumerate(("first", "second")):
        f = modes[:, j]
        fit_lines.append(f"{name} clamped-motor mode along the path: {f.min():.3f} .. {f.max():.3f} Hz, "
                         f"mean {f.mean():.3f} Hz")
    print("\n".join(fit_lines))
    if fit_only:
        return
    const = drive_constants(problem)
    lines = ["# Parameters of problems/jankowski_2link.toml", "",
             "Generated by `python results/jankowski/parameters.py` (the reasoning is in its docstring).", "",
             "## Gear stiffnesses (clamped-motor frequencies 11.1 / 22.5 Hz on average along the path)", "",
             *(f"- {x}" for x in fit_lines), "",
             f"Drive of the problem: tau_e = L / R = {const['tau_e'] * 1e3:.3g} ms, tau_m = I_r R / (C_t C_v) = "
             f"{const['tau_m'] * 1e3:.3g} ms. Controller: H = 10 ms, alpha = 15; max end-effector error over the "
             "whole run; the floor is the error with h = H/20 (the sampling error alone).", "",
             *drive_tables(problem), ""]
    (HERE / "parameters.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main("--fit" in sys.argv[1:])
