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

import functools
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalrunner.core._faults import NoUsableChoice
from evalrunner.core._response import (
    ResponseRecord,
    ToolCallRecord,
    Usage,
    normalize_finish_reason,
)
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
            raise unsupported(f"content block type {kind!r} is not supported by the proxy")
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
            raise unsupported(f"assistant content block type {kind!r} is not supported")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
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
        raise unsupported(
            "'thinking' (extended thinking) is not supported by the evalrunner proxy: its "
            "budget would be dropped, and a change to it could never fail a frozen test"
        )
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
        k: body[k] for k in ("max_tokens", "temperature", "top_p") if body.get(k) is not None
    }
    if body.get("stop_sequences"):
        params["stop"] = body["stop_sequences"]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("disable_parallel_tool_use"):
        params["parallel_tool_calls"] = False
    return params


# --- answers ------------------------------------------------------------------------


def _input(arguments: str) -> dict[str, Any]:
    # Anthropic tool input is an object; a weak model's broken JSON cannot be
    # one (the trajectory keeps the raw arguments, from the record).
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:  # broken JSON, or a number too long to convert
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


# --- upstream: a chat request to an Anthropic endpoint, and its answer back -----------

ANTHROPIC_VERSION = "2023-06-01"
_FALLBACK_MAX_TOKENS = 128_000  # litellm's DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS


@functools.cache
def _output_caps() -> dict[str, int]:
    """Anthropic models' output caps from litellm's bundled model map, read as data (29 ms,
    once; importing litellm would cost seconds). Empty if the file is not where it was."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    where = list(spec.submodule_search_locations or []) if spec else []
    try:
        path = Path(where[0]) / "model_prices_and_context_window_backup.json"
        data = json.loads(path.read_bytes())
    except (IndexError, OSError, ValueError):
        return {}
    return {
        name: entry["max_output_tokens"]
        for name, entry in data.items()
        if isinstance(entry, dict)
        and entry.get("litellm_provider") == "anthropic"
        and isinstance(entry.get("max_output_tokens"), int)
    }


def default_max_tokens(model: str) -> int:
    """What litellm sends as ``max_tokens`` (Anthropic requires one) when a request has none:
    the model's output cap, else ``DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS`` (128,000). The same
    value on both transports, so a request means the same whichever path it takes."""
    if cap := _output_caps().get(model):
        return cap
    try:
        return int(os.environ.get("DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS", _FALLBACK_MAX_TOKENS))
    except ValueError:
        return _FALLBACK_MAX_TOKENS


# Chat parameters only litellm's own translation carries (a JSON schema as a forced
# tool, a reasoning effort as a thinking budget): a request with one goes through litellm.
NEEDS_LITELLM = frozenset({"response_format", "reasoning_effort"})
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


EMPTY_TEXT = "[System: Empty message content sanitised to satisfy protocol]"
"""What litellm sends for an empty or blank text (Anthropic refuses blank text blocks)."""
OPERATOR_NOTE = (
    "Operator note (not from the user): the following was originally a "
    "mid-conversation system-role reminder."
)
"""litellm's lead-in for a system message met after the conversation started."""


def _chat_text(content: Any) -> str:
    """A chat message's string content (None: empty); lists of parts go to :func:`_blocks`."""
    return "" if content is None else str(content)


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text if text.strip() else EMPTY_TEXT}


def _blocks(content: Any) -> list[dict[str, Any]]:
    """A chat message's content as Anthropic blocks (a blank text as litellm sends it)."""
    if not isinstance(content, list):
        return [_text_block(_chat_text(content))]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url", "") if isinstance(image, dict) else image
            blocks.append(_image_block(str(url)))
        else:  # text: anything else goes through litellm (``why_litellm``)
            blocks.append(_text_block(str(part.get("text", ""))))
    return blocks or [_text_block("")]


