"""A scriptable, fault-injecting OpenAI-compatible (and Anthropic Messages) endpoint on loopback.

Tests point litellm at it (``model="openai/<name>"``, ``api_base=ep.api_base``)
and script what each chat-completions request gets back, in order::

    with FakeEndpoint([Fault("429", retry_after=1), Reply("hi")]) as ep:
        litellm.completion(model="openai/fake", api_base=ep.api_base, ...)
        assert len(ep.requests) == 1

When the script runs out, ``responder(request_json, n)`` answers if given,
else ``default``. Faults cover what real providers do to clients: HTTP errors
(any status, e.g. ``"429"``, ``"500"``, ``"503"``), ``"slow"`` (answers after
the client has given up), ``"reset"`` (TCP RST, no response), ``"malformed"``
(200 whose JSON body, or SSE event when streaming, does not parse),
``"truncated_stream"`` (the answer starts, then the connection drops: SSE cut
off before ``[DONE]``, or half a JSON body when not streaming), ``"hang"``
(nothing is ever sent: the handler waits until the client gives up or the
endpoint stops), ``"stall_stream"`` (a stream starts, then nothing more is
sent, as ``"hang"``), ``"stream_error"`` (a stream starts, then an ``error``
event arrives mid-stream), ``"empty_choices"`` (a 200 whose ``choices``
list is empty; when streaming, chunks without choices) and ``"error_body"`` (a
200 whose body is an ``error`` object, as some gateways send; when streaming,
a stream whose only event is that error).

``abandoned`` counts the hung requests whose client closed the connection,
and ``abandoned_after`` holds how long each one waited first, so tests can see
that a client gave up on a hung request (and when).

``POST /v1/messages`` answers the same script in Anthropic Messages form (a
message, or its ``message_start`` ... ``message_stop`` events; errors in
Anthropic's shape): HTTP errors, ``slow``, ``reset``, ``malformed``,
``truncated_stream`` and ``hang``; the other faults answer a 500 there.

The server is threaded and accepts a deep backlog, so concurrent requests with
a fixed ``latency`` overlap instead of queueing.
"""

from __future__ import annotations

import json
import random
import socket
import string
import struct
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SPECIAL_FAULTS", "FakeEndpoint", "Fault", "Reply", "Responder"]


@dataclass(frozen=True)
class Reply:
    """A successful chat completion.

    ``tool_calls`` are ``(name, arguments_json)`` pairs; ids are generated like a
    real provider's. Token counts default to a rough chars/4 estimate.
    """

    content: str | None = "ok"
    tool_calls: Sequence[tuple[str, str]] = ()
    finish_reason: str | None = None  # None: "tool_calls" if tool_calls else "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency: float = 0.0  # seconds, on top of the endpoint's fixed latency
    # Anthropic Messages only: a signed thinking block first, and prompt-cache usage
    # (reads and writes, reported apart from input_tokens as Anthropic does).
    thinking: tuple[str, str] | None = None  # (text, signature)
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


SPECIAL_FAULTS = (
    "slow",
    "reset",
    "malformed",
    "truncated_stream",
    "hang",
    "stall_stream",
    "stream_error",
    "empty_choices",
    "error_body",
    "drip",
)
FaultKind = str
"""An HTTP status code as text ("429", "503"), or one of :data:`SPECIAL_FAULTS`."""


@dataclass(frozen=True)
class Fault:
    """A failure instead of a reply.

    ``kind`` is an HTTP status code as a string ("429", "500", "503", any other)
    or one of :data:`SPECIAL_FAULTS`.
    """

    kind: FaultKind
    retry_after: float | None = None  # sent as Retry-After on HTTP errors
    seconds: float = 5.0  # how long "slow" waits before answering
    message: str | None = None  # error message for HTTP errors

    def __post_init__(self) -> None:
        if self.kind not in SPECIAL_FAULTS and not (self.kind.isdigit() and len(self.kind) == 3):
            raise ValueError(f"unknown fault kind {self.kind!r}")


