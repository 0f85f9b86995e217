"""The proxy's HTTP face: a Starlette app speaking OpenAI and Anthropic.

Routes, under ``/runs/<run-id>`` (one run each) or bare (the ``default`` run),
with or without the ``/v1`` prefix:

- ``POST /v1/chat/completions``: OpenAI Chat Completions, plain and streamed;
- ``POST /v1/responses``: OpenAI Responses API, plain and streamed;
- ``POST /v1/messages``: Anthropic Messages, plain and streamed;
- ``GET /v1/models``: the upstream model, in a shape both SDK families read;
- ``POST /v1/traces``: OTLP/HTTP, the agent's own OpenTelemetry spans (JSON, or protobuf
  where ``opentelemetry-proto`` is installed): each ``execute_tool`` span joins the tool
  call it ran in the run's trajectory (:func:`~evalrunner.core._spans.with_tool_executions`).

Request headers are never read except for the proxy's own bearer token (and a trace
export's content type), and never forwarded or recorded. Every error goes back in the
calling API's own error format with ``x-should-retry: false``: the proxy has already retried
what was worth retrying, and SDK retries on top would multiply the attempts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from evalrunner._next import NextStep
from evalrunner.core._otel import tool_executions_from_otlp
from evalrunner.errors import ConfigError, FileFormatError, TrajectoryError
from evalrunner.proxy._anthropic import (
    anthropic_error,
    anthropic_events,
    anthropic_message,
    parse_anthropic,
)
from evalrunner.proxy._chat import chat_body, chat_chunks, chat_error, chat_stream, parse_chat
from evalrunner.proxy._direct import new_session
from evalrunner.proxy._request import Incoming, ProxyHTTPError
from evalrunner.proxy._responses import parse_responses, response_events, response_object
from evalrunner.proxy._runs import DEFAULT_RUN, Answer, RunState
from evalrunner.proxy._sse import encode

_NO_RETRY = {"x-should-retry": "false"}
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body the proxy reads (images in base64 included); more is a 413."""
BODY_TIMEOUT_S = 30.0
"""How long a request body may take to arrive in all; a client that dawdles gets a 408."""
_SSE = "text/event-stream"


class RunLookup(Protocol):
    """What the app needs from the server: a run by id (opened on first use)."""

    def run_for_request(self, run_id: str) -> RunState: ...

    def open_run_named(self, run_id: str) -> RunState | None:
        """The run ``run_id`` when it is open, never opening one."""
        ...

    def model_name(self, run_id: str) -> str: ...


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(data, ensure_ascii=False).encode()
    return Response(body, status, headers, media_type="application/json")


@dataclass(frozen=True)
class Api:
    """One wire format: how to read its requests and write its answers and errors."""

    parse: Callable[[Any, RunState], Incoming]
    render: Callable[[Answer, Incoming], Response]
    error: Callable[[int, str, str], dict[str, Any]]


def _chat_render(answer: Answer, incoming: Incoming) -> Response:
    if incoming.stream:
        chunks = answer.chunks or chat_chunks(answer.record, answer.n)
        return Response(chat_stream(chunks, incoming.include_usage), media_type=_SSE)
    return _json(answer.body or chat_body(answer.record, answer.n))


def _anthropic_render(answer: Answer, incoming: Incoming) -> Response:
    if incoming.stream:
        events = anthropic_events(answer.record, answer.n, incoming.model)
        return Response(encode(events), media_type=_SSE)
    return _json(anthropic_message(answer.record, answer.n, incoming.model))


def _responses_render(answer: Answer, incoming: Incoming) -> Response:
    if incoming.stream:
        events = response_events(answer.record, answer.n, incoming.model)
        return Response(encode(events), media_type=_SSE)
    return _json(response_object(answer.record, answer.n, incoming.model))


CHAT = Api(lambda body, run: parse_chat(body), _chat_render, chat_error)
ANTHROPIC = Api(
    lambda body, run: parse_anthropic(body),
    _anthropic_render,
    lambda status, kind, message: anthropic_error(status, message),
)
RESPONSES = Api(
    lambda body, run: parse_responses(body, run.history.get),
    _responses_render,
    chat_error,
)


def _token_ok(request: Request, token: str | None) -> bool:
    if token is None:
        return True
    auth = request.headers.get("authorization", "")
    given = (
        auth[7:].strip() if auth[:7].lower() == "bearer " else request.headers.get("x-api-key", "")
    )
    return hmac.compare_digest(given.encode(), token.encode())


