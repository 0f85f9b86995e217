"""The capture scope: a run's trajectory survives crashes, tool results join their
calls, nested and concurrent scopes become sub-agents, and the scope's transport
answers every call (its own, its parent's, or one made from replay/recorder/retry).
Capture writes nothing to disk."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import litellm
import pytest
from agents_for_tests import crashing, with_subagent
from fake_endpoint import FakeEndpoint, Reply
from scripted import ScriptedTransport
from workdir import writes_nothing  # noqa: F401  (autouse: capture writes no files)

from evalrunner.core._atif import validate
from evalrunner.core._faults import InfraLog
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._normalize import normalize
from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.core._scope import (
    arun_captured,
    capture,
    current,
    record_tool_result,
    run_captured,
)
from evalrunner.core._shape import shape
from evalrunner.core._transport import Request, Transport

TOOL_REPLY = Reply(
    "Let me look.",
    tool_calls=[("lookup", '{"country": "France"}')],
    prompt_tokens=21,
    completion_tokens=7,
)


def ask_model(question: str = "q") -> str:
    response = litellm.completion(model="m", messages=[{"role": "user", "content": question}])
    return str(response.choices[0].message.content)


async def aask_model(question: str = "q") -> str:
    response = await litellm.acompletion(
        model="m", messages=[{"role": "user", "content": question}]
    )
    return str(response.choices[0].message.content)


# ------------------------------------------------------------------ crashes


def test_a_crashing_agent_still_yields_a_trajectory() -> None:
    with FakeEndpoint([Reply("Paris.", prompt_tokens=12, completion_tokens=2)]) as ep:
        res = run_captured(crashing, ep.api_base, name="crasher")
    assert res.crashed and isinstance(res.error, ValueError)
    assert "division by zero" in (res.traceback or "")
    traj = res.trajectory
    assert traj["extra"]["crashed"] is True
    assert traj["extra"]["exception"] == {
        "type": "ValueError",
        "message": "tool exploded: division by zero in plan step 2",
    }
    # What happened before the crash is kept.
    assert [s["source"] for s in traj["steps"]] == ["user", "agent"]
    assert traj["steps"][1]["message"] == "Paris."
    assert shape(normalize(traj)).crashed is True
    validate(traj)


def test_crash_before_any_model_call_and_in_async_and_nested_scopes() -> None:
    def boom() -> None:
        raise KeyError("missing config")

    res = run_captured(boom)
    assert res.trajectory["steps"] == []
    assert res.trajectory["extra"]["exception"] == {
        "type": "KeyError",
        "message": "'missing config'",
    }

    async def aboom() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("async failure")

    res = asyncio.run(arun_captured(aboom))
    assert res.trajectory["extra"] == {
        "crashed": True,
        "exception": {"type": "RuntimeError", "message": "async failure"},
    }

    with pytest.raises(ZeroDivisionError), capture("outer") as outer, capture("inner"):
        raise ZeroDivisionError("deep")
    assert outer.trajectory is not None
    assert outer.trajectory["extra"]["crashed"] is True
    (inner,) = outer.trajectory["subagent_trajectories"]
    assert inner["extra"]["exception"]["type"] == "ZeroDivisionError"


# ------------------------------------------------------------------ tool results and sub-agents


def test_tool_errors_recorded_with_record_tool_result() -> None:
    transport = ScriptedTransport(
        ResponseRecord(
            tool_calls=[ToolCallRecord(id="c1", name="lookup", arguments='{"country": 3}')],
            finish_reason="tool_calls",
        ),
        ResponseRecord(content="Sorry."),
    )

    def agent() -> str:
        first = litellm.completion(model="m", messages=[{"role": "user", "content": "q"}])
        call = first.choices[0].message.tool_calls[0]
        record_tool_result(call.id, "error: country must be a string", error=True)
        return str(
            litellm.completion(model="m", messages=[{"role": "user", "content": "q"}])
            .choices[0]
            .message.content
        )

    res = run_captured(agent, transport=transport)
    result = res.trajectory["steps"][1]["observation"]["results"][0]
    assert result == {
        "source_call_id": "c1",
        "content": "error: country must be a string",
        "extra": {"error": True},
    }


def test_subagent_is_linked_to_the_call_that_spawned_it() -> None:
    def responder(body: dict[str, Any], n: int) -> Reply:
        if body.get("tools"):
            return TOOL_REPLY
        return Reply("Tokyo.")

    with FakeEndpoint(responder=responder) as ep:
        res = run_captured(with_subagent, ep.api_base)
    traj = res.trajectory
    validate(traj)
    (sub,) = traj["subagent_trajectories"]
    assert sub["agent"]["name"] == "helper" and sub["session_id"] == traj["session_id"]
    assert [s["message"] for s in sub["steps"]] == ["Sub-task: capital of Japan?", "Tokyo."]
    call_step = traj["steps"][1]
    (result,) = call_step["observation"]["results"]
    assert result["source_call_id"] == call_step["tool_calls"][0]["tool_call_id"]
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": sub["trajectory_id"]}]
    assert result["content"] == "Tokyo."


def test_record_tool_result_outside_a_scope_does_nothing() -> None:
    record_tool_result("c1", "ignored", error=True)
    assert current() is None


def test_concurrent_subagents_under_gather_become_subagent_trajectories() -> None:
    transport = ScriptedTransport(*(ResponseRecord(content=f"answer {n}") for n in range(4)))

    finished = [asyncio.Event() for _ in range(3)]

    async def worker(n: int) -> str:
        async with capture(f"worker-{n}"):
            if n < 2:  # finish in reverse order, whatever the machine's load
                await finished[n + 1].wait()
            answer = await aask_model(f"task {n}")
        finished[n].set()
        return answer

    async def agent() -> list[str]:
        answers = await asyncio.gather(*(worker(n) for n in range(3)))
        await aask_model("summarise")
        return list(answers)

    res = asyncio.run(arun_captured(agent, transport=transport))
    assert res.error is None, res.traceback
    traj = res.trajectory
    subs = traj["subagent_trajectories"]
    assert [s["agent"]["name"] for s in subs] == ["worker-2", "worker-1", "worker-0"]
    assert {s["session_id"] for s in subs} == {traj["session_id"]}
    (placeholder, summary) = traj["steps"][:1] + traj["steps"][-1:]
    assert placeholder["llm_call_count"] == 0  # the refs arrived before any model call
    refs = placeholder["observation"]["results"][0]["subagent_trajectory_ref"]
    assert [r["trajectory_id"] for r in refs] == [
        s["trajectory_id"] for s in sorted(subs, key=lambda s: s["agent"]["name"])
    ]
    assert summary["message"] == "answer 3"
    validate(traj)


# ------------------------------------------------------------------ transports


def test_the_given_transport_answers_and_reports() -> None:
    transport = ScriptedTransport(ResponseRecord(content="Paris.", model="m1"), notes=("n1",))
    res = run_captured(ask_model, "Capital?", transport=transport)
    assert res.output == "Paris."
    assert res.replay_errors == ["n1"] and res.infra is transport.infra
    assert transport.finished == [None]  # told once, when the run ended
    (request,) = transport.requests
    assert request["messages"] == [{"role": "user", "content": "Capital?"}]
    user, agent = res.trajectory["steps"]
    assert (user["source"], agent["message"], agent["extra"]["generation_id"]) == (
        "user",
        "Paris.",
        "scripted-1",
    )


def test_nested_scopes_use_their_parents_transport_and_endpoint_log() -> None:
    transport = ScriptedTransport(ResponseRecord(content="inner"), ResponseRecord(content="outer"))

    def agent() -> str:
        with capture("helper") as helper:
            assert helper.transport is transport
            ask_model("sub-task")
        return ask_model("main task")

    res = run_captured(agent, transport=transport)
    assert res.output == "outer"
    (sub,) = res.trajectory["subagent_trajectories"]
    assert sub["steps"][-1]["message"] == "inner"

    with (
        capture("root", retry=None, expect_model_calls=False) as root,
        capture("child", recorder=_Wrapping()) as child,
    ):
        pass
    assert isinstance(root.transport, LiteLLMTransport)
    assert isinstance(child.transport, _Wrapped)
    assert child.transport.live.infra is root.transport.infra  # sub-agents share the log


class _Wrapped:
    def __init__(self, live: Transport) -> None:
        self.live = live
        self.infra = live.infra

    def complete(self, request: Request) -> Any:
        raise NotImplementedError

    async def acomplete(self, request: Request) -> Any:
        raise NotImplementedError

    def finish(self, error: BaseException | None) -> list[str]:
        return []


class _Wrapping:
    """A TransportSource, as frozen's Recorder is one."""

    def transport(self, live: Transport) -> Transport:
        return _Wrapped(live)


