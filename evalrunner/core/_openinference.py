"""OpenInference's span attributes read as the GenAI semantic conventions' (issue 56).

OpenInference instrumentors (Arize's, for the OpenAI and Anthropic clients, LangChain,
LlamaIndex, DSPy, smolagents, CrewAI, ...) mark each span with ``openinference.span.kind``
and flatten what it saw into attributes: an ``LLM`` span's messages as
``llm.input_messages.<i>.message.role`` / ``.content`` / ``.tool_calls.<k>.tool_call.*``,
its usage as ``llm.token_count.*``; a ``TOOL`` span's arguments and result as
``input.value`` and ``output.value``; an ``AGENT`` span around a run. :func:`as_genai`
turns those into the GenAI attributes :mod:`evalrunner.core._otel` reads (``chat``,
``execute_tool``, ``invoke_agent``), so both kinds of trace become the same steps. What
it maps is taken out of the span's attributes (the request and response bodies in
``input.value`` / ``output.value`` repeat the messages, with ids that differ every run);
the rest stays, for ``extra.otel``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalrunner._jsonio import json_in

__all__ = ["KIND", "as_genai", "is_tool_span"]

KIND = "openinference.span.kind"
_OP = "gen_ai.operation.name"
_VALUES = ("input.value", "input.mime_type", "output.value", "output.mime_type")
_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
# What is read into the GenAI attributes, and so not kept again; anything else stays.
_READ_MESSAGE = re.compile(
    r"^llm\.(input|output)_messages\.\d+\.message\.(role|content|tool_call_id"
    r"|contents\.\d+\.message_content\.(text|type)"
    r"|tool_calls\.\d+\.tool_call\.(id|function\.name|function\.arguments))$"
)
_READ_TOOL = re.compile(r"^llm\.tools\.\d+\.tool\.json_schema$")
_TOKENS = ("llm.token_count.prompt", "llm.token_count.completion")
_CACHE_READ = "llm.token_count.prompt_details.cache_read"
_PARAMETERS = "llm.invocation_parameters"
_ADDRESSES = frozenset({"base_url", "api_base", "baseURL", "endpoint"})
_MAPPED = frozenset(
    {*_VALUES, *_TOKENS, _CACHE_READ, "llm.model_name", "tool.name", "tool_call.id", "agent.name"}
)


def is_tool_span(attributes: Mapping[str, Any]) -> bool:
    """Whether a span is OpenInference's ``TOOL`` span (and does not say its GenAI
    operation): told without reading the rest, for a span processor that sees every span
    a run ends (its model calls' messages are not translated only to be dropped)."""
    return str(attributes.get(KIND) or "").upper() == "TOOL" and _OP not in attributes


def as_genai(attributes: dict[str, Any], name: str) -> dict[str, Any]:
    """A span's attributes with OpenInference's ``LLM``, ``TOOL`` and ``AGENT`` spans read
    as GenAI's (``name``: the span's, an agent's name where it sets none); any other span,
    and a span that already says its GenAI operation, as they are."""
    kind = str(attributes.get(KIND) or "").upper()
    read = _READERS.get(kind)
    if read is None or _OP in attributes:
        return attributes
    kept = {k: v for k, v in attributes.items() if not _mapped(k)}
    if _PARAMETERS in kept:
        kept[_PARAMETERS] = _without_address(kept[_PARAMETERS])
    mapped = {k: v for k, v in read(attributes, name).items() if v is not None}
    return {**kept, **mapped}


def _without_address(parameters: Any) -> Any:
    """A model call's parameters without the address it was sent to (the OpenAI Agents
    SDK's instrumentation writes its client's ``base_url`` there: a proxy's or a test
    server's port differs every run, and where a request went is not what the agent did)."""
    found = json_in(parameters, parameters)
    if not isinstance(found, dict) or not _ADDRESSES & found.keys():
        return parameters
    return json.dumps({k: v for k, v in found.items() if k not in _ADDRESSES}, sort_keys=True)


def _mapped(key: str) -> bool:
    return key in _MAPPED or bool(_READ_MESSAGE.match(key) or _READ_TOOL.match(key))


def _model_call(attrs: Mapping[str, Any], name: str) -> dict[str, Any]:
    tools = [json_in(v, v) for k, v in _by_index(attrs, "llm.tools.") if _READ_TOOL.match(k)]
    return {
        _OP: "chat",
        "gen_ai.input.messages": json.dumps(_messages(attrs, "input")),
        "gen_ai.output.messages": json.dumps(_messages(attrs, "output")),
        "gen_ai.usage.input_tokens": attrs.get(_TOKENS[0]),
        "gen_ai.usage.output_tokens": attrs.get(_TOKENS[1]),
        "gen_ai.usage.cache_read.input_tokens": attrs.get(_CACHE_READ),
        "gen_ai.request.model": attrs.get("llm.model_name"),
        "gen_ai.tool.definitions": json.dumps(tools) if tools else None,
    }


def _tool_execution(attrs: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {
        _OP: "execute_tool",
        "gen_ai.tool.name": attrs.get("tool.name") or name,
        "gen_ai.tool.call.id": attrs.get("tool_call.id"),
        "gen_ai.tool.call.arguments": attrs.get("input.value"),
        "gen_ai.tool.call.result": attrs.get("output.value"),
    }


def _agent_run(attrs: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {_OP: "invoke_agent", "gen_ai.agent.name": attrs.get("agent.name") or name}


_READERS: dict[str, Callable[[Mapping[str, Any], str], dict[str, Any]]] = {
    "LLM": _model_call,
    "TOOL": _tool_execution,
    "AGENT": _agent_run,
}


def _messages(attrs: Mapping[str, Any], side: str) -> list[dict[str, Any]]:
    """The flattened ``llm.<side>_messages.<i>.message.*`` attributes as GenAI messages
    (role and parts), in their order."""
    flat: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        found = _MESSAGE.match(key)
        if found and found.group(1) == side:
            flat.setdefault(int(found.group(2)), {})[found.group(3)] = value
    return [_message(flat[i]) for i in sorted(flat)]


def _message(fields: Mapping[str, Any]) -> dict[str, Any]:
    """One message's fields (``role``, ``content``, ``contents.<j>...``, ``tool_calls.<k>...``,
    ``tool_call_id``) as a GenAI message."""
    role = str(fields.get("role") or "")
    text = fields.get("content")
    if text is None:
        contents = _by_index(fields, "contents.")
        text = "".join(str(v) for k, v in contents if _is_text_content(k, fields))
    if role == "tool":
        part = {"type": "tool_call_response", "id": fields.get("tool_call_id"), "response": text}
        return {"role": role, "parts": [part]}
    parts: list[dict[str, Any]] = [{"type": "text", "content": str(text)}] if text else []
    return {"role": role, "parts": parts + _calls(fields)}


def _is_text_content(key: str, fields: Mapping[str, Any]) -> bool:
    """Whether ``key`` is the text of a ``contents.<j>`` entry whose type is text."""
    if not (key.startswith("contents.") and key.endswith(".message_content.text")):
        return False
    kind = fields.get(key.removesuffix(".text") + ".type")
    return kind in (None, "text")


def _calls(fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A message's ``tool_calls.<k>.tool_call.*`` as GenAI tool-call parts, in order."""
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        if key.startswith("tool_calls."):
            index, _, rest = key.removeprefix("tool_calls.").partition(".tool_call.")
            if index.isdigit():
                calls.setdefault(int(index), {})[rest] = value
    return [
        {
            "type": "tool_call",
            "id": call.get("id"),
            "name": call.get("function.name"),
            "arguments": call.get("function.arguments"),
        }
        for _, call in sorted(calls.items())
    ]


def _by_index(attrs: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    """The attributes under ``prefix`` followed by an index, in the indices' order (10
    after 9, not after 1)."""
    found = [(k, v) for k, v in attrs.items() if k.startswith(prefix)]
    return sorted(found, key=lambda kv: _index(kv[0].removeprefix(prefix)))


def _index(rest: str) -> tuple[int, str]:
    head, _, tail = rest.partition(".")
    return (int(head), tail) if head.isdigit() else (-1, rest)
