"""A replayed request with no recording gets an HTTP error that names the call and
the field that differs, never an empty answer; the run is marked failed."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from fake_endpoint import FakeEndpoint
from sdk_agents import SYSTEM, content_responder, openai_agent

from evalrunner.proxy import ProxyServer, Upstream

# A long one-line system prompt, like real agents have (~3.9 KB).
LONG_SYSTEM = SYSTEM + " " + " ".join(f"Rule {i}: be precise about item {i}." for i in range(120))
TASK = "Capitals of: France, Japan"


def _record(tmp_path: Path) -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key="k-0123456789")
        with ProxyServer("record", tmp_path, upstream) as proxy:
            openai_agent(proxy.run_env("agent"), TASK, system=LONG_SYSTEM)
            assert proxy.finish_run("agent").recording_path is not None


def test_a_changed_system_prompt_is_named_and_diffed_by_word(tmp_path: Path) -> None:
    _record(tmp_path)
    changed = LONG_SYSTEM.replace("about item 77.", "about thing 77.")
    with ProxyServer("replay", tmp_path) as proxy:
        with pytest.raises(openai.BadRequestError) as raised:
            openai_agent(proxy.run_env("agent"), TASK, system=changed)
        result = proxy.finish_run("agent")
    message = raised.value.message
    assert "model call 1 has no recorded response" in message
    assert "system message:" in message
    assert "[-item-] {+thing+}" in message
    assert "Rule 5:" not in message  # context around the change, not the whole prompt
    assert len(message) < 1200
    assert result.replay_errors and not result.ok
    assert len(result.unused_recorded) == 2  # both recorded calls were left unanswered


def test_a_changed_task_names_the_message_index(tmp_path: Path) -> None:
    _record(tmp_path)
    with ProxyServer("replay", tmp_path) as proxy:
        with pytest.raises(openai.BadRequestError) as raised:
            openai_agent(proxy.run_env("agent"), "Capitals of: France, Peru", system=LONG_SYSTEM)
        result = proxy.finish_run("agent")
    assert (
        "message 2 (user): recorded 'Capitals of: France, Japan', now 'Capitals of: France, Peru'"
        in (raised.value.message)
    )
    assert result.model_calls == 1 and len(result.replay_errors) == 1


def test_a_run_that_was_never_recorded_says_so(tmp_path: Path) -> None:
    with ProxyServer("replay", tmp_path) as proxy:
        with pytest.raises(openai.BadRequestError, match=r"does not exist\. Record the run first"):
            openai_agent(proxy.run_env("nobody"), TASK)
        assert not proxy.finish_run("nobody").ok