Entry = Reply | Fault
Responder = Callable[[dict[str, Any], int], Entry]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a burst of 32+ connects must not overflow the listen backlog
    endpoint: FakeEndpoint

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that give up (timeouts, truncated streams) make writes fail; expected here.
        pass


class FakeEndpoint:
    """OpenAI-compatible chat-completions server on 127.0.0.1 with scripted behaviour."""

    def __init__(
        self,
        script: Iterable[Entry] = (),
        *,
        responder: Responder | None = None,
        default: Entry = Reply(),
        latency: float = 0.0,
        models: Sequence[str] = ("fake",),
        seed: int | None = None,
        rpm: int | None = None,
        rpm_window_s: float = 60.0,
    ) -> None:
        self._script: list[Entry] = list(script)
        self.responder = responder
        self.default = default
        self.latency = latency
        self.models = tuple(models)
        self.requests: list[dict[str, Any]] = []  # chat-completions bodies, in arrival order
        self.headers: list[
            dict[str, str]
        ] = []  # their request headers (lower-case names), same order
        self.hits: Counter[str] = Counter()  # "METHOD /path" -> count
        self.abandoned_after: list[
            float
        ] = []  # hung requests the client gave up on: seconds waited
        # A provider's rate limit: at most rpm * window / 60 requests in any window of
        # ``rpm_window_s`` seconds; one more is answered 429 with Retry-After.
        self.rpm = rpm
        self.rpm_window_s = rpm_window_s
        self.accepted_at: list[float] = []  # time.monotonic() of each request let through
        self.rate_limited = 0  # requests answered 429 for going over rpm
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._rng = random.Random(seed)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> FakeEndpoint:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.endpoint = self
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes handlers sleeping in latency / "slow"
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses and script ----------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeEndpoint is not running")
        return int(self._server.server_address[1])

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *entries: Entry) -> None:
        """Append entries to the script (answered after those already queued)."""
        with self._lock:
            self._script.extend(entries)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def _over_rpm(self) -> Fault | None:
        """A 429 when one more request would go over ``rpm`` (call with the lock held)."""
        if self.rpm is None:
            return None
        now = time.monotonic()
        window = [t for t in self.accepted_at[-self.rpm :] if t > now - self.rpm_window_s]
        if len(window) >= self.rpm * self.rpm_window_s / 60.0:
            self.rate_limited += 1
            return Fault("429", retry_after=round(window[0] + self.rpm_window_s - now, 3))
        self.accepted_at.append(now)
        return None

    def _next_entry(self, body: dict[str, Any], headers: dict[str, str]) -> Entry:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            refused = self._over_rpm()
            if refused is not None:
                return refused
            scripted = self._script.pop(0) if self._script else None
        if scripted is not None:
            return scripted
        if self.responder is not None:
            return self.responder(body, n)
        return self.default

    def _record_hit(self, method: str, path: str) -> None:
        with self._lock:
            self.hits[f"{method} {path}"] += 1

    @property
    def abandoned(self) -> int:
        with self._lock:
            return len(self.abandoned_after)

    def _note_abandoned(self, seconds: float) -> None:
        with self._lock:
            self.abandoned_after.append(seconds)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _random_id(self, prefix: str, length: int) -> str:
        alphabet = string.ascii_letters + string.digits
        with self._lock:
            return prefix + "".join(self._rng.choices(alphabet, k=length))


# -- response bodies ---------------------------------------------------------------


def most_in_flight(spans: Sequence[tuple[float, float]]) -> int:
    """The most of these (start, end) requests in flight at one instant (the peak is at
    some request's start). Counting the requests each one overlaps instead would count two
    that ran one after the other beside a third as three at once."""
    return max(sum(1 for a, b in spans if a <= start < b) for start, _ in spans)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    if reply.prompt_tokens is not None:
        prompt = reply.prompt_tokens
    else:
        prompt = _estimate_tokens(json.dumps(body.get("messages", [])))
    if reply.completion_tokens is not None:
        completion = reply.completion_tokens
    else:
        completion = _estimate_tokens(
            (reply.content or "") + "".join(a for _, a in reply.tool_calls)
        )
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if reply.cache_read_tokens is not None:  # as OpenAI reports cached prompt tokens
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cache_read_tokens}
    return usage


