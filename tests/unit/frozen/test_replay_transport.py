"""The replay transport: recorded responses come back as the agent asked for them
(streamed or not), and when the run ends a replay error is the harness's verdict,
raised even when the agent swallowed it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents_for_tests import astream_ask, stream_ask
from scripted import ScriptedTransport
from workdir import writes_nothing  # noqa: F401  (autouse: capture writes no files)

from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.core._scope import arun_captured, run_captured
from evalrunner.errors import NetworkBlocked, ScriptExhausted
from evalrunner.frozen._replay import Replayer, ReplayTransport
from evalrunner.frozen._script import responses_from


@pytest.mark.parametrize("agent", [stream_ask, astream_ask])
def test_replayed_streams_reassemble(agent: Any) -> None:
    script = responses_from(
        [
            ResponseRecord(
                content="Checking.",
                tool_calls=[
                    ToolCallRecord(id="call_a", name="lookup", arguments='{"country": "Peru"}')
                ],
                finish_reason="tool_calls",
                usage=Usage(prompt_tokens=33, completion_tokens=8),
                model="gpt-4o-mini",
            )
        ]
    )
    if asyncio.iscoroutinefunction(agent):
        res = asyncio.run(arun_captured(agent, None, replay=Replayer(script)))
    else:
        res = run_captured(agent, None, replay=Replayer(script))
    assert res.error is None, res.traceback
    assert res.output["content"] == "Checking."
    assert res.output["tool_calls"] == [("lookup", '{"country": "Peru"}')]
    assert res.output["usage"] == (33, 8)
    assert res.output["chunks"] >= 2
    step = res.trajectory["steps"][-1]
    assert step["tool_calls"] == [
        {"tool_call_id": "call_a", "function_name": "lookup", "arguments": {"country": "Peru"}}
    ]
    assert step["model_name"] == "gpt-4o-mini"


def _request(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": question}], **extra}


def test_replay_serves_records_and_ignores_the_live_transport() -> None:
    replayer = Replayer(responses_from([ResponseRecord(content="one", model="m1")]))
    live = ScriptedTransport()
    transport = replayer.transport(live)
    assert isinstance(transport, ReplayTransport) and transport.infra is live.infra
    answer = asyncio.run(transport.acomplete(_request("q")))
    assert answer.record == ResponseRecord(content="one", model="m1")
    assert answer.response.id == "replay-1" and answer.generation_id is None
    assert live.requests == []


def test_finish_reports_mismatches_and_raises_replay_errors() -> None:
    replayer = Replayer(responses_from([ResponseRecord(content="one")]))
    transport = ReplayTransport(replayer)
    replayer.mismatches.append("model call 1: request differs")
    assert transport.finish(ValueError("the agent's own bug")) == ["model call 1: request differs"]
    blocked = NetworkBlocked("network access during replay")
    with pytest.raises(NetworkBlocked):
        transport.finish(blocked)

    transport.complete(_request("q"))
    with pytest.raises(ScriptExhausted):
        transport.complete(_request("q"))
    # The agent swallowed it (or wrapped it): the run is void all the same.
    with pytest.raises(ScriptExhausted):
        transport.finish(None)
    with pytest.raises(ScriptExhausted):
        transport.finish(RuntimeError("wrapped"))
