"""A chat request to an Anthropic endpoint (``POST /v1/messages``), and its answer back.

The direct Anthropic transport (``_upstream``) sends what litellm's own Anthropic
translation would send for the same chat request (the tests hold it to that), with what
an Anthropic agent asked for that a chat request carries only in litellm's extensions
(``_anthropic``): ``cache_control`` on blocks, tools and messages, the ``thinking``
setting and ``top_k``, and the history's ``thinking_blocks``, all sent as given.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Any

from evalrunner.core._faults import NoUsableChoice
from evalrunner.core._response import (
    ResponseRecord,
    ToolCallRecord,
    Usage,
    normalize_finish_reason,
)
from evalrunner.endpoints._pricing import bundled_model_map
from evalrunner.proxy._anthropic import tool_input
from evalrunner.proxy._request import ModelRequest, bad_request

ANTHROPIC_VERSION = "2023-06-01"
_FALLBACK_MAX_TOKENS = 128_000  # litellm's DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS


@functools.cache
def _output_caps() -> dict[str, int]:
    """Anthropic models' output caps, from litellm's bundled model map."""
    return {
        name: entry["max_output_tokens"]
        for name, entry in bundled_model_map().items()
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


def _cached(block: dict[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    """``block`` with the chat part's ``cache_control``, if it has one."""
    if part.get("cache_control") is not None:
        block["cache_control"] = part["cache_control"]
    return block


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
            blocks.append(_cached(_image_block(str(url)), part))
        else:  # text: anything else goes through litellm (``why_litellm``)
            blocks.append(_cached(_text_block(str(part.get("text", ""))), part))
    return blocks or [_text_block("")]


def _turn(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    role, blocks = _turn_blocks(message)
    if message.get("cache_control") is not None and blocks:
        # A message's cache_control marks its last block, as litellm reads it.
        blocks[-1] = {**blocks[-1], "cache_control": message["cache_control"]}
    return role, blocks


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    return {
        "type": "tool_result",
        "tool_use_id": str(message.get("tool_call_id", "")),
        "content": _blocks(content) if isinstance(content, list) else _chat_text(content),
    }


def _turn_blocks(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        return "user", [_tool_result(message)]
    if role != "assistant":
        return "user", _blocks(content)
    return "assistant", _assistant_blocks(message)


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An assistant turn: its thinking blocks as sent, its text, its tool calls."""
    calls = [_tool_use(call) for call in message.get("tool_calls") or []]
    blocks = _blocks(message.get("content"))
    if calls:  # beside tool calls a blank text is left out, not stood in for
        blocks = [b for b in blocks if b.get("text") != EMPTY_TEXT]
    thinking = [dict(b) for b in message.get("thinking_blocks") or [] if isinstance(b, dict)]
    return thinking + blocks + calls


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call as an Anthropic ``tool_use`` block."""
    function = call.get("function") or {}
    block = {
        "type": "tool_use",
        "id": str(call.get("id", "")),
        "name": str(function.get("name", "")),
        "input": tool_input(str(function.get("arguments") or "")),
    }
    return _cached(block, call)


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
    return _cached(out, tool)


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
    body.update(
        (k, kwargs[k]) for k in ("temperature", "top_p", "top_k", "thinking") if k in kwargs
    )
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
    # As litellm counts them: cache writes and reads are prompt tokens, reads are cached;
    # the writes are kept too (they cost more than other input tokens).
    cached = usage.get("cache_read_input_tokens")
    written = usage.get("cache_creation_input_tokens")
    prompt = (usage.get("input_tokens") or 0) + (cached or 0) + (written or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=usage.get("output_tokens") or 0,
        cached_tokens=cached or None,
        cache_write_tokens=written or None,
    )


def _joined(blocks: list[dict[str, Any]], kind: str) -> str | None:
    """The text of every ``kind`` block (its field is named as the block), or None."""
    return "".join(str(b.get(kind, "")) for b in blocks if b.get("type") == kind) or None


def _tool_calls(blocks: list[dict[str, Any]]) -> list[ToolCallRecord]:
    return [
        ToolCallRecord(
            id=str(b.get("id", "")),
            name=str(b.get("name", "")),
            arguments=json.dumps(b.get("input") or {}),
        )
        for b in blocks
        if b.get("type") == "tool_use"
    ]


def record_from_message(body: Any) -> ResponseRecord:
    """The record of an Anthropic message as received; anything else is an endpoint fault."""
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list) or body.get("type") != "message":
        raise NoUsableChoice("the upstream answer is not an Anthropic message")
    blocks = [b for b in content if isinstance(b, dict)]
    calls = _tool_calls(blocks)
    thinking = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
    return ResponseRecord(
        thinking_blocks=thinking or None,
        content=_joined(blocks, "text"),
        reasoning=_joined(blocks, "thinking"),
        tool_calls=calls,
        finish_reason=normalize_finish_reason(_FINISH.get(body.get("stop_reason")), bool(calls)),
        usage=_record_usage(body.get("usage") or {}),
        model=body.get("model"),
    )