async def _body(request: Request, limit: int) -> bytes:
    too_big = ProxyHTTPError(
        413,
        "request_too_large",
        f"request body over the proxy's limit of {limit} bytes "
        f"({NextStep('proxy', options=('--max-body-mb',))})",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_big
                chunks.append(chunk)
    except TimeoutError:
        raise ProxyHTTPError(
            408, "request_timeout", f"request body not received within {BODY_TIMEOUT_S:g} s"
        ) from None
    except ClientDisconnect:
        # The client went away mid-body: nobody to answer, nothing to log a traceback for.
        raise ProxyHTTPError(400, "client_disconnected", "client disconnected") from None
    return b"".join(chunks)


def _otlp(raw: bytes, protobuf: bool) -> Any:
    """An OTLP/HTTP trace export's body as its JSON mapping."""
    if not protobuf:
        return json.loads(raw or b"null")
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise ValueError(
            "protobuf needs opentelemetry-proto installed beside evalrunner; "
            "or set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"
        ) from None
    from google.protobuf.message import DecodeError

    try:
        return MessageToDict(ExportTraceServiceRequest.FromString(raw))
    except DecodeError as exc:
        raise ValueError(f"not an OTLP protobuf export ({exc})") from None


def build_app(runs: RunLookup, token: str | None, max_body: int = MAX_BODY_BYTES) -> Starlette:
    """The ASGI app; ``token`` (when set) must come as a bearer token or ``x-api-key``.

    A body over ``max_body`` bytes is refused before it is all read, so a stray
    upload cannot grow the proxy's memory.
    """

    def guarded(api: Api, handler: Callable[[Request, Api], Awaitable[Response]]) -> Any:
        async def endpoint(request: Request) -> Response:
            if not _token_ok(request, token):
                message = "evalrunner proxy: missing or wrong bearer token"
                # Its run's record says why it had no call (an agent that printed this
                # answer and exited 0 went down as one that ignored the base URL). A run
                # the path names but nobody opened stays unopened: no token, no run.
                run = runs.open_run_named(request.path_params.get("run_id", DEFAULT_RUN))
                if run is not None:
                    run.refused(401, "no bearer token or x-api-key, or not the one it was given")
                return _json(api.error(401, "authentication_error", message), 401, _NO_RETRY)
            try:
                return await handler(request, api)
            except ProxyHTTPError as err:
                return _json(api.error(err.status, err.kind, err.message), err.status, _NO_RETRY)
            except asyncio.CancelledError:
                # The call's run was finished (its agent timed out or was stopped) or the
                # server is stopping, with the upstream still to answer: the caller is gone
                # or going. An answer, not a traceback in the log for a run that ended.
                if (task := asyncio.current_task()) is not None:
                    task.uncancel()
                message = "evalrunner proxy: the run ended before the upstream answered"
                return _json(api.error(503, "run_ended", message), 503, _NO_RETRY)

        return endpoint

    async def call(request: Request, api: Api) -> Response:
        run = _run(request)
        raw = await _body(request, max_body)
        try:
            body = json.loads(raw or b"null")
        except ValueError as exc:  # not JSON, not UTF-8, or a number too long to convert
            raise ProxyHTTPError(400, "invalid_request_error", f"body is not JSON: {exc}") from None
        except RecursionError:
            raise ProxyHTTPError(
                400, "invalid_request_error", "body is JSON nested too deeply to read"
            ) from None
        try:
            incoming = api.parse(body, run)
        except ProxyHTTPError as err:
            run.refused(err.status, err.message, err.unsupported)  # the run's record says why
            raise
        answer = await run.call(incoming, request.app.state.session)
        return api.render(answer, incoming)

    async def models(request: Request, api: Api) -> Response:
        run_id = request.path_params.get("run_id", DEFAULT_RUN)
        _run(request)
        name = runs.model_name(run_id)
        model = {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "evalrunner-proxy",
            "type": "model",
            "display_name": name,
            "created_at": "1970-01-01T00:00:00Z",
        }
        return _json(
            {
                "object": "list",
                "data": [model],
                "has_more": False,
                "first_id": name,
                "last_id": name,
            }
        )

    async def traces(request: Request, api: Api) -> Response:
        run = _run(request)
        raw = await _body(request, max_body)
        protobuf = "protobuf" in request.headers.get("content-type", "")
        try:
            run.spans_received(tool_executions_from_otlp(_otlp(raw, protobuf), "trace export"))
        except (TrajectoryError, ValueError, RecursionError) as exc:
            message = f"trace export: {exc} (send OTLP/HTTP JSON or protobuf)"
            run.refused(400, message)
            raise ProxyHTTPError(400, "invalid_request_error", message) from None
        if protobuf:  # an empty ExportTraceServiceResponse
            return Response(b"", 200, media_type="application/x-protobuf")
        return _json({})

    def _run(request: Request) -> RunState:
        try:
            return runs.run_for_request(request.path_params.get("run_id", DEFAULT_RUN))
        except FileFormatError as err:  # its recording was damaged after the proxy started
            raise ProxyHTTPError(400, "malformed_recording", str(err)) from None
        except ConfigError as err:
            raise ProxyHTTPError(404, "not_found_error", str(err)) from None

    routes = []
    for prefix in ("/runs/{run_id:path}", ""):
        for version in ("/v1", ""):
            base = prefix + version
            routes += [
                Route(base + "/chat/completions", guarded(CHAT, call), methods=["POST"]),
                Route(base + "/responses", guarded(RESPONSES, call), methods=["POST"]),
                Route(base + "/messages", guarded(ANTHROPIC, call), methods=["POST"]),
                Route(base + "/models", guarded(CHAT, models), methods=["GET"]),
                Route(base + "/traces", guarded(CHAT, traces), methods=["POST"]),
            ]

    async def unserved(request: Request, exc: Exception) -> Response:
        # Every answer in the calling API's own error format, a path we do not serve too.
        status = getattr(exc, "status_code", 404)
        api = ANTHROPIC if "/messages" in request.url.path else CHAT
        message = (
            f"evalrunner proxy: {request.method} {request.url.path} is not served; it serves "
            f"POST {{base}}/chat/completions, /responses, /messages and /traces (OTLP), and "
            "GET {base}/models "
            "(embeddings, legacy completions, stored responses and token counts are not "
            "captured)"
        )
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        return _json(api.error(status, kind, message), status, _NO_RETRY)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # One connection pool per server, on its event loop (the direct transport's).
        async with new_session() as session:
            app.state.session = session
            yield

    return Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={404: unserved, 405: unserved}
    )
