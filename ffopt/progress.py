"""A heartbeat for stages that run inside one long call (gcc, CVODES): no stage is silent for more than 2 s."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

HEARTBEAT_S = 1.5  # a line at least this often
TICK_S = 0.1  # how often the heartbeat looks at the clock


def last_said(progress) -> float | None:
    """When ``progress`` last printed a line (``time.perf_counter()``), where it keeps that (the command line's
    printer, ``ffopt.cli.common.progress_printer``, and ``ffopt.io.console.ConsoleProgress`` around it)."""
    return getattr(progress, "last_said", None)


@contextmanager
def heartbeat(progress, message, every_s: float | None = None):
    """While the block runs, ``progress(message(elapsed_s))`` every ``every_s`` (default HEARTBEAT_S) from a daemon
    thread when nothing else was said for that long (``last_said``); nothing if ``progress`` is None. Heartbeats
    nest: an outer stage's speaks only while its inner stages are silent. An exception of ``progress`` (e.g. a printer's Ctrl-C check) ends the
    heartbeat only: the main thread sees the interrupt itself."""
    if progress is None:
        yield
        return
    stop, tic = threading.Event(), time.perf_counter()
    every = HEARTBEAT_S if every_s is None else every_s

    def beat():
        spoke = tic
        while not stop.wait(min(TICK_S, every)):
            now = time.perf_counter()
            if now - max(spoke, last_said(progress) or spoke) < every:
                continue  # not yet, or something else spoke meanwhile (an inner stage's own line)
            try:
                progress(message(now - tic))
            except BaseException:  # noqa: BLE001
                return
            spoke = now

    threading.Thread(target=beat, name="ffopt-heartbeat", daemon=True).start()
    try:
        yield
    finally:
        stop.set()
