"""One exception hierarchy for ffopt. The CLI prints ``str(err)`` on one line and exits with 2 for
bad input (ProblemError, PathError, OutputError) and 1 for a solver failure (SolverError,
VerificationError)."""


class FfoptError(Exception):
    """Base class of every error ffopt raises on purpose."""


class ProblemError(FfoptError):
    """A problem file or problem object is invalid. The message names the file and field."""


class PathError(FfoptError):
    """The reference path cannot be followed (outside the workspace, through a singularity)."""


class SolverError(FfoptError):
    """A numerical solver failed. The message gives the status, where, and what to try.

    Where a time-stepping solver failed, for a caller that asks why (method auto: an unstable BDF order?):
    ``failed_time_s`` the time of the first failed step, ``order`` and ``step`` the BDF order and step size
    (None where not known)."""

    def __init__(self, *args, failed_time_s: float | None = None, order: int | None = None,
                 step: float | None = None):
        super().__init__(*args)
        self.failed_time_s, self.order, self.step = failed_time_s, order, step


class VerificationError(FfoptError):
    """The verification simulation could not be run."""


class OutputError(FfoptError):
    """The output cannot be written without touching a file ffopt did not write (or cannot be written at all)."""
