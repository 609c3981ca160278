"""Planning: ``plan(problem, **overrides)`` -> ``PlanResult``.

    pipeline.py     plan(): settings, path check, method, rest-to-rest, warnings, verification (check_problem and
                    make_plan: one candidate plan, for searches over the problem such as a move's duration)
    methods.py      the methods by name (METHODS, as SciPy's solve_ivp), each taking the problem's settings objects
    rest.py         rest-to-rest and robust plans, returning records (RestToRest, RobustRest)
    min_time.py     reference.duration = "min": the shortest move within the limits (ffopt.motion.min_time)
    checks.py       the checks of the settings and the path before planning
    diagnostics.py  the warnings beside a plan
    result.py       PlanResult and summary.json
"""

from ffopt.settings.methods import MOBERG_HANSSEN_METHODS
from ffopt.plan.checks import (BYTES_PER_ROW_AND_COORDINATE, MAX_GEAR_DEFLECTION_RAD, available_memory,
                               check_joint_limits, check_joint_speeds, plan_size, verification_cases)
from ffopt.plan.diagnostics import prefilter_message
from ffopt.plan.methods import METHODS, Method, Run, solve_method
from ffopt.plan.pipeline import PlanOverrides, Planned, check_problem, make_plan, minimum_time_of, plan
from ffopt.plan.rest import RestToRest, RobustRest
from ffopt.plan.result import (PlanResult, effort_limits_exceeded, output_files, reference_summary, urdf_summary,
                               velocity_limits_exceeded, versions)

__all__ = ["BYTES_PER_ROW_AND_COORDINATE", "MAX_GEAR_DEFLECTION_RAD", "METHODS", "MOBERG_HANSSEN_METHODS", "Method",
           "PlanOverrides", "PlanResult", "Planned", "RestToRest", "RobustRest", "Run", "available_memory",
           "check_joint_limits", "check_joint_speeds", "check_problem", "effort_limits_exceeded", "make_plan",
           "minimum_time_of",
           "output_files", "plan", "plan_size", "prefilter_message", "reference_summary", "solve_method",
           "urdf_summary", "velocity_limits_exceeded", "verification_cases", "versions"]
