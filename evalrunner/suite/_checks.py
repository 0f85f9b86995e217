"""Scenario checks: each declarative expectation of a suite becomes a named boolean per run."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evalrunner.suite._schema import Checks

__all__ = ["evaluate_checks", "failed_tool_results"]


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
