"""A run's calls group into conversations by message-prefix continuity; the first
is the agent, the rest embedded sub-agents; tool results join their calling step."""

from __future__ import annotations

from typing import Any

from evalrunner.core._normalize import normalize
from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.proxy._trajectory import CapturedCall, build_trajectory, conversations

SYS = {"role": "system", "content": "Agent."}
ASK = {"role": "user", "content": "Capital of France?"}
CALL = ResponseRecord(
    tool_calls=[ToolCallRecord(id="c1", name="lookup", arguments='{"c":"FR"}')],
    finish_reason="tool_calls",
)
CALL_MSG = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"c":"FR"}'}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "Paris"}
DONE = ResponseRecord(content="Paris.")


def sub(topic: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Researcher."}, {"role": "user", "content": topic}]


def test_continuations_stay_in_their_conversation_and_others_start_new_ones() -> None:
    calls: list[tuple[list[dict[str, Any]], ResponseRecord]] = [
        ([SYS, ASK], CALL),  # the agent
        (sub("tides"), DONE),  # a sub-agent
        ([SYS, ASK, CALL_MSG, RESULT], DONE),  # the agent continues: request + answer + result
        (sub("moss"), DONE),  # another sub-agent
        (
            [
                *sub("tides"),
                {"role": "assistant", "content": "Paris."},
                {"role": "user", "content": "More"},
            ],
            DONE,
        ),
    ]
    assert conversations(calls) == [0, 1, 0, 2, 1]


def test_an_agent_that_rewrites_the_answer_still_continues_its_conversation() -> None:
    rewritten = {"role": "assistant", "content": "Calling tools: lookup(FR)"}
    observation = {"role": "user", "content": "Observation: Paris"}
    assert conversations([([SYS, ASK], CALL), ([SYS, ASK, rewritten, observation], DONE)]) == [0, 0]


def test_identical_parallel_requests_are_separate_conversations() -> None:
    assert conversations([(sub("x"), DONE), (sub("x"), DONE)]) == [0, 1]


def _trajectory(order: list[str]) -> dict[str, Any]:
    calls = [CapturedCall(0, {"messages": [SYS, ASK]}, CALL)]
    for number, topic in enumerate(order, start=1):
        calls.append(
            CapturedCall(number, {"messages": sub(topic)}, ResponseRecord(content=f"notes {topic}"))
        )
    calls.append(CapturedCall(0, {"messages": [SYS, ASK, CALL_MSG, RESULT]}, DONE))
    return build_trajectory("agent", calls)


def test_the_trajectory_embeds_sub_agents_and_joins_tool_results() -> None:
    traj = _trajectory(["tides", "moss"])
    steps = traj["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    results = steps[2]["observation"]["results"]
    # Sub-agents started while the call was out; its result arrived with the next request.
    refs = results[0]["subagent_trajectory_ref"]
    assert results[1] == {"source_call_id": "c1", "content": "Paris"}
    subs = traj["subagent_trajectories"]
    assert [r["trajectory_id"] for r in refs] == [s["trajectory_id"] for s in subs]
    assert [s["steps"][-1]["message"] for s in subs] == ["notes tides", "notes moss"]
    assert {s["session_id"] for s in subs} == {traj["session_id"]}
    # Normalised like capture(): sub-agents sorted by content, whatever the arrival order.
    assert normalize(traj) == normalize(_trajectory(["moss", "tides"]))


def test_no_calls_is_an_empty_trajectory() -> None:
    traj = build_trajectory("agent", [])
    assert traj["steps"] == [] and "subagent_trajectories" not in traj
