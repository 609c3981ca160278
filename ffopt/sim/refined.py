"""Verification on refined models: a plan for flexible links checked on more assumed modes than it was made for.

A flexible link modelled by m clamped-free assumed modes (``ffopt.models.flexible_links``) is a truncation:
the real beam has every mode. A plan that tracks the tool exactly on the m-mode model may drive the modes it
leaves out, and a verification on the planning model cannot see them (it simulates the same truncation). So
when the model has flexible links, the judged case (the plan's torques with the motor PD loop) also runs on
refined models: refinement k has the link's m clamped-free modes plus k - 1 more and the static tip shapes
xi^2, xi^3 (``FlexibleLinkModel.refined``, ``StaticCorrectedModes``: Ritz modes of that span), until the judged
tool error (largest during the move or in the settle window) changes by less than ``REL_CHANGE`` between
consecutive models, or ``MAX_EXTRA_MODES``
refinements (at most ``MAX_MODES`` per link). What the refined model shares with the planning model is what a
real arm shares with it: the joints, the motors and the outputs. The plan's torques and its motor references
are applied as they are, with the same PD gains; each refined model starts at rest in its own static
equilibrium at the path's start and is held, after the table, at its own static equilibrium at the path's end.

The verdict's judged error is then the last refined model's: a plan above the tolerance there misses it (phase
"on the refined model (...)") even if it holds on its own truncation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ffopt.dae.equilibrium import static_equilibrium
from ffopt.sim.settle import Hold, Verdict, hold_pose

REL_CHANGE = 0.05  # converged: the judged error changes by less than this fraction between refinements
ABS_CHANGE_OF_TOL = 0.05  # ... or by less than this fraction of the tolerance (errors far below it)
MAX_EXTRA_MODES = 3  # at most this many refinements (modes added per link)
# CVODES tolerance of the refined runs, at the loosest: their stiff top Ritz modes (a 2 m link's reaches
# 1.4 kHz with 3 clamped-free modes + 2 static shapes) cost minutes at the plans' 1e-9, and the refined error
# is judged against a tolerance of 1e-4 of the reach, not to 9 digits
RTOL_REFINED = 1e-7


@dataclass
class Refinement:
    modes: list[int]  # modal coordinates per flexible link
    max_mm: float  # judged case during the move
    residual_mm: float | None  # in the settle window
    max_mrad: float | None = None
    residual_mrad: float | None = None
    t_max_s: float = 0.0  # when the largest error occurs (move or settle)
    wall_s: float = 0.0
    basis: str = ""  # the beam model in words (``FlexibleLinkModel.basis``)

    @property
    def judged_mm(self) -> float:
        return max(self.max_mm, self.residual_mm or 0.0)

    def to_dict(self) -> dict:
        return {"modes": self.modes, "basis": self.basis, "max_mm": self.max_mm, "residual_mm": self.residual_mm,
                "max_mrad": self.max_mrad, "residual_mrad": self.residual_mrad, "judged_mm": self.judged_mm,
                "t_max_s": self.t_max_s, "wall_s": self.wall_s}


@dataclass
class RefinedVerification:
    case: str
    planning: Refinement  # the judged case on the planning model itself
    refinements: list[Refinement] = field(default_factory=list)
    converged: bool = False
    rel_change: float = REL_CHANGE
    max_extra_modes: int = MAX_EXTRA_MODES
    rtol: float = RTOL_REFINED

    @property
    def final(self) -> Refinement:
        return self.refinements[-1] if self.refinements else self.planning

    def to_dict(self) -> dict:
        return {"case": self.case, "planning_model": self.planning.to_dict(),
                "refinements": [r.to_dict() for r in self.refinements], "converged": self.converged, "rtol": self.rtol,
                "judged_mm": self.final.judged_mm, "judged_modes": self.final.modes,
                "criterion": f"judged error changes by < {100 * self.rel_change:g} % (or < "
                             f"{100 * ABS_CHANGE_OF_TOL:g} % of the tolerance) between refinements, at most "
                             f"{self.max_extra_modes} refinements (clamped-free modes + the static tip shapes)"}

    def line(self) -> str:
        seq = ", ".join(f"{r.basis}: {r.judged_mm:.4g} mm" for r in [self.planning, *self.refinements])
        state = "converged" if self.converged else "NOT converged (cap reached)"
        return f"refined models ({self.case}, largest error during the move or after the table): {seq}; {state}"


def _changed(a: Refinement, b: Refinement, tol_mm: float, rel: float) -> bool:
    d = abs(a.judged_mm - b.judged_mm)
    return d > rel * max(a.judged_mm, b.judged_mm) and d > ABS_CHANGE_OF_TOL * tol_mm


def verify_refined(model, t, traj, y_ref, tool_ref, u_interpolation: str, pd, kp, kd, t_settle, planning_errors,
                   planning_settle, tol_mm, tol_mrad, rtol, case: str, max_extra: int = MAX_EXTRA_MODES,
                   rel_change: float = REL_CHANGE, progress=None) -> RefinedVerification:
    """Run ``case`` (the plan's torques traj.u with the loop ``pd``) on refined models of ``model`` (a
    ``FlexibleLinkModel``); planning_errors/planning_settle: the same case on the planning model."""
    import time

    from ffopt.models.flexible_links import MAX_MODES
    from ffopt.sim.cases import motor_hold, run_case, settle_case, tool_errors

    def summary(m, e, settle, wall=0.0) -> Refinement:
        e_mm, e_mrad = e
        k = int(np.argmax(e_mm))
        r = Refinement(m.mode_counts, float(e_mm.max()), None if settle is None else settle.residual_mm,
                       None if e_mrad is None else float(e_mrad.max()),
                       None if settle is None else settle.residual_mrad, float(t[k]), wall, m.basis)
        if settle is not None and settle.residual_mm > r.max_mm:
            r.t_max_s = settle.residual_t_s
        return r

    out = RefinedVerification(case, summary(model, planning_errors, planning_settle),
                              rel_change=rel_change, max_extra_modes=max_extra, rtol=max(rtol, RTOL_REFINED))
    n_joints = model.n_joints
    previous = out.planning
    for extra in range(1, max_extra + 1):
        if all(m >= MAX_MODES for m in previous.modes):
            break
        tic = time.perf_counter()
        plant = model.refined(extra)
        if progress is not None:
            progress(f"verifying {case} on a refined model ({plant.basis}): does the plan hold beyond its truncation?")
        q0 = static_equilibrium(plant, y_ref[0], traj.q[0, :n_joints], where=f"t = {t[0]:.4g} s (refined model)")
        name = f"{case} on {plant.basis}"
        rtol_r = max(rtol, RTOL_REFINED)
        sim = run_case(name, plant, t, traj.u, q0, pd, u_interpolation, rtol_r)
        errors = tool_errors(sim, y_ref, tool_ref, plant.output_units)
        settle = None
        if t_settle is not None:
            q_end = static_equilibrium(plant, y_ref[-1], traj.q[-1, :n_joints], where="the end of the path (refined model)")
            h = hold_pose(plant, q_end)
            after = Hold(h.u, h.qm if pd is not None else None, h.q, h.z)
            loop = None if pd is None else motor_hold(kp, kd, after.qm, len(t_settle))
            _, settle = settle_case(name, plant, sim, after, loop, t_settle, y_ref, tool_ref, plant, tol_mm,
                                    tol_mrad, rtol_r)
        current = summary(plant, errors, settle, time.perf_counter() - tic)
        out.refinements.append(current)
        if not _changed(previous, current, tol_mm, rel_change):
            out.converged = True
            break
        previous = current
    return out


def judge_refined(verdict: Verdict, refined: RefinedVerification, tol_mm: float, tol_mrad: float) -> Verdict:
    """Add to ``verdict`` the miss of the last refined model (its judged error above the tolerance)."""
    r = refined.final
    if not refined.refinements:
        return verdict
    where = f"on the refined model ({r.basis} per link{'' if refined.converged else ', not converged'})"
    cause = (f"the plan holds on its own truncation ({refined.planning.basis} per link: "
             f"{refined.planning.judged_mm:.3g} mm) but excites the modes it leaves out: plan with more modes, or "
             "limit what the plan excites above the modelled band (a slower or smoother motion, a torque-rate bound)")
    misses = []  # first: the judged error is the refined model's
    for err, tol, unit in ((r.judged_mm, tol_mm, "mm"),
                           (max(r.max_mrad or 0.0, r.residual_mrad or 0.0) if r.max_mrad is not None else None,
                            tol_mrad, "mrad")):
        if err is not None and err > tol:
            misses.append({"case": refined.case, "phase": where, "error": float(err), "unit": unit,
                                   "tolerance": tol, "t_s": r.t_max_s, "cause": cause})
    verdict.misses[:0] = misses
    if verdict.misses:
        verdict.status = "missed_tolerance"
    return verdict
