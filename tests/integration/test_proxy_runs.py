"""Runs through one proxy are separate by URL; within a run, conversations are told
apart by message-prefix continuity, and fan-out sub-agents become embedded
sub-trajectories, sorted by content as with capture()."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from fake_endpoint import FakeEndpoint, Reply
from sdk_agents import content_responder, fanout_agent, openai_agent

from evalrunner._jsonio import canonical
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape
from evalrunner.proxy import ProxyServer, Upstream

KEY = "upstream-key-for-tests"


def _texts(trajectory: dict[str, Any]) -> list[str]:
    return [s["message"] for s in trajectory["steps"]]


def test_two_concurrent_runs_through_one_proxy_never_mix() -> None:
    tasks = {
        "run/a": "Capitals of: France, Japan",
        "run/b": "Capitals of: Peru, Chad",
    }
    answers: dict[str, str | None] = {}
    # Each upstream answer is slowed so the two runs' calls interleave.
    with (
        FakeEndpoint(responder=content_responder, latency=0.05) as ep,
        ProxyServer(
            "passthrough", upstream=Upstream("openai/fake", api_base=ep.api_base, api_key=KEY)
        ) as proxy,
    ):
        envs = {run: proxy.run_env(run) for run in tasks}

        def go(run: str) -> None:
            for _ in range(3):
                answers[run] = openai_agent(envs[run], tasks[run])

        threads = [threading.Thread(target=go, args=(run,)) for run in tasks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results = {run: proxy.finish_run(run) for run in tasks}
    assert answers == {"run/a": "Capitals: Paris, Tokyo.", "run/b": "Capitals: Lima, N'Djamena."}
    for run, result in results.items():
        assert result.model_calls == 6
        other = "Peru" if run == "run/a" else "France"
        assert not any(other in text for text in _texts(result.trajectory))
        # Three repeats of the same task are three conversations: the first is the
        # agent, the later two become sub-agents (no prefix continuity between them).
        assert len(result.trajectory["subagent_trajectories"]) == 2


async def _fanout(proxy: ProxyServer, run: str, order: list[str]) -> Any:
    delays = {topic: i * 0.05 for i, topic in enumerate(order)}
    answer = await fanout_agent(proxy.run_env(run), ["tides", "comets", "moss"], delays)
    assert answer is not None and answer.startswith("echo: Summarise:")
    return await asyncio.to_thread(proxy.finish_run, run)


def test_fanout_sub_agents_become_sub_trajectories_sorted_by_content() -> None:
    # Sub-agents start and finish in the opposite order in the second run; the
    # normalised trajectories must still be equal.
    def slow(order: list[str]) -> Any:
        def respond(body: dict[str, Any], n: int) -> Reply:
            text = str(body["messages"][-1]["content"])
            topic = text.removeprefix("Research ")
            delay = order.index(topic) * 0.05 if topic in order else 0.0
            return Reply(f"echo: {text}", latency=delay)

        return respond

    normalised = []
    for order in (["tides", "comets", "moss"], ["moss", "comets", "tides"]):
        with FakeEndpoint(responder=slow(order)) as ep:
            upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=KEY)
            with ProxyServer("passthrough", upstream=upstream) as proxy:
                result = asyncio.run(_fanout(proxy, "fan", order))
        traj = result.trajectory
        assert result.model_calls == 5
        assert (
            _texts(traj)[-1]
            == "echo: Summarise: echo: Research tides | echo: Research comets | echo: Research moss"
        )
        subs = traj["subagent_trajectories"]
        assert [s["steps"][1]["message"].split()[-1] for s in subs] == order  # arrival order
        assert len(subs) == 3 and all(s["agent"]["name"] == "subagent" for s in subs)
        # The coordinator's plan step points at every sub-agent it started.
        refs = traj["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"]
        assert {r["trajectory_id"] for r in refs} == {s["trajectory_id"] for s in subs}
        assert shape(normalize(traj)).subagent_count == 3
        normalised.append(normalize(traj))
    assert normalised[0] == normalised[1]
    subs = normalised[0]["subagent_trajectories"]
    assert subs == sorted(subs, key=lambda s: canonical({**s, "trajectory_id": None}))


def test_a_run_without_model_calls_is_distinguishable() -> None:
    with ProxyServer("passthrough", upstream=Upstream("openai/fake")) as proxy:
        proxy.run_env("idle")
        result = proxy.finish_run("idle")
    assert result.no_model_calls and not result.ok
    assert result.trajectory["steps"] == []


def test_a_finished_run_refuses_late_calls_and_other_runs_carry_on() -> None:
    with (
        FakeEndpoint(responder=content_responder) as ep,
        ProxyServer(
            "passthrough", upstream=Upstream("openai/fake", api_base=ep.api_base, api_key=KEY)
        ) as proxy,
    ):
        late = openai.OpenAI(base_url=proxy.run_url("early"), api_key="x", max_retries=0)
        proxy.finish_run("early")
        with pytest.raises(openai.NotFoundError, match="is finished"):
            late.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert openai_agent(proxy.run_env("other"), "hello") == "echo: hello"
        reopened = proxy.open_run("early")
        assert (
            openai_agent({"OPENAI_BASE_URL": reopened, "OPENAI_API_KEY": "x"}, "again")
            == "echo: again"
        )
        assert proxy.finish_run("early").model_calls == 1


def test_bare_v1_paths_are_the_default_run_and_models_lists_the_upstream() -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=KEY, label="fake-label")
        with ProxyServer("passthrough", upstream=upstream) as proxy:
            env = {"OPENAI_BASE_URL": f"{proxy.base_url}/v1", "OPENAI_API_KEY": "x"}
            assert openai_agent(env, "hi there") == "echo: hi there"
            models = openai.OpenAI(base_url=f"{proxy.base_url}/v1", api_key="x").models.list()
            assert [m.id for m in models] == ["fake-label"]
            bad = httpx.post(f"{proxy.base_url}/runs/../x/v1/chat/completions", json={})
            assert bad.status_code == 404
            assert proxy.finish_run("default").model_calls == 1


def test_run_ids_with_slashes_become_nested_recording_files(tmp_path: Path) -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=KEY)
        with ProxyServer("record", tmp_path, upstream) as proxy:
            openai_agent(proxy.run_env("suite/scenario/0"), "hello")
            result = proxy.finish_run("suite/scenario/0")
    assert result.recording_path == tmp_path / "suite" / "scenario" / "0.proxy.json"
    assert result.recording_path.exists()


def test_a_replay_is_read_in_recorded_order_whichever_request_arrives_first(
    tmp_path: Path,
) -> None:
    # Conversations in flight together reach the proxy in any order, and the first to
    # arrive is the agent. Before, a replay in which the other one came first swapped
    # the agent and its sub-agent; now a replay's trajectory is the recorded one.
    def run(mode: Any, order: list[str], upstream: Upstream | None) -> Any:
        with ProxyServer(mode, tmp_path, upstream) as proxy:
            env = proxy.run_env("two")
            for city in order:
                assert openai_agent(env, f"weather in {city}") == f"echo: weather in {city}"
            return proxy.finish_run("two")

    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=KEY)
        recorded = run("record", ["Paris", "Rome"], upstream)
    replayed = run("replay", ["Rome", "Paris"], None)
    assert replayed.ok and not replayed.unused_recorded
    assert _texts(replayed.trajectory)[1:] == ["weather in Paris", "echo: weather in Paris"]
    assert normalize(replayed.trajectory) == normalize(recorded.trajectory)
