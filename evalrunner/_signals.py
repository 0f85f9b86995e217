"""Whether a stop came from outside (Ctrl-C, SIGTERM) or from code that raised it.

An agent or a check may raise ``KeyboardInterrupt`` itself (a library's "abort", a
retry loop's cancel): that is its run's crash, and the night goes on. A real Ctrl-C
arrives as the same exception, in whatever code the main thread was running, so the
two are told apart by the signal handler: while :func:`watched` is in force, a stop
is real only if a signal came.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_received = threading.Event()
_watching = 0
_worker = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _received.set()
    raise KeyboardInterrupt


def received() -> None:
    """Note that a stop signal came (a handler of another signal that raises its own)."""
    _received.set()


@contextmanager
def watched() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt as Python's default handler does, and is noted."""
    global _watching
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGINT, _interrupt)
    _watching += 1
    try:
        yield
    finally:
        _watching -= 1
        signal.signal(signal.SIGINT, previous)


def in_worker() -> None:
    """This process only runs jobs for a driver (a Ray worker): nobody presses Ctrl-C
    here, the driver stops it by cancelling its tasks or ending it, so a
    KeyboardInterrupt out of an agent is the agent's own unless a signal came."""
    global _worker
    _worker = True


def from_outside() -> bool:
    """A KeyboardInterrupt now is a real stop: a signal came, or none is being watched
    in a process a person can interrupt (then nobody can tell, and a stop is never
    swallowed)."""
    return _received.is_set() or not (_watching or _worker)
