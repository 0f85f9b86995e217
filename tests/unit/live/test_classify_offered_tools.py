"""unknown_tool is judged against the tools the agent offered its model, and a model
overrunning its context window is a skip, however a framework wrapped the error."""

from __future__ import annotations

from typing import Any

from evalrunner.live._classify import NO_MODEL_CALLS, classify, tools_disagreement
from evalrunner.suite._schema import Checks, SkipRules


def definition(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def trajectory(called: str, offered: list[str] | None) -> dict[str, Any]:
    t: dict[str, Any] = {
        "agent": {"name": "a"},
        "steps": [
            {"source": "user", "message": "task"},
            {
                "source": "agent",
                "message": "",
                "llm_call_count": 1,
                "tool_calls": [{"tool_call_id": "c1", "function_name": called, "arguments": {}}],
            },
            {"source": "agent", "message": "Paris", "llm_call_count": 1},
        ],
    }
    if offered is not None:
        t["agent"]["tool_definitions"] = [definition(n) for n in offered]
    return t


def outcome(
    traj: dict[str, Any], suite_tools: list[str], error: BaseException | None = None
) -> tuple[str, str | None]:
    c = classify(
        trajectory=traj,
        final_answer="Paris" if error is None else None,
        tools=[],
        offered_tools=suite_tools,
        checks=Checks(answer_contains=["Paris"]),
        skip_rules=SkipRules(),
        error=error,
        infra_error=None,
        model_calls=2,
    )
    return c.outcome, c.reason


def test_a_tool_the_agent_offered_is_known_even_when_the_suite_does_not_list_it() -> None:
    # smolagents offers its own final_answer tool; the suite lists only the task's tools.
    traj = trajectory("final_answer", offered=["lookup", "final_answer"])
    assert outcome(traj, ["lookup"]) == ("passed", None)


def test_a_tool_the_agent_did_not_offer_is_unknown_even_when_the_suite_lists_it() -> None:
    traj = trajectory("weather", offered=["lookup"])
    assert outcome(traj, ["lookup", "weather"]) == ("skipped", "unknown_tool")


def test_without_tool_definitions_the_suite_list_stands_in() -> None:
    assert outcome(trajectory("weather", offered=None), ["lookup"]) == ("skipped", "unknown_tool")
    assert outcome(trajectory("lookup", offered=None), ["lookup"]) == ("passed", None)


def test_sub_agents_are_judged_against_their_own_offer() -> None:
    top = trajectory("lookup", offered=["lookup"])
    top["subagent_trajectories"] = [trajectory("search", offered=["search"])]
    assert outcome(top, ["lookup"]) == ("passed", None)
    top["subagent_trajectories"] = [trajectory("delete", offered=["search"])]
    assert outcome(top, ["lookup"]) == ("skipped", "unknown_tool")


def test_the_disagreement_is_named() -> None:
    traj = trajectory("lookup", offered=["lookup", "final_answer"])
    note = tools_disagreement(traj, ["lookup", "weather"])
    assert note is not None
    assert "not offered by the agent: weather" in note
    assert "offered but not listed: final_answer" in note
    assert tools_disagreement(traj, ["final_answer", "lookup"]) is None
    assert tools_disagreement(traj, []) is None


class ContextWindowExceededError(Exception):
    """Named as litellm names it."""


class AgentGenerationError(Exception):
    """A framework's wrapper (smolagents)."""


def test_a_context_window_overrun_is_a_skip_also_when_wrapped() -> None:
    traj = trajectory("lookup", offered=["lookup"])
    try:
        try:
            raise ContextWindowExceededError("litellm.ContextWindowExceededError: too long")
        except ContextWindowExceededError as inner:
            raise AgentGenerationError("Error in generating model output") from inner
    except AgentGenerationError as wrapped:
        got = outcome(traj, ["lookup"], error=wrapped)
    assert got[0] == "skipped"
    assert got[1] is not None and got[1].startswith(
        "context_window_exceeded: ContextWindowExceeded"
    )
    worded = RuntimeError("This model's maximum context length is 2048 tokens")
    assert outcome(traj, ["lookup"], error=worded)[0] == "skipped"
    assert outcome(traj, ["lookup"], error=RuntimeError("a bug"))[0] == "crashed"


def test_a_run_without_model_calls_is_named_as_such_not_failed() -> None:
    c = classify(
        trajectory={"steps": []},
        final_answer="Paris",
        tools=[],
        offered_tools=[],
        checks=Checks(tools_used=["lookup"]),
        skip_rules=SkipRules(),
        error=None,
        infra_error=None,
        model_calls=0,
    )
    assert (c.outcome, c.reason) == ("infra_error", NO_MODEL_CALLS)
    assert NO_MODEL_CALLS.startswith("no model calls")
