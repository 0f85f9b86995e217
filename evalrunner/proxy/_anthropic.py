"""Anthropic Messages (``POST /v1/messages``) to and from the chat form.

Translated here rather than through litellm's Anthropic pass-through adapter:
replay must answer in Anthropic form offline, from the canonical record, so
the response direction is ours anyway; and the adapter is private litellm
API that moved between releases (``llms.anthropic.experimental_pass_through``
in older ones, ``llms.anthropic.messages.adapters`` in 1.110) and carries
hooks, interceptors and tool-name rewriting we would have to undo. Requests
therefore reach every upstream as one chat completion, like the other APIs.

Carried in the chat form as litellm's Anthropic translation reads them, so they reach
an Anthropic upstream on either transport and are recorded (issue 53): ``cache_control``
on system, text, image and tool-result blocks and on tools (a part's or a message's
``cache_control``), the ``thinking`` setting and ``top_k`` (request parameters),
``thinking`` and ``redacted_thinking`` blocks in the history (an assistant message's
``thinking_blocks``), and the answer's thinking blocks with their signatures (handed
back as sent). An upstream other than Anthropic cannot take ``thinking``: such a request
is refused there, as evalrunner's limit (``_upstream.forward``). Not carried: server
tools (web search, code execution; refused), ``is_error`` on tool results (the content
is kept), citations.
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
    unsupported,
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


def _cached(part: dict[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """``part`` with the block's ``cache_control``, if it has one (a caching breakpoint:
    dropped, a live run would lose the provider's prompt cache)."""
    if block.get("cache_control") is not None:
        part["cache_control"] = block["cache_control"]
    return part


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    if source.get("type") == "url":
        url = str(source.get("url", ""))
    else:
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    return _cached({"type": "image_url", "image_url": {"url": url}}, block)


