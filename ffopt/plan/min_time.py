"""Minimum-time plans: ``reference.duration = "min"`` (``ffopt plan --min-time``) searches the move's duration and
time law (``ffopt.motion.min_time``) before the plan is made, with the planner's ``make_plan`` for the arms that need
the NLP (passed in by ``ffopt.plan.pipeline``, which this module does not import)."""

from __future__ import annotations

from ffopt.motion.min_time import MinimumTime, minimum_time, minimum_time_record, minimum_time_text

__all__ = ["plan_minimum_time", "record_and_say"]


def plan_minimum_time(problem, say, planner, **options) -> tuple[object, MinimumTime]:
    """(the problem with the duration and law found, the search) for a problem with duration = "min"; planner:
    problem -> Trajectory (a plan without verification)."""
    say("minimum time: searching the shortest move within the limits that ends at rest")
    found = minimum_time(problem, progress=say, planner=planner, **options)
    return found.problem, found


def record_and_say(found: MinimumTime, traj, problem, say) -> dict:
    """summary.json's method_choice.minimum_time, and its console line."""
    record = minimum_time_record(found, traj, problem)
    say(minimum_time_text(record))
    return record
