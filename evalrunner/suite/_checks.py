"""Scenario checks: each declarative expectation of a suite becomes a named boolean per run."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalrunner.core._normalize import NormalizeConfig, normalize
from evalrunner.core._shape import (
    Shape,
    cache_tokens,
    shape,
    tool_errors,
    tool_latency,
    tools_alone,
)
from evalrunner.suite._schema import Checks

if TYPE_CHECKING:
    from evalrunner.core._scope import CaptureResult

__all__ = ["Judged", "evaluate_checks", "failed_checks", "failed_tool_results", "judged"]


@dataclass(frozen=True)
class Judged:
    """What a scenario's checks and a run's outcome judge: the same in frozen and live mode."""

    shape: Shape
    """The normalised trajectory's shape."""
    answer: str | None
    """The agent's answer: what it returned (or its ``.answer``) when that is text or None,
    else the trajectory's final message."""
    tools: list[str]
    """Every tool called, the sub-agents' after the agent's own."""
    cache: tuple[int | None, int | None] = (None, None)
    """Prompt tokens read from and written to the provider's cache (None: not reported)."""
    tool_errors: int = 0
    """Tool executions the run said failed (:func:`~evalrunner.core._shape.tool_errors`)."""
    tool_latency: float | None = None
    """Seconds per timed tool execution (:func:`~evalrunner.core._shape.tool_latency`)."""
    tools_alone: tuple[str, ...] = ()
    """Tools run that no model call asked for (:func:`~evalrunner.core._shape.tools_alone`)."""


def judged(result: CaptureResult, config: NormalizeConfig) -> Judged:
    """The shape, answer and tools of one captured run."""
    normalized = normalize(result.trajectory, config)
    sh = shape(normalized)
    output = getattr(result.output, "answer", result.output)
    answer = output if isinstance(output, str) or output is None else sh.final_answer
    tools = list(sh.tools) + [t for sub in sh.subagent_tools for t in sub]
    took = tool_latency(result.trajectory)  # durations are gone once normalised
    alone = tuple(tools_alone(normalized))
    return Judged(sh, answer, tools, cache_tokens(normalized), tool_errors(normalized), took, alone)


def failed_tool_results(trajectory: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Observation results marked ``extra: {error: true}``, sub-agents included."""
    for step in _dicts(trajectory.get("steps")):
        observation = step.get("observation")
        if not isinstance(observation, Mapping):
            continue
        for result in _dicts(observation.get("results")):
            extra = result.get("extra")
            if isinstance(extra, Mapping) and extra.get("error"):
                yield result
    for sub in _dicts(trajectory.get("subagent_trajectories")):
        yield from failed_tool_results(sub)


def _dicts(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, Mapping))


def _is_subsequence(wanted: Sequence[str], seen: Sequence[str]) -> bool:
    remaining = iter(seen)
    return all(any(name == tool for tool in remaining) for name in wanted)


def evaluate_checks(
    checks: Checks,
    trajectory: Mapping[str, Any],
    final_answer: str | None,
    tools: Sequence[str],
) -> dict[str, bool]:
    """Each configured check by name (e.g. 'answer_contains:Paris') -> whether it held.

    `tools` is the ordered tool-call names across the trajectory. A missing final
    answer fails every positive answer check and passes the negative ones.
    """
    return {**_answer_checks(checks, final_answer), **_tool_checks(checks, trajectory, tools)}


def _answer_checks(checks: Checks, final_answer: str | None) -> dict[str, bool]:
    """The checks of the final answer (contains, does not contain, matches)."""
    results: dict[str, bool] = {}
    folded = (final_answer or "").casefold()
    for text in checks.answer_contains:
        results[f"answer_contains:{text}"] = final_answer is not None and text.casefold() in folded
    for text in checks.answer_not_contains:
        results[f"answer_not_contains:{text}"] = text.casefold() not in folded
    if checks.answer_matches is not None:
        results[f"answer_matches:{checks.answer_matches}"] = (
            final_answer is not None and re.search(checks.answer_matches, final_answer) is not None
        )
    return results


def _tool_checks(
    checks: Checks, trajectory: Mapping[str, Any], tools: Sequence[str]
) -> dict[str, bool]:
    """The checks of the tool calls (used, not used, in order, how many, all succeeded)."""
    results: dict[str, bool] = {}
    for tool in checks.tools_used:
        results[f"tools_used:{tool}"] = tool in tools
    for tool in checks.tools_not_used:
        results[f"tools_not_used:{tool}"] = tool not in tools
    if checks.tools_in_order:
        results["tools_in_order:" + ">".join(checks.tools_in_order)] = _is_subsequence(
            checks.tools_in_order, tools
        )
    if checks.max_tool_calls is not None:
        results[f"max_tool_calls<={checks.max_tool_calls}"] = len(tools) <= checks.max_tool_calls
    if checks.all_tools_succeeded:
        results["all_tools_succeeded"] = next(failed_tool_results(trajectory), None) is None
    return results


_TOOL_CHECKS = ("tools_used:", "tools_in_order:")
NO_STRUCTURED_TOOL_CALLS = (
    "(no structured tool call in the run, and no tool was defined to the model: an agent "
    "that writes its tool calls as text, as dspy ReAct does, shows none; docs/proxy.md, "
    "text-protocol agents)"
)
NO_TOOL_CALL = "(the model was offered its tools and called none)"


def failed_checks(
    results: Mapping[str, bool],
    tools: Sequence[str],
    reasons: Mapping[str, str] | None = None,
    trajectory: Mapping[str, Any] | None = None,
) -> list[str]:
    """The names of the checks that failed, each with its ``reasons`` entry where it has one
    (a code check's, the judge's), and why a tool check may have failed, when it can tell.

    A tool check failing on a run with no tool call at all is the one place a check may
    mislead: the agent may have used its tools through a protocol evalrunner cannot see.
    That is said only where the model was given no tool definitions (``trajectory``'s
    agent, sub-agents included); an agent that offered its tools and got no call is told
    so, not pointed at dspy.
    """
    said = reasons or {}
    failed = [
        f"{name} ({said[name]})" if name in said else name
        for name, held in results.items()
        if not held
    ]
    if not tools and any(name.startswith(_TOOL_CHECKS) for name in failed):
        defined = trajectory is not None and _defines_tools(trajectory)
        failed.append(NO_TOOL_CALL if defined else NO_STRUCTURED_TOOL_CALLS)
    return failed


def _defines_tools(trajectory: Mapping[str, Any]) -> bool:
    """Whether the trajectory, or one of its sub-agents, gave the model tool definitions."""
    agent = trajectory.get("agent")
    if isinstance(agent, Mapping) and agent.get("tool_definitions"):
        return True
    subs = trajectory.get("subagent_trajectories")
    return isinstance(subs, list) and any(
        isinstance(sub, Mapping) and _defines_tools(sub) for sub in subs
    )
