"""Tool executions read from the agent's own OpenTelemetry spans while its run is captured.

The capture sees a tool only through the model: a call in one answer, its result in a
later request. An agent instrumented after the GenAI semantic conventions (pydantic-ai's
instrumentation, OpenLLMetry, Logfire, ...) also ends an ``execute_tool`` span per
execution, with the call's id, its result, and an error status where the tool raised.
:class:`ToolSpans` is a span processor that hands each such span, as it ends, to the
sink of the capture it ends in (a context variable, so concurrent runs never mix): the
capture scope's step builder (in-process agents), or a list the proxied run joins to
the proxy's trajectory afterwards (:func:`with_tool_executions`). A tool that raised
is then marked as failed (``extra.error``) in the golden and the run's checks, and a
tool whose result never reached the model (the run ended first) still has one.

The processor joins the global tracer provider when a capture opens, if that provider is
OpenTelemetry's SDK one (nothing is set up otherwise: an agent with no SDK provider emits
no spans); an agent that traces to a provider of its own passes it to
:func:`read_tool_spans` once. Without ``opentelemetry`` installed, nothing happens.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalrunner._jsonio import json_in
from evalrunner.core._openinference import as_genai, is_tool_span

__all__ = [
    "ToolExecution",
    "pick_call",
    "read_tool_spans",
    "tool_spans_to",
    "with_tool_executions",
]


@dataclass(frozen=True)
class ToolExecution:
    """One ``execute_tool`` span, as it ended."""

    call_id: str | None
    name: str
    content: str
    """The tool's result, or what it raised (``RuntimeError: ...``) where it failed."""
    error: bool
    arguments: str | None = None
    """What the span says the tool was called with (JSON text), for an execution that names
    no call (:func:`pick_call`)."""
    duration_s: float | None = None
    """How long the tool ran, from its span's start to its end (None: the span did not say)."""

    def marks(self) -> dict[str, Any]:
        """What its result's ``extra`` gains: ``error`` where it failed, ``duration_s`` where
        timed (a volatile key: a golden never holds it, a live run's metric reads it)."""
        found: dict[str, Any] = {"error": True} if self.error else {}
        if self.duration_s is not None:
            found["duration_s"] = self.duration_s
        return found


Sink = Callable[[ToolExecution], None]
_sink: contextvars.ContextVar[Sink | None] = contextvars.ContextVar(
    "evalrunner_tools", default=None
)
_joined: weakref.WeakSet[Any] = weakref.WeakSet()
_join_lock = threading.Lock()


@contextlib.contextmanager
def tool_spans_to(sink: Sink) -> Iterator[None]:
    """Hand the tool executions whose spans end inside this block (in this context, and
    in tasks and threads started from it with its context) to ``sink``."""
    read_tool_spans()
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def read_tool_spans(provider: Any = None) -> None:
    """Read tool executions from ``provider``'s spans (default: the global tracer provider)
    during every capture from now on; idempotent. A provider that is not OpenTelemetry's
    SDK one (the API's default, which records nothing) is left alone."""
    try:
        from opentelemetry import trace
    except ImportError:
        return
    provider = provider if provider is not None else trace.get_tracer_provider()
    if not hasattr(provider, "add_span_processor"):
        return
    with _join_lock:
        if provider not in _joined:
            provider.add_span_processor(ToolSpans())
            _joined.add(provider)


class ToolSpans:
    """An OpenTelemetry span processor: each ended ``execute_tool`` span to the current
    capture's sink. Spans outside a capture, and every other span, are left alone."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:
        pass

    def on_end(self, span: Any) -> None:
        sink = _sink.get()
        attrs: Mapping[str, Any] = span.attributes or {}
        if sink is None:
            return
        if is_tool_span(attrs):  # OpenInference's, read as GenAI's
            attrs = as_genai(dict(attrs), str(getattr(span, "name", "")))
        if attrs.get("gen_ai.operation.name") == "execute_tool":
            took = span_seconds(getattr(span, "start_time", None), getattr(span, "end_time", None))
            sink(execution_of(attrs, _raised(span), took))

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def execution_of(
    attrs: Mapping[str, Any], raised: str | None, duration_s: float | None = None
) -> ToolExecution:
    """The execution an ``execute_tool`` span's attributes describe (``raised``: what it
    raised, where it ended in error; ``duration_s``: how long it ran)."""
    call_id = attrs.get("gen_ai.tool.call.id")
    result = attrs.get("gen_ai.tool.call.result")
    arguments = attrs.get("gen_ai.tool.call.arguments")
    return ToolExecution(
        call_id=str(call_id) if call_id else None,
        name=str(attrs.get("gen_ai.tool.name") or ""),
        content=raised if raised is not None else _text(result),
        error=raised is not None,
        arguments=None if arguments is None else str(arguments),
        duration_s=duration_s,
    )


def span_seconds(start_ns: object, end_ns: object) -> float | None:
    """A span's duration in seconds from its start and end (Unix nanoseconds); None where
    either is missing or the end comes before the start (a clock that stepped back)."""
    if not isinstance(start_ns, int) or not isinstance(end_ns, int) or not start_ns:
        return None
    return (end_ns - start_ns) / 1e9 if end_ns >= start_ns else None


def _text(result: object) -> str:
    """A tool's result as text: a string as it is, a structured value (an OTLP list or
    key-value list) as JSON."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    return json.dumps(result, sort_keys=True, default=str)


