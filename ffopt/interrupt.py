"""Ctrl-C that survives native code.

CasADi turns a SIGINT that arrives inside one of its calls (CVODES, IPOPT, a rootfinder) into a
RuntimeError such as ``CV_RHSFUNC_FAIL ... KeyboardInterrupt``; code that retries or reports solver
failures would take it for one. ``catch_interrupts()`` records every SIGINT, so ``check()`` can raise
the interrupt again where a stage ends or a solver error is handled, and ``received()`` tells the
command line to exit with 130 whatever exception the interrupt turned into.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

_received = threading.Event()
_received_deferred = threading.Event()


def _on_sigint(signum, frame):
    _received.set()
    raise KeyboardInterrupt


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def catch_interrupts():
    """Record SIGINT (and raise KeyboardInterrupt as usual) inside the block; no-op where SIGINT is
    ignored. The record is cleared when the block ends."""
    _received.clear()
    if not _in_main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
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
    _received_deferred.set()


@contextmanager
def deferred():
    """Hold a Ctrl-C until the block ends: inside, SIGINT only sets a flag (``received()``); at the
    end of the block KeyboardInterrupt is raised. For a few renames that must not stop half-way,
    and for solvers that call back into Python and cannot stop cleanly inside a callback (cyipopt
    then hands IPOPT unset arrays): their iteration callback returns ``not received()``.

    (Blocking the signal with pthread_sigmask is not enough: it only holds it for the calling
    thread, and the BLAS threads would take it.)"""
    previous = signal.getsignal(signal.SIGINT)
    if not _in_main_thread() or not callable(previous):  # SIG_IGN / SIG_DFL: nothing to hold
        yield
        return
    _received_deferred.clear()
    signal.signal(signal.SIGINT, _on_sigint_deferred)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if _received_deferred.is_set():
            _received_deferred.clear()
            previous(signal.SIGINT, None)  # the held Ctrl-C, delivered to whoever handled it before
            raise KeyboardInterrupt  # if that handler only recorded it
