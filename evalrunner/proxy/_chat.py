"""OpenAI Chat Completions (``POST /v1/chat/completions``): parsing and answers.

Answers from a live upstream go to the agent as litellm returned them; replayed
ones are rendered from the canonical record (or, for a recorded stream, the
chunks as they were received), so replay needs no upstream and no litellm call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalrunner.core._response import ResponseRecord, response_from_record, stream_from_record
from evalrunner.proxy._request import (
    Incoming,
    ModelRequest,
    bad_request,
    forwarded_params,
    require_list,
    require_object,
)
from evalrunner.proxy._sse import Event, encode


def parse_chat(body: Any) -> Incoming:
    """An OpenAI ``POST /v1/chat/completions`` body."""
    body = require_object(body)
    messages = require_list(body, "messages")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise bad_request("every message must be an object with a 'role'")
    if body.get("n") not in (None, 1):
        raise bad_request("only n=1 is supported by the evalrunner proxy")
    tools = body.get("tools") or []
    if not isinstance(tools, list) or any(
        not isinstance(t, dict) or t.get("type") != "function" for t in tools
    ):
        raise bad_request("'tools' must be a list of function tools")
    options = body.get("stream_options")
    request = ModelRequest.model_construct(
        api="chat",
        messages=[dict(m) for m in messages],
        tools=list(tools),
        tool_choice=body.get("tool_choice"),
        params=forwarded_params(body),
    )
    return Incoming(
        request=request,
        stream=bool(body.get("stream")),
        include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
        model=str(body.get("model") or ""),
    )


def chat_body(rec: ResponseRecord, n: int) -> dict[str, Any]:
    body: dict[str, Any] = response_from_record(rec, n).model_dump(exclude_none=True)
    return body


def chat_chunks(rec: ResponseRecord, n: int) -> list[dict[str, Any]]:
    return [c.model_dump(exclude_none=True) for c in stream_from_record(rec, n)]


def chat_stream(chunks: Sequence[dict[str, Any]], include_usage: bool) -> bytes:
    """The chunks as SSE; usage only when the agent asked for it (``stream_options``)."""
    if not include_usage:
        chunks = [{k: v for k, v in c.items() if k != "usage"} for c in chunks if c.get("choices")]
    return encode((Event(None, c) for c in chunks), done=True)


def chat_error(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
