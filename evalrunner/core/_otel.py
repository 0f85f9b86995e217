"""OpenTelemetry traces as ATIF trajectories: the GenAI semantic conventions' spans in.

An agent instrumented with OpenTelemetry (pydantic-ai, the OpenAI Agents SDK's processors,
OpenLLMetry, Logfire) exports spans that follow the GenAI semantic conventions: an
``invoke_agent`` span per agent run, a ``chat`` span per model call (its input and output
messages, model and token usage as ``gen_ai.*`` attributes) and an ``execute_tool`` span
per tool execution (its call id, arguments, result, and an error status where it raised).
This reads an OTLP JSON export (``{"resourceSpans": [...]}``, as the OTLP/HTTP JSON
encoding and the collector's file exporter write it) into the same steps the capture path
makes, through :class:`~evalrunner.core._steps.TrajectoryBuilder`: the first model call's
system and user messages, an agent step per model call, each tool execution as the
observation of the call that asked for it (an error marked ``extra.error``, its message
the content), an agent run nested in another (directly or inside a tool) as a sub-agent
trajectory, and a run whose agent span ended in error as crashed. What the spans say that
ATIF has no field for is kept under ``extra.otel`` (per span name, span by span), never
dropped, except ids (``*.id``: a conversation's or call's id differs every run).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from evalrunner._jsonio import JsonLines, json_in
from evalrunner.core._openinference import as_genai
from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.core._spans import ToolExecution, exception_text, execution_of, span_seconds
from evalrunner.core._steps import TrajectoryBuilder
from evalrunner.errors import TrajectoryError

__all__ = ["is_otlp", "tool_executions_from_otlp", "trajectory_from_otlp"]

_OP = "gen_ai.operation.name"
_MODEL_CALLS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_RUNS = frozenset({"invoke_agent", "create_agent"})
# Read into the steps; every other attribute is kept under extra.otel.
_READ = frozenset(
    {
        _OP,
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.tool.definitions",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.agent.name",
        # pydantic-ai's copy of the run's whole conversation on its agent span: the model
        # calls' spans give it step by step, and its provider call ids differ every run.
        "pydantic_ai.all_messages",
    }
)


_WHERE = frozenset({"server.address", "server.port"})
"""Where the client sent its request: the endpoint's, not the agent's behaviour (the model
it asked is kept)."""


@dataclass
class _Span:
    id: str
    parent: str | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    error: str | None
    """The status message (or the exception event's) of a span that ended in error."""
    children: list[_Span] = field(default_factory=list)

    @property
    def operation(self) -> str | None:
        op = self.attributes.get(_OP)
        return op if isinstance(op, str) else None


def is_otlp(doc: Any) -> bool:
    """Whether ``doc`` is an OTLP JSON trace export rather than an ATIF trajectory."""
    return isinstance(doc, dict) and "resourceSpans" in doc and "steps" not in doc


def otlp_lines(docs: Any) -> dict[str, Any] | None:
    """The documents of an OTLP JSON-lines file (one export a line, as the OpenTelemetry
    Collector's file exporter writes them) as one export of all their spans; None where
    they are not all exports."""
    if not isinstance(docs, JsonLines) or not all(is_otlp(doc) for doc in docs):
        return None
    return {"resourceSpans": [spans for doc in docs for spans in doc["resourceSpans"] or []]}


def trajectory_from_otlp(doc: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The ATIF trajectory of the agent run an OTLP JSON export holds (see the module doc).

    A trace with no GenAI span (no ``gen_ai.operation.name`` of a model call, tool or agent
    run) is refused: nothing in it is an agent's behaviour evalrunner can read.
    """
    spans = _spans(doc, label)
    _check_genai(spans, label)
    roots = [s for s in spans.values() if s.parent not in spans]
    agents = [s for s in _walk_all(roots) if s.operation in _AGENT_RUNS]
    top = [a for a in agents if not _inside_agent(a, spans)]
    if len(top) == 1:
        return _Reader(spans).agent(_unwrapped(top[0]))
    # No agent span (a bare model client), or several runs side by side: one trajectory.
    return _Reader(spans).agent(_Span("", None, "trace", 0, 0, {}, None, children=roots))


def tool_executions_from_otlp(doc: Mapping[str, Any], label: str) -> list[ToolExecution]:
    """The ``execute_tool`` spans of an OTLP JSON export, in the order they started: what
    a command agent's own spans, received beside the capture proxy, add to its run."""
    spans = sorted(_spans(doc, label).values(), key=lambda s: (s.start, s.end))
    return [
        execution_of(s.attributes, s.error, span_seconds(s.start, s.end))
        for s in spans
        if s.operation == "execute_tool"
    ]


def _unwrapped(run: _Span) -> _Span:
    """The agent run that ``run`` only wraps, if it does: a run with no model call or tool
    execution of its own around exactly one other (the OpenAI Agents SDK's "Agent workflow"
    around its agent, as OpenInference exports it) is that run, not an agent with one
    sub-agent."""
    own = list(_Reader.own(run))
    inner = [s for s in own if s.operation in _AGENT_RUNS]
    acts = [s for s in own if s.operation in _MODEL_CALLS or s.operation == "execute_tool"]
    if len(inner) == 1 and not acts and run.error is None:
        return _unwrapped(inner[0])
    return run


def _check_genai(spans: Mapping[str, _Span], label: str) -> None:
    if not any(s.operation for s in spans.values()):
        raise TrajectoryError(
            f"{label}: an OpenTelemetry trace with no GenAI span (no span has "
            f"{_OP!r} or an OpenInference kind of LLM, TOOL or AGENT): export the agent's "
            "spans from an instrumentation that follows the GenAI semantic conventions "
            "(pydantic-ai, OpenLLMetry, Logfire, ...) or OpenInference's"
        )


def _walk_all(spans: list[_Span]) -> Iterator[_Span]:
    for span in spans:
        yield span
        yield from _walk_all(span.children)


def _inside_agent(span: _Span, spans: Mapping[str, _Span]) -> bool:
    parent = spans.get(span.parent or "")
    while parent is not None:
        if parent.operation in _AGENT_RUNS:
            return True
        parent = spans.get(parent.parent or "")
    return False


class _Reader:
    """Spans into steps, one agent run at a time (sub-agents built first, then linked)."""

    def __init__(self, spans: Mapping[str, _Span]) -> None:
        self.spans = spans
        self.now = ""

    def agent(self, run: _Span) -> dict[str, Any]:
        name = str(run.attributes.get("gen_ai.agent.name") or "agent")
        builder = TrajectoryBuilder(name, trajectory_id=run.id or None, clock=lambda: self.now)
        subagents: list[dict[str, Any]] = []
        unread: dict[str, list[dict[str, Any]]] = {}
        for span in sorted(self.own(run), key=lambda s: (s.start, s.end)):
            self.now = _iso(span.start)
            if span.operation in _AGENT_RUNS:
                sub = self.agent(span)
                subagents.append(sub)
                builder.link_subagent(sub["trajectory_id"], _calling_tool(span, self.spans))
            else:
                _step(builder, span, unread)
        traj = builder.build(subagents=subagents)
        extra = traj.setdefault("extra", {})
        if run.error is not None:
            extra.update(crashed=True, exception={"type": "error", "message": run.error})
        if kept := _unread(run):
            unread.setdefault(run.name, []).append(kept)
        if unread:
            extra["otel"] = unread
        return traj

    @staticmethod
    def own(run: _Span) -> Iterator[_Span]:
        """The spans of ``run`` itself: its descendants down to (and including) any agent
        run nested in it, whose own spans are its sub-agent's."""
        for child in run.children:
            yield child
            if child.operation not in _AGENT_RUNS:
                yield from _Reader.own(child)


def _step(builder: TrajectoryBuilder, span: _Span, unread: dict[str, list[Any]]) -> None:
    """One span of the run's own into the steps (a model call, a tool's execution), and
    what of it no step holds into ``unread``."""
    if span.operation in _MODEL_CALLS:
        _model_call(builder, span)
    elif span.operation == "execute_tool":
        # Its result or (it raised) its error, marked, as the observation of its call.
        took = span_seconds(span.start, span.end)
        builder.add_tool_execution(execution_of(span.attributes, span.error, took))
    if kept := _unread(span):
        unread.setdefault(span.name, []).append(kept)


def _unread(span: _Span) -> dict[str, Any]:
    """A span's attributes no step field holds, ids and the server the client reached left
    out: a conversation's or a call's id differs every run, as does a capture proxy's port,
    and would make every golden differ (the step order keeps the ids' sense)."""
    return {
        k: v
        for k, v in span.attributes.items()
        if k not in _READ and k not in _WHERE and not k.endswith(".id")
    }


def _calling_tool(agent: _Span, spans: Mapping[str, _Span]) -> str | None:
    """The call id of the tool execution a nested agent run ran inside, if any."""
    parent = spans.get(agent.parent or "")
    while parent is not None and parent.operation not in _AGENT_RUNS:
        if parent.operation == "execute_tool":
            call_id = parent.attributes.get("gen_ai.tool.call.id")
            return str(call_id) if call_id else None
        parent = spans.get(parent.parent or "")
    return None


def _model_call(builder: TrajectoryBuilder, span: _Span) -> None:
    attrs = span.attributes
    tools = json_in(attrs.get("gen_ai.tool.definitions"))
    builder.ingest_messages(_sent(attrs), tools if isinstance(tools, list) else None)
    output = json_in(attrs.get("gen_ai.output.messages")) or []
    calls = _tool_calls(output)
    builder.add_response(
        ResponseRecord(
            content=_texts(output) or None,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else ("error" if span.error else "stop"),
            usage=_usage(attrs),
            model=_model(attrs),
        )
    )


def _sent(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a model call was sent, as chat messages: its system instructions, then its
    input messages."""
    messages = _chat_messages(json_in(attrs.get("gen_ai.input.messages")) or [])
    system = _texts(json_in(attrs.get("gen_ai.system_instructions")) or [])
    return [{"role": "system", "content": system}, *messages] if system else messages


def _tool_calls(output: list[Any]) -> list[ToolCallRecord]:
    return [
        ToolCallRecord(
            id=str(p.get("id") or ""),
            name=str(p.get("name") or ""),
            arguments=_arguments(p.get("arguments")),
        )
        for p in _parts(output)
        if p.get("type") == "tool_call"
    ]


def _parts(messages: list[Any]) -> Iterator[Mapping[str, Any]]:
    for message in messages:
        if isinstance(message, dict):
            yield from (p for p in message.get("parts") or [] if isinstance(p, dict))


def _usage(attrs: Mapping[str, Any]) -> Usage:
    cached = _count(attrs.get("gen_ai.usage.cache_read.input_tokens"))
    return Usage(
        prompt_tokens=_count(attrs.get("gen_ai.usage.input_tokens")),
        completion_tokens=_count(attrs.get("gen_ai.usage.output_tokens")),
        cached_tokens=cached or None,
    )


def _count(value: Any) -> int:
    """A token count as an exporter wrote it (an int, or its text); 0 where it is neither:
    a count nobody can read is not a reason to refuse the whole trace."""
    try:
        return max(int(value), 0) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _model(attrs: Mapping[str, Any]) -> str | None:
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    return str(model) if model else None


def _chat_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """GenAI messages (role + parts) as chat messages: text, and tool results as tool
    messages (assistant turns are the model calls' own steps)."""
    out: list[dict[str, Any]] = []
    for message in (m for m in messages if isinstance(m, dict)):
        out += [_tool_message(p) for p in message.get("parts") or [] if _is_tool_response(p)]
        text = _texts([message])
        if text and message.get("role") != "assistant":
            out.append({"role": message.get("role"), "content": text})
    return out


def _is_tool_response(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "tool_call_response"


def _tool_message(part: Mapping[str, Any]) -> dict[str, Any]:
    response = part.get("response", part.get("result"))
    content = response if isinstance(response, str) else json.dumps(response)
    return {"role": "tool", "tool_call_id": part.get("id"), "content": content}


def _texts(messages: list[Any]) -> str:
    """The text parts of GenAI messages (or of a bare list of parts), joined."""
    found: list[str] = []
    for item in messages:
        parts = item.get("parts") if isinstance(item, dict) and "parts" in item else [item]
        for part in parts or []:
            if isinstance(part, dict) and part.get("type") == "text":
                found.append(str(part.get("content", "")))
    return "\n".join(found)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _iso(unix_nano: int) -> str:
    """A span's start as ISO 8601 with microseconds (UTC)."""
    from datetime import datetime

    return datetime.fromtimestamp(unix_nano / 1e9, tz=UTC).isoformat()


# -- reading the OTLP JSON encoding -------------------------------------------------------


def _spans(doc: Mapping[str, Any], label: str) -> dict[str, _Span]:
    """Every span of the export by id, each with its children (in start order)."""
    try:
        found = {span.id: span for span in map(_span, _raw_spans(doc))}
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise TrajectoryError(f"{label}: not an OTLP JSON trace export ({exc!r})") from None
    for span in found.values():
        if span.parent in found:
            found[span.parent].children.append(span)
    for span in found.values():
        span.children.sort(key=lambda s: (s.start, s.end))
    return found


def _raw_spans(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for resource in doc.get("resourceSpans") or []:
        for scope in resource.get("scopeSpans") or []:
            yield from scope.get("spans") or []


def _span(raw: Mapping[str, Any]) -> _Span:
    status = raw.get("status") or {}
    failed = status.get("code") in ("STATUS_CODE_ERROR", 2)
    return _Span(
        id=_id(raw.get("spanId")),
        parent=_id(raw.get("parentSpanId")) or None,
        name=str(raw.get("name", "")),
        start=int(raw.get("startTimeUnixNano") or 0),
        end=int(raw.get("endTimeUnixNano") or 0),
        attributes=as_genai(_attributes(raw.get("attributes") or []), str(raw.get("name", ""))),
        error=_error(raw, status) if failed else None,
    )


def _error(raw: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    """What a failed span says went wrong: its exception event, else its status message."""
    raised = [_raised(e) for e in raw.get("events") or [] if e.get("name") == "exception"]
    return next((said for said in raised if said), None) or str(status.get("message") or "error")


def _raised(event: Mapping[str, Any]) -> str | None:
    """'RuntimeError: the atlas is offline', from an ``exception`` event."""
    return exception_text(_attributes(event.get("attributes") or [])) or None


def _id(value: Any) -> str:
    """A span id as hex (OTLP JSON writes ids as hex; protobuf's JSON mapping as base64)."""
    if not value:
        return ""
    text = str(value)
    if len(text) == 16 and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    return base64.b64decode(text).hex()


def _attributes(items: list[Any]) -> dict[str, Any]:
    return {str(item["key"]): _value(item.get("value") or {}) for item in items}


_SCALARS: dict[str, Any] = {
    "stringValue": str,
    "intValue": int,  # a string in OTLP JSON: 64-bit integers do not fit JSON numbers
    "doubleValue": float,
    "boolValue": bool,
}


def _value(value: Mapping[str, Any]) -> Any:
    """An OTLP AnyValue as a Python value."""
    for key, kind in _SCALARS.items():
        if key in value:
            return kind(value[key])
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values") or []]
    if "kvlistValue" in value:
        return _attributes(value["kvlistValue"].get("values") or [])
    return None
