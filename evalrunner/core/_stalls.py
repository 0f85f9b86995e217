"""Run timeouts that one async agent blocking the event loop cannot spend for the others.

Async agents share one event loop. One that blocks it (a synchronous HTTP call,
``time.sleep``, a long computation) stops every other run, and when the loop comes back
every timer that fell due meanwhile fires: healthy runs of other scenarios ended
"timed out in the agent" for one run's block (issue 53). Each async agent's coroutine is
driven through :class:`Timed`, which times every step it takes on the loop; a step that
held the loop longer than :data:`STALL_S` moves every *other* run's deadline on by as
long (sync agents' runs, in their threads, included: :class:`Stalls`), so the run that
blocked is the one whose time runs out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any

STALL_S = 0.05
"""A step holding the loop longer than this is a stall the other runs are not charged for
(an ordinary step of an async agent takes microseconds)."""

_RUNNING: dict[asyncio.AbstractEventLoop, dict[int, Callable[[float], None]]] = {}
"""Per event loop, the runs in flight, sync agents' included: how to move each one's
deadline on."""


class Stalls:
    """One run among those in flight on this loop (``with Stalls(extend) as stalls:``):
    another run's stall moves its deadline on through ``extend``; its own async agent is
    driven through :meth:`timed`, whose stalls move the others'."""

    def __init__(self, extend: Callable[[float], None]) -> None:
        self._extend = extend
        self._running: dict[int, Callable[[float], None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> Stalls:
        self._loop = asyncio.get_running_loop()
        self._running = _RUNNING.setdefault(self._loop, {})
        self._running[id(self)] = self._extend
        return self

    def __exit__(self, *exc: object) -> None:
        self._running.pop(id(self), None)
        if not self._running and self._loop is not None:
            _RUNNING.pop(self._loop, None)

    def timed(self, coro: Coroutine[Any, Any, Any]) -> Timed:
        """``coro`` as an awaitable whose every step on the loop is timed."""
        return Timed(coro, self._charge)

    def _charge(self, held: float) -> None:
        if held <= STALL_S:
            return
        for key, extend in list(self._running.items()):
            if key != id(self):
                extend(held)


class Timed:
    """``coro`` run as it is, each of its steps timed and handed to ``charge``."""

    def __init__(self, coro: Coroutine[Any, Any, Any], charge: Callable[[float], None]) -> None:
        self._coro = coro
        self._charge = charge

    def __await__(self) -> Generator[Any, Any, Any]:
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.monotonic()
            try:
                step = self._coro.send(sent) if thrown is None else self._coro.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self._charge(time.monotonic() - started)
            try:
                sent, thrown = (yield step), None
            except BaseException as exc:  # a cancellation (the timeout) goes on to the agent
                sent, thrown = None, exc
