"""A framework agent nobody here wrote (pydantic-ai on its OpenAI chat model) through the
capture proxy: recorded from a loopback fake endpoint, replayed offline with the network
blocked three times with identical goldens, failing readably when the agent changes, and
run live in a suite as a command agent."""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from paths import REPO
from runner_agents import fake_pool, write_suite
from sdk_agents import content_responder
from suite_runs import run_suite

from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.frozen._proxied import call_with_env, run_frozen_proxied
from evalrunner.suite._loader import load_suite

pytest.importorskip(
    "pydantic_ai",
    reason="pydantic-ai is not installed (the `frameworks` extra; .ci/run installs it)",
)
from framework_agents import pydantic_ai_agent  # after the skip: it needs pydantic-ai

TASK = "Capitals of: France, Japan"
SUPPORT = REPO / "tests" / "support"


def frozen(golden: Path, mode: str, api_base: str = "http://127.0.0.1:9") -> tuple[bool, str]:
    def endpoint() -> Endpoint:
        return Endpoint(label="openai/fake", model="openai/fake", api_base=api_base, api_key="sk-x")

    outcome = run_frozen_proxied(
        call_with_env(pydantic_ai_agent, TASK),
        golden_path=golden,
        mode=mode,  # type: ignore[arg-type]
        endpoint=endpoint,
    )
    return outcome.ok, outcome.message


def test_pydantic_ai_agent_records_replays_three_times_and_fails_readably_when_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEMO_INSTRUCTIONS", raising=False)
    golden = tmp_path / "capitals.json"
    with FakeEndpoint(responder=content_responder) as ep:
        assert frozen(golden, "record", ep.api_base)[0]
        assert len(ep.requests) == 2
    written = golden.read_text(encoding="utf-8")
    assert '"lookup"' in written and (tmp_path / "capitals.proxy.json").exists()
    for _ in range(3):  # no upstream exists any more; the network is blocked but the proxy
        ok, message = frozen(golden, "check")
        assert ok, message
        assert golden.read_text(encoding="utf-8") == written
    monkeypatch.setenv("DEMO_INSTRUCTIONS", "You answer in French.")
    ok, message = frozen(golden, "check")
    assert not ok
    assert "model call 1 has no recorded response" in message
    assert "system message" in message and "French" in message


def test_pydantic_ai_agent_runs_live_in_a_suite(tmp_path: Path) -> None:
    scenario = {
        "id": "pydantic-ai",
        "command": [sys.executable, str(SUPPORT / "framework_agents.py"), "{task}"],
        "env": {"PYTHONPATH": str(SUPPORT)},
        "input": TASK,
        # The suite lists a tool the agent does not offer: judged by what it offered, noted once.
        "tools": ["lookup", "search"],
        "checks": {"answer_contains": ["Paris", "Tokyo"], "tools_used": ["lookup"]},
    }
    suite = load_suite(write_suite(tmp_path / "suites", "fw", [scenario], runs=3, timeout_s=60))
    progress = io.StringIO()
    with FakeEndpoint(responder=content_responder) as ep:
        report = asyncio.run(
            run_suite(
                suite, out=tmp_path / "out", pool=fake_pool(ep.api_base), progress_stream=progress
            )
        )
    assert [(r.outcome, r.reason) for r in report.records] == [("passed", None)] * 3
    notes = [line for line in progress.getvalue().splitlines() if line.startswith("note:")]
    assert notes == [
        "note: scenario pydantic-ai: tools: lists lookup, search, the agent offered lookup "
        "(not offered by the agent: search); unknown_tool is judged against what the agent offered"
    ]
    assert all(r.tools == ["lookup", "lookup"] and r.llm_calls == 2 for r in report.records)