def test_a_top_level_scope_goes_live_with_its_retry_policy() -> None:
    from evalrunner.suite._schema import RetryPolicy

    policy = RetryPolicy(max_attempts=2)
    with capture(retry=policy, expect_model_calls=False) as scope:
        pass
    assert isinstance(scope.transport, LiteLLMTransport)
    assert isinstance(scope.transport.infra, InfraLog) and scope.transport.infra.policy is policy


# ------------------------------------------------------------------ sync agents in async runs


def test_sync_agents_run_in_the_given_executor_and_still_see_the_scope() -> None:
    seen: list[str] = []

    def agent(question: str) -> str:
        seen.append(threading.current_thread().name)
        return ask_model(question)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="runner-pool") as pool:
        res = asyncio.run(
            arun_captured(
                agent,
                "Capital?",
                transport=ScriptedTransport(ResponseRecord(content="Paris.")),
                executor=pool,
            )
        )
    assert res.error is None, res.traceback
    assert res.output == "Paris." and seen[0].startswith("runner-pool")
    # The call was captured: the worker thread ran in a copy of the scope's context.
    assert [s["source"] for s in res.trajectory["steps"]] == ["user", "agent"]

    res = asyncio.run(
        arun_captured(agent, "Again?", transport=ScriptedTransport(ResponseRecord(content="x")))
    )
    assert res.output == "x" and seen[1].startswith("asyncio")  # the loop's default executor


def test_a_timed_out_sync_agent_in_an_executor_keeps_its_trajectory() -> None:
    release = threading.Event()

    def slow() -> None:
        release.wait(5)

    with ThreadPoolExecutor(max_workers=1) as pool:
        res = asyncio.run(arun_captured(slow, timeout=0.05, executor=pool))
        release.set()
    assert isinstance(res.error, TimeoutError)
    assert res.trajectory["extra"]["crashed"] is True
