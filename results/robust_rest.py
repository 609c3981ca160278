"""Robust rest to rest: which formulation bounds the vibration of a mismatched plant (issue 20).

What is measured (as results/input_shaping.md): the plan's torques and motor references drive a plant whose
springs or payload (E12: last link) are x0.9 / x1.1 with the verification's motor PD, through the table
and a settle window holding the end pose; the number is the largest vibration (tool's distance from a
line fitted in time over the window) over the four plants (``ffopt.plan.robust.vibration_after_table``).

Formulations tried on E12 (problems/e12_line.toml):

1. ``slp``: the rest-to-rest search (sequential LP, ``ffopt.dae.rest_to_rest.search_law``) with more rows:
   besides the nominal end state, each mismatched plant's closed-loop state at the table's last row minus
   the state it rests in under the hold, weighted by the observability Gramian of its tool output held by
   the PD (|R e|^2 = int |y|^2 dt of the free response), 8 shaping terms, in the problem's 0.3 s and in a
   0.9 s move (``with_duration_factor``). This targets the measured quantity directly (the inverse models
   of the perturbed plants ending at rest would not: the applied torque is the nominal one).
2. ``exact on a shaped path``: the exact-tracking plan of the path convolved with ZV / ZVD impulses on the
   lowest PD-held mode (0.948 Hz) and the zero dynamics' pair (-0.63 +- 50j rad/s), no rest search.
3. ``robust``: 2 with ZVD on both modes, then the rest-to-rest search on the shaped path
   (``solver.robust_rest``).

Run: python results/robust_rest.py   (writes results/robust_rest.md; ~7 min on 2 shared cores, the two SLP
searches take most of it)
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from pathlib import Path

import numpy as np

import ffopt
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.dae.rest_to_rest import (REST_SPEED_RAD_S, REST_TORQUE_REL, LawPlans, search_law, ends_at_rest,
                                    shape_for_rest, with_duration_factor)
from ffopt.plan.robust import _Loop, mismatched_values, robust_shaper, vibration_after_table

HERE = Path(__file__).resolve().parent
E12 = HERE.parent / "problems" / "e12_line.toml"
SCALE = 0.1


# ------------------------------------------------------------------ formulation 1: closed-loop rows in the SLP
class _MismatchRows:
    """Each mismatched plant's state at the table's end minus its rest under the hold, as Gramian rows (mm s^0.5)."""

    def __init__(self, problem):
        from ffopt.sim.verify import motor_hold, rest_state

        self.loop = _Loop(problem)
        self.plants = {k: problem.with_values(v).model for k, v in mismatched_values(problem, SCALE).items()}
        hold = motor_hold(self.loop.gains.kp, self.loop.gains.kd, self.loop.hold.qm, 2)
        self.rest = {k: rest_state(p, self.loop.hold.u, hold, self.loop.q_end) for k, p in self.plants.items()}
        self.R = {k: gramian_rows(p, self.rest[k], self.loop.gains) for k, p in self.plants.items()}
        self.rtol = problem.verification.rtol

    def __call__(self, traj) -> np.ndarray:
        from ffopt.control import from_trajectory
        from ffopt.control.laws import feedback_loop
        from ffopt.sim.cases import Case, Integration, run_case

        m = self.loop.model
        ff = from_trajectory(m, traj.t, traj.u, traj.q, traj.v)
        loop = feedback_loop(self.loop.gains, m, ff)
        rows = []
        for k, plant in self.plants.items():
            case = Case(plant, ff.u, loop, None, ff.hold).at_rest(self.loop.q0)
            sim = run_case(k, case, ff.t, Integration(self.rtol))
            e = np.concatenate([sim.q[-1] - self.rest[k], sim.v[-1]])
            rows.append(self.R[k] @ e)
        return np.concatenate(rows)


def gramian_rows(plant, q_rest, gains) -> np.ndarray:
    """R with |R e|^2 = int_0^inf |y(t)|^2 dt (y the outputs in mm) of the plant held at q_rest by the motor PD
    from the deviation e = [dq; dv]: R' R = W, A' W + W A + C' C = 0 (modal coordinates are ill-conditioned with a
    critically damped PD)."""
    from scipy.linalg import solve_continuous_lyapunov

    from ffopt.analysis.linear import boundary_condition, linearize

    lin = linearize(plant, np.asarray(q_rest, float))
    M, D, K = boundary_condition(plant, lin, "pd", (np.asarray(gains.kp, float), np.asarray(gains.kd, float)))
    n = M.shape[0]
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, D)]])
    C = 1000.0 * np.hstack([lin.Cq, np.zeros_like(lin.Cq)])
    W = solve_continuous_lyapunov(A.T, -C.T @ C)
    w, Q = np.linalg.eigh(0.5 * (W + W.T))
    return (Q * np.sqrt(np.clip(w, 0.0, None))).T


class _RobustPlans(LawPlans):
    def __init__(self, problem, n_shape):
        self.rows = _MismatchRows(problem)
        super().__init__(problem, n_shape, REST_SPEED_RAD_S, REST_TORQUE_REL)

    def measure(self, c):
        tr = self.solve(c)
        r = np.concatenate([tr.v[-1] / self.speed_tol, (tr.u[-1] - self.u_static) / (self.torque_rel * self.u_scale),
                            self.rows(tr)])  # robust rows in units of 1 mm s^0.5 (nominal: the rest tolerances)
        return tr.u.ravel() / self.u_scale, r


def plan(problem, ref=None):
    s = problem.solver
    return solve_inverse_bdf(problem.model, problem.reference if ref is None else ref, s,
                             qa_guess=problem.reference_spec.joint_guess)


def row(label, problem, traj, note="", wall=None) -> dict:
    vib = vibration_after_table(problem, traj, SCALE)
    ref = problem.reference
    mism = [v for k, v in vib.items() if k != "nominal"]
    return {"label": label, "move_s": float(ref.t_motion_end - ref.t_motion_start),
            "peak": float(np.abs(traj.u).max()), "at_rest": ends_at_rest(problem.model, traj)[0],
            "nominal_mm": vib["nominal"]["residual_mm"], "worst_vib_mm": max(v["vibration_mm"] for v in mism),
            "worst_res_mm": max(v["residual_mm"] for v in mism), "note": note, "wall_s": wall}


def slp_rows(factor: float, n_shape: int = 8, max_iter: int = 20) -> list[dict]:
    problem = ffopt.load_problem(E12)
    if factor != 1.0:
        problem = with_duration_factor(problem, factor)
    tic = time.perf_counter()
    c, _ = shape_for_rest(problem, duration_factors=())
    plain = problem.with_values({"reference.time_law_shape": c.tolist()})
    out = [row(f"rest to rest, {problem.reference_spec.duration:.3g} s move", plain, plan(plain),
               wall=time.perf_counter() - tic)]
    tic = time.perf_counter()
    plans = _RobustPlans(problem, n_shape)
    nom = problem.model.layout.nq + problem.model.layout.n_u
    w, info = search_law(plans, plans.variables(c), max_iter, n_rest_rows=nom)
    cr = plans.coefficients(w)
    robust = problem.with_values({"reference.time_law_shape": cr.tolist()})
    out.append(row(f"SLP with mismatch rows, {problem.reference_spec.duration:.3g} s move", robust, plan(robust),
                   f"{info['iterations']} iterations, {plans.solves} BDF solves (each with 4 closed-loop runs)",
                   time.perf_counter() - tic))
    return out


def shaped_rows() -> list[dict]:
    from ffopt.sim.shaping import shape_reference, shaper

    problem = ffopt.load_problem(E12)
    kind, modes = robust_shaper(problem)
    out = []
    for k, ms, what in (("zvd", modes[:1], "ZVD on the PD-held mode"), ("zv", modes, "ZV on both modes"),
                        ("zvd", modes, "ZVD on both modes")):
        p = problem.with_values({"reference.shaper": k, "reference.shaper_modes": [list(m) for m in ms]})
        out.append(row(f"exact on the path, {what}", p, plan(p)))
    tic = time.perf_counter()
    r = ffopt.plan(problem.with_values({"solver.robust_rest": True}), verify=False)
    search = r.method_choice["rest_to_rest"]["robust"]["search"]
    note = ("the rest search cached on disk by an earlier plan" if search.get("cached") else
            f"rest search {search.get('iterations')} iterations, {search.get('bdf_solves')} BDF solves")
    out.append(row("robust (solver.robust_rest): ZVD on both + rest search", r.problem, r.trajectory, note,
                   time.perf_counter() - tic))
    return out, modes


def fmt(x):
    return f"{x:.2g}" if abs(x) < 0.01 else f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def markdown(rows, modes, wall, load) -> str:
    lines = [
        "# Robust rest to rest: formulations measured on E12",
        "",
        f"Generated by `results/robust_rest.py` on {datetime.date.today().isoformat()} ({platform.machine()}, "
        f"{os.cpu_count()} cores shared with other jobs; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        f"before the run; {wall:.0f} s).",
        "",
        "What counts (as results/input_shaping.md): the plan's torques and motor references drive a plant whose "
        "springs (gears, passive joint) or last link (mass, inertia) are x0.9 / x1.1, with the 5 Hz motor PD, "
        "through the table and a 3.2 s settle window holding the end pose. **worst vibration** = the largest, over "
        "the four plants, tool distance from a line fitted in time over the window; **worst residual** = the "
        "largest tool error there against the end point (with the static offset a mismatch leaves); **nominal** = "
        "the residual on the planning model. Modes shaped: " + ", ".join(f"{f:.4g} Hz (damping {z:.3g})"
                                                                          for f, z in modes)
        + " (the lowest mode of the arm held by the PD, the zero dynamics).",
        "",
        "| plan | move [s] | peak torque [N m] | ends at rest | nominal [mm] | worst vibration [mm] | worst residual [mm] | wall [s] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['label']} | {r['move_s']:.3g} | {r['peak']:.3g} | {'yes' if r['at_rest'] else 'no'} | "
                     f"{fmt(r['nominal_mm'])} | {fmt(r['worst_vib_mm'])} | {fmt(r['worst_res_mm'])} | "
                     f"{'' if r['wall_s'] is None else format(r['wall_s'], '.1f')} |")
    lines += [""] + [f"- {r['label']}: {r['note']}" for r in rows if r["note"]] + [""] + READING
    return "\n".join(lines) + "\n"


READING = [  # the run of 2026-11-27
    "## Reading",
    "",
    "- **The inverse models of the perturbed plants are the wrong target.** The plant is driven by the nominal "
    "torque; its deviation from its own exact-tracking motion is driven by the torque error (first order in the "
    "mismatch) through the PD-closed plant, whose lowest mode (0.948 Hz, damping 0.107) is not a mode of the "
    "inverse. So the rows added to the search are the closed loop's own end states (formulation 1).",
    "- **Within the 0.3 s move no time law makes E12 insensitive.** For a mode with eigenvalue lambda the torque "
    "error of a mass or stiffness mismatch follows the path's acceleration, and the mode's excitation is "
    "lambda int s'(t) exp(lambda (T - t)) dt with s' >= 0 (a monotone law): a non-negative mix of phasors "
    "exp(j omega (T - t)). Over a move shorter than half the damped period (0.53 s) they lie in a half plane "
    "and cannot cancel (omega T = 1.8 rad in 0.3 s). Measured: the search with the mismatched plants' rows "
    "lowers the worst vibration by 2 % at +77 % peak torque. In a 0.9 s move it lowers it by 8 % (55.3 -> 50.7 mm) and "
    "loses the nominal rest within 20 iterations (each iteration 16 BDF solves with 4 closed-loop runs each): "
    "a sequential LP on 40 closed-loop rows is slow and weak.",
    "- **Input shaping of the path, with ffopt's exact inverse, is what works.** The exact plan of a path "
    "convolved with ZVD on the PD-held mode alone still leaves the zero dynamics free (not at rest, 25 mm); with "
    "ZVD on both modes 4.8 mm; ZV on both 27 mm (ZV's band is +-3 %, a +-10 % spring moves a frequency by "
    "+-5 %); ZVD on both plus the rest search (`solver.robust_rest`) ends at rest on the nominal model and "
    "leaves 4.65 mm on the worst plant, 17x less than the plain rest-to-rest plan (80 mm) and 8x less than "
    "ZVD on the rigid feedforward (36.5 mm, results/input_shaping.md), in 1.49 s instead of 0.3 s (ZVD "
    "1.36 s), with 41 % of the plain plan's peak torque. The move time is the price, as for ZVD against ZV.",
]


def main() -> None:
    load = os.getloadavg()
    tic = time.perf_counter()
    rows = slp_rows(1.0) + slp_rows(3.0)
    shaped, modes = shaped_rows()
    text = markdown(rows + shaped, modes, time.perf_counter() - tic, load)
    (HERE / "robust_rest.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
