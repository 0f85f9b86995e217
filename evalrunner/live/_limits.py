"""Provider rate limits shared by every run of a night.

:class:`Pacer` is the bookkeeping, pure and clocked from outside: per model,
the earliest time the next request may go (one for requests per minute, one
for tokens per minute). A request reserves the next free slot and is told how
long to wait for it; requests are spread evenly, so no window of a minute
holds more than the limit. A 429 pushes the model's next slot past the
server's Retry-After: every run against that model waits, not only the one
that was refused.

One :class:`Pacer` serves the whole night: in one process behind a lock
(:class:`LocalLimiter`), across a Ray cluster inside one actor
(:mod:`evalrunner.live._ray`). Each run's calls reach it through a
:class:`LimitGate`, the live transport's :class:`~evalrunner.core._transport.Gate`;
the seconds waited are the run's ``rate_wait_s``, kept out of its latency.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from evalrunner.core._transport import Request
from evalrunner.suite._schema import RateLimit

__all__ = ["HEADROOM", "LimitGate", "Limiter", "LocalLimiter", "Pacer", "estimate_tokens"]

HEADROOM = 0.96
"""Share of a limit the schedule aims at: requests reach the provider with some jitter
(the event loop, litellm, the network), and a strict provider counts them on arrival.
4 % of a one-minute window is 2.4 s of jitter absorbed."""
DEFAULT_REFUSAL_WAIT_S = 1.0
"""How long a model is held back after a 429 that did not say (no Retry-After)."""


def estimate_tokens(request: Request) -> int:
    """Tokens a request may use, for tpm: its messages (characters / 4) plus max_tokens."""
    prompt = len(json.dumps(request.get("messages") or [], default=str)) // 4
    return prompt + int(request.get("max_tokens") or 256)


@dataclass
class _Slots:
    requests: float = 0.0
    tokens: float = 0.0


@dataclass
class Pacer:
    """When each model's next request may go. ``now`` is any monotonic clock, in seconds."""

    limits: Mapping[str, RateLimit]
    headroom: float = HEADROOM
    _next: dict[str, _Slots] = field(default_factory=dict)

    def reserve(self, model: str, tokens: int, now: float) -> float:
        """Reserve a slot for one request to ``model``; the seconds to wait for it."""
        limit = self.limits.get(model)
        if limit is None or (limit.rpm is None and limit.tpm is None):
            return 0.0
        slots = self._next.setdefault(model, _Slots(now, now))
        start = max(now, slots.requests, slots.tokens)
        if limit.rpm is not None:
            slots.requests = start + 60.0 / (limit.rpm * self.headroom)
        if limit.tpm is not None:
            slots.tokens = start + 60.0 * tokens / (limit.tpm * self.headroom)
        return start - now

    def refuse(self, model: str, retry_after: float | None, now: float) -> None:
        """``model`` answered 429: nothing more goes to it before the server said."""
        slots = self._next.setdefault(model, _Slots(now, now))
        wait = retry_after if retry_after is not None else DEFAULT_REFUSAL_WAIT_S
        slots.requests = max(slots.requests, now + wait)


class Limiter(Protocol):
    """A schedule shared by the night's runs: in this process, or in a Ray actor."""

    def reserve(self, model: str, tokens: int) -> float:
        """Reserve a slot; the seconds to wait for it (blocking the caller for the round trip)."""
        ...

    async def areserve(self, model: str, tokens: int) -> float:
        """The same from async code."""
        ...

    def refuse(self, model: str, retry_after: float | None) -> None:
        """Hold ``model`` back after a 429."""
        ...


class LocalLimiter:
    """The schedule in this process, behind a lock (sync agents call from their own threads)."""

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        self.schedule = Pacer(dict(limits))
        self._lock = threading.Lock()

    def reserve(self, model: str, tokens: int) -> float:
        with self._lock:
            return self.schedule.reserve(model, tokens, time.monotonic())

    async def areserve(self, model: str, tokens: int) -> float:
        return self.reserve(model, tokens)

    def refuse(self, model: str, retry_after: float | None) -> None:
        with self._lock:
            self.schedule.refuse(model, retry_after, time.monotonic())


@dataclass(frozen=True)
class LimitGate:
    """One run's admission to one model under a shared :class:`Limiter`."""

    limiter: Limiter
    model: str
    """The endpoint's label: the model string the suite's ``rate_limits`` name."""
    count_tokens: bool = False

    def _tokens(self, request: Request) -> int:
        return estimate_tokens(request) if self.count_tokens else 0

    def admit(self, request: Request) -> float:
        wait = self.limiter.reserve(self.model, self._tokens(request))
        if wait > 0:
            time.sleep(wait)
        return wait

    async def aadmit(self, request: Request) -> float:
        wait = await self.limiter.areserve(self.model, self._tokens(request))
        if wait > 0:
            await asyncio.sleep(wait)
        return wait

    def refused(self, request: Request, retry_after: float | None) -> None:
        self.limiter.refuse(self.model, retry_after)


def gate_for(
    limiter: Limiter | None, limits: Mapping[str, RateLimit], model: str
) -> LimitGate | None:
    """The gate a run against ``model`` passes, if the suite limits that model."""
    limit = limits.get(model)
    if limiter is None or limit is None or (limit.rpm is None and limit.tpm is None):
        return None
    return LimitGate(limiter, model, count_tokens=limit.tpm is not None)
