"""OpenAI Responses API (``POST /v1/responses``) to and from the chat form.

litellm 1.110 can serve ``litellm.aresponses`` upstream, but for ``openai/``
models it calls the upstream's own ``/v1/responses``, which chat-only servers
(llama.cpp, vLLM before 0.10, the embedded model, most OpenAI-compatible
gateways) answer with 404; its chat bridge (``use_chat_completions_api``) is
private API. Replay must answer in Responses form offline anyway, so requests
are translated here into one chat completion and answers rendered from the
canonical record.

Covered: ``input`` as a string or as message / ``function_call`` /
``function_call_output`` items, ``instructions``, function tools,
``tool_choice``, ``max_output_tokens``, ``text.format`` (JSON schema),
``previous_response_id`` within the same run, plain and streamed answers
(text and function calls). Not covered: built-in tools (web / file search,
computer use, code interpreter, MCP), reasoning items and encrypted
reasoning, background mode, ``GET``/``DELETE`` of stored responses, images
in answers; these get a 400 naming the field.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from evalrunner.core._response import ResponseRecord
from evalrunner.proxy._request import (
    Incoming,
    ModelRequest,
    bad_request,
    require_object,
    unsupported,
)
from evalrunner.proxy._sse import Event

History = Callable[[str], list[dict[str, Any]] | None]

_TEXT_PARTS = ("input_text", "output_text", "text", "refusal")


def _part(part: Any) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": str(part.get("text") or part.get("refusal") or "")}
    if kind == "input_image" and part.get("image_url"):
        return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    raise unsupported(f"input content part {kind!r} is not supported by the proxy")


def _content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request("message content must be a string or a list of parts")
    parts = [_part(p) for p in content]
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _add_call(messages: list[dict[str, Any]], item: Mapping[str, Any]) -> None:
    call = {
        "id": str(item.get("call_id", "")),
        "type": "function",
        "function": {
            "name": str(item.get("name", "")),
            "arguments": str(item.get("arguments", "")),
        },
    }
    last = messages[-1] if messages else None
    if last is None or last.get("role") != "assistant":
        last = {"role": "assistant", "content": None}
        messages.append(last)
    last.setdefault("tool_calls", []).append(call)


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
    return str(output)


def _add_item(messages: list[dict[str, Any]], item: Any) -> None:
    if not isinstance(item, dict):
        raise bad_request("every input item must be an object")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise unsupported(f"input message role {role!r} is not supported")
        messages.append({"role": role, "content": _content(item.get("content", ""))})
    elif kind == "function_call":
        _add_call(messages, item)
    elif kind == "function_call_output":
        messages.append(
            {
                "role": "tool",
                "tool_call_id": str(item.get("call_id", "")),
                "content": _output_text(item.get("output", "")),
            }
        )
    elif kind != "reasoning":
        raise unsupported(f"input item type {kind!r} is not supported by the proxy")


def _tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else tool
        raise unsupported(f"tool type {kind!r} is not supported by the proxy (function tools only)")
    function: dict[str, Any] = {
        "name": tool.get("name"),
        "parameters": tool.get("parameters") or {},
    }
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> str | dict[str, Any] | None:
    if isinstance(choice, str):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return None


def _params(body: Mapping[str, Any]) -> dict[str, Any]:
    params = {
        k: body[k]
        for k in ("temperature", "top_p", "parallel_tool_calls")
        if body.get(k) is not None
    }
    if body.get("max_output_tokens") is not None:
        params["max_tokens"] = body["max_output_tokens"]
    response_format = _response_format((body.get("text") or {}).get("format") or {})
    if response_format is not None:
        params["response_format"] = response_format
    effort = (body.get("reasoning") or {}).get("effort")
    if effort:
        params["reasoning_effort"] = effort
    return params


def _response_format(fmt: Mapping[str, Any]) -> dict[str, Any] | None:
    """The chat ``response_format`` of a Responses ``text.format``; None for plain text."""
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    return None


def parse_responses(body: Any, history: History) -> Incoming:
    """A Responses API body, as a chat request; ``history`` resolves ``previous_response_id``."""
    body = require_object(body)
    if body.get("background"):
        raise unsupported(
            "'background' is not supported by the evalrunner proxy (it answers each request "
            "as it comes; stored responses cannot be polled)"
        )
    messages = _earlier(body.get("previous_response_id"), history)
    if body.get("instructions"):
        messages.insert(0, {"role": "system", "content": str(body["instructions"])})
    _add_input(messages, body.get("input"))
    request = ModelRequest.model_construct(
        api="responses",
        messages=messages,
        tools=[_tool(t) for t in body.get("tools") or []],
        tool_choice=_tool_choice(body.get("tool_choice")),
        params=_params(body),
    )
    instructions = 1 if body.get("instructions") else 0
    return Incoming(
        request, bool(body.get("stream")), True, str(body.get("model") or ""), instructions
    )


def _earlier(previous: Any, history: History) -> list[dict[str, Any]]:
    """The messages of the response ``previous_response_id`` continues (none without one)."""
    if not previous:
        return []
    earlier = history(str(previous))
    if earlier is None:
        raise bad_request(
            f"previous_response_id {previous!r} is unknown to this run of the proxy "
            "(only responses it gave in the same run can be continued)"
        )
    return [dict(m) for m in earlier]


def _add_input(messages: list[dict[str, Any]], raw: Any) -> None:
    """The body's ``input`` (a text or a list of items) added to ``messages``."""
    if isinstance(raw, str):
        messages.append({"role": "user", "content": raw})
    elif isinstance(raw, list):
        for item in raw:
            _add_item(messages, item)
    else:
        raise bad_request("'input' must be a string or a list of items")


# --- answers ------------------------------------------------------------------------


def _items(rec: ResponseRecord, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if rec.content or not rec.tool_calls:
        text = {"type": "output_text", "text": rec.content or "", "annotations": []}
        items.append(
            {
                "type": "message",
                "id": f"msg_evalrunner_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    for i, call in enumerate(rec.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_evalrunner_{n}_{i}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        )
    return items


def response_object(rec: ResponseRecord, n: int, model: str) -> dict[str, Any]:
    u = rec.usage
    usage = {
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens or 0},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }
    truncated = rec.finish_reason == "length"
    return {
        "id": f"resp_evalrunner_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "model": rec.model or model,
        "output": _items(rec, n),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        return [
            {"type": "response.output_item.added", "output_index": index,
             "item": {**item, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]},
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]  # fmt: skip
    part = item["content"][0]
    at = {**where, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **at, "delta": part["text"], "logprobs": []},
        {"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]  # fmt: skip


def response_events(rec: ResponseRecord, n: int, model: str) -> list[Event]:
    """The response as the SSE events the OpenAI SDKs accumulate."""
    final = response_object(rec, n, model)
    opening = {**final, "status": "in_progress", "output": [], "usage": None}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(final["output"]):
        payloads.extend(_item_events(index, item))
    payloads.append({"type": "response.completed", "response": final})
    return [Event(p["type"], {**p, "sequence_number": i}) for i, p in enumerate(payloads)]
