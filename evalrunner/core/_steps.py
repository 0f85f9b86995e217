"""Building an ATIF trajectory from what an agent sends to and gets from its model.

One builder per agent (or sub-agent) run. It is fed chat requests, canonical
model responses and tool results, in the order they happen, and keeps the
steps; :meth:`TrajectoryBuilder.build` returns the ATIF v1.8 dict.

- Request messages are in the OpenAI chat format (``role``, ``content``,
  ``tool_call_id``, ``tool_calls``; mappings or objects with those
  attributes). Each request repeats the conversation so far; only messages
  not seen in an earlier request become steps: system/developer and user
  messages become steps, tool messages the observation of the step that made
  the call, and assistant messages are skipped (the responses already are
  agent steps). Anthropic Messages requests are converted to this format
  first (``system`` to a system message, ``tool_result`` blocks to tool
  messages).
- Each model response (:class:`ResponseRecord`) becomes an agent step. A
  call that reserves its answer's place when it is sent (:meth:`~TrajectoryBuilder.send`)
  gets it right after the messages it sent, whenever the answer comes: calls
  in flight together (``asyncio.gather``) read as they would one at a time,
  in the order they were sent, so live and instant (replayed) answers give
  the same steps.
- Tool results join the calling step by call id; a result for an unknown
  call lands on the last agent step.
- Sub-agents are linked from the step whose tool call spawned them (or the
  last agent step); their built trajectories are passed to :meth:`build`.

No litellm, no context variables, no I/O; every method takes the builder's
lock, so concurrent front ends (threads, asyncio tasks) may share one.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from evalrunner._clock import iso_now
from evalrunner._jsonio import canonical
from evalrunner.core._response import ResponseRecord, ToolCallRecord, field_of
from evalrunner.core._spans import ToolExecution, pick_call

SCHEMA_VERSION = "ATIF-v1.8"

Step = dict[str, Any]  # one ATIF step, as it is written


def message_text(content: object) -> str:
    """A message's content as text: strings as they are, text parts joined, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Text parts (and bare strings) joined; image and other parts carry no text.
        return "".join(
            p if isinstance(p, str) else (p.get("text") or "") if isinstance(p, Mapping) else ""
            for p in content
        )
    return json.dumps(content, sort_keys=True, default=str)


