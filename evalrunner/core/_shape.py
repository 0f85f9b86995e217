"""The shape of a run: the behavioural summary compared in both modes.

Frozen mode compares a golden's shape with a replay's exactly (plus the content
hash); live mode turns the same fields into distributions over N runs, so these
fields are the per-run record (see :mod:`evalrunner.suite._record`).

Steps marked ``is_copied_context`` (ATIF: context copied from an earlier
trajectory, e.g. the history a summarisation sub-agent or a continuation
starts from) are context, not work: they count in ``step_count`` (they are in
the file, and their step ids run on with the others) and appear in ``steps``
as ``("copied:<source>", 0)``, but add no model calls, tool calls or tokens,
are not in the tool sequences, and are never the final answer.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from evalrunner._jsonio import canonical
from evalrunner.core._steps import message_text


class Shape(BaseModel):
    """Behavioural summary of one normalised trajectory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_count: int = Field(
        description="Steps of the top-level trajectory, copied context included."
    )
    steps: tuple[tuple[str, int], ...] = Field(
        description="(source, llm_call_count) per top-level step; copied context is "
        "('copied:<source>', 0)."
    )
    tools: tuple[str, ...] = Field(
        description="Ordered tool-call names of the top-level agent (copied context excluded)."
    )
    subagent_count: int = Field(description="Embedded sub-agent trajectories, recursively.")
    subagent_tools: tuple[tuple[str, ...], ...] = Field(
        default=(), description="Tool names of each direct sub-agent, in normalised order."
    )
    llm_calls: int = Field(description="Model calls, sub-agents included.")
    tool_calls: int = Field(description="Tool calls, sub-agents included.")
    crashed: bool = Field(description="The run raised inside its capture scope.")
    subagents_crashed: int = Field(
        default=0,
        description="Sub-agents that raised inside their capture scopes, recursively (an agent "
        "may carry on without one, yet that sub-agent's failure is behaviour).",
    )
    prompt_tokens: int = Field(description="Prompt tokens, sub-agents included.")
    completion_tokens: int = Field(description="Completion tokens, sub-agents included.")
    final_answer: str | None = Field(
        description="Message of the last agent step that is not copied context."
    )
    content_hash: str = Field(
        description="sha256 of the canonical normalised trajectory (first 16 hex)."
    )

    @model_serializer(mode="wrap")
    def _written(self, write: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Written only when a sub-agent crashed: the goldens of every other run stay byte for
        # byte what they were before the field existed (a replay rewrites none of them).
        data: dict[str, Any] = write(self)
        if not data.get("subagents_crashed"):
            data.pop("subagents_crashed", None)
        return data


def content_hash(normalized: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(normalized).encode()).hexdigest()[:16]


def _copied(step: Mapping[str, Any]) -> bool:
    return step.get("is_copied_context") is True


def _walk(traj: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield traj
    for sub in traj.get("subagent_trajectories") or []:
        yield from _walk(sub)


@dataclass
class _Totals:
    """Counts over a trajectory and all its sub-agents."""

    subagents: int = 0
    subagents_crashed: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    prompt: int = 0
    completion: int = 0

    def add(self, step: Mapping[str, Any]) -> None:
        """Count one step that is the trajectory's own work (not copied context)."""
        if step.get("source") == "agent":
            count = step.get("llm_call_count")
            self.llm_calls += 1 if count is None else count
        self.tool_calls += len(step.get("tool_calls") or [])
        metrics = step.get("metrics") or {}
        self.prompt += metrics.get("prompt_tokens") or 0
        self.completion += metrics.get("completion_tokens") or 0


def _totals(normalized: Mapping[str, Any]) -> _Totals:
    totals = _Totals()
    for traj in _walk(normalized):
        if traj is not normalized:
            totals.subagents += 1
            totals.subagents_crashed += bool((traj.get("extra") or {}).get("crashed", False))
        for step in traj.get("steps") or []:
            if not _copied(step):
                totals.add(step)
    return totals


def _final_answer(steps: list[Mapping[str, Any]]) -> str | None:
    """The message of the last agent step that is new work."""
    for step in reversed(steps):
        if step.get("source") == "agent" and not _copied(step):
            return message_text(step.get("message"))
    return None


def final_message(trajectory: Mapping[str, Any]) -> str | None:
    """The message of the trajectory's last agent step of new work (its final answer)."""
    return _final_answer(trajectory.get("steps") or [])


def shape(normalized: Mapping[str, Any]) -> Shape:
    """Extract the shape of a normalised trajectory."""
    steps = normalized.get("steps") or []
    totals = _totals(normalized)
    return Shape(
        step_count=len(steps),
        steps=tuple(_step_entry(s) for s in steps),
        tools=tuple(_tool_names(normalized)),
        subagent_count=totals.subagents,
        subagent_tools=tuple(
            tuple(_tool_names(sub)) for sub in normalized.get("subagent_trajectories") or []
        ),
        llm_calls=totals.llm_calls,
        tool_calls=totals.tool_calls,
        crashed=bool((normalized.get("extra") or {}).get("crashed", False)),
        subagents_crashed=totals.subagents_crashed,
        prompt_tokens=totals.prompt,
        completion_tokens=totals.completion,
        final_answer=_final_answer(steps),
        content_hash=content_hash(normalized),
    )


def _step_entry(step: Mapping[str, Any]) -> tuple[str, int]:
    source = step.get("source", "?")
    return (f"copied:{source}", 0) if _copied(step) else (source, _llm_count(step))


def _llm_count(step: Mapping[str, Any]) -> int:
    if step.get("source") != "agent":
        return 0
    count = step.get("llm_call_count")
    return 1 if count is None else int(count)


def _tool_names(traj: Mapping[str, Any]) -> list[str]:
    return [
        c.get("function_name", "?")
        for s in traj.get("steps") or []
        if not _copied(s)
        for c in s.get("tool_calls") or []
    ]


def cache_tokens(normalized: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Prompt tokens read from and written to the provider's prompt cache, sub-agents
    included and copied context left out; None where no step reported any. Apart from
    :class:`Shape`, which goldens hold: their steps' metrics already show these."""
    read: int | None = None
    written: int | None = None
    for traj in _walk(normalized):
        for step in traj.get("steps") or []:
            if _copied(step):
                continue
            metrics = step.get("metrics") or {}
            read = _plus(read, metrics.get("cached_tokens"))
            extra = metrics.get("extra")
            written = _plus(
                written, extra.get("cache_write_tokens") if isinstance(extra, Mapping) else None
            )
    return read, written


def _plus(total: int | None, value: Any) -> int | None:
    """A running total of a count that steps report or leave out (None: none reported)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return total
    return (total or 0) + value


def tool_errors(normalized: Mapping[str, Any]) -> int:
    """Tool executions the run said failed, sub-agents included and copied context left out:
    results marked ``extra.error`` (the agent's own tool spans, in process or exported, or
    ``record_tool_result(error=True)``) and failed executions of no call the model made
    (``extra.tool_executions``). Apart from :class:`Shape`, as :func:`cache_tokens` is: a
    golden's trajectory already shows each one."""
    return sum(_own_tool_errors(traj) for traj in _walk(normalized))


def _own_tool_errors(traj: Mapping[str, Any]) -> int:
    """One trajectory's failed tool executions, its sub-agents' left out."""
    alone = (traj.get("extra") or {}).get("tool_executions") or []
    work = [step for step in traj.get("steps") or [] if not _copied(step)]
    results = [result for step in work for result in _results(step)]
    return sum(map(_errored, alone)) + sum(map(_failed, results))


def tools_alone(normalized: Mapping[str, Any]) -> list[str]:
    """The tools the run executed that no model call asked for (``extra.tool_executions``,
    from its tool spans), by name, the top-level agent's then its sub-agents'."""
    return [
        str(done["name"])
        for traj in _walk(normalized)
        for done in (traj.get("extra") or {}).get("tool_executions") or []
        if isinstance(done, Mapping) and done.get("name")  # a tool with no name is none to count
    ]


def tool_latency(trajectory: Mapping[str, Any]) -> float | None:
    """Seconds per timed tool execution, on average, sub-agents included and copied context
    left out: the ``duration_s`` the agent's tool spans gave its results and its executions
    of no call. None where no execution was timed. Read from the trajectory as captured:
    normalising drops every duration (two identical runs' tools never take equal times)."""
    timed = [
        seconds
        for traj in _walk(trajectory)
        for done in _executions(traj)
        if (seconds := _duration(done)) is not None
    ]
    return sum(timed) / len(timed) if timed else None


def _executions(traj: Mapping[str, Any]) -> Iterator[Any]:
    """A trajectory's own tool results and its executions of no call, its sub-agents' left out."""
    yield from (traj.get("extra") or {}).get("tool_executions") or []
    for step in traj.get("steps") or []:
        if not _copied(step):
            yield from _results(step)


def _duration(done: Any) -> float | None:
    """An execution's or a result's ``duration_s`` (None where it has none that is a time)."""
    if not isinstance(done, Mapping):
        return None
    extra = done.get("extra")
    seconds = extra.get("duration_s") if isinstance(extra, Mapping) else done.get("duration_s")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None
    return float(seconds) if math.isfinite(seconds) and seconds >= 0 else None


def _errored(execution: Any) -> bool:
    return isinstance(execution, Mapping) and bool(execution.get("error"))


def _results(step: Mapping[str, Any]) -> list[Any]:
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, Mapping) else None
    return results if isinstance(results, list) else []


def _failed(result: Any) -> bool:
    extra = result.get("extra") if isinstance(result, Mapping) else None
    return isinstance(extra, Mapping) and bool(extra.get("error"))
