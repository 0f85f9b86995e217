"""Forwarding one request upstream through litellm, under the live runs' retry policy.

Every call goes through ``litellm.acompletion`` (so any litellm model string
works, the embedded local model included), with litellm's and the openai
SDK's own retries off: the run's :class:`InfraLog` is the only retry layer,
as in live runs. A stream is read to its end inside that retry loop, so an
upstream stream cut off midway (or ending without a finish reason) is
retried like any other endpoint fault before the agent sees a byte of it.

The embedded llama.cpp server has quirks SDK agents do not expect; with
``llama_cpp`` set (automatic for the ``local`` model) the request is smoothed
before it leaves, and only then (recordings and fingerprints keep what the
agent sent):

- an assistant message with ``tool_calls`` and no content gets ``content: ""``
  (the server's chat template fails on a missing content: a 500);
- ``tools`` without ``tool_choice`` get ``tool_choice: "auto"`` (without it the
  server renders no tools and the model never calls one);
- ``tool_choice: "required"`` becomes ``"auto"`` (the server answers 500);
- a streamed request with tools is sent unstreamed (the server answers 200,
  then fails: "Automatic streaming tool choice is not supported"); the agent
  still gets a stream, rendered from the answer.

Separately, a stream that carries no answer at all (no text, no tool calls, no
usage) counts as truncated: litellm ends an empty stream with a made-up
``finish_reason: "stop"``, which would otherwise reach the agent as an empty
answer.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from evalrunner._litellm import import_litellm
from evalrunner.core._faults import (
    ENDPOINT_REFUSALS,
    InfraLog,
    NoUsableChoice,
    describe,
    endpoint_label,
    is_infra_error,
)
from evalrunner.core._response import ResponseRecord, record_from_response
from evalrunner.core._transport import athrough_gate
from evalrunner.endpoints._endpoints import LOCAL, Endpoint, api_key_for
from evalrunner.endpoints._local_model import MODEL_ALIAS
from evalrunner.errors import ConfigError
from evalrunner.proxy._anthropic_upstream import messages_body, record_from_message, why_litellm
from evalrunner.proxy._request import ModelRequest, ProxyHTTPError, unsupported

if TYPE_CHECKING:
    from collections.abc import Awaitable

    import aiohttp

    from evalrunner.core._transport import Gate

# Upstream answers that mean "no model behind this proxy" (a missing provider
# key, a wrong model name): the proxy's configuration, not the agent's doing.
_REFUSALS = ENDPOINT_REFUSALS | {"MissingKey"}
log = logging.getLogger("evalrunner.proxy")
Transport = Literal["direct", "anthropic", "litellm"]
_TIMEOUTS = frozenset(
    {"Timeout", "APITimeoutError", "TimeoutError", "ReadTimeout", "ConnectTimeout"}
)


@dataclass(frozen=True)
class Upstream:
    """Where the proxy sends model calls: a litellm model string and, optionally, its endpoint.

    ``model="local"`` is resolved by :class:`~evalrunner.proxy.ProxyServer` to the
    embedded SmolLM2 server. Provider keys come from the proxy's own
    environment as litellm reads them, or ``api_key``; never from the agent.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    llama_cpp: bool = False
    timeout_s: float = 600.0
    label: str | None = None  # what recordings show; the model string by default
    direct: bool | None = None
    """True: POST to the upstream ourselves (OpenAI-compatible ``api_base``; Anthropic
    Messages for an Anthropic model); False: through litellm; None: :attr:`transport` decides."""

    def __post_init__(self) -> None:
        if self.direct and not self.api_base and self.model != LOCAL and not self.anthropic:
            raise ConfigError(
                f"upstream {self.model!r}: the direct transport needs an OpenAI-compatible "
                "endpoint (--api-base), or drop --direct to go through litellm"
            )

    @property
    def name(self) -> str:
        return self.label or self.model

    @property
    def anthropic(self) -> bool:
        """An Anthropic model (litellm's ``anthropic/`` prefix): its API is Anthropic Messages."""
        return self.model.startswith("anthropic/")

    @property
    def takes_thinking(self) -> bool:
        """Whether an Anthropic ``thinking`` setting reaches the model: Anthropic's API, or a
        Claude model that litellm's translation carries it to (Bedrock, Vertex)."""
        return self.anthropic or ("claude" in self.model.lower() and self.transport == "litellm")

    @property
    def transport(self) -> Transport:
        """How calls reach the upstream, decided here only. Directly where the upstream's API
        is known for certain: ``direct`` (OpenAI Chat Completions: an ``openai/`` model at an
        ``api_base``, the embedded model, llama.cpp, vLLM, gateways) and ``anthropic``
        (Anthropic Messages, at api.anthropic.com or the ``api_base``): litellm's per-call
        work was most of the proxy's CPU (docs/proxy.md). Through ``litellm`` where a
        provider needs translating, or when ``direct=False``."""
        if self.direct is False:
            return "litellm"
        if self.anthropic:
            return "anthropic"
        if self.direct or (self.api_base and self.model.startswith("openai/")):
            return "direct"
        return "litellm"

    def route(self, request: ModelRequest) -> tuple[Transport, str | None]:
        """The transport one request takes, and why it is not :attr:`transport` (None when
        it is): a request an Anthropic upstream cannot be asked directly (``response_format``,
        ``reasoning_effort``, file or audio parts: only litellm's translation carries them,
        ``_anthropic.why_litellm``) goes through litellm."""
        if self.transport == "anthropic" and (why := why_litellm(request)):
            return "litellm", why
        return self.transport, None

    @property
    def described(self) -> str:
        """The model and how it is reached, as the proxy's start line names it."""
        how = {
            "direct": "direct",
            "anthropic": "direct, Anthropic Messages",
            "litellm": "litellm",
        }[self.transport]
        return f"{self.name} ({how})"

    @classmethod
    def from_endpoint(cls, endpoint: Endpoint, *, direct: bool | None = None) -> Upstream:
        """The upstream for a live run's endpoint (the embedded model gets its quirks smoothed)."""
        return cls(
            endpoint.model,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            # The embedded model, started here or by `serve-local` (its model alias).
            llama_cpp=endpoint.label == LOCAL or endpoint.model == f"openai/{MODEL_ALIAS}",
            label=endpoint.label,
            direct=direct,
        )


