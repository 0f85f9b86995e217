"""Anthropic Messages (``POST /v1/messages``) to and from the chat form.

Translated here rather than through litellm's Anthropic pass-through adapter:
replay must answer in Anthropic form offline, from the canonical record, so
the response direction is ours anyway; and the adapter is private litellm
API that moved between releases (``llms.anthropic.experimental_pass_through``
in older ones, ``llms.anthropic.messages.adapters`` in 1.110) and carries
hooks, interceptors and tool-name rewriting we would have to undo. Requests
therefore reach every upstream as one chat completion, like the other APIs.

Refused with a 400 naming it: the ``thinking`` setting (it changes the
answer and a chat request cannot carry it). Not carried: ``thinking`` and
``redacted_thinking`` blocks in the history, ``cache_control`` (a caching hint:
the answer is the same), ``top_k``, server tools (web search, code execution),
``is_error`` on tool results (the content is kept), citations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalrunner.core._response import ResponseRecord
from evalrunner.proxy._request import (
    Incoming,
    ModelRequest,
    bad_request,
    require_list,
    require_object,
)
from evalrunner.proxy._sse import Event

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    503: "overloaded_error",
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b
        )
    return ""


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    if source.get("type") == "url":
        url = str(source.get("url", ""))
    else:
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user_messages(blocks: list[Any]) -> list[dict[str, Any]]:
    """Tool results become ``tool`` messages (first, as chat requires); the rest one user message."""
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            tools.append(
                {
                    "role": "tool",
                    "tool_call_id": str(block.get("tool_use_id", "")),
                    "content": _text(block.get("content")),
                }
            )
        elif kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image":
            parts.append(_image_part(block))
        else:
            raise bad_request(f"content block type {kind!r} is not supported by the proxy")
    if not parts:
        return tools
    only_text = all(p["type"] == "text" for p in parts)
    content: Any = "\n".join(p["text"] for p in parts) if only_text else parts
    return [*tools, {"role": "user", "content": content}]


def _assistant_message(blocks: list[Any]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append(
                {
                    "id": str(block.get("id", "")),
                    "type": "function",
                    "function": {"name": str(block.get("name", "")), "arguments": arguments},
                }
            )
        elif kind not in ("thinking", "redacted_thinking"):
            raise bad_request(f"assistant content block type {kind!r} is not supported")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") not in (None, "custom") or "name" not in tool:
        kind = tool.get("type") if isinstance(tool, dict) else tool
        raise bad_request(f"tool {kind!r}: only client tools (name, input_schema) are supported")
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool.get("input_schema") or {}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> str | dict[str, Any] | None:
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text(body["system"])})
    for m in require_list(body, "messages"):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise bad_request("every message must have role 'user' or 'assistant'")
        content = m.get("content")
        if isinstance(content, str):
            messages.append({"role": m["role"], "content": content})
        elif not isinstance(content, list):
            raise bad_request("message content must be a string or a list of blocks")
        elif m["role"] == "assistant":
            messages.append(_assistant_message(content))
        else:
            messages.extend(_user_messages(content))
    return messages


def parse_anthropic(body: Any) -> Incoming:
    """An Anthropic ``POST /v1/messages`` body, as a chat request."""
    body = require_object(body)
    if body.get("thinking") and (body["thinking"] or {}).get("type") != "disabled":
        # It changes the answer, and a chat request cannot carry it: never drop it silently.
        raise bad_request(
            "'thinking' (extended thinking) is not supported by the evalrunner proxy: its "
            "budget would be dropped, and a change to it could never fail a frozen test"
        )
    messages = _messages(body)
    params: dict[str, Any] = {
        k: body[k] for k in ("max_tokens", "temperature", "top_p") if body.get(k) is not None
    }
    if body.get("stop_sequences"):
        params["stop"] = body["stop_sequences"]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("disable_parallel_tool_use"):
        params["parallel_tool_calls"] = False
    request = ModelRequest.model_construct(
        api="anthropic",
        messages=messages,
        tools=[_tool(t) for t in body.get("tools") or []],
        tool_choice=_tool_choice(choice),
        params=params,
    )
    return Incoming(request, bool(body.get("stream")), True, str(body.get("model") or ""))


# --- answers ------------------------------------------------------------------------


def _input(arguments: str) -> dict[str, Any]:
    # Anthropic tool input is an object; a weak model's broken JSON cannot be
    # one (the trajectory keeps the raw arguments, from the record).
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _content(rec: ResponseRecord) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if rec.content or not rec.tool_calls:
        blocks.append({"type": "text", "text": rec.content or ""})
    for call in rec.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        )
    return blocks


def _usage(rec: ResponseRecord) -> dict[str, int]:
    usage = {
        "input_tokens": rec.usage.prompt_tokens,
        "output_tokens": rec.usage.completion_tokens,
    }
    if rec.usage.cached_tokens is not None:
        usage["cache_read_input_tokens"] = rec.usage.cached_tokens
    return usage


def anthropic_message(rec: ResponseRecord, n: int, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_evalrunner_{n}",
        "type": "message",
        "role": "assistant",
        "model": rec.model or model,
        "content": _content(rec),
        "stop_reason": _STOP_REASONS.get(rec.finish_reason, "end_turn"),
        "stop_sequence": None,
        "usage": _usage(rec),
    }


def _block_events(index: int, block: Mapping[str, Any]) -> list[Event]:
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        Event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        Event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        ),
        Event("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def anthropic_events(rec: ResponseRecord, n: int, model: str) -> list[Event]:
    """The message as the SSE events the Anthropic SDKs accumulate."""
    message = anthropic_message(rec, n, model)
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events = [Event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        events.extend(_block_events(index, block))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(Event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(Event("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}
