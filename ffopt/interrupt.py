"""Ctrl-C that survives native code.

CasADi turns a SIGINT that arrives inside one of its calls (CVODES, IPOPT, a rootfinder) into a
RuntimeError such as ``CV_RHSFUNC_FAIL ... KeyboardInterrupt``; code that retries or reports solver
failures would take it for one. ``catch_interrupts()`` records every SIGINT, so ``check()`` can raise
the interrupt again where a stage ends or a solver error is handled, and ``received()`` tells the
command line to exit with 130 whatever exception the interrupt turned into.

SIGTERM (``timeout``, job schedulers, ``docker stop``) and SIGHUP (a closed terminal) take the same
path as a Ctrl-C: the temporary folders are removed and a sweep writes its table; ``signal_number()``
says which signal it was (the command line exits with 128 + its number: 130, 143, 129).

CasADi's SUNDIALS interfaces also report such an interrupt on stderr ("rhs failed: KeyboardInterrupt", the
right-hand side of CVODES stopped by it); inside ``catch_interrupts()`` that line is dropped, since the
command line says "interrupted" itself.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from contextlib import contextmanager

_received = threading.Event()
_received_deferred = threading.Event()
_signum = [signal.SIGINT]  # the last signal that stopped (or will stop) the command
# the signals that stop a command as a Ctrl-C does (those this platform has)
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _on_sigint(signum, frame):
    _signum[0] = signum
    _received.set()
    raise KeyboardInterrupt


def signal_number() -> int:
    """The signal behind the last interrupt (SIGINT unless SIGTERM or SIGHUP stopped the command)."""
    return int(_signum[0])


def _handled(signum) -> bool:
    """Whether ffopt takes this signal over: not where it is ignored (``nohup``, a background job's SIGINT)."""
    return signal.getsignal(signum) is not signal.SIG_IGN


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


_REPORT_START = re.compile(r"[A-Za-z]+ failed: ")  # CasADi writes "rhs failed: ", "KeyboardInterrupt", "\n"
_INTERRUPT_REPORT = re.compile(r"[A-Za-z]+ failed: KeyboardInterrupt\n")


class _WithoutInterruptReports:
    """A text stream that passes everything on to ``stream`` except CasADi's one-line report of an interrupt
    (``_INTERRUPT_REPORT``). A write that starts such a line is held until its line ends (at most 200
    characters), then dropped or passed on."""

    def __init__(self, stream):
        self.stream, self.held = stream, ""

    def write(self, text: str) -> int:
        if not self.held and not _REPORT_START.fullmatch(text):
            return self.stream.write(text)
        self.held += text
        if "\n" in self.held or len(self.held) > 200:
            held, self.held = self.held, ""
            if not _INTERRUPT_REPORT.fullmatch(held):
                self.stream.write(held)
        return len(text)

    def release(self) -> None:
        """Pass on a held partial line."""
        held, self.held = self.held, ""
        if held:
            self.stream.write(held)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding, ...: the stream's
        return getattr(self.stream, name)


@contextmanager
def _interrupt_reports_dropped():
    stream = sys.stderr
    sys.stderr = _WithoutInterruptReports(stream)
    try:
        yield
    finally:
        if isinstance(sys.stderr, _WithoutInterruptReports):
            sys.stderr.release()
            if sys.stderr.stream is stream:
                sys.stderr = stream


@contextmanager
def catch_interrupts():
    """Record SIGINT, SIGTERM and SIGHUP (and raise KeyboardInterrupt for each) inside the block; a signal
    that is ignored stays ignored. The record is cleared when the block ends. CasADi's reports of the
    interrupts it caught are dropped from stderr (module docstring)."""
    _received.clear()
    _signum[0] = signal.SIGINT
    if not _in_main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_sigint) for s in SIGNALS if _handled(s)}
    try:
        with _interrupt_reports_dropped():
            yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received.clear()


def received() -> bool:
    """True if a SIGINT arrived inside ``catch_interrupts()`` (even if native code swallowed it) or
    inside ``deferred()``."""
    return _received.is_set() or _received_deferred.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived and was swallowed (see the module docstring)."""
    if _received.is_set():
        raise KeyboardInterrupt


def _on_sigint_deferred(signum, frame):
    _signum[0] = signum
    _received_deferred.set()


@contextmanager
def deferred():
    """Hold a Ctrl-C (or SIGTERM, SIGHUP) until the block ends: inside, the signal only sets a flag
    (``received()``); at the end of the block KeyboardInterrupt is raised. For a few renames that must
    not stop half-way, and for solvers that call back into Python and cannot stop cleanly inside a
    callback (cyipopt then hands IPOPT unset arrays): their iteration callback returns ``not received()``.

    (Blocking the signal with pthread_sigmask is not enough: it only holds it for the calling
    thread, and the BLAS threads would take it.)"""
    if not _in_main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    held = [s for s, handler in previous.items() if callable(handler)]  # SIG_IGN / SIG_DFL: nothing to hold
    if not held:
        yield
        return
    _received_deferred.clear()
    for s in held:
        signal.signal(s, _on_sigint_deferred)
    try:
        yield
    finally:
        for s in held:
            signal.signal(s, previous[s])
        if _received_deferred.is_set():
            _received_deferred.clear()
            signum = _signum[0]
            previous[signum](signum, None)  # the held signal, delivered to whoever handled it before
            raise KeyboardInterrupt  # if that handler only recorded it
