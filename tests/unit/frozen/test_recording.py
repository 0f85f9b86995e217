"""Recording live answers: each model response (or error) becomes a script entry, the
same canonical record whether the call was streamed or not, and a replay of the
recording reproduces the run. Real litellm against the loopback fake endpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents_for_tests import ask, astream_ask, stream_ask
from fake_endpoint import FakeEndpoint, Fault, Reply
from scripted import ScriptedTransport
from workdir import writes_nothing  # noqa: F401  (autouse: capture writes no files)

from evalrunner.core._atif import validate
from evalrunner.core._diff import diff
from evalrunner.core._normalize import normalize
from evalrunner.core._response import ResponseRecord
from evalrunner.core._scope import arun_captured, run_captured
from evalrunner.frozen._replay import Recorder, RecordingTransport, Replayer
from evalrunner.frozen._script import RecordedModelError

TOOL_REPLY = Reply(
    "Let me look.",
    tool_calls=[("lookup", '{"country": "France"}')],
    prompt_tokens=21,
    completion_tokens=7,
)


def test_a_recorded_model_error_replays_with_the_same_class_name() -> None:
    recorder = Recorder()
    with FakeEndpoint([Fault("400", message="maximum context length is 8192 tokens")]) as ep:
        recorded = run_captured(ask, ep.api_base, recorder=recorder)
    assert type(recorded.error).__name__ == "BadRequestError"
    (entry,) = recorder.script.entries
    assert (
        entry.response is None and entry.error is not None and entry.error.type == "BadRequestError"
    )
    assert "maximum context length" in entry.error.message

    replayed = run_captured(ask, None, replay=Replayer(recorder.script, strict=True))
    assert type(replayed.error).__name__ == "BadRequestError"
    assert isinstance(replayed.error, RecordedModelError)
    assert str(replayed.error) == str(recorded.error)
    # The agent sees the same exception, so the replay reproduces the recording.
    assert replayed.trajectory["extra"]["exception"] == recorded.trajectory["extra"]["exception"]
    assert diff(normalize(recorded.trajectory), normalize(replayed.trajectory)) == []


def _record(agent: Any, *args: Any) -> tuple[dict[str, Any], Recorder, Any]:
    recorder = Recorder()
    with FakeEndpoint([TOOL_REPLY]) as ep:
        if asyncio.iscoroutinefunction(agent):
            res = asyncio.run(arun_captured(agent, ep.api_base, *args, recorder=recorder))
        else:
            res = run_captured(agent, ep.api_base, *args, recorder=recorder)
    assert res.error is None, res.traceback
    return res.trajectory, recorder, res.output


def test_streamed_calls_record_the_same_step_as_plain_ones() -> None:
    plain_traj, plain_rec, _ = _record(ask)
    for agent in (stream_ask, astream_ask):
        traj, rec, out = _record(agent)
        assert out["content"] == "Let me look." and out["tool_calls"] == [
            ("lookup", '{"country": "France"}')
        ]
        assert normalize(traj) == normalize(plain_traj), agent.__name__

        # The recorded response is the same canonical record, provider ids aside.
        def strip(r: Any) -> Any:
            return r.script.entries[0].model_dump(exclude={"response": {"tool_calls": {0: {"id"}}}})

        assert strip(rec) == strip(plain_rec)
        validate(traj)


def test_replay_carries_the_recorded_model_name() -> None:
    traj, recorder, _ = _record(ask)
    res = run_captured(ask, None, replay=Replayer(recorder.script, strict=True))
    assert res.trajectory["agent"]["model_name"] == traj["agent"]["model_name"] == "fake"
    assert diff(normalize(traj), normalize(res.trajectory)) == []


# ------------------------------------------------------------------ the transport alone


class _Failing(ScriptedTransport):
    def complete(self, request: dict[str, Any]) -> Any:
        raise ConnectionResetError("reset by peer")


def test_the_recording_transport_records_answers_and_errors_in_call_order() -> None:
    recorder = Recorder()
    inner = ScriptedTransport(ResponseRecord(content="a1"), notes=("from inner",))
    transport = recorder.transport(inner)
    assert isinstance(transport, RecordingTransport) and transport.infra is inner.infra
    q1 = {"model": "m", "messages": [{"role": "user", "content": "q1"}]}
    assert asyncio.run(transport.acomplete(q1)).record == ResponseRecord(content="a1")
    failing = recorder.transport(_Failing())
    with pytest.raises(ConnectionResetError):
        failing.complete({"model": "m", "messages": [{"role": "user", "content": "q2"}]})
    first, second = recorder.script.entries
    assert first.response == ResponseRecord(content="a1") and first.error is None
    assert first.request.last_user_message == "q1"
    assert second.response is None and second.error is not None
    assert (second.error.type, second.error.message) == ("ConnectionResetError", "reset by peer")
    assert transport.finish(None) == ["from inner"]