def _text_parts(parts: list[dict[str, Any]]) -> Any:
    """Parts as a chat content: one string where they are plain text, else the parts."""
    if all(p["type"] == "text" and "cache_control" not in p for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_message(block: Mapping[str, Any]) -> dict[str, Any]:
    message = {
        "role": "tool",
        "tool_call_id": str(block.get("tool_use_id", "")),
        "content": _text(block.get("content")),
    }
    return _cached(message, block)  # a message's cache_control marks its last block


def _user_messages(blocks: list[Any]) -> list[dict[str, Any]]:
    """Tool results become ``tool`` messages (first, as chat requires); the rest one user message."""
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            tools.append(_tool_message(block))
        elif kind == "text":
            parts.append(_cached({"type": "text", "text": str(block.get("text", ""))}, block))
        elif kind == "image":
            parts.append(_image_part(block))
        else:
            raise unsupported(f"content block type {kind!r} is not supported by the proxy")
    if not parts:
        return tools
    return [*tools, {"role": "user", "content": _text_parts(parts)}]


def _tool_call(block: Mapping[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
    call = {
        "id": str(block.get("id", "")),
        "type": "function",
        "function": {"name": str(block.get("name", "")), "arguments": arguments},
    }
    return _cached(call, block)


def _assistant_parts(blocks: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """An assistant turn's blocks by what they become: text parts, tool calls, thinking."""
    found: dict[str, list[dict[str, Any]]] = {"text": [], "tool_use": [], "thinking": []}
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            part = {"type": "text", "text": str(block.get("text", ""))}
            found["text"].append(_cached(part, block))
        elif kind == "tool_use":
            found["tool_use"].append(_tool_call(block))
        elif kind in ("thinking", "redacted_thinking"):
            found["thinking"].append(dict(block))  # signed by the provider: sent back as is
        else:
            raise unsupported(f"assistant content block type {kind!r} is not supported")
    return found


def _assistant_message(blocks: list[Any]) -> dict[str, Any]:
    parts = _assistant_parts(blocks)
    texts, calls, thinking = parts["text"], parts["tool_use"], parts["thinking"]
    content = _text_parts(texts) if texts else None
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["thinking_blocks"] = thinking
    return message


def _tool(tool: Any) -> dict[str, Any]:
    if isinstance(tool, dict) and tool.get("type") not in (None, "custom"):
        # A server tool (web search, code execution): Anthropic runs it, a chat model cannot.
        raise unsupported(
            f"tool {tool.get('type')!r}: only client tools (name, input_schema) are supported"
        )
    if not isinstance(tool, dict) or "name" not in tool:
        raise bad_request(f"tool {tool!r}: only client tools (name, input_schema) are supported")
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool.get("input_schema") or {}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return _cached({"type": "function", "function": function}, tool)


def _tool_choice(choice: Any) -> str | dict[str, Any] | None:
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


def _system(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The system prompt as a chat message (its blocks as parts where one is cached)."""
    system = body.get("system")
    if not isinstance(system, list):
        return [{"role": "system", "content": _text(system)}] if system else []
    blocks = [b for b in system if isinstance(b, dict) and "text" in b]
    parts = [_cached({"type": "text", "text": str(b["text"])}, b) for b in blocks]
    return [{"role": "system", "content": _text_parts(parts)}] if parts else []


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = _system(body)
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
    messages = _messages(body)
    request = ModelRequest.model_construct(
        api="anthropic",
        messages=messages,
        tools=[_tool(t) for t in body.get("tools") or []],
        tool_choice=_tool_choice(body.get("tool_choice")),
        params=_params(body),
    )
    return Incoming(request, bool(body.get("stream")), True, str(body.get("model") or ""))


def _params(body: Mapping[str, Any]) -> dict[str, Any]:
    """A body's sampling parameters as a chat request's."""
    params: dict[str, Any] = {
        k: body[k]
        for k in ("max_tokens", "temperature", "top_p", "top_k", "thinking")
        if body.get(k) is not None
    }
    if body.get("stop_sequences"):
        params["stop"] = body["stop_sequences"]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("disable_parallel_tool_use"):
        params["parallel_tool_calls"] = False
    return params


# --- answers ------------------------------------------------------------------------


def tool_input(arguments: str) -> dict[str, Any]:
    # Anthropic tool input is an object; a weak model's broken JSON cannot be
    # one (the trajectory keeps the raw arguments, from the record).
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:  # broken JSON, or a number too long to convert
        return {}
    return value if isinstance(value, dict) else {}


def _content(rec: ResponseRecord) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [dict(b) for b in rec.thinking_blocks or []]
    if rec.content or not rec.tool_calls:
        blocks.append({"type": "text", "text": rec.content or ""})
    for call in rec.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": tool_input(call.arguments),
            }
        )
    return blocks


def _usage(rec: ResponseRecord) -> dict[str, int]:
    # A record counts cache reads and writes into the prompt, as litellm does; Anthropic's
    # input_tokens are the rest (an agent reading 550 where the provider said 50 would
    # price its cached prompt ten times over).
    u = rec.usage
    usage = {
        "input_tokens": max(
            u.prompt_tokens - (u.cached_tokens or 0) - (u.cache_write_tokens or 0), 0
        ),
        "output_tokens": u.completion_tokens,
    }
    if u.cached_tokens is not None:
        usage["cache_read_input_tokens"] = u.cached_tokens
    if u.cache_write_tokens is not None:
        usage["cache_creation_input_tokens"] = u.cache_write_tokens
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


def _start_and_deltas(block: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A content block's start and the deltas the SDKs accumulate it from."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "tool_use":
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        return {**block, "input": {}}, [delta]
    if kind == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": block.get("thinking", "")}]
        if block.get("signature") is not None:
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    return dict(block), []  # redacted_thinking: whole at its start


def _block_events(index: int, block: Mapping[str, Any]) -> list[Event]:
    start, deltas = _start_and_deltas(block)
    return [
        Event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *(
            Event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in deltas
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
