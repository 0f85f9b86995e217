"""Every live run gets exactly one outcome, with its reason.

Deterministic rules, applied in this order (the same for baseline nights and
tonight, so rates compare):

1. ``infra_error``: an endpoint fault survived its retries (even if the agent
   caught it), or the run hit its timeout while a model call was under way.
   The reason names what happened (status, timeout, reset), the endpoint and
   its message. A run that hit its timeout with no model call under way was
   held by the agent's own code (a loop, a slow tool): ``crashed``, "timed out
   in the agent".
2. ``skipped`` (``context_window_exceeded``): the model overran its context
   window, also when a framework wrapped that error in its own (the cause
   chain is walked): weak-model output, not a crash. Always a skip (it is not
   one of ``SkipRules``, whose fields every baseline fingerprint hashes).
   ``crashed``: agent or tool code raised something else.
3. ``infra_error`` with a reason starting ``no model calls``: the run ended
   without a single model call evalrunner saw. It measured nothing about the
   model's behaviour: almost always the agent reached its model around capture
   (an SDK client, a ``from litellm import completion`` bound early, a cache),
   or a command agent ignored the proxy's base URL. Counted with infrastructure
   faults (out of the behaviour statistics, and a night of them is an outage),
   never as ``failed``.
4. ``skipped``: the model could not produce usable output (the weak-model
   classes of ``SkipRules``; each can be turned off per suite).
5. ``passed`` / ``failed``: the scenario's checks held or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from evalrunner.core._faults import (
    context_window_exceeded,
    describe,
    describe_fault,
    is_infra_error,
)
from evalrunner.suite._checks import evaluate_checks, failed_checks
from evalrunner.suite._code_checks import CodeChecked
from evalrunner.suite._record import Outcome
from evalrunner.suite._schema import Checks, SkipRules

__all__ = [
    "NO_MODEL_CALLS",
    "Classification",
    "classify",
    "offered_tool_names",
    "tools_disagreement",
    "weak_model_failure",
]

NO_MODEL_CALLS = (
    "no model calls: the run ended without one model call through capture; the agent "
    "reached its model around it (an SDK client or `from litellm import completion` in "
    "process: run it through the capture proxy, docs/proxy.md), a command agent ignored "
    "OPENAI_BASE_URL / ANTHROPIC_BASE_URL, or a response cache answered (dspy's "
    "~/.dspy_cache, a LangChain or HTTP cache: turn it off for runs)"
)


class Classification(NamedTuple):
    """One run's outcome, why, and each check's result (empty unless the checks ran)."""

    outcome: Outcome
    reason: str | None
    checks: dict[str, bool]


def offered_tool_names(trajectory: Mapping[str, Any]) -> list[str] | None:
    """The tools the agent offered its model (``agent.tool_definitions``); None if none recorded."""
    definitions = (trajectory.get("agent") or {}).get("tool_definitions")
    if not definitions:
        return None
    names = []
    for definition in definitions:
        if isinstance(definition, Mapping):
            function = definition.get("function")
            name = function.get("name") if isinstance(function, Mapping) else definition.get("name")
            if isinstance(name, str):
                names.append(name)
    return names or None


def tools_disagreement(trajectory: Mapping[str, Any], suite_tools: Sequence[str]) -> str | None:
    """Why the suite's ``tools:`` differ from what the agent offered (None: they agree)."""
    offered = offered_tool_names(trajectory)
    if offered is None or not suite_tools or set(offered) == set(suite_tools):
        return None
    missing = sorted(set(suite_tools) - set(offered))
    extra = sorted(set(offered) - set(suite_tools))
    parts = ([f"not offered by the agent: {', '.join(missing)}"] if missing else []) + (
        [f"offered but not listed: {', '.join(extra)}"] if extra else []
    )
    return (
        f"tools: lists {', '.join(suite_tools)}, the agent offered {', '.join(offered)} "
        f"({'; '.join(parts)}); unknown_tool is judged against what the agent offered"
    )


def _tool_call_failure(trajectory: Mapping[str, Any], suite_tools: Sequence[str]) -> str | None:
    """A malformed or unknown tool call anywhere, sub-agents included.

    A call is unknown when its tool was not among those the (sub-)agent offered
    its model (``tool_definitions``); the suite's ``tools:`` list stands in only
    when the trajectory records no definitions.
    """
    offered = offered_tool_names(trajectory) or list(suite_tools)
    for call in _agent_calls(trajectory):
        found = _call_failure(call, offered)
        if found is not None:
            return found
    for sub in trajectory.get("subagent_trajectories") or []:
        found = _tool_call_failure(sub, suite_tools)
        if found is not None:
            return found
    return None


