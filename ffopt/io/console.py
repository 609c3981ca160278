"""Progress on a console: the ``progress`` callback of ``ffopt.plan`` for a terminal or a log.

Plain messages become lines. Live messages (``live = True``, e.g. the NLP's iteration line
``ffopt.nlp.monitor.NlpProgress``) update one line in place on a terminal, several times a second;
when the stream is not a terminal (a log file, CI) they become a line every 1.5 s.
Usable from Python too: ``ffopt.plan(problem, progress=ConsoleProgress(print_line))``.
"""

from __future__ import annotations

import shutil
import sys

TERMINAL_INTERVAL_S = 0.25  # live updates on a terminal
LOG_INTERVAL_S = 1.5  # live messages as lines in a log (no stage silent for 2 s there either)


class ConsoleProgress:
    """Wraps a line printer (``print_line(msg)``) and shows live messages as an updating line."""

    def __init__(self, print_line, stream=None):
        self.print_line = print_line
        self.stream = sys.stderr if stream is None else stream
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        # read by ffopt.nlp.monitor.SolveMonitor: how often to send live messages
        self.live_interval_s = TERMINAL_INTERVAL_S if self.terminal else LOG_INTERVAL_S
        self._live_shown = False

    def __call__(self, msg: str) -> None:
        if getattr(msg, "live", False) and self.terminal:
            width = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r\x1b[K" + str(msg)[: max(width - 1, 20)])
            self.stream.flush()
            self._live_shown = True
            return
        self.end_live()
        self.print_line(msg)

    @property
    def last_said(self) -> float | None:
        """When the wrapped printer last printed a line (``ffopt.progress.heartbeat`` reads it)."""
        return getattr(self.print_line, "last_said", None)

    def end_live(self) -> None:
        """Keep the last live line and move to the next one."""
        if self._live_shown:
            self.stream.write("\n")
            self.stream.flush()
            self._live_shown = False
