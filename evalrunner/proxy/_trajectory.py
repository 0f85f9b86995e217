"""A proxied run's calls as one ATIF trajectory: conversations, sub-agents, tool results.

The proxy sees only HTTP requests, so who made a call is inferred from
message-prefix continuity: a request continues a conversation when it extends
that conversation's last request plus the answer it got (or, for agents that
rewrite the answer before sending it back, at least that last request). The
first conversation is the agent; every other one (parallel or sequential
sub-agents, side calls) becomes an embedded sub-agent trajectory, referenced
from the agent step that was last when it started. Nested sub-agents cannot
be told apart from siblings and are all embedded at the top level.

The steps are built by ``evalrunner.core``'s step builder, the one
``capture()`` uses, so tool results (``tool`` messages, Anthropic
``tool_result`` blocks) join the calling step by call id exactly as there.
:func:`build_trajectory` is the only place that touches the builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrunner._jsonio import canonical
from evalrunner.core._request_key import normal_content
from evalrunner.core._response import ResponseRecord
from evalrunner.core._steps import TrajectoryBuilder


@dataclass(frozen=True)
class CapturedCall:
    """One answered model call, in arrival order, as the step builder takes it."""

    conversation: int  # 0 is the agent
    request: Mapping[str, Any]  # chat-completions kwargs: messages, tools, ...
    record: ResponseRecord


def build_trajectory(name: str, calls: Sequence[CapturedCall]) -> dict[str, Any]:
    """The ATIF trajectory of a run: conversation 0 is the agent, the others its sub-agents."""
    root = TrajectoryBuilder(name)
    builders: dict[int, TrajectoryBuilder] = {0: root}
    for call in calls:
        builder = builders.get(call.conversation)
        if builder is None:
            builder = TrajectoryBuilder("subagent", session_id=root.session_id)
            builders[call.conversation] = builder
            root.link_subagent(builder.trajectory_id)
        builder.ingest_messages(call.request.get("messages") or [], call.request.get("tools"))
        builder.add_response(call.record)
    subagents = [b.build() for number, b in sorted(builders.items()) if number != 0]
    return root.build(subagents=subagents)


# --- conversations ----------------------------------------------------------------


def _key(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "assistant":
        ids = [str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, Mapping)]
        if ids:
            return canonical(["assistant", ids])
    content = normal_content(message.get("content"))
    text = content.strip() if isinstance(content, str) else canonical(content)
    return canonical([role, text, message.get("tool_call_id")])


def _answer_key(record: ResponseRecord) -> str:
    if record.tool_calls:
        return canonical(["assistant", [c.id for c in record.tool_calls]])
    return canonical(["assistant", (record.content or "").strip(), None])


@dataclass
class _Conversation:
    asked: list[str]  # message keys of its last request
    answered: list[str] = field(default_factory=list)  # ... plus its answer


def _extends(keys: list[str], prefix: list[str]) -> bool:
    return len(keys) > len(prefix) and keys[: len(prefix)] == prefix


def conversations(calls: Sequence[tuple[Sequence[Mapping[str, Any]], ResponseRecord]]) -> list[int]:
    """The conversation number of each (messages, answer) call, in arrival order."""
    convs: list[_Conversation] = []
    numbers = []
    for messages, record in calls:
        keys = [_key(m) for m in messages]
        best, best_len = None, -1
        for number, conv in enumerate(convs):
            for prefix in (conv.answered, conv.asked):
                if _extends(keys, prefix) and len(prefix) > best_len:
                    best, best_len = number, len(prefix)
        if best is None:
            best = len(convs)
            convs.append(_Conversation(keys))
        convs[best].asked = keys
        convs[best].answered = [*keys, _answer_key(record)]
        numbers.append(best)
    return numbers
