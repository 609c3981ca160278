"""One exception hierarchy for ffopt. The CLI prints ``str(err)`` on one line and exits non-zero."""


class FfoptError(Exception):
    """Base class of every error ffopt raises on purpose."""


class ProblemError(FfoptError):
    """A problem file or problem object is invalid. The message names the file and field."""


class PathError(FfoptError):
    """The reference path cannot be followed (outside the workspace, through a singularity)."""


class SolverError(FfoptError):
    """A numerical solver failed. The message gives the status, where, and what to try."""


class VerificationError(FfoptError):
    """The verification simulation could not be run."""
