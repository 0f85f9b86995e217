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
from evalrunner.frozen._script import (
    SCRIPT_FORMAT_VERSION,
    RequestHint,
    Script,
    ScriptEntry,
    format1_request_key,
    responses_from,
)


def _req(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/fake", "messages": [{"role": "user", "content": question}], **extra}


def _script(*answers: tuple[str, str]) -> Script:
    """Entries recorded for (question, answer) pairs, fingerprinted like a real recording."""
    recorder = Recorder()
    for question, answer in answers:
        recorder.add(_req(question), ResponseRecord(content=answer))
    return recorder.script


def test_a_call_inserted_first_is_named_as_new_not_as_a_repeat_of_the_next() -> None:
    # Before: call 2 (q1) was said to repeat recorded call 1 "more often than when
    # recorded", though its answer had gone to the inserted call 1 in its place.
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")))
    replayer.next(_req("an extra question"))
    replayer.next(_req("q1"))
    second = replayer.mismatches[1]
    assert "model call 2 has no recorded response" in second
    assert "whose answer was served to model call 1 in its place" in second
    assert "more often than when recorded" not in second


def test_fingerprint_match_wins_over_order() -> None:
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")))
    assert replayer.next(_req("q2"))[0].content == "a2"
    assert replayer.next(_req("q1"))[0].content == "a1"
    assert replayer.mismatches == [] and replayer.unused == 0


def test_a_request_sent_with_another_temperature_is_named_and_fails_under_strict() -> None:
    """A PR that changed only the temperature replayed the same answers and passed, even
    under --golden-strict (issue 53, row 18): the recording now keeps the sampling settings."""
    recorder = Recorder()
    recorder.add(_req("q1", temperature=0.8, max_tokens=256), ResponseRecord(content="a1"))
    script = Script.model_validate_json(recorder.script.model_dump_json())
    lenient = Replayer(script, redo="pytest --golden-record x")
    assert lenient.next(_req("q1", temperature=0.2, max_tokens=256))[0].content == "a1"
    (said,) = lenient.mismatches
    assert said.startswith(
        "replay: model call 1 was recorded with other sampling settings (temperature 0.8 -> 0.2)"
    )
    assert "re-record: pytest --golden-record x" in said
    with pytest.raises(RequestMismatch, match=r"temperature 0\.8 -> 0\.2"):
        Replayer(script, strict=True).next(_req("q1", temperature=0.2, max_tokens=256))
    same = Replayer(script, strict=True)
    assert same.next(_req("q1", temperature=0.8, max_tokens=256))[0].content == "a1"
    # A recording from before format 3 kept no settings: nothing to compare, nothing said.
    older = Script.model_validate(
        {**script.model_dump(), "format_version": 2}
        | {
            "entries": [
                {**e.model_dump(), "request": {**e.request.model_dump(), "settings": None}}
                for e in script.entries
            ]
        }
    )
    assert Replayer(older, strict=True).next(_req("q1", temperature=0.2))[0].content == "a1"


def test_unmatched_requests_are_served_in_order_and_counted() -> None:
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")), source="demo.llm.json")
    assert replayer.next(_req("changed question"))[0].content == "a1"
    (msg,) = replayer.mismatches
    assert msg == (
        "replay: model call 1 has no recorded response in demo.llm.json. Nearest: recorded call 1 "
        "(1 messages, last user message 'q1'), unused; it differs in:\n"
        "  - message 1 (user): recorded 'q1', now 'changed question'\n"
        "If the agent changed on purpose, re-record: pytest --golden-record\n"
        "(served recorded call 1 (1 messages, last user message 'q1') in its place; "
        "--golden-strict fails here)"
    )
    named = Replayer(_script(("q1", "a1")), redo='pytest --golden-record "t.py::test_x"')
    named.next(_req("changed question"))
    assert 're-record: pytest --golden-record "t.py::test_x"\n' in named.mismatches[0]
    strict = Replayer(_script(("q1", "a1")), strict=True, source="demo.llm.json")
    with pytest.raises(RequestMismatch, match=r"^replay: model call 1 has no recorded response"):
        strict.next(_req("changed question"))


def _format1(*answers: tuple[str, str]) -> Script:
    """A script as evalrunner wrote it before the shared request view (format 1)."""
    return Script(
        format_version=1,
        entries=[
            ScriptEntry(
                request=RequestHint(
                    fingerprint=format1_request_key(_req(q)), message_count=1, last_user_message=q
                ),
                response=ResponseRecord(content=a),
            )
            for q, a in answers
        ],
    )


def test_a_format_1_script_replays_by_its_own_hash_and_upgrades_once_every_entry_matched() -> None:
    replayer = Replayer(_format1(("q1", "a1"), ("q2", "a2")), strict=True)
    assert replayer.next(_req("q2"))[0].content == "a2"
    assert replayer.upgraded() is None  # q1 not asked yet: its request is unknown
    assert replayer.next(_req("q1"))[0].content == "a1"
    upgraded = replayer.upgraded()
    assert upgraded is not None and upgraded.format_version == SCRIPT_FORMAT_VERSION
    again = Replayer(upgraded, strict=True)
    assert [again.next(_req(q))[0].content for q in ("q1", "q2")] == ["a1", "a2"]
    assert again.upgraded() is None  # already current


def test_a_format_1_mismatch_says_the_fields_cannot_be_named() -> None:
    replayer = Replayer(_format1(("q1", "a1")), strict=True, source="old.llm.json")
    with pytest.raises(RequestMismatch, match="older format that kept no request"):
        replayer.next(_req("changed"))


def test_running_out_of_script_raises() -> None:
    replayer = Replayer(_script(("q1", "a1")), source="demo.llm.json")
    replayer.next(_req("q1"))
    with pytest.raises(ScriptExhausted) as info:
        replayer.next(_req("q1"))
    assert str(info.value) == (
        "demo.llm.json: the agent made model call 2, but only 1 were recorded. The agent now calls "
        "the model more often than when recorded; if that is intended, re-record with: "
        "pytest --golden-record"
    )
    assert replayer.exhausted is info.value


def test_running_out_of_script_names_the_first_request_that_differed_before_it() -> None:
    # Before: only "made model call 3, but only 2 were recorded", though call 2 had already
    # differed (a tool offered now) and been served the recorded answer in its place.
    replayer = Replayer(_script(("q1", "a1"), ("q2", "a2")), source="demo.llm.json")
    replayer.next(_req("q1"))
    replayer.next(_req("q2", tools=[{"type": "function", "function": {"name": "lookup"}}]))
    with pytest.raises(ScriptExhausted) as info:
        replayer.next(_req("q3"))
    said = str(info.value)
    assert said.startswith("demo.llm.json: the agent made model call 3, but only 2 were recorded")
    assert "Before it, 1 request(s) differed from the recording; the first:\n" in said
    assert "replay: model call 2 has no recorded response" in said and "tools" in said


def test_script_exhausted_is_surfaced_even_when_the_agent_swallows_it() -> None:
    script = responses_from([ResponseRecord(content="one"), ResponseRecord(content="two")])
    res = run_captured(catches_everything, None, 2, replay=Replayer(script))
    assert res.output == ["one", "two"]
    with pytest.raises(ScriptExhausted, match="made model call 3, but only 2 were recorded"):
        run_captured(catches_everything, None, 3, replay=Replayer(script))


def test_a_golden_s_masks_apply_to_matching_requests_too() -> None:
    # A tool answering with a temp path sends a new path every run: with the golden's masks
    # the requests still match (before: a mismatch every replay, so --golden-strict could
    # never pass, and its hint was to re-record, which cannot help).
    import re

    recorded = _script(("saved to /tmp/tmp2ofap1kr", "done"))
    again = _req("saved to /tmp/tmpcnis7mve")
    masks = ((re.compile(r"/tmp/tmp\w+"), "/tmp/TMP"),)
    replayer = Replayer(recorded, strict=True, masks=masks)
    assert replayer.next(again)[0].content == "done"
    assert replayer.mismatches == []
    with pytest.raises(RequestMismatch):
        Replayer(recorded, strict=True).next(again)
    # What the masks do not cover still has to match.
    with pytest.raises(RequestMismatch):
        Replayer(recorded, strict=True, masks=masks).next(_req("saved to /var/tmp/x"))