class MissingKey(Exception):
    """No key for an upstream that needs one: no model is reachable (the proxy's setup)."""


class TruncatedStream(ConnectionError):
    """The upstream stream ended before the answer did (an infrastructure fault)."""


@dataclass
class Forwarded:
    """The upstream answer: its record, plus what the agent is sent as is."""

    record: ResponseRecord
    chunks: list[dict[str, Any]] | None = None  # chat chunks as received, when streamed
    body: dict[str, Any] | None = None  # the chat completion as received, when not


def smooth_for_llama_cpp(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request with the embedded llama.cpp server's quirks worked around (see module doc)."""
    messages = [
        {**m, "content": ""}
        if m.get("role") == "assistant" and m.get("tool_calls") and not m.get("content")
        else m
        for m in kwargs["messages"]
    ]
    smoothed = {**kwargs, "messages": messages}
    if smoothed.get("tools") and smoothed.get("tool_choice") in (None, "required"):
        smoothed["tool_choice"] = "auto"
    return smoothed


def _kwargs(
    upstream: Upstream, request: ModelRequest, stream: bool, route: Transport
) -> dict[str, Any]:
    kwargs = request.chat_kwargs()
    if upstream.llama_cpp:
        kwargs = smooth_for_llama_cpp(kwargs)
    if route != "litellm":
        # Only the request itself goes on the wire; the model without litellm's prefix.
        prefix = "anthropic/" if route == "anthropic" else "openai/"
        kwargs["model"] = upstream.model.removeprefix(prefix)
    else:
        kwargs.update(
            model=upstream.model,
            drop_params=True,
            # Our retry policy is the only layer (see module doc).
            max_retries=0,
            num_retries=0,
        )
        if upstream.api_base:
            kwargs["api_base"] = upstream.api_base
        if api_key := api_key_for(upstream.model, upstream.api_base, upstream.api_key):
            kwargs["api_key"] = api_key
    if stream:
        kwargs.update(stream=True, stream_options={"include_usage": True})
    return kwargs


@dataclass
class _Assembly:
    """A streamed chat completion put back together, chunk by chunk."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    thinking: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, chunk: dict[str, Any]) -> None:
        self.model = self.model or chunk.get("model")
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            self._add_choice(choice)

    def _add_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or {}
        self.content.append(delta.get("content") or "")
        self.reasoning.append(delta.get("reasoning_content") or "")
        self.finish = choice.get("finish_reason") or self.finish
        for tc in delta.get("tool_calls") or []:
            self._add_call(tc)
        for piece in delta.get("thinking_blocks") or []:
            self._add_thinking(piece)

    def _add_thinking(self, piece: dict[str, Any]) -> None:
        # litellm streams an Anthropic thinking block in pieces keyed by the block's index:
        # its text in parts, its signature (or a redacted block's data) once.
        block = self.thinking.setdefault(
            int(piece.get("index") or 0), {"type": piece.get("type") or "thinking"}
        )
        if block["type"] == "thinking":
            block["thinking"] = block.get("thinking", "") + (piece.get("thinking") or "")
        for key in ("signature", "data"):
            if piece.get(key):
                block[key] = piece[key]

    def _add_call(self, tc: dict[str, Any]) -> None:
        # Tool calls arrive in pieces keyed by index: id and name once, arguments in parts.
        call = self.calls.setdefault(
            int(tc.get("index") or 0), {"id": "", "name": "", "arguments": ""}
        )
        function = tc.get("function") or {}
        call["id"] = tc.get("id") or call["id"]
        call["name"] += function.get("name") or ""
        call["arguments"] += function.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        return {
            "content": "".join(self.content) or None,
            "reasoning_content": "".join(self.reasoning) or None,
            "tool_calls": [
                {"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}
                for _, c in sorted(self.calls.items())
            ],
            "thinking_blocks": [b for _, b in sorted(self.thinking.items())],
        }


def record_from_chunks(chunks: list[dict[str, Any]]) -> ResponseRecord:
    """The record of a streamed chat completion, from its chunks as received.

    Raises :class:`TruncatedStream` when no chunk carried a finish reason (the
    stream stopped before the answer did) or the stream carried no answer at all.
    """
    stream = _Assembly()
    for chunk in chunks:
        stream.add(chunk)
    if stream.finish is None:
        raise TruncatedStream("the upstream stream ended without a finish reason")
    message = stream.message()
    if not (stream.usage or stream.calls or message["content"] or message["reasoning_content"]):
        # litellm closes an empty stream (a server that failed after its 200)
        # with a made-up finish reason; an answer of nothing at all is no answer.
        raise TruncatedStream("the upstream stream carried no answer (no text, calls or usage)")
    choice = {"message": message, "finish_reason": stream.finish}
    return record_from_response({"model": stream.model, "usage": stream.usage, "choices": [choice]})


async def _via_direct(
    upstream: Upstream,
    session: aiohttp.ClientSession,
    kwargs: dict[str, Any],
    stream: bool,
    timeout: float,
) -> Forwarded:
    from evalrunner.proxy._direct import post_chat

    assert upstream.api_base is not None  # checked at construction
    # The key litellm would have sent: the upstream's, else OPENAI_API_KEY, else (a server
    # of the user's own) the keyless placeholder.
    key = api_key_for(upstream.model, upstream.api_base, upstream.api_key)
    got = await post_chat(
        session,
        upstream.api_base,
        key or os.environ.get("OPENAI_API_KEY"),
        kwargs,
        stream,
        timeout,
    )
    if isinstance(got, list):
        return Forwarded(record_from_chunks(got), chunks=got)
    return Forwarded(record_from_response(_with_a_choice(got)), body=got)


async def _via_litellm(kwargs: dict[str, Any], stream: bool, timeout: float) -> Forwarded:
    response = await import_litellm().acompletion(**{**kwargs, "timeout": timeout})
    if stream:
        chunks = [c.model_dump(exclude_none=True) async for c in response]
        return Forwarded(record_from_chunks(chunks), chunks=chunks)
    body = _with_a_choice(response.model_dump(exclude_none=True))
    return Forwarded(record_from_response(response), body=body)


async def _via_anthropic(
    session: aiohttp.ClientSession,
    url: str,
    auth: dict[str, str],
    body: dict[str, Any],
    timeout: float,
) -> Forwarded:
    from evalrunner.proxy._direct import post_messages

    return Forwarded(record_from_message(await post_messages(session, url, auth, body, timeout)))


def _anthropic_send(
    upstream: Upstream, session: aiohttp.ClientSession, kwargs: dict[str, Any]
) -> functools.partial[Any]:
    """One Anthropic call, its body, address and credential made once (not per attempt)."""
    from evalrunner.proxy._direct import anthropic_auth, messages_url

    url = messages_url(upstream.api_base)
    auth = anthropic_auth(upstream.api_key)
    if not auth and url.startswith("https://api.anthropic.com/"):
        raise MissingKey(
            "neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set in the proxy's "
            "environment (or give the key's variable with --api-key-env)"
        )
    body = messages_body(kwargs, kwargs["model"])
    return functools.partial(_via_anthropic, session, url, auth, body)


def _with_a_choice(body: dict[str, Any]) -> dict[str, Any]:
    """The body, if it holds a choice: one without is an endpoint fault, retried like
    in process, never passed on for the agent to index ``choices[0]`` of."""
    if not body.get("choices"):
        raise NoUsableChoice("the upstream response holds no choice to read an answer from")
    return body


async def forward(
    upstream: Upstream,
    request: ModelRequest,
    stream: bool,
    infra: InfraLog,
    session: aiohttp.ClientSession | None = None,
    gate: Gate | None = None,
) -> Forwarded:
    """Ask upstream, retrying infrastructure faults; raises what survived the retries.

    ``session`` is the proxy's connection pool, used by the direct transport.
    ``gate``: the night's shared rate limit for this model, asked before every
    attempt (its wait is added to ``infra.rate_wait_s``) and told of every 429.
    """
    _refuse_what_cannot_reach(upstream, request)
    route, why = upstream.route(request)
    if why:
        _say_route(upstream.name, route, why)
    if (upstream.llama_cpp and request.tools) or route == "anthropic":
        # llama.cpp refuses to stream with tools (see module doc); an Anthropic upstream
        # is asked whole (``_direct.post_messages``). The agent still gets a stream,
        # rendered from the record.
        stream = False
    kwargs = _kwargs(upstream, request, stream, route)
    if route == "anthropic":
        assert session is not None  # the server opens one for a direct upstream
        send = _anthropic_send(upstream, session, kwargs)
    elif route == "direct":
        assert session is not None
        send = functools.partial(_via_direct, upstream, session, kwargs, stream)
    else:
        send = functools.partial(_via_litellm, kwargs, stream)

    def attempt() -> Awaitable[Forwarded]:
        # Each attempt waits for silence no longer than the retry policy's request timeout,
        # as a call in process does (InfraLog.attempt_timeout), so a hung upstream is
        # retried within the run instead of holding it to the attempt's whole deadline.
        timeout = cast(float, infra.attempt_timeout(upstream.timeout_s))
        return athrough_gate(gate, kwargs, infra, functools.partial(send, timeout))

    # Its faults name the upstream, as a call in process does ("... from MODEL at URL: ...").
    return await infra.acall(attempt, endpoint_label(upstream.model, upstream.api_base))


def _refuse_what_cannot_reach(upstream: Upstream, request: ModelRequest) -> None:
    """An Anthropic ``thinking`` setting towards a model that cannot take it is refused as
    evalrunner's limit: sent on, it would be dropped and the answer made without it."""
    if "thinking" in request.params and not upstream.takes_thinking:
        raise unsupported(
            f"'thinking' (extended thinking) reaches only an Anthropic model, and this "
            f"proxy's upstream is {upstream.name}: sent on, it would be dropped and the "
            "answer made without it; point the proxy at an anthropic/ model, or leave "
            "thinking out of the agent's requests"
        )


@functools.cache
def _say_route(upstream: str, route: str, why: str) -> None:
    """Once per upstream and reason: a request left the default transport, and why."""
    log.warning(
        "evalrunner proxy: requests to %s with %s go through %s (the direct transport does "
        "not carry them)",
        upstream,
        why,
        route,
    )


def _infra_status(exc: BaseException) -> int:
    status = getattr(exc, "status_code", None)
    if status == 429 or status == 503:
        return int(status)
    if type(exc).__name__ in _TIMEOUTS or isinstance(exc, TimeoutError):
        return 504
    return 502


def upstream_failure(exc: Exception, infra: InfraLog) -> tuple[ProxyHTTPError, bool]:
    """The HTTP error the agent gets for an upstream failure, and whether it is infrastructure.

    Infrastructure (faults that survived the retries, and refusals that mean no
    model is reachable) is marked as such in the body, and in the run's
    :class:`InfraLog`, so the runner classifies the run ``infra_error``.
    """
    status = getattr(exc, "status_code", None)
    if is_infra_error(exc) or type(exc).__name__ in _REFUSALS or not isinstance(status, int):
        infra.final_error = exc
        attempts = infra.attempts if is_infra_error(exc) else 1
        message = (
            "evalrunner proxy: upstream infrastructure fault, not agent behaviour "
            f"(gave up after {attempts} attempt{'s' if attempts != 1 else ''}): {describe(exc)}"
        )
        return ProxyHTTPError(_infra_status(exc), "upstream_infra_error", message), True
    message = f"evalrunner proxy: the upstream model refused the request: {describe(exc)}"
    return ProxyHTTPError(status, type(exc).__name__, message), False
