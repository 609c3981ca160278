"""A heartbeat for stages that run inside one long call (gcc, CVODES): no stage is silent for more than 2 s."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

HEARTBEAT_S = 1.5  # a line at least this often


@contextmanager
def heartbeat(progress, message, every_s: float | None = None):
    """While the block runs, ``progress(message(elapsed_s))`` every ``every_s`` (default HEARTBEAT_S) from a daemon
    thread; nothing if ``progress`` is None. An exception of ``progress`` (e.g. a printer's Ctrl-C check) ends the
    heartbeat only: the main thread sees the interrupt itself."""
    if progress is None:
        yield
        return
    stop, tic = threading.Event(), time.perf_counter()
    every = HEARTBEAT_S if every_s is None else every_s

    def beat():
        while not stop.wait(every):
            try:
                progress(message(time.perf_counter() - tic))
            except BaseException:  # noqa: BLE001
                return

    threading.Thread(target=beat, name="ffopt-heartbeat", daemon=True).start()
    try:
        yield
    finally:
        stop.set()
