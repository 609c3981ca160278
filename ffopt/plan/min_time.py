"""Minimum-time plans: ``reference.duration = "min"`` (``ffopt plan --min-time``) searches the move's duration and
time law (``ffopt.motion.min_time``) before the plan is made, with this planner for the arms that need the NLP."""

from __future__ import annotations

from dataclasses import replace

from ffopt.motion.min_time import MinimumTime, minimum_time, minimum_time_record, minimum_time_text
from ffopt.plan.methods import Run

__all__ = ["plan_minimum_time", "minimum_time_of", "record_and_say"]


def minimum_time_of(problem, progress=None, **options) -> MinimumTime:
    """``ffopt.motion.min_time.minimum_time`` with the planner's ``make_plan`` as its planner (method auto, no
    verification): minimum-phase arms by the BDF rest-to-rest search, the others by the non-causal NLP."""
    from ffopt.plan.pipeline import make_plan  # pipeline imports this module for duration = "min"

    run = Run(progress or (lambda msg: None), True, hint=False)
    return minimum_time(problem, progress=progress, planner=lambda p: make_plan(p, replace(run)).trajectory,
                        **options)


def plan_minimum_time(problem, run: Run):
    """(the problem with the duration and law found, the search) for a problem with duration = "min"."""
    run.say("minimum time: searching the shortest move within the limits that ends at rest")
    found = minimum_time_of(problem, run.say)
    return found.problem, found


def record_and_say(found: MinimumTime, traj, problem, say) -> dict:
    """summary.json's method_choice.minimum_time, and its console line."""
    record = minimum_time_record(found, traj, problem)
    say(minimum_time_text(record))
    return record
