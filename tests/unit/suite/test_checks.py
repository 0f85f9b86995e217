"""Scenario checks: each declarative expectation becomes a named boolean per run."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.suite._checks import evaluate_checks
from evalrunner.suite._schema import Checks


def trajectory(*, failed: bool = False, failed_in_subagent: bool = False) -> dict[str, Any]:
    def agent_step(step_id: int, call: str, *, error: bool) -> dict[str, Any]:
        result: dict[str, Any] = {"source_call_id": call, "content": "boom" if error else "ok"}
        if error:
            result["extra"] = {"error": True}
        return {
            "step_id": step_id,
            "source": "agent",
            "message": "",
            "tool_calls": [{"tool_call_id": call, "function_name": "lookup", "arguments": {}}],
            "observation": {"results": [result]},
        }

    sub = {
        "schema_version": "ATIF-v1.8",
        "trajectory_id": "sub-1",
        "agent": {"name": "sub", "version": "1"},
        "steps": [agent_step(1, "c9", error=failed_in_subagent)],
    }
    return {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "main", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            agent_step(2, "c1", error=failed),
            {"step_id": 3, "source": "agent", "message": "Paris has 2.1 million people."},
        ],
        "subagent_trajectories": [sub],
    }


ALL_CHECKS = Checks(
    answer_contains=["paris", "Million"],
    answer_not_contains=["London"],
    answer_matches=r"\d+\.\d",
    tools_used=["lookup"],
    tools_not_used=["search"],
    tools_in_order=["lookup", "population"],
    max_tool_calls=2,
    all_tools_succeeded=True,
)
NAMES = [
    "answer_contains:paris",
    "answer_contains:Million",
    "answer_not_contains:London",
    "answer_matches:\\d+\\.\\d",
    "tools_used:lookup",
    "tools_not_used:search",
    "tools_in_order:lookup>population",
    "max_tool_calls<=2",
    "all_tools_succeeded",
]
ANSWER = "Paris has 2.1 million people."


@pytest.mark.parametrize(
    ("answer", "tools", "traj", "failing"),
    [
        (ANSWER, ["lookup", "population"], trajectory(), set()),
        (ANSWER, ["lookup", "x", "population"], trajectory(), {"max_tool_calls<=2"}),
        (ANSWER, ["population", "lookup"], trajectory(), {"tools_in_order:lookup>population"}),
        (
            ANSWER,
            ["search", "lookup"],
            trajectory(),
            {"tools_not_used:search", "tools_in_order:lookup>population"},
        ),
        (ANSWER, [], trajectory(), {"tools_used:lookup", "tools_in_order:lookup>population"}),
        (
            "LONDON, about 9 million",
            ["lookup", "population"],
            trajectory(),
            {"answer_contains:paris", "answer_not_contains:London", "answer_matches:\\d+\\.\\d"},
        ),
        (
            None,
            ["lookup", "population"],
            trajectory(),
            {"answer_contains:paris", "answer_contains:Million", "answer_matches:\\d+\\.\\d"},
        ),
        (ANSWER, ["lookup", "population"], trajectory(failed=True), {"all_tools_succeeded"}),
        (
            ANSWER,
            ["lookup", "population"],
            trajectory(failed_in_subagent=True),
            {"all_tools_succeeded"},
        ),
    ],
    ids=[
        "all-hold",
        "too-many-calls",
        "wrong-order",
        "forbidden-tool",
        "no-tools",
        "wrong-answer",
        "no-answer",
        "tool-failed",
        "subagent-tool-failed",
    ],
)
def test_evaluate_checks(
    answer: str | None, tools: list[str], traj: dict[str, Any], failing: set[str]
) -> None:
    results = evaluate_checks(ALL_CHECKS, traj, answer, tools)
    assert list(results) == NAMES
    assert {name for name, held in results.items() if not held} == failing


def test_evaluate_no_checks_and_unchecked_success() -> None:
    assert evaluate_checks(Checks(), trajectory(failed=True), None, ["x"]) == {}
    # all_tools_succeeded: false means "not checked", not "must fail".
    assert evaluate_checks(Checks(all_tools_succeeded=False), trajectory(), "a", []) == {}


def test_tools_in_order_is_a_subsequence() -> None:
    checks = Checks(tools_in_order=["a", "b", "a"])
    assert evaluate_checks(checks, {}, "x", ["a", "c", "b", "b", "a"]) == {
        "tools_in_order:a>b>a": True
    }
    assert evaluate_checks(checks, {}, "x", ["a", "b"]) == {"tools_in_order:a>b>a": False}


def test_evaluate_checks_tolerates_odd_trajectories() -> None:
    odd = {
        "steps": [None, {"observation": "x"}, {"observation": {"results": [1, {"extra": None}]}}]
    }
    assert evaluate_checks(Checks(all_tools_succeeded=True), odd, "a", []) == {
        "all_tools_succeeded": True
    }