def _hashable(value: object) -> object:
    """``value`` as a key: strings and None (what SDKs send) as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return ("json", canonical(value))  # never equal to a string


def _precise_now() -> str:
    return iso_now(precise=True)


def _tool_call(call: ToolCallRecord) -> dict[str, Any]:
    tc: dict[str, Any] = {"tool_call_id": call.id, "function_name": call.name}
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError:
        args = None
    if isinstance(args, dict):
        tc["arguments"] = args
    else:
        # Weak models write broken JSON; keep what they wrote so the skip
        # classifier and the reader can see it.
        tc["arguments"] = {}
        tc["extra"] = {"invalid_arguments": True, "raw_arguments": call.arguments}
    return tc


def _metrics(record: ResponseRecord) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "prompt_tokens": record.usage.prompt_tokens,
        "completion_tokens": record.usage.completion_tokens,
    }
    if record.usage.cached_tokens is not None:
        metrics["cached_tokens"] = record.usage.cached_tokens
    if record.usage.cache_write_tokens is not None:
        # ATIF's metrics have no field for cache writes: its ``extra`` holds them.
        metrics["extra"] = {"cache_write_tokens": record.usage.cache_write_tokens}
    return metrics


class AnswerSlot:
    """Where the answer to one sent call goes among the steps (:meth:`TrajectoryBuilder.send`)."""

    __slots__ = ("step",)

    def __init__(self) -> None:
        self.step: Step | None = None


def _results(step: Step) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = step.setdefault("observation", {"results": []})["results"]
    return results


class TrajectoryBuilder:
    """The steps of one agent run, and the ATIF trajectory they make.

    ``clock`` stamps each step (ISO 8601 with microseconds by default).
    """

    def __init__(
        self,
        name: str = "agent",
        *,
        version: str = "0",
        session_id: str | None = None,
        trajectory_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
        clock: Callable[[], str] = _precise_now,
    ) -> None:
        self.name = name
        self.version = version
        self.trajectory_id = trajectory_id or uuid.uuid4().hex
        self.session_id = session_id or uuid.uuid4().hex
        self.extra: dict[str, Any] = dict(extra or {})
        self._clock = clock
        # Steps in order, and the places reserved for answers still on their way.
        self._steps: list[Step | AnswerSlot] = []
        self._executed: set[str] = set()  # calls a tool execution has answered
        self._tool_definitions: list[dict[str, Any]] | None = None
        self._model_name: str | None = None
        self._model_calls = 0
        self._seen: Counter[tuple[object, str, object]] = Counter()
        self._call_owner: dict[str, Step] = {}
        self._lock = threading.RLock()

    @property
    def model_calls(self) -> int:
        """Model responses added so far (zero means the run never reached a model)."""
        return self._model_calls

    # -- input ---------------------------------------------------------------------------

    def ingest_messages(
        self, messages: Iterable[object], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> None:
        """Take in one request: its messages not seen in earlier requests become steps.

        A message counts as seen by (role, text, tool_call_id), as often as it
        occurred before, so a repeated question is a new step. The first
        request that offers ``tools`` sets the agent's tool definitions.
        """
        with self._lock:
            if self._tool_definitions is None and tools:
                self._tool_definitions = [dict(t) for t in tools]
            counts: Counter[tuple[object, str, object]] = Counter()
            for message in messages:
                role = field_of(message, "role")
                if role == "assistant":
                    continue  # our own agent steps already hold these
                text = message_text(field_of(message, "content"))
                call_id = field_of(message, "tool_call_id")
                # A tuple, not JSON: every request resends the conversation so far, and
                # encoding each message again made a long run's capture quadratic in JSON.
                key = (_hashable(role), text, _hashable(call_id))
                counts[key] += 1
                if counts[key] <= self._seen[key]:
                    continue
                self._seen[key] += 1
                self._add_message(role, text, call_id)

    def send(
        self, messages: Iterable[object], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> AnswerSlot:
        """Take in one request (as :meth:`ingest_messages`) and reserve its answer's place,
        right after what it sent; pass the slot to :meth:`add_response`.

        Why: the steps must not depend on timing. Two calls in flight together
        (``asyncio.gather``) would otherwise read question, question, answer,
        answer live and question, answer, question, answer in replay, where
        answers come at once; with slots both read as one call after another,
        in the order they were sent.
        """
        with self._lock:
            self.ingest_messages(messages, tools)
            slot = AnswerSlot()
            self._steps.append(slot)
            return slot

    def _add_message(self, role: object, text: str, call_id: str | None) -> None:
        if role in ("system", "developer"):
            self._new_step("system", text)
        elif role == "user":
            self._new_step("user", text)
        elif role in ("tool", "function"):
            self._add_result(call_id, text, {})

    def add_response(
        self,
        record: ResponseRecord,
        generation_id: str | None = None,
        slot: AnswerSlot | None = None,
    ) -> None:
        """One model response becomes an agent step (``generation_id``: the provider's response
        id), in ``slot`` (from :meth:`send`) if given, else after the steps so far."""
        with self._lock:
            if self._model_name is None:
                self._model_name = record.model
            self._model_calls += 1
            tool_calls = [_tool_call(call) for call in record.tool_calls]
            extra: dict[str, Any] = {"finish_reason": record.finish_reason}
            if generation_id:
                extra["generation_id"] = generation_id
            step = self._new_step(
                "agent",
                record.content or "",
                model_name=record.model,
                reasoning_content=record.reasoning,
                tool_calls=tool_calls or None,
                metrics=_metrics(record),
                llm_call_count=1,
                extra=extra,
                slot=slot,
            )
            for tc in tool_calls:
                self._call_owner[tc["tool_call_id"]] = step

    def add_tool_result(self, call_id: str | None, content: object, *, error: bool = False) -> None:
        """A tool's output, as the observation of the step that made call ``call_id``.

        A result already taken from a request is not added twice; ``error``
        marks the tool as failed (``extra.error``) either way.
        """
        with self._lock:
            self._add_result(call_id, message_text(content), {"error": True} if error else {})

    def add_tool_execution(self, execution: ToolExecution) -> None:
        """A tool's execution, as its span ended: the result of the call it names, or of
        the call of its tool and arguments no execution has answered yet (an OpenInference
        tool span names no call)."""
        with self._lock:
            call_id = execution.call_id or pick_call(
                self._calls_made(), execution.name, execution.arguments, self._executed
            )
            if execution.call_id:
                self._executed.add(execution.call_id)
            self._add_result(call_id, message_text(execution.content), execution.marks())

    def _calls_made(self) -> list[dict[str, Any]]:
        """Every tool call the model made so far, in order."""
        made: dict[str, dict[str, Any]] = {}
        for step in self._call_owner.values():
            for call in step.get("tool_calls") or []:
                made.setdefault(str(call.get("tool_call_id")), call)
        return list(made.values())

    def link_subagent(self, trajectory_id: str, call_id: str | None = None) -> None:
        """Point the step that spawned a sub-agent at its embedded trajectory.

        With the ``call_id`` of a tool call this run made, the ref joins that
        call's result; otherwise the last agent step gets it.
        """
        ref = {"trajectory_id": trajectory_id}
        with self._lock:
            if call_id and call_id in self._call_owner:
                results = _results(self._call_owner[call_id])
                res = next((r for r in results if r.get("source_call_id") == call_id), None)
                if res is None:
                    res = {"source_call_id": call_id}
                    results.append(res)
                res.setdefault("subagent_trajectory_ref", []).append(ref)
                return
            results = _results(self._last_agent_step())
            res = next(
                (
                    r
                    for r in results
                    if r.get("source_call_id") is None and "subagent_trajectory_ref" in r
                ),
                None,
            )
            if res is None:
                res = {"subagent_trajectory_ref": []}
                results.append(res)
            res["subagent_trajectory_ref"].append(ref)

    # -- output --------------------------------------------------------------------------

    def build(
        self,
        *,
        error: BaseException | None = None,
        subagents: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """The ATIF v1.8 trajectory so far (a copy; building again is fine).

        ``error``: what the run raised (``extra.crashed`` and
        ``extra.exception``); ``subagents``: the built trajectories of its
        sub-agents, in the order they finished.
        """
        with self._lock:
            agent: dict[str, Any] = {"name": self.name, "version": self.version}
            if self._model_name:
                agent["model_name"] = self._model_name
            if self._tool_definitions:
                agent["tool_definitions"] = self._tool_definitions
            placed = list(self._placed())
            # Numbered here: an answer that filled its slot late sits before later steps.
            steps = json.loads(json.dumps(placed, default=str))
            for number, step in enumerate(steps, start=1):
                step["step_id"] = number
            traj: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "session_id": self.session_id,
                "trajectory_id": self.trajectory_id,
                "agent": agent,
                "steps": steps,
                "final_metrics": _final_metrics(steps),
            }
            extra = dict(self.extra)
            if error is not None:
                extra["crashed"] = True
                extra["exception"] = {"type": type(error).__name__, "message": str(error)}
            if extra:
                traj["extra"] = extra
            if subagents:
                traj["subagent_trajectories"] = list(subagents)
            return traj

    # -- steps (the caller holds the lock) ---------------------------------------------------

    def _placed(self, *, backwards: bool = False) -> Iterator[Step]:
        """The steps in order, without the slots of answers not (or never) received."""
        for entry in reversed(self._steps) if backwards else self._steps:
            step = entry.step if isinstance(entry, AnswerSlot) else entry
            if step is not None:
                yield step

    def _new_step(
        self, source: str, message: str, slot: AnswerSlot | None = None, **fields: Any
    ) -> Step:
        step: Step = {
            "step_id": 0,  # numbered by build()
            "timestamp": self._clock(),
            "source": source,
            "message": message,
        }
        step.update({k: v for k, v in fields.items() if v is not None})
        if slot is not None and slot.step is None:
            slot.step = step
        else:
            self._steps.append(step)
        return step

    def _last_agent_step(self) -> Step:
        last = next((s for s in self._placed(backwards=True) if s["source"] == "agent"), None)
        return last if last is not None else self._new_step("agent", "", llm_call_count=0)

    def _add_result(self, call_id: str | None, content: str, marks: dict[str, Any]) -> None:
        """``content`` as the result of call ``call_id``, ``marks`` (a failed tool's
        ``error``, a timed one's ``duration_s``) in its ``extra``."""
        step = self._call_owner.get(call_id) if call_id else None
        if step is None:
            step = self._last_agent_step()
            result: dict[str, Any] = {"content": content}
            if call_id:
                result["extra"] = {"tool_call_id": call_id}
        else:
            existing = next((r for r in _results(step) if r.get("source_call_id") == call_id), None)
            if existing is not None:
                if existing.get("content") is None:  # a sub-agent link came first
                    existing["content"] = content
                if marks:
                    existing.setdefault("extra", {}).update(marks)
                return
            result = {"source_call_id": call_id, "content": content}
        if marks:
            result.setdefault("extra", {}).update(marks)
        _results(step).append(result)


def _final_metrics(steps: list[dict[str, Any]]) -> dict[str, int]:
    """A trajectory's totals: tokens over its steps, and how many steps."""
    return {
        "total_prompt_tokens": sum((s.get("metrics") or {}).get("prompt_tokens", 0) for s in steps),
        "total_completion_tokens": sum(
            (s.get("metrics") or {}).get("completion_tokens", 0) for s in steps
        ),
        "total_steps": len(steps),
    }
