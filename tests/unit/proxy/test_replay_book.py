"""Strict replay: the first unused recorded call with the request's fingerprint,
identical requests in recorded order, any arrival order for fan-out, and a
readable miss otherwise; recordings are versioned files."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.core._response import ResponseRecord
from evalrunner.errors import FileFormatError, RequestMismatch
from evalrunner.proxy._recording import RecordedCall, Recording, ReplayBook
from evalrunner.proxy._request import ModelRequest


def ask(text: str) -> ModelRequest:
    return ModelRequest(api="chat", messages=[{"role": "user", "content": text}])


def recording(*pairs: tuple[str, str]) -> Recording:
    return Recording(
        run_id="r",
        calls=[
            RecordedCall(call=i, request=ask(q), response=ResponseRecord(content=a))
            for i, (q, a) in enumerate(pairs, start=1)
        ],
    )


def test_identical_requests_get_their_answers_in_recorded_order() -> None:
    book = ReplayBook(recording(("same", "first"), ("same", "second")), "test")
    answers = [book.take(ask("same"), n).response for n in (1, 2)]
    assert [a.content for a in answers if a] == ["first", "second"]
    with pytest.raises(
        RequestMismatch,
        match=r"repeats recorded call 1 \(.*\), whose 2 recorded answer\(s\) are all used",
    ):
        book.take(ask("same"), 3)


def test_fan_out_may_arrive_in_any_order() -> None:
    book = ReplayBook(recording(("a", "A"), ("b", "B"), ("c", "C")), "test")
    got = {q: book.take(ask(q), n).response for n, q in enumerate("cab", start=1)}
    assert {q: r.content for q, r in got.items() if r} == {"a": "A", "b": "B", "c": "C"}
    assert book.unused() == []


def test_a_miss_names_the_call_and_the_difference_and_unused_calls_are_listed() -> None:
    book = ReplayBook(recording(("Capital of France?", "Paris")), "rec.json")
    with pytest.raises(RequestMismatch) as raised:
        book.take(ask("Capital of Peru?"), 1)
    text = str(raised.value)
    assert text.startswith("replay: model call 1 has no recorded response in rec.json")
    assert "message 1 (user): recorded 'Capital of France?', now 'Capital of Peru?'" in text
    assert book.unused() == ["recorded call 1 (1 messages, last user message 'Capital of France?')"]


def test_recordings_round_trip_and_bad_ones_fail_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "r.proxy.json"
    original = recording(("q", "a"))
    original.save(path)
    assert Recording.load(path) == original
    path.write_text('{"format_version": 99, "run_id": "r"}')
    with pytest.raises(FileFormatError, match="format_version 99 is newer than this evalrunner"):
        Recording.load(path)
    path.write_text('{"format_version": 1, "calls": []}')
    with pytest.raises(FileFormatError, match="run_id: Field required"):
        Recording.load(path)


def test_runs_without_a_policy_of_their_own_wait_on_the_upstream_as_long_as_before() -> None:
    # The proxy's attempts now time out on silence at the policy's request_timeout_s. A
    # night's command: runs bring their scenario's; `evalrunner proxy` and frozen .proxied
    # runs cannot set one, so theirs keeps the 240 s a slow model's recording had before.
    from evalrunner.proxy._server import _default_retry
    from evalrunner.suite._schema import RetryPolicy

    patient = _default_retry()
    assert (patient.request_timeout_s, patient.attempt_deadline_s) == (240.0, 240.0)
    assert patient.max_attempts == RetryPolicy().max_attempts
