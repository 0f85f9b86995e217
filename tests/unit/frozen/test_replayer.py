"""The replayer serves recorded responses strictly: by fingerprint first, then in
recorded order (counted as a mismatch, or refused in strict mode), and running out
of script is an error even when the agent swallows it."""

from __future__ import annotations

from typing import Any

import pytest
from agents_for_tests import catches_everything

from evalrunner.core._response import ResponseRecord
from evalrunner.core._scope import run_captured
from evalrunner.errors import RequestMismatch, ScriptExhausted
from evalrunner.frozen._replay import Recorder, Replayer
from evalrunner.frozen._script import Script, responses_from


def _req(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/fake", "messages": [{"role": "user", "content": question}], **extra}


def _script(*answers: tuple[str, str]) -> Script:
    """Entries recorded for (question, answer) pairs, fingerprinted like a real recording."""
    recorder = Recorder()
    for question, answer in answers:
        recorder.add(_req(question), ResponseRecord(content=answer))
    return recorder.script


def test_fingerprint_match_wins_over_order() -> None:
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")))
    assert replayer.next(_req("q2"))[0].content == "a2"
    assert replayer.next(_req("q1"))[0].content == "a1"
    assert replayer.mismatches == [] and replayer.unused == 0


def test_unmatched_requests_are_served_in_order_and_counted() -> None:
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")), source="demo.llm.json")
    assert replayer.next(_req("changed question"))[0].content == "a1"
    (msg,) = replayer.mismatches
    assert msg == (
        "model call 1: request differs from the recording (recorded 1 messages, last user message "
        "'q1'; now 1 messages, 'changed question')"
    )
    strict = Replayer(_script(("q1", "a1")), strict=True, source="demo.llm.json")
    with pytest.raises(RequestMismatch, match=r"^demo\.llm\.json: model call 1: request differs"):
        strict.next(_req("changed question"))


def test_running_out_of_script_raises() -> None:
    replayer = Replayer(_script(("q1", "a1")), source="demo.llm.json")
    replayer.next(_req("q1"))
    with pytest.raises(ScriptExhausted) as info:
        replayer.next(_req("q1"))
    assert str(info.value) == (
        "demo.llm.json: the agent made model call 2, but only 1 were recorded. The agent now calls "
        "the model more often than when recorded; if that is intended, re-record with --golden-record"
    )
    assert replayer.exhausted is info.value


def test_script_exhausted_is_surfaced_even_when_the_agent_swallows_it() -> None:
    script = responses_from([ResponseRecord(content="one"), ResponseRecord(content="two")])
    res = run_captured(catches_everything, None, 2, replay=Replayer(script))
    assert res.output == ["one", "two"]
    with pytest.raises(ScriptExhausted, match="made model call 3, but only 2 were recorded"):
        run_captured(catches_everything, None, 3, replay=Replayer(script))
