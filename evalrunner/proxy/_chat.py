"""OpenAI Chat Completions (``POST /v1/chat/completions``): parsing and answers.

Answers from a live upstream go to the agent as litellm returned them; replayed
ones are rendered from the canonical record (or, for a recorded stream, the
chunks as they were received), so replay needs no upstream and no litellm call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from evalrunner.core._response import ResponseRecord, message_dict, usage_dict
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
    tools = _function_tools(body.get("tools") or [])
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


def _function_tools(tools: Any) -> list[Any]:
    """A body's ``tools``, refused unless a list of function tools."""
    if not isinstance(tools, list) or any(
        not isinstance(t, dict) or t.get("type") != "function" for t in tools
    ):
        raise bad_request("'tools' must be a list of function tools")
    return tools


def chat_body(rec: ResponseRecord, n: int) -> dict[str, Any]:
    """A recorded response as an OpenAI chat completion, built as plain JSON: replay through
    the proxy needs no litellm (its import is most of a frozen session's CPU). Fields that
    are None are left out, as litellm's rendering did when the agent was recorded."""
    message = {k: v for k, v in message_dict(rec).items() if v is not None}
    choice = {"index": 0, "finish_reason": rec.finish_reason, "message": message}
    return _completion(rec, n, "chat.completion", choice)


def chat_chunks(rec: ResponseRecord, n: int) -> list[dict[str, Any]]:
    """The recorded response as two stream chunks: the text, then the calls, the finish and
    the usage."""
    first = {"index": 0, "delta": {"role": "assistant", "content": rec.content or ""}}
    whole = message_dict(rec)
    delta: dict[str, Any] = {}
    if rec.tool_calls:
        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(whole["tool_calls"])]
    if rec.reasoning:
        delta["reasoning_content"] = rec.reasoning
    last = {"index": 0, "finish_reason": rec.finish_reason, "delta": delta}
    head = _completion(rec, n, "chat.completion.chunk", first)
    del head["usage"]
    return [head, _completion(rec, n, "chat.completion.chunk", last)]


def _completion(rec: ResponseRecord, n: int, kind: str, choice: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"id": f"replay-{n}", "created": int(time.time())}
    if rec.model is not None:
        body["model"] = rec.model
    body.update(object=kind, choices=[choice], usage=usage_dict(rec))
    return body


def chat_stream(chunks: Sequence[dict[str, Any]], include_usage: bool) -> bytes:
    """The chunks as SSE; usage only when the agent asked for it (``stream_options``)."""
    if not include_usage:
        chunks = [{k: v for k, v in c.items() if k != "usage"} for c in chunks if c.get("choices")]
    return encode((Event(None, c) for c in chunks), done=True)


def chat_error(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
