"""Everything that touches litellm's call path: the wrap and the live transport.

:func:`install` wraps ``litellm.completion`` / ``litellm.acompletion`` once per
process. A wrapped call asks the installed route for a :class:`Caller` (the
open capture scope); with none, it passes straight through. The agent must
call litellm through the module attribute (``litellm.completion(...)``):
``from litellm import completion`` taken before the wrap bypasses it.

:class:`LiteLLMTransport` makes live calls with litellm's own (unwrapped)
functions, retried by the run's RetryPolicy alone: litellm's and the openai
SDK's own retries are switched off under it, and each attempt gets a timeout
(the policy's ``request_timeout_s``, never past the run's deadline). A live
stream is read to its end inside that retry loop before the agent gets its
chunks, so a stream cut off midway is retried like any other endpoint fault;
so is a response without a single choice.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal, Protocol

from evalrunner._litellm import import_litellm
from evalrunner._redact import register_secret
from evalrunner.core._faults import AttemptOverran, InfraLog, NoUsableChoice, endpoint_label
from evalrunner.core._response import record_from_response
from evalrunner.core._transport import Answer, Gate, Request, athrough_gate, through_gate

Entry = Literal["completion", "acompletion"]


class Caller(Protocol):
    """What answers a wrapped call: the response the agent gets (for a stream, its chunks)."""

    def complete(self, request: Request) -> Any: ...

    async def acomplete(self, request: Request) -> Any: ...

    def missed(self, model: str) -> None:
        """A model call made while this caller was current that did not come through the
        wrap (litellm's own function, bound before it was installed)."""


_install_lock = threading.Lock()
_originals: dict[str, Callable[..., Any]] = {}
# Set while our own transport calls litellm: litellm's pre-call hook sees every call, and
# one made while a caller is current without this set went past the wrap.
_ours: contextvars.ContextVar[bool] = contextvars.ContextVar("evalrunner_ours", default=False)


@contextlib.contextmanager
def _our_call() -> Iterator[None]:
    token = _ours.set(True)
    try:
        yield
    finally:
        _ours.reset(token)


def _watch_calls_past_the_wrap(litellm: Any) -> None:
    """Register, once, a litellm pre-call hook that tells the current caller of a model
    call that did not come through the wrap (``from litellm import completion`` taken
    before capture): without it a recording or a run lost that call in silence."""
    from litellm.integrations.custom_logger import CustomLogger

    class _PastTheWrap(CustomLogger):  # type: ignore[misc]
        def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
            caller = None if _ours.get() else _route()
            if caller is not None:
                caller.missed(str(model))

    litellm.input_callback.append(_PastTheWrap())


def _no_caller() -> Caller | None:
    return None


_route: Callable[[], Caller | None] = _no_caller  # replaced by install()


def original(entry: Entry) -> Callable[..., Any]:
    """litellm's own entry point, never the wrap (installed or not)."""
    with _install_lock:
        if entry in _originals:
            return _originals[entry]
    fn: Callable[..., Any] = getattr(import_litellm(), entry)
    return fn


def _as_request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    merged = dict(kwargs)
    for name, value in zip(("model", "messages"), args, strict=False):
        merged.setdefault(name, value)
    return merged


async def _aiter(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def install(route: Callable[[], Caller | None]) -> None:
    """Wrap litellm's entry points (once per process) so calls go to ``route()``'s caller.

    The latest route wins; capture installs the one that finds the open scope.
    """
    global _route
    with _install_lock:
        _route = route
        if _originals:
            return
        litellm = import_litellm()
        _originals["completion"] = litellm.completion
        _originals["acompletion"] = litellm.acompletion

        def completion(*args: Any, **kwargs: Any) -> Any:
            caller = _route()
            if caller is None:
                return _originals["completion"](*args, **kwargs)
            request = _as_request(args, kwargs)
            response = caller.complete(request)
            return iter(response) if request.get("stream") else response

        async def acompletion(*args: Any, **kwargs: Any) -> Any:
            caller = _route()
            if caller is None:
                return await _originals["acompletion"](*args, **kwargs)
            request = _as_request(args, kwargs)
            response = await caller.acomplete(request)
            return _aiter(response) if request.get("stream") else response

        litellm.completion = completion
        litellm.acompletion = acompletion
        _watch_calls_past_the_wrap(litellm)


class LiteLLMTransport:
    """Live calls through litellm, retried under ``infra``'s policy (ours is the only retry layer)."""

    def __init__(self, infra: InfraLog | None = None, gate: Gate | None = None) -> None:
        self.infra = infra if infra is not None else InfraLog(None)
        self.gate = gate

    def complete(self, request: Request) -> Answer:
        stream = self._prepare(request)

        def send() -> Answer:
            began = time.monotonic()
            with _our_call():
                response = original("completion")(**self._attempt(request))
            # A stream is read to its end inside the retry loop, so a fault
            # mid-stream (truncated, malformed event) is retried like any other.
            chunks = _read(response, began, self.infra.attempt_deadline()) if stream else None
            return self._answer(request, chunks if stream else response)

        return self.infra.call(
            lambda: through_gate(self.gate, request, self.infra, send), _endpoint(request)
        )

    async def acomplete(self, request: Request) -> Answer:
        stream = self._prepare(request)
        self.infra.track(asyncio.current_task())

        async def send() -> Answer:
            with _our_call():
                response = await original("acompletion")(**self._attempt(request))
            return self._answer(request, [c async for c in response] if stream else response)

        return await self.infra.acall(
            lambda: athrough_gate(self.gate, request, self.infra, send), _endpoint(request)
        )

    def finish(self, error: BaseException | None) -> list[str]:
        return []

    def _prepare(self, request: Request) -> bool:
        """Ask for usage in streams and switch off the retries under ours; True for a stream."""
        stream = bool(request.get("stream"))
        # An endpoint may echo the key in an error we record or print, and the
        # variable it came from need not be named like a secret.
        register_secret(request.get("api_key"))
        if stream:
            request.setdefault("stream_options", {"include_usage": True})
        if self.infra.policy is not None:
            # Our RetryPolicy is the only retry layer: without this the openai SDK
            # (max_retries, default 2) and litellm (num_retries) retry underneath
            # it, multiplying the attempts and hiding them from the run's record.
            request["max_retries"] = 0
            request["num_retries"] = 0
        return stream

    def _attempt(self, request: Request) -> Request:
        """The request for one attempt: its timeout bounded by the policy and the run's deadline.

        litellm's own default timeout is 6,000 s: without one, a hung request
        would hold its run (and its thread) until the run's timeout, unretried.
        A copy, so the request the agent (or a recording) sees stays as sent.
        """
        timeout = self.infra.attempt_timeout(request.get("timeout"))
        return request if timeout is None else {**request, "timeout": timeout}

    @staticmethod
    def _answer(request: Request, response: Any) -> Answer:
        """The answer to one attempt; an answer without a usable choice is an endpoint fault."""
        whole = response
        if request.get("stream"):
            if not any(map(_from_the_model, response)):
                # litellm makes one empty "stop" chunk of a body it could not read as
                # events (a gateway's 200 with an error object): no answer, not an empty one.
                raise NoUsableChoice("the endpoint's stream carried no answer from the model")
            whole = import_litellm().stream_chunk_builder(
                response, messages=list(request.get("messages") or [])
            )
        if whole is None or not getattr(whole, "choices", None):
            kind = "stream" if request.get("stream") else "response"
            raise NoUsableChoice(f"the endpoint's {kind} holds no choice to read an answer from")
        return Answer(response, record_from_response(whole), getattr(whole, "id", None))


def _read(stream: Any, began: float, limit: float | None) -> list[Any]:
    """A sync stream's chunks, abandoned once the attempt has taken ``limit`` seconds in
    all: a stream that drips a chunk now and then never trips the read timeout. (A
    sync answer that is not streamed can only be bounded by that read timeout.)"""
    chunks = []
    for chunk in stream:
        chunks.append(chunk)
        if limit is not None and time.monotonic() - began > limit:
            with contextlib.suppress(Exception):
                stream.close()
            raise AttemptOverran(f"the attempt ran past its deadline of {limit:g} s")
    return chunks


def _from_the_model(chunk: Any) -> bool:
    """Whether a stream chunk carries anything a model sent: a role, text or a call."""
    for choice in getattr(chunk, "choices", None) or []:
        delta = getattr(choice, "delta", None)
        fields = ("role", "content", "tool_calls", "function_call")
        if any(getattr(delta, name, None) is not None for name in fields):
            return True
    return getattr(chunk, "usage", None) is not None


def _endpoint(request: Request) -> str:
    return endpoint_label(request.get("model"), request.get("api_base") or request.get("base_url"))
