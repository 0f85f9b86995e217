"""Classifying a run: exactly one outcome, for the right reason, from hand-written trajectories.

Real runs that reach each outcome through the runner and a fake endpoint are
in tests/integration/test_outcomes.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from evalrunner.core._faults import is_infra_error
from evalrunner.live._classify import Classification, classify, weak_model_failure
from evalrunner.suite._checks import NO_STRUCTURED_TOOL_CALLS
from evalrunner.suite._schema import SKIP_CLASSES, Checks, SkipRules

TASK = "What is the capital of France? Use the lookup_capital tool."
PATTERN = r"^(?![\s\S]*functions\.\w+:)"  # the example suite's invalid_output_pattern

# ------------------------------------------------------------------ unit: classify()


def step(
    message: str = "",
    *,
    tools: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    calls: int = 1,
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "source": "agent",
        "message": message,
        "llm_call_count": calls,
        "extra": {"finish_reason": finish},
    }
    if tools:
        s["tool_calls"] = tools
    return s


def call(name: str, *, invalid: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"tool_call_id": f"call_{name}", "function_name": name, "arguments": {}}
    if invalid:
        c["extra"] = {"invalid_arguments": True, "raw_arguments": '{"country": "Fra'}
    return c


def traj(*steps: dict[str, Any], subagents: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"steps": [{"source": "user", "message": TASK}, *steps]}
    if subagents:
        t["subagent_trajectories"] = subagents
    return t


def classified(
    trajectory: dict[str, Any],
    answer: str | None,
    *,
    tools: Sequence[str] = (),
    offered: Sequence[str] = ("lookup_capital",),
    checks: Checks | None = None,
    rules: SkipRules | None = None,
    error: BaseException | None = None,
    infra: BaseException | None = None,
    timed_out: float | None = None,
    model_calls: int | None = None,
) -> Classification:
    return classify(
        trajectory=trajectory,
        final_answer=answer,
        tools=list(tools),
        offered_tools=list(offered),
        checks=checks or Checks(answer_contains=["Paris"]),
        skip_rules=rules or SkipRules(),
        error=error,
        infra_error=infra,
        timed_out=timed_out,
        model_calls=model_calls,
    )


WEAK_CASES = {
    "malformed_tool_arguments": (
        traj(step(tools=[call("lookup_capital", invalid=True)]), step("Paris")),
        "Paris",
    ),
    "unknown_tool": (traj(step(tools=[call("get_weather")]), step("Paris")), "Paris"),
    "empty_output": (traj(step(" \n\t")), " \n\t"),
    "truncated_output": (
        traj(step("The capital of France is", finish="length")),
        "The capital of France is",
    ),
    "invalid_output": (
        traj(step('functions.lookup_capital: {"country": "France"}')),
        'functions.lookup_capital: {"country": "France"}',
    ),
    "no_final_answer": (
        traj(step(tools=[call("lookup_capital")]), step(tools=[call("lookup_capital")])),
        None,
    ),
}


def test_weak_cases_cover_every_skip_class() -> None:
    assert set(WEAK_CASES) == set(SKIP_CLASSES)


@pytest.mark.parametrize("klass", SKIP_CLASSES)
def test_each_weak_model_class_is_detected_and_skipped(klass: str) -> None:
    trajectory, answer = WEAK_CASES[klass]
    rules = SkipRules(invalid_output_pattern=PATTERN)
    assert weak_model_failure(trajectory, answer, ["lookup_capital"], rules) == klass
    v = classified(trajectory, answer, rules=rules)
    assert (v.outcome, v.reason, v.checks) == ("skipped", klass, {})


@pytest.mark.parametrize("klass", SKIP_CLASSES)
def test_a_skip_rule_turned_off_makes_the_run_failed_and_names_the_class(klass: str) -> None:
    trajectory, answer = WEAK_CASES[klass]
    rules = SkipRules(invalid_output_pattern=PATTERN, **{klass: False})
    # Detection does not depend on the rule being on; only the outcome does.
    assert weak_model_failure(trajectory, answer, ["lookup_capital"], rules) == klass
    v = classified(trajectory, answer, rules=rules, checks=Checks())
    assert v.outcome == "failed"
    assert v.reason is not None and v.reason.split("; ")[0] == klass


def test_a_clean_run_passes_or_fails_on_its_checks() -> None:
    good = traj(step(tools=[call("lookup_capital")]), step("It is Paris."))
    v = classified(
        good,
        "It is Paris.",
        tools=["lookup_capital"],
        checks=Checks(answer_contains=["Paris"], tools_used=["lookup_capital"]),
    )
    assert (v.outcome, v.reason) == ("passed", None)
    assert v.checks == {"answer_contains:Paris": True, "tools_used:lookup_capital": True}
    v = classified(
        traj(step("Lyon.")),
        "Lyon.",
        checks=Checks(answer_contains=["Paris"], tools_used=["lookup_capital"]),
    )
    assert v.outcome == "failed"
    # No tool call at all: the reason adds why a tool check may fail for a working agent.
    assert v.reason == (
        "answer_contains:Paris; tools_used:lookup_capital; " + NO_STRUCTURED_TOOL_CALLS
    )


def test_no_weak_class_without_a_reason() -> None:
    rules = SkipRules()  # no invalid_output_pattern: any non-empty answer is valid output
    assert weak_model_failure(traj(step("functions.x: {}")), "functions.x: {}", [], rules) is None
    # No tools offered: any tool name is fine (the suite did not restrict them).
    assert (
        weak_model_failure(traj(step(tools=[call("anything")]), step("ok")), "ok", [], rules)
        is None
    )
    # Only the model's last call decides truncation: an earlier cut-off that it recovered from is fine...
    assert (
        weak_model_failure(traj(step("cut", finish="length"), step("Paris")), "Paris", [], rules)
        is None
    )
    # ...and a synthetic step (llm_call_count 0, e.g. holding tool results) is not a model call.
    t = traj(step("cut", finish="length"), step("", calls=0))
    t["steps"][-1]["extra"] = {}
    assert weak_model_failure(t, "Paris", [], rules) == "truncated_output"


def test_weak_model_failures_inside_subagents_count() -> None:
    sub = traj(step(tools=[call("lookup_capital", invalid=True)]), step("Paris"))
    top = traj(step("Paris"), subagents=[sub])
    assert (
        weak_model_failure(top, "Paris", ["lookup_capital"], SkipRules())
        == "malformed_tool_arguments"
    )


def test_first_matching_class_wins() -> None:
    both = traj(step(tools=[call("get_weather", invalid=True)]), step("", finish="length"))
    assert (
        weak_model_failure(both, "", ["lookup_capital"], SkipRules()) == "malformed_tool_arguments"
    )
    assert (
        weak_model_failure(traj(step("", finish="length")), "", [], SkipRules())
        == "truncated_output"
    )


def test_infra_beats_crash_beats_skip() -> None:
    import litellm

    weak, answer = WEAK_CASES["empty_output"]
    boom = ValueError("tool exploded")
    limited = litellm.RateLimitError("slow down", llm_provider="openai", model="fake")
    v = classified(weak, answer, error=boom)
    assert (v.outcome, v.reason) == ("crashed", "ValueError: tool exploded")
    v = classified(
        weak, answer, error=boom, infra=limited
    )  # the agent caught the 429, then crashed
    assert (
        v.outcome == "infra_error"
        and v.reason is not None
        and v.reason.startswith("RateLimitError")
    )
    v = classified(weak, answer, infra=limited)  # the agent caught it and answered anyway
    assert v.outcome == "infra_error"
    v = classified(
        weak, answer, error=limited
    )  # escaped the agent (no retry log, e.g. retries off)
    assert v.outcome == "infra_error"
    v = classified(weak, answer, error=TimeoutError(), timed_out=1.5)
    assert (v.outcome, v.reason) == ("infra_error", "run timed out after 1.5 s")
    # A crash whose cause is an endpoint fault is an infra error, not the agent's bug.
    try:
        try:
            raise limited
        except Exception as exc:
            raise RuntimeError("planner failed") from exc
    except RuntimeError as wrapped:
        assert classified(weak, answer, error=wrapped).outcome == "infra_error"


def test_an_agent_bug_raised_while_handling_bad_json_is_a_crash_not_infra() -> None:
    try:
        try:
            json.loads("{not json")
        except json.JSONDecodeError:
            raise KeyError("arguments")  # noqa: B904 - the agent's own bug, implicitly chained
    except KeyError as exc:
        error = exc
    assert not is_infra_error(error)
    result = classify(
        trajectory={"steps": []},
        final_answer=None,
        tools=[],
        offered_tools=[],
        checks=Checks(),
        skip_rules=SkipRules(),
        error=error,
        infra_error=None,
    )
    assert result.outcome == "crashed"


def test_a_run_with_no_model_call_names_response_caches_among_the_causes() -> None:
    v = classified(traj(), None, model_calls=0)
    assert v.outcome == "infra_error"
    assert "response cache" in (v.reason or "") and "dspy" in (v.reason or "")


def test_a_tool_check_on_a_run_without_structured_tool_calls_says_why_it_may_fail() -> None:
    # dspy ReAct writes its tool calls as text: the trajectory holds none.
    answer = "[[ ## next_thought ## ]]\nI should look it up.\n[[ ## next_tool_name ## ]]\nlookup"
    v = classified(
        traj(step(answer)),
        answer,
        offered=["lookup"],
        checks=Checks(tools_used=["lookup"]),
        model_calls=1,
    )
    assert v.outcome == "failed"
    assert (v.reason or "").startswith("tools_used:lookup; (no structured tool call")
    assert "dspy ReAct" in (v.reason or "")


def test_a_tool_check_on_an_agent_that_offered_its_tools_says_none_was_called_not_dspy() -> None:
    """An ordinary tool-calling agent whose model answered without its tool: the run's
    trajectory defines the tools, so pointing at text-protocol agents misleads."""
    answer = "Paris."
    offered = traj(step(answer))
    offered["agent"] = {"name": "a", "tool_definitions": [{"function": {"name": "lookup"}}]}
    v = classified(offered, answer, offered=["lookup"], checks=Checks(tools_used=["lookup"]))
    assert v.outcome == "failed"
    assert v.reason == "tools_used:lookup; (the model was offered its tools and called none)"
    in_sub = traj(step(answer), subagents=[offered])
    v = classified(in_sub, answer, offered=["lookup"], checks=Checks(tools_used=["lookup"]))
    assert "dspy" not in (v.reason or "")
