"""Run a solve in a forked worker process, so that its limits and Ctrl-C hold even inside long
single calls that never return to Python.

The Pyomo backend spends most of its time in such calls: on E12 at h = 2 ms, Pyomo's .nl writer
takes ~70 s and CasADi's derivative set-up of the imported model ~260 s, and neither checks for
limits or signals (measured: a 15 s limit ended after 367 s, and Ctrl-C waited for the set-up).
In a worker, the parent process stays responsive: it replays the worker's iterates into the
``SolveMonitor`` (progress, history), ends the worker once its CPU time (the solve's CPU time until
the fork plus the worker's own, read from /proc where there is one) or the wall time is used up
(plus a short grace for the worker's own, orderly stop) and on Ctrl-C, and returns the worker's
result; the worker's CPU time is then counted in the parent's monitor.
Where ``fork`` is not available (or this process may not have children) the solve runs in this
process, with the limit checked between its phases.
"""

from __future__ import annotations

import multiprocessing
import os
import signal

from ffopt.errors import SolverError
from ffopt.nlp.monitor import LIMITS, SolveMonitor

GRACE_S = 1.0  # the worker stops itself at the limit; it is killed if it has not after this
POLL_S = 0.05


def run_isolated(solve, monitor: SolveMonitor, what: str, grace_s: float = GRACE_S):
    """``solve(monitor)`` in a worker process; its result, or None if it had not returned ``grace_s``
    after the wall-time limit (it is then ended). Exceptions of the worker are raised here."""
    if "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return solve(monitor)  # no fork, or a daemon process (a pool worker) that may not have children
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    worker = ctx.Process(target=_worker, args=(solve, monitor, send, monitor.cpu_elapsed()), name=f"ffopt {what}",
                         daemon=True)
    worker.start()
    send.close()
    try:
        return _follow(worker, receive, monitor, what, grace_s)
    finally:
        if worker.is_alive():
            worker.kill()
        worker.join()
        receive.close()


def _worker(solve, monitor: SolveMonitor, send, cpu_before_s: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends this process
    monitor.in_worker(cpu_before_s)
    monitor.progress = None
    monitor.sink = lambda rec, solver: send.send(("iterate", rec, solver))
    try:
        message = ("result", solve(monitor), monitor.stop_reason)
    except BaseException as err:  # noqa: BLE001 - every failure is reported to the parent
        message = ("error", err)
    cpu = monitor.cpu_elapsed() - cpu_before_s
    try:
        send.send(("cpu", cpu))
        send.send(message)
    except Exception as err:  # an exception that does not pickle
        send.send(("error", SolverError(f"{message[1]!r} ({err})")))


def worker_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) of a running process from /proc (Linux), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _follow(worker, receive, monitor: SolveMonitor, what: str, grace_s: float):
    cpu_at_start = monitor.cpu_elapsed()
    counted = False
    while True:
        if receive.poll(POLL_S):
            try:
                kind, *payload = receive.recv()
            except EOFError:
                raise SolverError(f"{what}: the worker process ended without a result "
                                  f"(exit code {worker.exitcode})") from None
            if kind == "iterate":
                monitor.record(*payload)
                if monitor.stop_reason in ("interrupted", "callback_error"):
                    return None  # the progress callback raised: the caller's guard re-raises it
            elif kind == "cpu":
                monitor.add_worker_cpu(payload[0])
                counted = True
            elif kind == "result":
                if payload[1] in LIMITS and monitor.stop_reason is None:
                    monitor.stop_reason = payload[1]  # the limit the worker stopped at
                return payload[0]
            else:
                raise payload[0]
        elif monitor.elapsed() > monitor.max_wall_time_s + grace_s:
            monitor.stop_reason = monitor.stop_reason or "max_wall_time"
            return None
        elif not counted and _worker_over_cpu(worker.pid, cpu_at_start, monitor, grace_s):
            monitor.stop_reason = monitor.stop_reason or "max_cpu_time"
            return None
        elif not worker.is_alive() and not receive.poll():
            raise SolverError(f"{what}: the worker process ended without a result (exit code {worker.exitcode})")
        else:
            monitor.waiting(what)
            if monitor.stop_reason in ("interrupted", "callback_error"):
                return None


def _worker_over_cpu(pid, cpu_at_start: float, monitor: SolveMonitor, grace_s: float) -> bool:
    """The solve's CPU time (until the fork + the worker's) is past its limit by more than the grace."""
    if monitor.max_cpu_time_s == float("inf"):
        return False
    cpu = worker_cpu_s(pid)
    return cpu is not None and cpu_at_start + cpu > monitor.max_cpu_time_s + grace_s
