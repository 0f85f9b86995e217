"""Agents on the official OpenAI and Anthropic SDKs, pointed at the proxy by base URL:
recorded against a loopback upstream, then replayed offline (no upstream at all)
three times with identical normalised trajectories."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint
from sdk_agents import (
    anthropic_agent,
    content_responder,
    openai_agent,
    openai_agent_async,
    responses_agent,
)

from evalrunner.core._normalize import DEFAULT_CONFIG, normalize
from evalrunner.proxy import ProxyServer, Upstream

TASK = "Capitals of: France, Japan"
Agent = Callable[[Mapping[str, str]], str | None]

AGENTS: dict[str, Agent] = {
    "openai-sync": lambda env: openai_agent(env, TASK),
    "openai-sync-streamed": lambda env: openai_agent(env, TASK, stream=True),
    "openai-async": lambda env: asyncio.run(openai_agent_async(env, TASK)),
    "openai-async-streamed": lambda env: asyncio.run(openai_agent_async(env, TASK, stream=True)),
    "openai-responses": lambda env: responses_agent(env, TASK),
    "openai-responses-streamed": lambda env: responses_agent(env, TASK, stream=True),
    "anthropic": lambda env: anthropic_agent(env, TASK),
    "anthropic-streamed": lambda env: anthropic_agent(env, TASK, stream=True),
}


def record(agent: Agent, directory: Path, direct: bool = False) -> tuple[str | None, Any, int]:
    with FakeEndpoint(responder=content_responder) as ep:
        key = "sk-upstream-0123456789abcdef"
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=key, direct=direct)
        with ProxyServer("record", directory, upstream) as proxy:
            answer = agent(proxy.run_env("capitals"))
            result = proxy.finish_run("capitals")
        return answer, result, len(ep.requests)


def _steps(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in trajectory["steps"] if s["source"] == "agent"]


@pytest.mark.parametrize("name", AGENTS)
def test_sdk_agent_is_recorded_then_replayed_offline_three_times_identically(
    name: str, tmp_path: Path
) -> None:
    agent = AGENTS[name]
    answer, recorded, upstream_calls = record(agent, tmp_path)

    assert answer == "Capitals: Paris, Tokyo."
    assert recorded.ok and recorded.model_calls == 2 == upstream_calls
    assert recorded.recording_path == tmp_path / "capitals.proxy.json"
    first, last = _steps(recorded.trajectory)
    # Parallel tool calls, and their results joined to the calling step by call id.
    assert [c["arguments"] for c in first["tool_calls"]] == [
        {"country": "France"},
        {"country": "Japan"},
    ]
    results = first["observation"]["results"]
    assert [r["content"] for r in results] == ["Paris", "Tokyo"]
    assert [r["source_call_id"] for r in results] == [
        c["tool_call_id"] for c in first["tool_calls"]
    ]
    assert last["message"] == "Capitals: Paris, Tokyo."
    assert recorded.trajectory["agent"]["tool_definitions"][0]["function"]["name"] == "lookup"
    golden = normalize(recorded.trajectory)

    # The upstream is gone and the replaying proxy has none: nothing can go live.
    for _ in range(3):
        with ProxyServer("replay", tmp_path) as proxy:
            assert agent(proxy.run_env("capitals")) == answer
            replayed = proxy.finish_run("capitals")
        assert replayed.ok and replayed.unused_recorded == [] and replayed.model_calls == 2
        assert normalize(replayed.trajectory) == golden


def test_a_streamed_chat_recording_replays_the_chunks_as_received(tmp_path: Path) -> None:
    _, recorded, _ = record(AGENTS["openai-sync-streamed"], tmp_path)
    assert recorded.recording is not None
    chunks = recorded.recording.calls[0].chunks
    # The fake upstream streams arguments 8 characters at a time; replay keeps that.
    assert chunks is not None and len(chunks) > 4
    assert any(c.get("usage") for c in chunks)


@pytest.mark.parametrize("name", ["openai-sync", "openai-async-streamed", "anthropic-streamed"])
def test_the_direct_transport_captures_and_replays_like_litellm(name: str, tmp_path: Path) -> None:
    via_litellm = record(AGENTS[name], tmp_path / "litellm")[1]
    answer, direct, upstream_calls = record(AGENTS[name], tmp_path / "direct", direct=True)
    assert answer == "Capitals: Paris, Tokyo." and direct.ok and upstream_calls == 2
    # litellm re-serialises the request, so the fake upstream's estimate of prompt
    # tokens (from the bytes it got) differs; everything else must not.
    tokens = DEFAULT_CONFIG.extended(volatile_keys=["prompt_tokens", "total_prompt_tokens"])
    assert normalize(direct.trajectory, tokens) == normalize(via_litellm.trajectory, tokens)
    with ProxyServer("replay", tmp_path / "direct") as proxy:
        assert AGENTS[name](proxy.run_env("capitals")) == answer
        assert normalize(proxy.finish_run("capitals").trajectory) == normalize(direct.trajectory)