def pick_call(
    calls: Iterable[Mapping[str, Any]], name: str, arguments: object, taken: set[str]
) -> str | None:
    """The id of the call an execution that names none ran (OpenInference's tool spans name
    the tool and its arguments, not the call): among ``calls`` (ATIF tool calls, in the
    order the model made them) not in ``taken``, the first of that tool with the same
    arguments, else the first of that tool. Added to ``taken``."""
    same = [c for c in calls if c.get("function_name") == name and _id(c) and _id(c) not in taken]
    wanted = json_in(arguments, arguments)  # JSON text or parsed: compared parsed
    alike = [c for c in same if json_in(c.get("arguments"), c.get("arguments")) == wanted]
    chosen = [*alike, *same][:1]
    taken.update(_id(c) for c in chosen)
    return _id(chosen[0]) if chosen else None


def _id(call: Mapping[str, Any]) -> str:
    return str(call.get("tool_call_id") or "")


def _raised(span: Any) -> str | None:
    """'RuntimeError: the atlas is offline' for a span that ended in error, else None."""
    status = getattr(span, "status", None)
    if getattr(getattr(status, "status_code", None), "name", "") != "ERROR":
        return None
    said = [_exception(event) for event in getattr(span, "events", None) or ()]
    return next(filter(None, said), None) or str(getattr(status, "description", "") or "error")


def _exception(event: Any) -> str:
    """An ``exception`` event's type and message ('' for another event, or neither)."""
    return exception_text(event.attributes or {}) if event.name == "exception" else ""


def exception_text(attrs: Mapping[str, Any]) -> str:
    """'RuntimeError: the atlas is offline' from an ``exception`` event's attributes ('' if
    they name neither type nor message)."""
    parts = (attrs.get("exception.type"), attrs.get("exception.message"))
    return ": ".join(str(part) for part in parts if part)


def with_tool_executions(
    trajectory: dict[str, Any], executions: Sequence[ToolExecution]
) -> dict[str, Any]:
    """``trajectory`` (a proxied run's) with each execution joined to the tool call it ran:
    a failed one marked ``extra.error`` (the result the model was sent, if any, kept as its
    content), a result the model never saw added. Executions of no call the trajectory
    holds (a tool the agent ran by itself) are listed under ``extra.tool_executions``."""
    steps = _calling_steps(trajectory)
    calls = _calls(trajectory)
    taken = {ex.call_id for ex in executions if ex.call_id}
    unjoined = []
    for ex in executions:
        call_id = ex.call_id or pick_call(calls, ex.name, ex.arguments, taken)
        if not _joined_to(steps.get(call_id or ""), ex, call_id):
            unjoined.append(
                {"name": ex.name, "content": ex.content, "error": ex.error, **ex.marks()}
            )
    if unjoined:
        trajectory.setdefault("extra", {}).setdefault("tool_executions", []).extend(unjoined)
    return trajectory


def _calls(trajectory: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every tool call of the trajectory and its sub-agents, in order."""
    return [
        call
        for traj in _trajectories(trajectory)
        for step in traj.get("steps") or []
        for call in step.get("tool_calls") or []
    ]


def _calling_steps(trajectory: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool call's id to the step that made it (sub-agents' steps included)."""
    found = {}
    for traj in _trajectories(trajectory):
        for step in traj.get("steps") or []:
            for call in step.get("tool_calls") or []:
                found[str(call.get("tool_call_id"))] = step
    return found


def _joined_to(step: dict[str, Any] | None, ex: ToolExecution, call_id: str | None) -> bool:
    """Join ``ex`` to call ``call_id``, which ``step`` made; False where there is no such step."""
    if step is None:
        return False
    results = step.setdefault("observation", {}).setdefault("results", [])
    result = next((r for r in results if r.get("source_call_id") == call_id), None)
    if result is None:
        result = {"source_call_id": call_id, "content": ex.content}
        results.append(result)
    if marks := ex.marks():
        result.setdefault("extra", {}).update(marks)
    return True


def _trajectories(trajectory: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield trajectory
    for sub in trajectory.get("subagent_trajectories") or []:
        yield from _trajectories(sub)
