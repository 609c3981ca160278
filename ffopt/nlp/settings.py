"""The NLP's settings live in ``ffopt.settings.nlp`` (read by the problem schema without importing the NLP);
this name is kept for the modules of ffopt/nlp."""

from ffopt.settings.nlp import (BACKENDS, LINEAR_SOLVERS, MAX_CPU_TIME_S, MAX_ITER, MAX_WALL_TIME_S, OBJECTIVES,
                                RESOLVED_GROWTH_PER_STEP, SCHEMES, STRATEGIES, TRACKING, WALL_GUARD_FACTOR, WARM_STARTS,
                                NlpSettings, check_limits, poorly_resolved_per_step)

__all__ = ["BACKENDS", "LINEAR_SOLVERS", "MAX_CPU_TIME_S", "MAX_ITER", "MAX_WALL_TIME_S", "OBJECTIVES",
           "RESOLVED_GROWTH_PER_STEP", "SCHEMES", "STRATEGIES", "TRACKING", "WALL_GUARD_FACTOR", "WARM_STARTS",
           "NlpSettings", "check_limits", "poorly_resolved_per_step"]
