"""What answers a model call: live litellm, a replayed script, a recording of live calls.

A :class:`Transport` takes one chat request (litellm's keyword arguments:
``model``, ``messages``, ``tools``, ``stream``, ...) and returns an
:class:`Answer`: what the agent receives and the canonical
:class:`ResponseRecord` the trajectory step is built from. The live litellm
transport is in :mod:`evalrunner.core._hook`; replay and recording are frozen
mode's (:mod:`evalrunner.frozen._replay`), reached through
:class:`TransportSource` so that core never imports them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from evalrunner.core._faults import InfraLog, retry_after
from evalrunner.core._response import ResponseRecord

# litellm's keyword arguments for one call. A transport may add to it (retry
# switches, stream options) before sending it on.
Request = dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """One answered model call."""

    # What the agent receives: a litellm ModelResponse, or for a streamed
    # request the whole list of chunks (already read; the hook hands them out
    # as a sync or async iterator). Typed Any as everything litellm returns.
    response: Any
    # The canonical record of the response; None only for a stream litellm
    # could not assemble (no step is made for it).
    record: ResponseRecord | None
    # The provider's response id (``extra.generation_id`` of the step).
    generation_id: str | None = None


class Transport(Protocol):
    """Answers model calls for a capture scope (and its sub-agents)."""

    @property
    def infra(self) -> InfraLog:
        """Endpoint faults and retries seen so far (empty when nothing is live)."""
        ...

    def complete(self, request: Request) -> Answer:
        """Answer one call (``request["stream"]`` asks for chunks)."""
        ...

    async def acomplete(self, request: Request) -> Answer:
        """The same, for ``litellm.acompletion``."""
        ...

    def finish(self, error: BaseException | None) -> list[str]:
        """Called once when the run ended (``error``: what the agent raised, if anything).

        Returns the requests that differed from a recording (for
        ``CaptureResult.replay_errors``); raises when the run is void, i.e.
        the harness failed rather than the agent (a replay ran out of script).
        """
        ...


class Gate(Protocol):
    """Admission for live calls: a rate limiter shared by every run of a night.

    The live transport asks before every attempt (retries included) and says
    when an attempt was refused with 429, so the gate can hold back every run
    against that model, not only the one that was refused.
    """

    def admit(self, request: Request) -> float:
        """Block until ``request`` may be sent; the seconds waited."""
        ...

    async def aadmit(self, request: Request) -> float:
        """The same, without blocking the event loop."""
        ...

    def refused(self, request: Request, retry_after: float | None) -> None:
        """An attempt of ``request`` was answered 429 (``retry_after``: what the server asked)."""
        ...


T = TypeVar("T")


def _tell_refusal(gate: Gate, request: Request, exc: Exception) -> None:
    if getattr(exc, "status_code", None) == 429:
        gate.refused(request, retry_after(exc))


def through_gate(gate: Gate | None, request: Request, infra: InfraLog, send: Callable[[], T]) -> T:
    """One attempt of ``request`` under the shared rate limit: wait to be admitted (the wait
    goes to ``infra.rate_wait_s``), send, and tell the gate when the answer was a 429."""
    if gate is None:
        return send()
    infra.rate_wait_s += gate.admit(request)
    try:
        return send()
    except Exception as exc:
        _tell_refusal(gate, request, exc)
        raise


async def athrough_gate(
    gate: Gate | None, request: Request, infra: InfraLog, send: Callable[[], Awaitable[T]]
) -> T:
    """:func:`through_gate` without blocking the event loop."""
    if gate is None:
        return await send()
    infra.rate_wait_s += await gate.aadmit(request)
    try:
        return await send()
    except Exception as exc:
        _tell_refusal(gate, request, exc)
        raise


class TransportSource(Protocol):
    """What ``capture(replay=..., recorder=...)`` accepts: frozen's Replayer and Recorder."""

    def transport(self, live: Transport) -> Transport:
        """The transport to use, given the live one (which replay ignores and recording wraps)."""
        ...