def _turn(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        result = {
            "type": "tool_result",
            "tool_use_id": str(message.get("tool_call_id", "")),
            "content": _blocks(content) if isinstance(content, list) else _chat_text(content),
        }
        return "user", [result]
    if role != "assistant":
        return "user", _blocks(content)
    calls = [_tool_use(call) for call in message.get("tool_calls") or []]
    blocks = _blocks(content)
    if calls:  # beside tool calls a blank text is left out, not stood in for
        blocks = [b for b in blocks if b.get("text") != EMPTY_TEXT]
    return "assistant", blocks + calls


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call as an Anthropic ``tool_use`` block."""
    function = call.get("function") or {}
    return {
        "type": "tool_use",
        "id": str(call.get("id", "")),
        "name": str(function.get("name", "")),
        "input": _input(str(function.get("arguments") or "")),
    }


def why_litellm(request: ModelRequest) -> str | None:
    """What in ``request`` only litellm's Anthropic translation carries, if anything: a
    parameter (a JSON schema as a forced tool, a reasoning effort as a thinking budget), a
    content part other than text and images (files, audio), a tool that is no function."""
    if found := sorted(NEEDS_LITELLM.intersection(request.params)):
        return ", ".join(found)
    for message in request.messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("text", "image_url"):
                return f"{kind} content"
    if any(t.get("type") != "function" or "function" not in t for t in request.tools):
        return "tools other than functions"
    return None


def _anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        raise bad_request(f"tool type {tool.get('type')!r} cannot be sent to an Anthropic model")
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    out: dict[str, Any] = {"name": function.get("name"), "input_schema": schema}
    if function.get("description"):
        out["description"] = function["description"]
    return out


def _anthropic_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        out: dict[str, Any] | None = {"type": "tool", "name": name}
    else:
        kind = {"auto": "auto", "required": "any", "none": "none"}.get(str(choice))
        out = {"type": kind} if kind else None
    if parallel is False and (out is None or out["type"] != "none"):
        out = {**(out or {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


def _conversation(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The system blocks and the turns, as litellm makes them: leading system messages are
    the system prompt (a block per text); a later one joins the next user turn behind
    :data:`OPERATOR_NOTE`; turns of one role merge (Anthropic alternates); a final
    assistant turn loses its trailing blanks (Anthropic refuses them)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer") and not turns:
            system += [b for b in _blocks(message.get("content")) if b["text"] != EMPTY_TEXT]
            continue
        role, blocks = _later_turn(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    _trim_final_blanks(turns)
    return system, turns


def _trim_final_blanks(turns: list[dict[str, Any]]) -> None:
    """A final assistant turn's text loses its trailing blanks (Anthropic refuses them)."""
    last = turns[-1] if turns else None
    if last and last["role"] == "assistant" and last["content"][-1].get("type") == "text":
        last["content"][-1] = _text_block(last["content"][-1]["text"].rstrip())


def _later_turn(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A message after the first turn as a turn: a system one joins the user's behind
    :data:`OPERATOR_NOTE`."""
    if message.get("role") in ("system", "developer"):
        return "user", [_text_block(OPERATOR_NOTE), *_blocks(message.get("content"))]
    return _turn(message)


def messages_body(kwargs: Mapping[str, Any], model: str) -> dict[str, Any]:
    """A chat request (``ModelRequest.chat_kwargs``) as an Anthropic ``/v1/messages`` body.

    System messages become ``system`` blocks; tool results become ``tool_result`` blocks in
    a user turn; consecutive turns of one role are merged (Anthropic alternates).
    ``seed``, ``presence_penalty``, ``frequency_penalty`` and ``logit_bias`` have no
    Anthropic field and are left out, as litellm's ``drop_params`` does.
    """
    system, turns = _conversation(kwargs["messages"])
    max_tokens = kwargs.get("max_tokens") or kwargs.get("max_completion_tokens")
    body: dict[str, Any] = {
        "model": model,
        "messages": turns,
        "max_tokens": max_tokens or default_max_tokens(model),
    }
    if system:
        body["system"] = system
    body.update((k, kwargs[k]) for k in ("temperature", "top_p") if k in kwargs)
    if stop := kwargs.get("stop"):
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    body.update(_anthropic_tools(kwargs))
    return body


def _anthropic_tools(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A chat request's tools and tool choice as Anthropic's (nothing without tools)."""
    if not kwargs.get("tools"):
        return {}
    out: dict[str, Any] = {"tools": [_anthropic_tool(t) for t in kwargs["tools"]]}
    choice = _anthropic_choice(kwargs.get("tool_choice"), kwargs.get("parallel_tool_calls"))
    if choice:
        out["tool_choice"] = choice
    return out


def _record_usage(usage: Mapping[str, Any]) -> Usage:
    # As litellm counts them: cache writes and reads are prompt tokens, reads are cached.
    cached = usage.get("cache_read_input_tokens")
    prompt = (usage.get("input_tokens") or 0) + (cached or 0)
    prompt += usage.get("cache_creation_input_tokens") or 0
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=usage.get("output_tokens") or 0,
        cached_tokens=cached or None,
    )


def _joined(blocks: list[dict[str, Any]], kind: str) -> str | None:
    """The text of every ``kind`` block (its field is named as the block), or None."""
    return "".join(str(b.get(kind, "")) for b in blocks if b.get("type") == kind) or None


def record_from_message(body: Any) -> ResponseRecord:
    """The record of an Anthropic message as received; anything else is an endpoint fault."""
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list) or body.get("type") != "message":
        raise NoUsableChoice("the upstream answer is not an Anthropic message")
    blocks = [b for b in content if isinstance(b, dict)]
    calls = [
        ToolCallRecord(
            id=str(b.get("id", "")),
            name=str(b.get("name", "")),
            arguments=json.dumps(b.get("input") or {}),
        )
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    return ResponseRecord(
        content=_joined(blocks, "text"),
        reasoning=_joined(blocks, "thinking"),
        tool_calls=calls,
        finish_reason=normalize_finish_reason(_FINISH.get(body.get("stop_reason")), bool(calls)),
        usage=_record_usage(body.get("usage") or {}),
        model=body.get("model"),
    )