def _finish_reason(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _tool_calls(ep: FakeEndpoint, reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": ep._random_id("call_", 24),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for name, arguments in reply.tool_calls
    ]


def _completion(ep: FakeEndpoint, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(ep, reply)
    return {
        "id": ep._random_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(reply),
            }
        ],
        "usage": _usage(reply, body),
    }


def _stream_chunks(
    ep: FakeEndpoint, reply: Reply, body: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    base = {
        "id": ep._random_id("chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": "" if reply.content is not None else None})
    content = reply.content or ""
    for start in range(0, len(content), 8):
        yield chunk({"content": content[start : start + 8]})
    for index, call in enumerate(_tool_calls(ep, reply)):
        fn = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": fn["name"], "arguments": ""}}]})
        args = fn["arguments"]
        for start in range(0, len(args), 8):
            piece = args[start : start + 8]
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(reply, body)}


# Faults whose chat shapes (choices, chunks) have no Anthropic form here.
_CHAT_ONLY_FAULTS = ("stall_stream", "stream_error", "empty_choices", "error_body", "drip")
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _message(ep: FakeEndpoint, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The reply as an Anthropic message (``POST /v1/messages``)."""
    content: list[dict[str, Any]] = []
    if reply.thinking:
        text, signature = reply.thinking
        content.append({"type": "thinking", "thinking": text, "signature": signature})
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for name, arguments in reply.tool_calls:
        tool_id = ep._random_id("toolu_", 24)
        content.append(
            {"type": "tool_use", "id": tool_id, "name": name, "input": json.loads(arguments)}
        )
    usage = _usage(reply, body)
    return {
        "id": ep._random_id("msg_", 24),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": content,
        "stop_reason": _STOP_REASONS.get(_finish_reason(reply), "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            **_cache_usage(reply),
        },
    }


def _cache_usage(reply: Reply) -> dict[str, int]:
    out = {}
    if reply.cache_read_tokens is not None:
        out["cache_read_input_tokens"] = reply.cache_read_tokens
    if reply.cache_write_tokens is not None:
        out["cache_creation_input_tokens"] = reply.cache_write_tokens
    return out


def _message_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The message as Anthropic's stream events, text and tool input in 8-character pieces."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        head: dict[str, Any]
        if block["type"] == "text":
            head, key, kind, text = (
                {"type": "text", "text": ""},
                "text",
                "text_delta",
                block["text"],
            )
        elif block["type"] == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            key, kind, text = "thinking", "thinking_delta", block["thinking"]
        else:
            head, key, kind = {**block, "input": {}}, "partial_json", "input_json_delta"
            text = json.dumps(block["input"])
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        for at in range(0, len(text), 8):
            delta: dict[str, Any] = {"type": kind, key: text[at : at + 8]}
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        if block["type"] == "thinking":
            signed = {"type": "signature_delta", "signature": block["signature"]}
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": signed},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop: dict[str, Any] = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    out = {"output_tokens": usage["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": out}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# -- HTTP handling -------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked SSE, like real providers
    # Headers and body go out in separate writes; with Nagle's algorithm on, the
    # body waits for the client's delayed ACK (~40 ms a call on Linux), which
    # would swamp any latency measured against this endpoint.
    disable_nagle_algorithm = True
    server: _Server
    anthropic = False  # this request is Anthropic Messages (POST /v1/messages)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def ep(self) -> FakeEndpoint:
        return self.server.endpoint

    def _path(self) -> str:
        # A request sent through a forward proxy names the whole URL (absolute form): this
        # endpoint then stands for the proxy, and counts what came through it.
        return urllib.parse.urlsplit(self.path).path.rstrip("/")

    def do_GET(self) -> None:
        path = self._path()
        self.ep._record_hit("GET", path)
        if path in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in self.ep.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(404, f"no route GET {path}")

    def do_POST(self) -> None:
        path = self._path()
        self.ep._record_hit("POST", path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.anthropic = path in ("/v1/messages", "/messages")
        if path not in ("/v1/chat/completions", "/chat/completions") and not self.anthropic:
            self._send_error(404, f"no route POST {path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self._send_error(400, f"request body is not JSON: {exc}")
            return
        entry = self.ep._next_entry(body, {k.lower(): v for k, v in self.headers.items()})
        self.ep._sleep(self.ep.latency)
        if isinstance(entry, Fault):
            self._fault(entry, body)
        else:
            self._reply(entry, body)

    def _reply(self, reply: Reply, body: dict[str, Any]) -> None:
        self.ep._sleep(reply.latency)
        if self.anthropic:
            message = _message(self.ep, reply, body)
            if body.get("stream"):
                self._send_events(_message_events(message))
            else:
                self._send_json(200, message)
        elif body.get("stream"):
            self._send_stream(_stream_chunks(self.ep, reply, body))
        else:
            self._send_json(200, _completion(self.ep, reply, body))

    def _fault(self, fault: Fault, body: dict[str, Any]) -> None:
        kind = fault.kind
        if self.anthropic and kind in _CHAT_ONLY_FAULTS:
            self._send_error(500, f"fake endpoint: fault {kind!r} is served on chat only")
        elif kind == "slow":
            self.ep._sleep(fault.seconds)
            default = self.ep.default if isinstance(self.ep.default, Reply) else Reply()
            self._reply(default, body)
        elif kind == "reset":
            self._reset()
        elif kind == "malformed":
            self._send_malformed(body)
        elif kind == "truncated_stream":
            self._send_truncated(body)
        elif kind == "hang":
            self._hang()
        elif kind == "stall_stream":
            self._send_stalled(body)
        elif kind == "stream_error":
            self._send_stream_error(body)
        elif kind == "empty_choices":
            self._send_empty_choices(body)
        elif kind == "error_body":
            self._send_error_body(body)
        elif kind == "drip":
            self._drip(body, fault.seconds)
        else:
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = f"{fault.retry_after:g}"
            self._send_error(int(kind), fault.message, headers)

    # -- writers ---------------------------------------------------------------------

    def _send_raw(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), "application/json", headers)

    def _send_error(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        error = {
            "message": message or f"fake endpoint error {status}",
            "type": _ERROR_TYPES.get(status, "api_error"),
            "param": None,
            "code": str(status),
        }
        if self.anthropic:  # Anthropic's error shape
            error = {"type": error["type"], "message": error["message"]}
            self._send_json(status, {"type": "error", "error": error}, headers)
            return
        self._send_json(status, {"error": error}, headers)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_stream(self, chunks: Iterable[dict[str, Any]]) -> None:
        self._start_stream()
        for obj in chunks:
            self._write_chunk(f"data: {json.dumps(obj)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # terminating zero-length chunk

    def _send_events(self, events: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self._start_stream()
        for name, obj in events:
            self._write_chunk(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())
        self._write_chunk(b"")

    def _send_malformed(self, body: dict[str, Any]) -> None:
        """A 200 whose body does not parse: broken JSON, or a broken SSE event."""
        if body.get("stream"):
            self._start_stream()
            self._write_chunk(b'data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\n')
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        else:
            self._send_raw(
                200, b'{"id": "chatcmpl-broken", "choices": [{"message": ', "application/json"
            )

    def _send_truncated(self, body: dict[str, Any]) -> None:
        """Start a valid answer, then drop the connection before it is complete."""
        reply = Reply("this answer is cut off mid-way")
        if body.get("stream") and self.anthropic:
            self._start_stream()
            start, *_ = _message_events(_message(self.ep, reply, body))
            self._write_chunk(f"event: {start[0]}\ndata: {json.dumps(start[1])}\n\n".encode())
            self._write_chunk(b'event: content_block_start\ndata: {"type": "cont')
        elif body.get("stream"):
            chunks = list(_stream_chunks(self.ep, reply, body))
            self._start_stream()
            for obj in chunks[:2]:
                self._write_chunk(f"data: {json.dumps(obj)}\n\n".encode())
            # Half an event, then the connection dies: no [DONE], no terminating chunk.
            self._write_chunk(b'data: {"id": "chatcmpl-trunc')
        else:
            answer = _message if self.anthropic else _completion
            payload = json.dumps(answer(self.ep, reply, body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
        self._reset()

    def _hang(self) -> None:
        """Send nothing until the client closes the connection or the endpoint stops."""
        started = time.monotonic()
        self.connection.settimeout(0.05)
        while not self.ep._stopping.is_set():
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    self.ep._note_abandoned(time.monotonic() - started)
                    break
            except TimeoutError:
                continue
            except OSError:
                self.ep._note_abandoned(time.monotonic() - started)
                break
        self.close_connection = True

    def _send_stalled(self, body: dict[str, Any]) -> None:
        """Start a stream (or a non-streamed answer's headers), then send nothing more."""
        if body.get("stream"):
            chunks = list(_stream_chunks(self.ep, Reply("this answer stalls"), body))
            self._start_stream()
            for obj in chunks[:2]:
                self._write_chunk(f"data: {json.dumps(obj)}\n\n".encode())
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-stall", ')
            self.wfile.flush()
        self._hang()

    def _drip(self, body: dict[str, Any], every: float) -> None:
        """Bytes now and then, forever (until the client goes or the endpoint stops)."""
        try:
            if body.get("stream"):
                role, text = list(_stream_chunks(self.ep, Reply("drip"), body))[:2]
                self._start_stream()
                self._write_chunk(f"data: {json.dumps(role)}\n\n".encode())
                while not self.ep._stopping.is_set():  # a word at a time, never a finish
                    self._write_chunk(f"data: {json.dumps(text)}\n\n".encode())
                    self.ep._sleep(every)
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                while not self.ep._stopping.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    self.ep._sleep(every)
        except OSError:
            pass  # the client gave up: what a drip is for
        self.close_connection = True

    def _send_stream_error(self, body: dict[str, Any]) -> None:
        """A stream that starts, then carries an error event (as providers send when overloaded)."""
        if not body.get("stream"):
            self._send_error(500, "the model failed mid-answer")
            return
        chunks = list(_stream_chunks(self.ep, Reply("this answer breaks"), body))
        self._start_stream()
        for obj in chunks[:2]:
            self._write_chunk(f"data: {json.dumps(obj)}\n\n".encode())
        error = {"error": {"message": "the model failed mid-answer", "type": "server_error"}}
        self._write_chunk(f"data: {json.dumps(error)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _send_error_body(self, body: dict[str, Any]) -> None:
        """A 200 that carries an error object instead of a completion, as JSON even when a
        stream was asked for (a gateway's answer): a client reads no event from it."""
        error = {"error": {"message": "upstream overloaded", "type": "server_error", "code": 503}}
        self._send_json(200, error)

    def _send_empty_choices(self, body: dict[str, Any]) -> None:
        """A 200 without a single choice: nothing the agent could read an answer from."""
        completion = _completion(self.ep, Reply("unused"), body)
        completion["choices"] = []
        if not body.get("stream"):
            self._send_json(200, completion)
            return
        base = {k: v for k, v in completion.items() if k not in ("usage", "object")}
        chunks = [{**base, "object": "chat.completion.chunk", "choices": []}]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**chunks[0], "usage": completion["usage"]})
        self._send_stream(chunks)

    def _reset(self) -> None:
        """Abort the connection with a TCP RST instead of a response."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True
