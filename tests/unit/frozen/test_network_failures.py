"""A blocked network attempt fails the frozen run whatever the agent did with the error
(caught it, lost it in a thread), and the message says what was attempted, through
which layer, from which line of the agent, and what to do: a model call that bypassed
capture points at the capture proxy, never at --golden-update."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import network_agents as agents
import pytest
from agents_for_tests import ask
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.errors import NetworkBlocked
from evalrunner.frozen._run import run_frozen


def _swallows_the_block() -> str | None:
    answer = ask(None)
    with contextlib.suppress(NetworkBlocked):  # an agent that knows what it hides
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    return answer


def test_a_block_the_agent_caught_fails_the_run(one_answer_golden: Path) -> None:
    outcome = run_frozen(_swallows_the_block, golden_path=one_answer_golden, mode="check")
    assert not outcome.ok
    assert "127.0.0.1:9 [DNS lookup (audit hook)], in thread MainThread" in outcome.message
    assert "the run fails even when the agent caught the error" in outcome.message


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_block_raised_in_another_thread_fails_the_run(one_answer_golden: Path) -> None:
    outcome = run_frozen(
        agents.in_a_thread, ("127.0.0.1", 9), golden_path=one_answer_golden, mode="check"
    )
    assert not outcome.ok
    assert "127.0.0.1:9 [DNS lookup (audit hook)], in thread telemetry" in outcome.message


def test_the_message_names_the_agent_line_and_counts_repeats(one_answer_golden: Path) -> None:
    def retries_three_times() -> str | None:
        answer = ask(None)
        for _ in range(3):
            agents.swallowing(lambda: socket.socket().connect(("127.0.0.1", 9)))
        return answer

    outcome = run_frozen(retries_three_times, golden_path=one_answer_golden, mode="check")
    (line,) = [ln for ln in outcome.message.splitlines() if ln.startswith("  - ")]
    assert line.startswith("  - 127.0.0.1:9 [connect (audit hook, any socket incl. the C-level")
    assert "from tests/unit/frozen/test_network_failures.py:" in line
    assert "in <lambda>" in line
    assert line.endswith("(x3)")
    assert "3 time(s)" in outcome.message
    assert "A tool, a library or a child process talked to the outside" in outcome.message


def test_an_unwrapped_litellm_call_points_to_the_capture_proxy(one_answer_golden: Path) -> None:
    with FakeEndpoint([Reply("live answer")]) as ep:
        outcome = run_frozen(
            agents.unwrapped_litellm, ep.api_base, golden_path=one_answer_golden, mode="check"
        )
        assert ep.requests == []
        assert f"127.0.0.1:{ep.port}" in outcome.message
    assert not outcome.ok
    assert "through litellm" in outcome.message
    assert "A model call went through litellm without passing through capture" in outcome.message
    assert "capture proxy (`evalrunner proxy`)" in outcome.message
    assert "golden-update" not in outcome.message


def test_an_sdk_call_is_named(one_answer_golden: Path) -> None:
    with FakeEndpoint([Reply("live answer")]) as ep:
        outcome = run_frozen(
            agents.sdk_client, ep.api_base, golden_path=one_answer_golden, mode="check"
        )
        assert ep.requests == []
    assert "through the openai SDK" in outcome.message
    assert "capture proxy (`evalrunner proxy`)" in outcome.message
    assert "golden-update" not in outcome.message


def test_a_child_process_asking_a_model_api_is_named(one_answer_golden: Path) -> None:
    url = "http://127.0.0.1:9/v1/chat/completions"
    outcome = run_frozen(
        agents.child_process,
        agents.python_child(url),
        golden_path=one_answer_golden,
        mode="check",
    )
    assert f"GET {url} [HTTP request of a child process" in outcome.message
    assert "through a model API" in outcome.message
    assert "golden-update" not in outcome.message


def test_a_key_in_a_blocked_url_is_not_shown(one_answer_golden: Path) -> None:
    url = "http://127.0.0.1:9/v1/models?api_key=live-0f1e2d3c4b5a6978"
    outcome = run_frozen(
        agents.child_process, agents.python_child(url), golden_path=one_answer_golden, mode="check"
    )
    assert "GET http://127.0.0.1:9/v1/models?api_key=[REDACTED] [HTTP request" in outcome.message
    assert "live-0f1e2d3c4b5a6978" not in outcome.message
