"""Iteration, CPU-time and wall-time limits, live progress and interrupts, shared by every NLP backend.

A ``SolveMonitor`` is created when the NLP stage starts; its clock covers the transcription,
the solver set-up and every solver run (a Newton attempt and the IPOPT run after it share one
budget). Time is limited twice: in CPU seconds (``max_cpu_time_s``: this process's and, for a
solve in a worker process, the worker's; what the solve costs, whatever else runs on the machine)
and in wall seconds (``max_wall_time_s``, the outer guard). ``stop_reason`` says which limit ended
a solve. A backend calls ``begin(name)`` when its solver starts and ``iteration(...)`` once per
iteration: the monitor records the iterate's numbers, reports them through the ``progress``
callback (rate-limited) and returns False when the solver must stop (a limit is used up, or the
progress callback raised, e.g. KeyboardInterrupt). Backends also give their solver
``remaining_iterations()`` / ``remaining_cpu_time()`` / ``remaining_time()`` as its own limits.

Interrupts: inside ``with monitor.guard():`` a Ctrl-C (SIGINT) is recorded before the previous
handler runs, and on leaving the block it is raised as KeyboardInterrupt, whatever the solver
made of it (CasADi's IPOPT interface catches it and returns the status NonIpopt_Exception_Thrown;
cyipopt re-raises it after the iteration). An interrupt is never turned into a solver status.

Nothing here knows a particular solver.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

WALL_TIME_STATUSES = ("Maximum_WallTime_Exceeded",)
CPU_TIME_STATUSES = ("Maximum_CpuTime_Exceeded",)
TIME_LIMITS = ("max_wall_time", "max_cpu_time")
LIMITS = TIME_LIMITS + ("max_iter",)
# Divergence of a cold-started exact-tracking NLP: the infeasibility above its starting value for
# DIVERGENCE_SPAN iterations in a row while the objective grew DIVERGENCE_GROWTH-fold from its
# value after the first iteration. Seen on two drawn arms with a passive joint (objective x1e5 and
# x1e8, infeasibility up to 3x and 50x its start, then a 120 s limit); converging non-causal runs
# (E1 non-minimum phase, the Canadarm tool path, drawn arms) stay within 4x and their
# infeasibility falls below its start from the first iteration on.
DIVERGENCE_SPAN = 3
DIVERGENCE_GROWTH = 1e4
ITERATION_STATUSES = ("Maximum_Iterations_Exceeded",)


class NlpProgress(str):
    """A progress message of a running NLP solve: a ``str`` (any progress callback can print it)
    carrying the numbers as attributes. ``live = True``: it supersedes the previous live message,
    so a console may show it as one updating line."""

    live = True

    def __new__(cls, solver: str, iteration: int, objective: float, infeasibility: float, elapsed_s: float,
                max_iter: int, max_wall_time_s: float):
        text = (f"NLP iteration {iteration}/{max_iter}: objective {objective:.6g}, infeasibility "
                f"{infeasibility:.1e}, {elapsed_s:.1f} s of {max_wall_time_s:g} s ({solver})")
        msg = super().__new__(cls, text)
        msg.solver, msg.iteration, msg.objective = solver, iteration, objective
        msg.infeasibility, msg.elapsed_s = infeasibility, elapsed_s
        return msg


class NlpWaiting(str):
    """A live progress message while the solver reports no iterate (one long step, e.g. IPOPT's first
    factorisation of a large KKT matrix): it supersedes the previous live message like ``NlpProgress``."""

    live = True


@dataclass(frozen=True)
class IterateRecord:
    iteration: int  # counted over all solver runs of this NLP
    objective: float
    infeasibility: float  # largest (scaled) constraint violation
    elapsed_s: float


class SolveMonitor:
    """Limits, iteration bookkeeping, progress and interrupts of one NLP solve (any backend).

    ``progress``: a callable taking a str (the plan pipeline's ``progress``), or None. Live
    messages go out at most every ``interval_s``: the callback's ``live_interval_s`` attribute if
    it has one (a console sets it), else 2 s.
    """

    DEFAULT_INTERVAL_S = 2.0

    def __init__(self, max_iter: int, max_wall_time_s: float, progress=None, clock=time.perf_counter,
                 stop_diverging: bool = False, max_cpu_time_s: float = float("inf"), cpu_clock=time.process_time):
        self.max_iter, self.max_wall_time_s = int(max_iter), float(max_wall_time_s)
        self.max_cpu_time_s, self.cpu_clock = float(max_cpu_time_s), cpu_clock
        self.cpu_start, self.cpu_offset = cpu_clock(), 0.0  # offset: CPU of processes that have ended (workers)
        self.stop_diverging = stop_diverging  # stop the solver once ``diverging()`` (an exact NLP from rest)
        self.progress, self.clock = progress, clock
        self.interval_s = float(getattr(progress, "live_interval_s", self.DEFAULT_INTERVAL_S))
        self.start = clock()
        self.iterations = 0  # completed iterations over all runs
        self.history: list[IterateRecord] = []
        self.stop_reason: str | None = None  # max_iter | max_wall_time | diverging | interrupted | callback_error
        self.solver = ""
        self.sink = None  # called with every IterateRecord (a worker process forwards them to its parent)
        self._offset, self._run_start, self._last_report, self._last_wait = 0, 0, -float("inf"), -float("inf")
        self._pending: BaseException | None = None

    # ------------------------------------------------------------------ budget
    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining_time(self) -> float:
        return max(self.max_wall_time_s - self.elapsed(), 0.0)

    def cpu_elapsed(self) -> float:
        """CPU seconds of this solve: this process since the start, plus ended worker processes."""
        return self.cpu_clock() - self.cpu_start + self.cpu_offset

    def remaining_cpu_time(self) -> float:
        return max(self.max_cpu_time_s - self.cpu_elapsed(), 0.0)

    def in_worker(self, cpu_used_s: float) -> None:
        """In a worker process just forked (its CPU clock starts at 0): go on from ``cpu_used_s``, the
        solve's CPU time until the fork."""
        self.cpu_start, self.cpu_offset = self.cpu_clock(), float(cpu_used_s)

    def add_worker_cpu(self, cpu_s: float) -> None:
        """A worker process ended after ``cpu_s`` CPU seconds of its own: count them."""
        self.cpu_offset += float(cpu_s)

    def remaining_iterations(self) -> int:
        return max(self.max_iter - self.iterations, 0)

    def expired(self) -> bool:
        """True once a limit is used up (and the stop reason says which): ask before starting a solver."""
        if not self._time_up() and self.iterations >= self.max_iter:
            self.stop_reason = self.stop_reason or "max_iter"
        return self.stop_reason in LIMITS

    def limit_reached(self, status: str | None = None) -> str | None:
        """'max_iter' / 'max_cpu_time' / 'max_wall_time' if the solve ended at a limit (ours or the
        solver's status)."""
        if self.stop_reason in LIMITS:
            return self.stop_reason
        if status in WALL_TIME_STATUSES:
            return "max_wall_time"
        if status in CPU_TIME_STATUSES:
            return "max_cpu_time"
        if status in ITERATION_STATUSES:
            return "max_iter"
        return None

    # ------------------------------------------------------------------ per solver run
    def begin(self, solver: str) -> None:
        """A solver run starts; its iteration counter restarts at 0 (counted on from earlier runs)."""
        self._offset, self.solver, self._run_start = self.iterations, solver, len(self.history)

    def iteration(self, k: int, objective: float, infeasibility: float) -> bool:
        """Iteration k (0 = the start point) of the current run is done. False: stop the solver now
        (the wall time is used up, or the progress callback raised). The iteration limit is the
        solver's own (``remaining_iterations()``), so a solver that converges at its last allowed
        iteration still reports success."""
        if self._pending is not None:
            return False
        rec = IterateRecord(self._offset + int(k), float(objective), float(infeasibility), self.elapsed())
        if len(self.history) > self._run_start and self.history[-1].iteration == rec.iteration:
            self.history[-1] = rec  # IPOPT reports an iteration again when it enters its restoration phase
        else:
            self.iterations = rec.iteration
            self.record(rec)
        if self.stop_diverging and self.diverging():
            self.stop_reason = self.stop_reason or "diverging"
            return False
        return self._pending is None and not self._time_up()

    def diverging(self) -> bool:
        """The iterates run away (see DIVERGENCE_SPAN): a pure function of the history, so that a
        parent process that replays a worker's iterates reaches the same verdict."""
        h = self.history
        if len(h) < 2 + DIVERGENCE_SPAN:
            return False
        base = max(abs(h[1].objective), 1e-12)
        return all(r.infeasibility > h[0].infeasibility and abs(r.objective) > DIVERGENCE_GROWTH * base
                   for r in h[-DIVERGENCE_SPAN:])

    def end_run(self, iterations: int) -> None:
        """The current run ended after ``iterations`` (the solver's own count)."""
        self.iterations = self._offset + int(iterations)

    def record(self, rec: IterateRecord, solver: str | None = None) -> None:
        """Keep an iterate and report it (also used to replay the iterates of a worker process)."""
        if solver is not None:
            self.solver, self.iterations = solver, rec.iteration
        self.history.append(rec)
        if self.sink is not None:
            self.sink(rec, self.solver)
        if self.progress is None or rec.elapsed_s - self._last_report < self.interval_s:
            return
        self._last_report = rec.elapsed_s
        try:
            self.progress(NlpProgress(self.solver, rec.iteration, rec.objective, rec.infeasibility, rec.elapsed_s,
                                      self.max_iter, self.max_wall_time_s))
        except BaseException as err:  # noqa: BLE001 - KeyboardInterrupt too: re-raised on leaving guard()
            self.interrupt(err)

    def note(self, text: str) -> None:
        """A line of its own before a set-up step that reports nothing (so that no stage is silent for 2 s)."""
        if self.progress is None:
            return
        try:
            self.progress(text)
        except BaseException as err:  # noqa: BLE001 - as in record()
            self.interrupt(err)

    def waiting(self, what: str = "") -> None:
        """No iterate has come for a while (called by a parent following a worker): say so at the live interval,
        so that a long solver step is not a silent stage."""
        now = self.elapsed()
        if self.progress is None or now - max(self._last_report, self._last_wait) < self.interval_s:
            return
        self._last_wait = now  # (an iterate's line is not held back by these: record() looks at _last_report)
        since = self.history[-1].elapsed_s if self.history else 0.0
        step = "its first iteration" if not self.history else f"iteration {self.history[-1].iteration + 1}"
        try:
            self.progress(NlpWaiting(f"NLP: {self.solver or what or 'the solver'} on {step} for {now - since:.1f} s, "
                                     f"{now:.1f} s of {self.max_wall_time_s:g} s"))
        except BaseException as err:  # noqa: BLE001 - as in record()
            self.interrupt(err)

    def _time_up(self) -> bool:
        if self.cpu_elapsed() >= self.max_cpu_time_s:
            self.stop_reason = self.stop_reason or "max_cpu_time"
            return True
        if self.elapsed() >= self.max_wall_time_s:
            self.stop_reason = self.stop_reason or "max_wall_time"
            return True
        return False

    # ------------------------------------------------------------------ interrupts
    def interrupt(self, err: BaseException) -> None:
        """Record an exception caught during the solve; ``raise_pending`` re-raises it."""
        if self._pending is None:
            self._pending = err
            self.stop_reason = "interrupted" if isinstance(err, KeyboardInterrupt) else "callback_error"

    def raise_pending(self) -> None:
        if self._pending is not None:
            err, self._pending = self._pending, None
            raise err

    @contextmanager
    def guard(self):
        """Run a solver: a Ctrl-C inside (or an exception of the progress callback) leaves the
        block as that exception, even where the solver caught it and returned a status."""
        previous = signal.getsignal(signal.SIGINT)
        install = callable(previous) and threading.current_thread() is threading.main_thread()
        if install:
            def on_sigint(signum, frame):
                self.interrupt(KeyboardInterrupt())
                previous(signum, frame)

            signal.signal(signal.SIGINT, on_sigint)
        try:
            yield self
        except BaseException as err:
            pending, self._pending = self._pending, None
            if pending is not None and not isinstance(err, KeyboardInterrupt) and pending is not err:
                raise pending from err
            raise
        finally:
            if install:
                signal.signal(signal.SIGINT, previous)
        self.raise_pending()

    # ------------------------------------------------------------------ reporting
    def close(self, outcome: str) -> None:
        """After live messages: one plain line saying how the solve ended, so that what follows
        (an error, the next stage) does not share the console's live line."""
        if self.progress is None or self._last_report == -float("inf"):
            return
        self._last_report = -float("inf")
        try:
            self.progress(f"NLP {self.solver}: {outcome} after {self.iterations} iterations, {self.elapsed():.1f} s")
        except Exception:  # noqa: BLE001 - the solve's own outcome matters more than its report
            pass

    @property
    def last(self) -> IterateRecord | None:
        return self.history[-1] if self.history else None

    def trend(self, span: int = 50) -> str:
        """How the infeasibility and the objective moved over the last ``span`` iterations."""
        if len(self.history) < 2:
            return ""
        a, b = self.history[max(0, len(self.history) - 1 - span)], self.history[-1]
        return (f"over iterations {a.iteration}..{b.iteration} the infeasibility went from {a.infeasibility:.2e} "
                f"to {b.infeasibility:.2e} and the objective from {a.objective:.4g} to {b.objective:.4g}")
