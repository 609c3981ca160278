"""Rest-to-rest and robust plans around a method's plan (solver.end_at_rest, solver.robust_rest). Each step
returns the plan it keeps and a record of what it did (``RestToRest``, ``RobustRest``: summary.json's
``method_choice.rest_to_rest``), and the warnings for the kept plan; nothing is written into the trajectory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ffopt.errors import SolverError
from ffopt.io.problem import Problem
from ffopt.models.equilibrium import ends_at_rest, not_at_rest_text
from ffopt.plan.methods import Run, solve_method
from ffopt.trajectory import Trajectory

# solve(problem, run): a plan of the problem by the method that made the first one
Solve = Callable[[Problem, Run], Trajectory]


@dataclass
class RobustRest:
    """solver.robust_rest: the shaper on the lowest PD-held mode and the zero dynamics, the trade-off of the
    plain rest-to-rest plan (``plain``) against the shaped one (``robust``), whether the shaped one is used."""
    shaper: str
    modes_hz_damping: list
    scale: float
    plain: dict | None
    robust: dict | None = None
    used: bool | None = None  # None: the path was shaped already (reference.shaper), nothing to choose
    reason: str | None = None  # why the shaped plan is not used
    search: dict | None = None  # the rest-to-rest search of the shaped path

    def to_dict(self) -> dict:
        out = {"shaper": self.shaper, "modes_hz_damping": self.modes_hz_damping, "scale": self.scale,
               "plain": self.plain}
        for key in ("used", "reason", "robust", "search"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass
class RestToRest:
    """solver.end_at_rest: the exact plan's end state, whether the time law was shaped to rest (and if not,
    why and which longer move would rest), the search (``ffopt.dae.rest_to_rest.shape_for_rest``), the
    trade-off in peak input, and the robust plan's record; ``warnings`` go to the kept plan's solver.warnings."""
    needed: bool
    exact_plan_end: dict | None = None
    shaped: bool | None = None
    reason: str | None = None
    search: dict = field(default_factory=dict)
    time_law_shape: list | None = None
    trade_off: dict | None = None
    robust: RobustRest | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def duration_needed_s(self) -> float | None:
        return self.search.get("duration_needed_s")

    def to_dict(self) -> dict:
        out = {} if self.exact_plan_end is None else {"exact_plan_end": self.exact_plan_end}
        out["needed"] = self.needed
        out.update(self.search)
        for key in ("shaped", "reason", "time_law_shape", "trade_off"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.robust is not None:
            out["robust"] = self.robust.to_dict()
        return out


def end_at_rest(problem: Problem, traj, run: Run, solve: Solve = solve_method):
    """The plan made rest-to-rest where it would end moving (solver.end_at_rest): (problem, plan, RestToRest or
    None when the plan ends at rest as it is).

    Exact tracking leaves the zero dynamics free while the tool rests after the move; on a lightly damped
    arm they still ring at the table's last row and the controller's static hold meets a moving arm. Only
    the timing along the path is free: ``ffopt.dae.rest_to_rest.shape_for_rest`` shapes the time law (same
    path, same duration) so that the exact-tracking BDF plan ends at rest with the least peak input, and
    the plan is made again with that law by the method that made it (``solve``). Where no monotone law rests
    within the move, the plan is kept and the duration that would rest is reported."""
    from ffopt.dae.rest_to_rest import shape_for_rest_cached  # start-up: the DAE stack

    say = run.say
    at_rest, end = ends_at_rest(problem.model, traj)
    if at_rest:
        return problem, traj, None
    record = RestToRest(needed=True, exact_plan_end=end)
    spec = problem.reference_spec
    why = unshapeable(problem, traj)
    if why:
        record.shaped, record.reason = False, why
        say(f"note: {not_at_rest_text(end)}; {why}")
        return problem, traj, record
    say(f"{not_at_rest_text(end)}: shaping the time law so that the arm ends at rest "
        f"(same path, same {spec.duration:.4g} s)")
    try:
        c, info = shape_for_rest_cached(problem, progress=say)
    except SolverError as err:
        record.shaped, record.reason = False, f"the rest-to-rest search failed: {err}"
        say(f"warning: {record.reason}")
        return problem, traj, record
    record.search = {k: v for k, v in info.items() if k not in ("end_before",)}
    if not info["at_rest"]:
        needed = info.get("duration_needed_s")
        record.shaped, record.reason = False, info.get("message", "no rest-to-rest time law")
        msg = (f"{record.reason}; " + (f"a move of {needed:.4g} s (x{info['duration_factor']:g}) ends at rest: set "
               "reference.duration (or the speed limits) accordingly" if needed else
               "no move up to x4 longer rests either") + "; the exact-tracking plan is kept")
        say(f"warning: {msg}")
        record.warnings.append(msg)
        return problem, traj, record
    shaped = problem.with_values({"reference.time_law_shape": [float(x) for x in c]})
    new = solve(shaped, run)  # the method that made the plan (method auto: the one it chose)
    record.shaped, record.time_law_shape = True, [float(x) for x in c]
    record.trade_off = {"peak_input_exact": end["peak_input"], "peak_input_rest_to_rest": float(np.abs(new.u).max()),
                        "move_s": spec.duration}
    found = ("from the cache of an earlier plan of this problem" if info.get("cached") else
             f"{info['iterations']} iterations, {info['bdf_solves']} BDF solves, {info['search_time_s']:.2f} s")
    say(f"rest-to-rest time law: {found}; peak input {end['peak_input']:.4g} -> {np.abs(new.u).max():.4g}")
    return shaped, new, record


def robust_rest(problem: Problem, traj, record: RestToRest | None, run: Run, solve: Solve = solve_method):
    """solver.robust_rest: the rest-to-rest plan made again on the path convolved with a ZVD shaper on the
    lowest PD-held mode and the zero dynamics (``ffopt.plan.robust``), kept if it ends at rest. Returns
    (problem, plan, the RestToRest record with its ``robust`` trade-off: move time, peak input and residual
    vibration nominal and on the +-10 % plants)."""
    from ffopt.plan.robust import ROBUST_SCALE, robust_shaper, vibration_after_table  # start-up: the simulation stack

    say = run.say
    record = record or RestToRest(needed=False)
    if problem.reference_spec.shaper is not None:  # e.g. a problem written by a robust plan: shaped already
        kind, modes = problem.reference_spec.shaper
        say(f"robust rest: the path is shaped already (reference.shaper {kind}); measuring it on the +-"
            f"{100 * ROBUST_SCALE:g} % plants")
        record.robust = RobustRest(kind, [list(m) for m in modes], ROBUST_SCALE, plain=None,
                                   robust=trade_off(problem, traj, vibration_after_table(problem, traj)))
        return problem, traj, record
    say(f"robust rest: measuring the rest-to-rest plan on the +-{100 * ROBUST_SCALE:g} % plants (springs, payload)")
    plain = trade_off(problem, traj, vibration_after_table(problem, traj))
    kind, modes = robust_shaper(problem)
    text = ", ".join(f"{f:.4g} Hz (damping {z:.3g})" for f, z in modes)
    say(f"robust rest: {kind} shaper on {text}; planning the shaped path to end at rest")
    shaped = problem.with_values({"reference.shaper": kind, "reference.shaper_modes": [list(m) for m in modes],
                                  "reference.time_law_shape": []})
    sub = None
    try:
        shaped, new, sub = end_at_rest(shaped, solve(shaped, run), run, solve)
    except SolverError as err:
        new, why = None, f"the shaped path could not be planned: {err}"
    else:
        why = None if ends_at_rest(shaped.model, new)[0] else (
            sub.reason if sub is not None and sub.reason is not None else
            "the plan of the shaped path does not end at rest")
    robust = record.robust = RobustRest(kind, [list(m) for m in modes], ROBUST_SCALE, plain)
    if why:
        robust.used, robust.reason = False, why
        msg = f"robust rest: {why}; the plain rest-to-rest plan is kept"
        say(f"warning: {msg}")
        record.warnings.append(msg)
        return problem, traj, record
    sub_dict = {} if sub is None else sub.to_dict()
    robust.used, robust.robust = True, trade_off(shaped, new, vibration_after_table(shaped, new))
    robust.search = {k: v for k, v in sub_dict.items()
                     if k in ("iterations", "bdf_solves", "search_time_s", "cached", "time_law_shape")}
    r = robust.robust
    say(f"robust rest: move {plain['move_s']:.3g} -> {r['move_s']:.3g} s, peak input {plain['peak_input']:.4g} -> "
        f"{r['peak_input']:.4g}, worst vibration on the +-{100 * ROBUST_SCALE:g} % plants "
        f"{plain['worst_vibration_mm']:.3g} -> {r['worst_vibration_mm']:.3g} mm")
    return shaped, new, record


def trade_off(problem: Problem, traj, vibration: dict) -> dict:
    """Move time, peak input and the vibration after the table, nominal and worst over the mismatched plants."""
    ref = problem.reference
    mismatched = {k: v for k, v in vibration.items() if k != "nominal"}
    return {"move_s": float(ref.t_motion_end - ref.t_motion_start), "peak_input": float(np.abs(traj.u).max()),
            "nominal_vibration_mm": vibration["nominal"]["vibration_mm"],
            "nominal_residual_mm": vibration["nominal"]["residual_mm"],
            "worst_vibration_mm": max((v["vibration_mm"] for v in mismatched.values()), default=None),
            "worst_residual_mm": max((v["residual_mm"] for v in mismatched.values()), default=None),
            "plants": vibration}


def explain_ringing(report, record: RestToRest | None) -> None:
    """A miss after the table of a plan that could not be made rest-to-rest names why, and the move that would rest."""
    if report is None or report.verdict is None or record is None or record.shaped is not False:
        return
    needed = record.duration_needed_s
    why = record.reason or "no rest-to-rest time law"
    for miss in report.verdict.misses:
        if miss["phase"].startswith("after the table"):
            miss["cause"] = (f"{miss['cause'].split(';')[0]}; {why}"
                             + (f"; a move of {needed:.4g} s ends at rest (reference.duration)" if needed else ""))


def unshapeable(problem: Problem, traj) -> str | None:
    """Why the time law of this plan cannot be shaped for rest (None: it can)."""
    from ffopt.reference.time_laws import TIME_LAWS, TimeLaw

    spec = problem.reference_spec
    if not isinstance(TIME_LAWS.get(spec.time_law), TimeLaw):  # cinf, spline
        return f"time law {spec.time_law!r} is not a polynomial: choose e.g. poly11 to let ffopt shape it for rest"
    if getattr(problem.reference, "prefilter", None):
        return "a prefiltered reference has no time law to shape"
    if traj.method.startswith("nlp") and traj.stats.get("strategy") == "noncausal":
        return "the non-causal NLP plans its own rest (pre-/post-actuation)"
    return None
