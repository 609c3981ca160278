"""What the command-line modules share (``ffopt.cli.main`` and the commands in their own modules import it;
it imports none of them): exit codes, argument types, the progress printer, a plan's exit code."""

from __future__ import annotations

import argparse
import math
import sys
import time

from ffopt import interrupt

EXIT_OK, EXIT_SOLVER, EXIT_INPUT, EXIT_MISSED_TOLERANCE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def finite_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def positive_float(text: str) -> float:
    x = finite_float(text)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return x


def progress_printer(quiet: bool):
    """Progress lines on stderr; also where a Ctrl-C swallowed by native code stops the plan."""
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        interrupt.check()
        if not quiet:
            sys.stderr.write(f"[{time.perf_counter() - t0:7.2f} s] {msg}\n")  # one write: heartbeat threads print too
            sys.stderr.flush()
            say.last_said = time.perf_counter()  # read by ffopt.progress.heartbeat

    say.last_said = None
    return say


def plan_exit_code(verification) -> int:
    """0 for a verified (or unverified) plan, EXIT_MISSED_TOLERANCE for one that missed its tolerance."""
    missed = verification is not None and getattr(verification, "status", "verified") == "missed_tolerance"
    return EXIT_MISSED_TOLERANCE if missed else EXIT_OK
