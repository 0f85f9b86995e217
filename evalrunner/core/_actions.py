"""What a run did and what it was asked, read from its (normalised) trajectory.

Two compact views that attributing a change needs, small enough for a baseline
file to keep one per run:

- :func:`actions`: the top-level agent's tool calls in order, each as the tool's
  name, a digest of its arguments and a digest of what the tool answered. A run is
  compared by its k-th *action*, not its k-th step, so a run that takes an extra
  message step but calls the same tools in the same order has not diverged.
- :func:`first_request`: what the agent sent with its first model call that the
  trajectory keeps: the system prompt, the first user message and the tool
  definitions (name -> schema and description). Sampling parameters are not in
  a trajectory, so they are not in the view (docs/explain.md says what that
  leaves unseen).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalrunner._jsonio import canonical

__all__ = [
    "ANSWER",
    "PARAMETERS",
    "TOGETHER",
    "Action",
    "actions",
    "digest",
    "first_action",
    "first_request",
    "first_response_calls",
    "move",
    "sendable",
    "settings_moved",
]

ANSWER = "(answer)"
"""The action a run takes when it stops calling tools: its final answer."""
TOGETHER = " + "
"""Joins the tools one model response called at once (:func:`move`)."""


def digest(value: object) -> str:
    """A short stable hash of a JSON value (12 hex digits)."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Action:
    """One tool call of the top-level agent: which tool, on what, and what came back."""

    tool: str
    args: str
    """Digest of the parsed arguments (spacing and key order do not count)."""
    observation: str | None
    """Digest of the tool's answer; None when the run holds no answer for the call."""


def _observations(step: Mapping[str, Any]) -> dict[str, Any]:
    results = (step.get("observation") or {}).get("results") or []
    return {r["source_call_id"]: r.get("content") for r in results if r.get("source_call_id")}


def actions(trajectory: Mapping[str, Any]) -> list[Action]:
    """The top-level agent's tool calls in order (sub-agents' calls are theirs, not its)."""
    out: list[Action] = []
    for step in trajectory.get("steps") or []:
        if step.get("source") != "agent":
            continue
        answers = _observations(step)
        for call in step.get("tool_calls") or []:
            call_id = call.get("tool_call_id")
            args = call.get("arguments")
            if (call.get("extra") or {}).get("invalid_arguments"):
                args = (call.get("extra") or {}).get("raw_arguments")
            answer = digest(answers[call_id]) if call_id in answers else None
            out.append(Action(str(call.get("function_name")), digest(args), answer))
    return out


def _text(step: Mapping[str, Any]) -> str:
    message = step.get("message")
    return message if isinstance(message, str) else canonical(message)


def first_request(trajectory: Mapping[str, Any]) -> dict[str, Any]:
    """The first request as the trajectory keeps it: ``system``, ``user`` and ``tools``.

    ``system`` is every system step before the first agent step, joined by blank
    lines; ``user`` the first user step; ``tools`` maps each defined tool's name
    to its definition (canonical JSON).
    """
    system: list[str] = []
    user: str | None = None
    for step in trajectory.get("steps") or []:
        source = step.get("source")
        if source == "agent":
            break
        if source == "system":
            system.append(_text(step))
        elif source == "user" and user is None:
            user = _text(step)
    tools = _tool_definitions((trajectory.get("agent") or {}).get("tool_definitions") or [])
    return {"system": "\n\n".join(system), "user": user or "", "tools": tools}


def _tool_definitions(definitions: list[Any]) -> dict[str, str]:
    """Each defined tool's name -> its definition as canonical JSON."""
    tools: dict[str, str] = {}
    for tool in definitions:
        function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
        name = function.get("name") if isinstance(function, Mapping) else None
        tools[str(name)] = canonical(tool)
    return tools


PARAMETERS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "n",
    "reasoning_effort",
    # Anthropic's, carried by the capture proxy and litellm (issue 53).
    "thinking",
    "top_k",
)
"""A request's sampling and output parameters: what a trajectory does not keep."""

# What decides a model's answer to a request, and nothing about where it goes or who
# pays: the sentinel re-sends exactly this to tonight's endpoint.
_SENT = ("messages", "tools", "functions", "function_call", *PARAMETERS)


def _plain(value: object) -> object:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else str(value)


def sendable(request: Mapping[str, Any]) -> dict[str, Any]:
    """A chat request's content and sampling parameters as plain JSON (no address, key,
    timeout or callback), so the same request can be sent again to another endpoint."""
    kept = {k: request[k] for k in _SENT if request.get(k) is not None}
    plain: dict[str, Any] = json.loads(json.dumps(kept, default=_plain))
    return plain


def settings_moved(before: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> str | None:
    """How a request's sampling and output parameters moved from when it was recorded ("temperature 0.8
    -> 0.2"); None when they did not, or the recording predates keeping them."""
    if before is None or now is None:
        return None
    moved = [
        f"{k} {_shown(before.get(k, 'unset'))} -> {_shown(now.get(k, 'unset'))}"
        for k in PARAMETERS
        if before.get(k) != now.get(k)
    ]
    return ", ".join(moved) or None


def _shown(value: Any) -> Any:
    """A setting as the line shows it: an object or list as sorted JSON (a thinking
    budget), so the same setting reads the same on both sides."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def first_action(run: list[Action]) -> str:
    """What a run did first: the tool it called, or :data:`ANSWER`."""
    return run[0].tool if run else ANSWER


def move(tools: Sequence[str]) -> str:
    """One model response's action: the tools it called at once (``lookup + lookup``), or
    :data:`ANSWER`. A model that starts calling tools in parallel makes another first move
    with the same first tool call."""
    return TOGETHER.join(tools) if tools else ANSWER


def first_response_calls(trajectory: Mapping[str, Any]) -> int:
    """How many tool calls the top-level agent's first model response made (0: it answered)."""
    for step in trajectory.get("steps") or []:
        if step.get("source") == "agent":
            return len(step.get("tool_calls") or [])
    return 0
