"""What a plan says beside itself: the prefilter it used, and warnings (a standstill path, friction reversals
faster than the grid, URDF limits exceeded, a singular inverse) kept in summary.json's solver.warnings."""

from __future__ import annotations

import numpy as np

from ffopt.io.problem import Problem
from ffopt.plan.result import effort_limits_exceeded, velocity_limits_exceeded


def prefilter_message(info: dict) -> str:
    """One line for the plan's progress output: which prefilter order and why, and the horizon
    (the full reasoning is in summary.json, reference.prefilter.order_reason)."""
    jump = {0: "value", 2: "acceleration"}.get(info["raw_jump_derivative"], f"derivative {info['raw_jump_derivative']}")
    why = (f"the torque follows the path's derivative {info['path_derivatives_needed']} and the raw {info['raw']} "
           f"jumps in {jump}: >= {info['order_required']} for a continuous torque")
    source = f"{why}, + 1 for BDF" if info["order_source"] == "derived" else f"reference.order; {why}"
    return (f"reference: Butterworth prefilter of order {info['order']} ({source}), cutoff {info['cutoff_hz']:g} Hz, "
            f"delay {info['delay_s'] * 1e3:.0f} ms; it settles to {info['settle_tolerance']:g} of the move "
            f"{info['settling_time_s']:.3f} s after the raw {info['raw']} ends ({info['raw_end_s']:.3f} s): horizon "
            f"extended to t_end = {info['t_end_s']:.3f} s including rest_after")


def warn_standstill(problem: Problem, y: np.ndarray, say) -> str | None:
    """A path whose outputs never move (start == end): the plan holds the arm still. Said, since a user rarely
    means it; returns the warning (for summary.json's solver.warnings) or None."""
    if not (y.size and np.all(np.ptp(y, axis=0) == 0.0)):
        return None
    msg = (f"{problem.source}: reference: the path's start and end are the same and it never moves, so the plan "
           "holds the arm still (a standstill plan); check reference.start_mm / end_mm (or q_start_rad / q_end_rad)")
    say(f"warning: {msg}")
    return msg


def warn_unresolved_friction(problem: Problem, traj, say) -> None:
    """Link-side Coulomb friction switching faster than the grid (ffopt.sim.friction_check): say it and
    keep it in summary.json (solver.warnings)."""
    if not any(j.link_coulomb_friction > 0 for j in problem.chain.joints):
        return
    from ffopt.sim.friction_check import unresolved_friction_reversals

    step = problem.nlp.step if traj.method.startswith("nlp") else problem.solver.step
    found = unresolved_friction_reversals(problem.model, traj, step)
    for w in found:
        say(f"warning: {w['message']}")
    if found:
        traj.stats.setdefault("warnings", []).extend(w["message"] for w in found)
        traj.stats["unresolved_friction_reversals"] = [{k: v for k, v in w.items() if k != "message"} for w in found]


def warn_urdf_limits(problem: Problem, traj, say) -> None:
    """A plan asking a drive for more than its URDF effort limit, or moving a joint faster than its velocity limit
    (possible only after the time law was reshaped for rest, or by the elastic deflection rates: the rigid path
    passed ``check_joint_speeds``), is kept (the verification simulates it as planned) but says so, and keeps it in
    summary.json (solver.warnings; urdf.effort_limits_exceeded, urdf.velocity_limits_exceeded)."""
    messages = [f"joint {e['joint']}: the plan's peak torque {e['peak_Nm']:.4g} N m at t = {e['t_s']:.4g} s exceeds "
                f"its effort limit {e['limit_Nm']:.4g} N m (the URDF's <limit effort>): a drive limited there will "
                "not follow the plan; plan within the limits with method nlp and nlp.torque_max = \"urdf\", or "
                "lengthen the move (reference.duration)" for e in effort_limits_exceeded(problem, traj)]
    messages += [f"joint {e['joint']}: the plan moves it at {e['peak_rad_s']:.4g} rad/s at t = {e['t_s']:.4g} s, above "
                 f"its velocity limit {e['limit_rad_s']:.4g} rad/s (the URDF's <limit velocity>; the path's own time "
                 "law is within it): lengthen the move (reference.duration) or plan without the reshaped time law "
                 "(solver.end_at_rest = false)" for e in velocity_limits_exceeded(problem, traj)]
    for msg in messages:
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)


def warn_inverse_singularity(problem: Problem, traj, say) -> None:
    """A plan that tracks the path as a penalty or in a band (by request, or method auto's last step)
    may pass where the tool's path has no exact inverse: the decoupling matrix of the plant is
    singular there (ffopt.analysis.decoupling). Say so, and keep it in summary.json (solver.decoupling)."""
    if not traj.method.startswith("nlp") or problem.nlp.tracking == "exact":
        return
    from ffopt.analysis.decoupling import decoupling_along

    states = [traj.q, traj.v] + ([traj.current] if traj.electric else [])
    try:
        rep = decoupling_along(problem.model, traj.t, np.hstack(states))
    except (ValueError, np.linalg.LinAlgError, RuntimeError) as err:  # no vector relative degree
        traj.stats["decoupling"] = {"error": str(err)}
        return
    traj.stats["decoupling"] = rep.to_dict()
    if rep.singular:
        planned = traj.stats.get("planned_tool_error_max_mm")
        miss = f"misses the path there by up to {planned:.3g} mm (planned) " if planned is not None else ""
        msg = (f"the plan passes a singularity of the inverse: {rep.summary()}. This plan {miss}with a peak "
               f"input of {np.abs(traj.u).max():.3g} {traj.input_unit}; to track exactly, slow the motion "
               "(reference.duration) or move the path away from the singularity")
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)