def _agent_calls(trajectory: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tool calls of the trajectory's own agent steps, in order (no sub-agents')."""
    steps = [s for s in trajectory.get("steps") or [] if s.get("source") == "agent"]
    return [call for step in steps for call in step.get("tool_calls") or []]


def _call_failure(call: Mapping[str, Any], offered: Sequence[str]) -> str | None:
    """What is wrong with one tool call: malformed arguments, or a tool not offered."""
    if (call.get("extra") or {}).get("invalid_arguments"):
        return "malformed_tool_arguments"
    if offered and call.get("function_name") not in offered:
        return "unknown_tool"
    return None


def _answer_failure(
    trajectory: Mapping[str, Any], final_answer: str | None, rules: SkipRules
) -> str | None:
    """A missing, truncated, empty or invalid final answer of the top-level agent."""
    if final_answer is None:
        return "no_final_answer"
    if _truncated(trajectory):
        return "truncated_output"
    if not final_answer.strip():
        return "empty_output"
    pattern = rules.invalid_output_pattern
    if pattern is not None and re.search(pattern, final_answer) is None:
        return "invalid_output"
    return None


def _truncated(trajectory: Mapping[str, Any]) -> bool:
    """The top-level agent's last model call stopped at its output limit."""
    top = [
        s
        for s in trajectory.get("steps") or []
        if s.get("source") == "agent" and s.get("llm_call_count") != 0
    ]
    return bool(top) and (top[-1].get("extra") or {}).get("finish_reason") == "length"


def weak_model_failure(
    trajectory: Mapping[str, Any],
    final_answer: str | None,
    offered_tools: Sequence[str],
    rules: SkipRules,
) -> str | None:
    """The first weak-model failure class this run shows (enabled or not), or None."""
    return _tool_call_failure(trajectory, offered_tools) or _answer_failure(
        trajectory, final_answer, rules
    )


def _failed(
    results: dict[str, bool],
    tools: Sequence[str],
    code: CodeChecked | None,
    trajectory: Mapping[str, Any],
) -> list[str]:
    """The failed checks, the code checks' and the judge's among them with their reasons
    (``results`` gains them, for the record)."""
    checked = code or CodeChecked()
    results |= checked.held
    return failed_checks(results, tools, checked.reasons, trajectory)


def classify(
    *,
    trajectory: Mapping[str, Any],
    final_answer: str | None,
    tools: Sequence[str],
    offered_tools: Sequence[str],
    checks: Checks,
    skip_rules: SkipRules,
    error: BaseException | None,
    infra_error: BaseException | None,
    timed_out: float | None = None,
    infra_reason: str | None = None,
    model_calls: int | None = None,
    in_agent_code: bool = False,
    code: CodeChecked | None = None,
) -> Classification:
    """Decide one run's outcome from its trajectory and what happened around it.

    ``infra_reason`` describes ``infra_error`` (or, for a run that timed out,
    the last endpoint fault it met) as the transport saw it, endpoint included.
    ``model_calls`` (sub-agents included; None: unknown) of 0 is rule 3.
    ``in_agent_code``: a timed-out run had no model call under way (``crashed``).
    ``code``: the scenario's code checks on this run; those that failed themselves are not
    in it, so the run is judged without them.
    """
    ended = _timed_out(timed_out, in_agent_code, infra_reason)
    if ended is None:
        ended = _raised(error, infra_error, infra_reason)
    if ended is not None:
        return ended
    if model_calls == 0:
        return Classification(Outcome.INFRA_ERROR, NO_MODEL_CALLS, {})
    weak = weak_model_failure(trajectory, final_answer, offered_tools, skip_rules)
    if weak is not None and skip_rules.skips(weak):
        return Classification(Outcome.SKIPPED, weak, {})
    results = evaluate_checks(checks, trajectory, final_answer, list(tools))
    failed = _failed(results, tools, code, trajectory)
    if weak is not None:
        failed.insert(0, weak)
    if failed:
        return Classification(Outcome.FAILED, "; ".join(failed), results)
    return Classification(Outcome.PASSED, None, results)


def _timed_out(
    timed_out: float | None, in_agent_code: bool, infra_reason: str | None
) -> Classification | None:
    """Rule 1 for a run that hit its timeout (None: it did not)."""
    if timed_out is None:
        return None
    if in_agent_code:
        # No model call was under way: the agent's own code (a loop, a tool) held the
        # run, which is its behaviour, not the endpoint's fault.
        return Classification(
            Outcome.CRASHED,
            f"timed out in the agent after {timed_out:g} s (no model call was under way)",
            {},
        )
    reason = f"run timed out after {timed_out:g} s"
    return Classification(
        Outcome.INFRA_ERROR,
        f"{reason}; last endpoint fault: {infra_reason}" if infra_reason else reason,
        {},
    )


def _raised(
    error: BaseException | None, infra_error: BaseException | None, infra_reason: str | None
) -> Classification | None:
    """Rules 1 and 2 for a run that met an endpoint fault or raised (None: neither)."""
    if infra_error is not None:
        return Classification(Outcome.INFRA_ERROR, infra_reason or describe_fault(infra_error), {})
    if error is None:
        return None
    if is_infra_error(error):
        return Classification(Outcome.INFRA_ERROR, describe_fault(error), {})
    overrun = context_window_exceeded(error)
    if overrun is not None:
        return Classification(Outcome.SKIPPED, f"context_window_exceeded: {describe(overrun)}", {})
    return Classification(Outcome.CRASHED, describe(error), {})
