"""run_frozen's record and update modes: what they write, and when they refuse to."""

from __future__ import annotations

import json
from pathlib import Path

import litellm
from fake_endpoint import FakeEndpoint, Fault, Reply

from evalrunner.frozen._golden import Golden
from evalrunner.frozen._run import run_frozen


def _ask(question: str, api_base: str) -> str | None:
    response = litellm.completion(
        model="openai/fake",
        api_base=api_base,
        api_key="x",
        messages=[{"role": "user", "content": question}],
    )
    content: str | None = response.choices[0].message.content
    return content


def test_record_mode_writes_nothing_when_the_endpoint_fails(tmp_path: Path) -> None:
    golden = tmp_path / "g.json"
    with FakeEndpoint(script=[Fault("500")] * 5) as ep:
        outcome = run_frozen(_ask, "hi", ep.api_base, golden_path=golden, mode="record")
    assert not outcome.ok and "recording failed, nothing written" in outcome.message
    assert not golden.exists() and not golden.with_name("g.llm.json").exists()


def test_update_mode_replaces_an_unreadable_golden(tmp_path: Path) -> None:
    golden = tmp_path / "g.json"
    with FakeEndpoint(script=[Reply("hello")]) as ep:
        assert run_frozen(_ask, "hi", ep.api_base, golden_path=golden, mode="record").ok
    golden.write_text(json.dumps({"format_version": 0}))
    outcome = run_frozen(_ask, "hi", "http://127.0.0.1:9/v1", golden_path=golden, mode="update")
    assert outcome.ok, outcome.message
    assert Golden.load(golden).shape.final_answer == "hello"


def _ask_twice_one_past_capture(question: str, api_base: str) -> str | None:
    """The first call through the module; the second through litellm's own function, as
    a module that ran `from litellm import completion` before capture holds it."""
    from litellm.main import completion as bound_before_capture

    _ask(question, api_base)
    response = bound_before_capture(
        model="openai/fake",
        api_base=api_base,
        api_key="x",
        messages=[{"role": "user", "content": question + " again"}],
    )
    content: str | None = response.choices[0].message.content
    return content


def test_a_recording_that_lost_calls_past_capture_writes_nothing_and_says_how_many(
    tmp_path: Path,
) -> None:
    """Before, the recording kept the one call it saw and the golden half the run, without
    a word (issue 53, row 19); the old golden is kept."""
    golden = tmp_path / "g.json"
    with FakeEndpoint(script=[Reply("hello")]) as ep:
        assert run_frozen(_ask, "hi", ep.api_base, golden_path=golden, mode="record").ok
    kept = golden.read_bytes(), golden.with_name("g.llm.json").read_bytes()
    with FakeEndpoint(script=[Reply("one"), Reply("two")]) as ep:
        outcome = run_frozen(
            _ask_twice_one_past_capture, "hi", ep.api_base, golden_path=golden, mode="record"
        )
    assert not outcome.ok
    assert outcome.message.startswith(
        "recording incomplete, nothing written: capture saw 1 of the agent's 2 model calls; "
        "1 went to the endpoint past it"
    )
    assert (golden.read_bytes(), golden.with_name("g.llm.json").read_bytes()) == kept
