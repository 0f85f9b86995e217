"""The litellm hook: inside a capture scope every litellm.completion / acompletion call
(plain or streamed, keyword or positional) becomes steps of the scope's trajectory;
outside one, calls pass straight through. Real litellm against the loopback fake
endpoint, or a scripted transport."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
from agents_for_tests import ask, tool_loop
from fake_endpoint import FakeEndpoint, Reply
from scripted import ScriptedTransport
from workdir import writes_nothing  # noqa: F401  (autouse: capture writes no files)

from evalrunner.core._atif import validate
from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.core._scope import arun_captured, capture, run_captured

TOOL_REPLY = Reply(
    "Let me look.",
    tool_calls=[("lookup", '{"country": "France"}')],
    prompt_tokens=21,
    completion_tokens=7,
)
CALLING = ResponseRecord(
    content="Checking.",
    tool_calls=[ToolCallRecord(id="call_a", name="lookup", arguments='{"country": "Peru"}')],
    finish_reason="tool_calls",
)


def test_tool_loop_steps_observations_and_strict_atif() -> None:
    with FakeEndpoint([TOOL_REPLY, Reply("Paris.", prompt_tokens=40, completion_tokens=2)]) as ep:
        res = run_captured(tool_loop, ep.api_base, name="looper")
    assert res.output == "Paris."
    traj = res.trajectory
    validate(traj)  # our own captures conform to ATIF v1.8 strictly
    assert [s["source"] for s in traj["steps"]] == ["system", "user", "agent", "agent"]
    call_step = traj["steps"][2]
    (call,) = call_step["tool_calls"]
    assert call["function_name"] == "lookup" and call["arguments"] == {"country": "France"}
    assert call["tool_call_id"].startswith("call_")  # the provider's id, before normalisation
    assert call_step["observation"]["results"] == [
        {"source_call_id": call["tool_call_id"], "content": "Paris"}
    ]
    assert call_step["extra"]["generation_id"].startswith("chatcmpl-")
    assert traj["agent"] == {
        "name": "looper",
        "version": "0",
        "model_name": "fake",
        "tool_definitions": traj["agent"]["tool_definitions"],
    }
    assert traj["final_metrics"] == {
        "total_prompt_tokens": 61,
        "total_completion_tokens": 9,
        "total_steps": 4,
    }


def test_calls_outside_a_scope_pass_through_uncaptured() -> None:
    with FakeEndpoint([Reply("direct")]) as ep:
        with capture("unused", expect_model_calls=False) as scope:
            pass
        assert ask(ep.api_base) == "direct"
        assert len(ep.requests) == 1
    assert scope.trajectory is not None and scope.trajectory["steps"] == []


def test_positional_model_and_messages_are_captured() -> None:
    transport = ScriptedTransport(ResponseRecord(content="Lima."))

    def agent() -> str:
        response = litellm.completion("m", [{"role": "user", "content": "Capital of Peru?"}])
        return str(response.choices[0].message.content)

    res = run_captured(agent, transport=transport)
    assert res.output == "Lima."
    assert transport.requests[0]["model"] == "m"
    assert res.trajectory["steps"][0]["message"] == "Capital of Peru?"


def test_streams_reach_the_agent_as_iterators_of_chunks() -> None:
    def agent() -> list[Any]:
        stream = litellm.completion(model="m", messages=[], stream=True)
        assert not isinstance(stream, list)
        return list(stream)

    async def aagent() -> list[Any]:
        stream = await litellm.acompletion(model="m", messages=[], stream=True)
        return [chunk async for chunk in stream]

    sync = run_captured(agent, transport=ScriptedTransport(CALLING))
    async_ = asyncio.run(arun_captured(aagent, transport=ScriptedTransport(CALLING)))
    for res in (sync, async_):
        assert res.error is None, res.traceback
        assert len(res.output) >= 2 and res.output[0].choices[0].delta.content == "Checking."
        (step,) = res.trajectory["steps"]
        assert step["tool_calls"][0]["arguments"] == {"country": "Peru"}
