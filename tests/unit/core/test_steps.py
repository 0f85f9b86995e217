"""The ATIF step builder on its own: requests, responses, tool results and sub-agent
links in, the ATIF v1.8 trajectory out. No litellm and no capture scope: this is the
API a second front end (an HTTP capture proxy) feeds."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from evalrunner.core._atif import validate
from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.core._steps import SCHEMA_VERSION, TrajectoryBuilder, message_text

SYSTEM = {"role": "system", "content": "You answer with the lookup tool."}
USER = {"role": "user", "content": "Capital of France?"}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def clock() -> Callable[[], str]:
    """A clock that ticks one second per step."""
    ticks = iter(range(3600))

    def tick() -> str:
        n = next(ticks)
        return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000000Z"

    return tick


def builder(**kwargs: Any) -> TrajectoryBuilder:
    return TrajectoryBuilder(
        "looper", session_id="s-1", trajectory_id="t-1", clock=clock(), **kwargs
    )


def calling(*calls: tuple[str, str, str], **fields: Any) -> ResponseRecord:
    """A response that calls tools: (call id, tool name, arguments)."""
    return ResponseRecord(
        tool_calls=[ToolCallRecord(id=i, name=n, arguments=a) for i, n, a in calls],
        finish_reason="tool_calls",
        **fields,
    )


def assistant(*call_ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            for i in call_ids
        ],
    }


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# ------------------------------------------------------------------ a whole run


def test_a_tool_loop_builds_the_exact_trajectory() -> None:
    b = builder()
    b.ingest_messages([SYSTEM, USER], TOOLS)
    b.add_response(
        calling(
            ("c1", "lookup", '{"country": "France"}'),
            content="Let me look.",
            reasoning="The tool knows.",
            usage=Usage(prompt_tokens=21, completion_tokens=7, cached_tokens=5),
            model="gpt-4o-mini",
        ),
        "chatcmpl-1",
    )
    b.ingest_messages([SYSTEM, USER, assistant("c1"), tool("c1", "Paris")])
    b.add_response(
        ResponseRecord(
            content="Paris.", usage=Usage(prompt_tokens=40, completion_tokens=2), model="gpt-4o"
        )
    )
    traj = b.build()
    assert traj == {
        "schema_version": SCHEMA_VERSION,
        "session_id": "s-1",
        "trajectory_id": "t-1",
        "agent": {
            "name": "looper",
            "version": "0",
            "model_name": "gpt-4o-mini",  # the first response's model
            "tool_definitions": TOOLS,
        },
        "steps": [
            {
                "step_id": 1,
                "timestamp": "2026-01-01T00:00:00.000000Z",
                "source": "system",
                "message": "You answer with the lookup tool.",
            },
            {
                "step_id": 2,
                "timestamp": "2026-01-01T00:00:01.000000Z",
                "source": "user",
                "message": "Capital of France?",
            },
            {
                "step_id": 3,
                "timestamp": "2026-01-01T00:00:02.000000Z",
                "source": "agent",
                "message": "Let me look.",
                "model_name": "gpt-4o-mini",
                "reasoning_content": "The tool knows.",
                "tool_calls": [
                    {
                        "tool_call_id": "c1",
                        "function_name": "lookup",
                        "arguments": {"country": "France"},
                    }
                ],
                "metrics": {"prompt_tokens": 21, "completion_tokens": 7, "cached_tokens": 5},
                "llm_call_count": 1,
                "extra": {"finish_reason": "tool_calls", "generation_id": "chatcmpl-1"},
                "observation": {"results": [{"source_call_id": "c1", "content": "Paris"}]},
            },
            {
                "step_id": 4,
                "timestamp": "2026-01-01T00:00:03.000000Z",
                "source": "agent",
                "message": "Paris.",
                "model_name": "gpt-4o",
                "metrics": {"prompt_tokens": 40, "completion_tokens": 2},
                "llm_call_count": 1,
                "extra": {"finish_reason": "stop"},
            },
        ],
        "final_metrics": {
            "total_prompt_tokens": 61,
            "total_completion_tokens": 9,
            "total_steps": 4,
        },
    }
    validate(traj)
    assert b.model_calls == 2


def test_an_empty_builder_is_a_valid_trajectory_with_no_steps() -> None:
    b = TrajectoryBuilder()
    traj = b.build()
    assert traj["agent"] == {"name": "agent", "version": "0"}
    assert traj["steps"] == [] and "extra" not in traj and "subagent_trajectories" not in traj
    assert traj["final_metrics"]["total_steps"] == 0
    assert len(traj["session_id"]) == len(traj["trajectory_id"]) == 32
    assert TrajectoryBuilder().trajectory_id != b.trajectory_id
    assert b.model_calls == 0
    validate(traj)


# ------------------------------------------------------------------ requests


def test_only_messages_not_seen_before_become_steps() -> None:
    b = builder()
    b.ingest_messages([SYSTEM, USER])
    b.ingest_messages([SYSTEM, USER])  # every request repeats the conversation
    b.ingest_messages([SYSTEM, USER, {"role": "user", "content": "Capital of France?"}])
    b.ingest_messages([{"role": "developer", "content": "Be brief."}])
    steps = b.build()["steps"]
    assert [(s["source"], s["message"]) for s in steps] == [
        ("system", "You answer with the lookup tool."),
        ("user", "Capital of France?"),
        ("user", "Capital of France?"),  # asked again: a new step
        ("system", "Be brief."),
    ]


def test_a_message_is_the_same_one_again_only_with_the_same_role_text_and_call_id() -> None:
    # Messages are told apart by value, whatever types an SDK sends: a call id that is a
    # number is not the same as the string of it, and an enum role is its string.
    import enum

    class Role(enum.StrEnum):
        USER = "user"

    b = builder()
    b.ingest_messages([{"role": "user", "content": "go"}])
    b.ingest_messages([{"role": Role.USER, "content": "go"}])  # the same message again
    b.ingest_messages([{"role": "tool", "tool_call_id": 5, "content": "a"}])
    b.ingest_messages([{"role": "tool", "tool_call_id": "5", "content": "a"}])  # another one
    steps = b.build()["steps"]
    assert [s["message"] for s in steps if s["source"] == "user"] == ["go"]
    results = [r for s in steps for r in (s.get("observation") or {}).get("results", [])]
    assert len(results) == 2, steps


def test_assistant_messages_are_skipped_and_objects_are_read_like_mappings() -> None:
    b = builder()
    b.ingest_messages(
        [
            SimpleNamespace(role="user", content=[{"type": "text", "text": "part one, "}, "two"]),
            SimpleNamespace(role="assistant", content="I said this before.", tool_calls=None),
        ]
    )
    (step,) = b.build()["steps"]
    assert (step["source"], step["message"]) == ("user", "part one, two")


def test_the_first_request_offering_tools_sets_the_tool_definitions() -> None:
    b = builder()
    b.ingest_messages([USER])
    b.ingest_messages([USER], TOOLS)
    b.ingest_messages([USER], [{"type": "function", "function": {"name": "other"}}])
    assert b.build()["agent"]["tool_definitions"] == TOOLS


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (None, ""),
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"], "ab"),
        ({"answer": 42, "unit": None}, '{"answer": 42, "unit": null}'),
        (3.5, "3.5"),
    ],
)
def test_message_text(content: object, text: str) -> None:
    assert message_text(content) == text


# ------------------------------------------------------------------ responses


def test_broken_tool_arguments_are_kept_raw() -> None:
    b = builder()
    b.add_response(
        calling(("c1", "lookup", '{"country": '), ("c2", "lookup", "[1]"), ("c3", "noargs", " "))
    )
    calls = b.build()["steps"][0]["tool_calls"]
    assert calls == [
        {
            "tool_call_id": "c1",
            "function_name": "lookup",
            "arguments": {},
            "extra": {"invalid_arguments": True, "raw_arguments": '{"country": '},
        },
        {
            "tool_call_id": "c2",
            "function_name": "lookup",
            "arguments": {},
            "extra": {"invalid_arguments": True, "raw_arguments": "[1]"},
        },
        {"tool_call_id": "c3", "function_name": "noargs", "arguments": {}},
    ]


def test_an_empty_response_is_an_agent_step_with_an_empty_message() -> None:
    b = builder()
    b.add_response(ResponseRecord(finish_reason="length"))
    (step,) = b.build()["steps"]
    assert step["message"] == "" and "model_name" not in step and "tool_calls" not in step
    assert step["extra"] == {"finish_reason": "length"}
    assert "model_name" not in b.build()["agent"]


# ------------------------------------------------------------------ tool results


def test_tool_results_join_their_call_and_are_not_added_twice() -> None:
    b = builder()
    b.add_response(calling(("c1", "lookup", "{}"), ("c2", "lookup", "{}")))
    b.add_tool_result("c2", "Tokyo")  # the agent recorded it first
    b.ingest_messages([assistant("c1", "c2"), tool("c1", "Paris"), tool("c2", "Tokyo")])
    b.add_tool_result("c1", "Paris", error=True)  # recorded after it reached the model
    (step,) = b.build()["steps"]
    assert step["observation"]["results"] == [
        {"source_call_id": "c2", "content": "Tokyo"},
        {"source_call_id": "c1", "content": "Paris", "extra": {"error": True}},
    ]


def test_a_result_for_an_unknown_call_lands_on_the_last_agent_step() -> None:
    b = builder()
    b.ingest_messages([USER])
    b.add_tool_result("nobody-asked", {"rows": 2}, error=True)  # no agent step yet
    b.add_response(ResponseRecord(content="Done."))
    b.add_tool_result(None, None)
    steps = b.build()["steps"]
    assert [(s["source"], s.get("llm_call_count")) for s in steps] == [
        ("user", None),
        ("agent", 0),  # a placeholder: no model call made it
        ("agent", 1),
    ]
    assert steps[1]["message"] == ""
    assert steps[1]["observation"]["results"] == [
        {"content": '{"rows": 2}', "extra": {"tool_call_id": "nobody-asked", "error": True}}
    ]
    assert steps[2]["observation"]["results"] == [{"content": ""}]


# ------------------------------------------------------------------ sub-agents


def test_subagents_link_to_the_spawning_call_or_else_the_last_agent_step() -> None:
    b = builder()
    b.link_subagent("early")  # before any agent step: a placeholder step holds the ref
    b.add_response(calling(("c1", "delegate", "{}")))
    b.link_subagent("sub-a", "c1")
    b.link_subagent("sub-b", "c1")
    b.add_tool_result("c1", "Tokyo")  # fills the content of the linked result
    b.link_subagent("sub-c", "unknown-call")
    b.link_subagent("sub-d")
    children = [TrajectoryBuilder(n, trajectory_id=n).build() for n in ("early", "sub-a")]
    traj = b.build(subagents=children)
    first, second = traj["steps"]
    assert first["observation"]["results"] == [
        {"subagent_trajectory_ref": [{"trajectory_id": "early"}]}
    ]
    assert second["observation"]["results"] == [
        {
            "source_call_id": "c1",
            "subagent_trajectory_ref": [{"trajectory_id": "sub-a"}, {"trajectory_id": "sub-b"}],
            "content": "Tokyo",
        },
        {"subagent_trajectory_ref": [{"trajectory_id": "sub-c"}, {"trajectory_id": "sub-d"}]},
    ]
    assert [s["trajectory_id"] for s in traj["subagent_trajectories"]] == ["early", "sub-a"]


# ------------------------------------------------------------------ build


def test_build_records_the_error_and_keeps_extra() -> None:
    b = builder(extra={"suite": "example"})
    b.add_response(ResponseRecord(content="Paris."))
    traj = b.build(error=ValueError("tool exploded"))
    assert traj["extra"] == {
        "suite": "example",
        "crashed": True,
        "exception": {"type": "ValueError", "message": "tool exploded"},
    }
    assert b.build()["extra"] == {"suite": "example"}  # building again is fine
    validate(traj)


def test_build_returns_a_copy() -> None:
    b = builder()
    b.add_response(calling(("c1", "lookup", '{"q": 1}')))
    traj = b.build()
    traj["steps"][0]["tool_calls"][0]["arguments"]["q"] = 2
    traj["steps"].append({"step_id": 99})
    again = b.build()
    assert again["steps"][0]["tool_calls"][0]["arguments"] == {"q": 1}
    assert len(again["steps"]) == 1


def test_concurrent_front_ends_share_one_builder() -> None:
    b = builder()
    barrier = threading.Barrier(8)

    def worker(k: int) -> None:
        barrier.wait()
        for i in range(25):
            call = f"c{k}-{i}"
            b.ingest_messages([{"role": "user", "content": f"question {k}-{i}"}])
            b.add_response(calling((call, "lookup", "{}")))
            b.add_tool_result(call, f"answer {k}-{i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    traj = b.build()
    steps = traj["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, 401))
    assert b.model_calls == 200
    for step in steps:
        if step["source"] == "agent":
            (call,) = step["tool_calls"]
            (result,) = step["observation"]["results"]
            assert result["source_call_id"] == call["tool_call_id"]
            assert result["content"] == "answer " + call["tool_call_id"][1:]
    validate(traj)


def test_an_answer_sits_after_the_request_it_answers_whenever_it_arrives() -> None:
    # Calls in flight together (asyncio.gather): live, both questions come before either
    # answer; replayed, each answer comes at once. Both must read the same.
    def ask(city: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"weather in {city}"}]

    live = builder()
    paris, rome = live.send(ask("Paris")), live.send(ask("Rome"))
    live.add_response(ResponseRecord(content="rainy"), slot=rome)  # answered first
    live.add_response(ResponseRecord(content="sunny"), slot=paris)
    replayed = builder()
    for city, answer in (("Paris", "sunny"), ("Rome", "rainy")):
        replayed.add_response(ResponseRecord(content=answer), slot=replayed.send(ask(city)))

    def steps(b: TrajectoryBuilder) -> list[tuple[int, str, str]]:
        return [(s["step_id"], s["source"], s["message"]) for s in b.build()["steps"]]

    assert steps(live) == steps(replayed)
    assert steps(live) == [
        (1, "user", "weather in Paris"),
        (2, "agent", "sunny"),
        (3, "user", "weather in Rome"),
        (4, "agent", "rainy"),
    ]
    validate(live.build())


def test_a_call_that_got_no_answer_leaves_no_step_and_no_gap() -> None:
    b = builder()
    b.send([{"role": "user", "content": "first"}])  # raised: no response
    b.add_response(ResponseRecord(content="two"), slot=b.send([{"role": "user", "content": "2"}]))
    traj = b.build()
    assert [(s["step_id"], s["source"]) for s in traj["steps"]] == [
        (1, "user"),
        (2, "user"),
        (3, "agent"),
    ]
    validate(traj)
