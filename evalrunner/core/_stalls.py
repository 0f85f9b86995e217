"""Run timeouts that one async agent blocking the event loop cannot spend for the others.

Async agents share one event loop. One that blocks it (a synchronous HTTP call,
``time.sleep``, a long computation) stops every other run, and when the loop comes back
every timer that fell due meanwhile fires: healthy runs of other scenarios ended
"timed out in the agent" for one run's block (issue 53). Each async agent's coroutine is
driven through :class:`Timed`, which times every step it takes on the loop; a step that
held the loop longer than :data:`STALL_S` moves every *other* run's deadline on by as
long, so the run that blocked is the one whose time runs out.
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
"""Per event loop, the runs in flight: how to move each one's deadline on."""


class Timed:
    """``await Timed(coro, extend)``: ``coro`` run as it is, each of its steps timed; a
    stall moves every other run's deadline on through its ``extend``."""

    def __init__(self, coro: Coroutine[Any, Any, Any], extend: Callable[[float], None]) -> None:
        self._coro = coro
        self._extend = extend

    def __await__(self) -> Generator[Any, Any, Any]:
        loop = asyncio.get_running_loop()
        running = _RUNNING.setdefault(loop, {})
        running[id(self)] = self._extend
        try:
            return (yield from self._drive(running))
        finally:
            running.pop(id(self), None)
            if not running:
                _RUNNING.pop(loop, None)

    def _drive(self, running: dict[int, Callable[[float], None]]) -> Generator[Any, Any, Any]:
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.monotonic()
            try:
                step = self._coro.send(sent) if thrown is None else self._coro.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self._charge(time.monotonic() - started, running)
            try:
                sent, thrown = (yield step), None
            except BaseException as exc:  # a cancellation (the timeout) goes on to the agent
                sent, thrown = None, exc

    def _charge(self, held: float, running: dict[int, Callable[[float], None]]) -> None:
        if held <= STALL_S:
            return
        for key, extend in list(running.items()):
            if key != id(self):
                extend(held)
