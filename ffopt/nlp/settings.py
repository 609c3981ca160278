"""The NLP's settings live in ``ffopt.settings.nlp`` (read by the problem schema without importing the NLP);
this name is kept for the modules of ffopt/nlp."""

from ffopt.settings.nlp import *  # noqa: F401,F403
from ffopt.settings.nlp import MAX_WALL_TIME_S, NlpSettings, check_limits  # noqa: F401
