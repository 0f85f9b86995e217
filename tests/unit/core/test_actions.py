"""A run's actions and first request, read from a trajectory."""

from __future__ import annotations

from typing import Any

from evalrunner.core._actions import Action, actions, digest, first_request


def _traj(*steps: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    agent: dict[str, Any] = {"name": "a", "version": "1"}
    if tools:
        agent["tool_definitions"] = tools
    return {"agent": agent, "steps": list(steps)}


def _call(call_id: str, name: str, args: dict[str, Any], answer: str | None) -> dict[str, Any]:
    step: dict[str, Any] = {
        "source": "agent",
        "message": "",
        "tool_calls": [{"tool_call_id": call_id, "function_name": name, "arguments": args}],
    }
    if answer is not None:
        step["observation"] = {"results": [{"source_call_id": call_id, "content": answer}]}
    return step


def test_actions_are_the_tool_calls_in_order_with_argument_and_answer_digests() -> None:
    traj = _traj(
        {"source": "user", "message": "q"},
        _call("call_1", "search", {"q": "x", "n": 1}, "found"),
        {"source": "agent", "message": "thinking it over"},  # an extra step: not an action
        _call("call_2", "read", {"id": 3}, None),
    )
    assert actions(traj) == [
        Action("search", digest({"n": 1, "q": "x"}), digest("found")),
        Action("read", digest({"id": 3}), None),
    ]


def test_the_first_request_view_keeps_system_prompt_first_user_message_and_tools() -> None:
    tool = {"type": "function", "function": {"name": "search", "parameters": {}}}
    traj = _traj(
        {"source": "system", "message": "be brief"},
        {"source": "user", "message": "first"},
        _call("call_1", "search", {}, "x"),
        {"source": "user", "message": "second"},
        tools=[tool],
    )
    view = first_request(traj)
    assert view["system"] == "be brief" and view["user"] == "first"
    assert list(view["tools"]) == ["search"]
