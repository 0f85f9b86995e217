"""A night under a suite's rate_limits against an endpoint that enforces rpm: no 429s, the
waits kept out of the runs' latency and shown in progress, for in-process agents and for
command agents (whose calls the night's capture proxy forwards)."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from fake_endpoint import FakeEndpoint
from night_process import respond, suite_file
from paths import REPO
from runner_agents import FAKE_KEY, fake_pool, write_suite
from sdk_agents import content_responder
from suite_runs import run_suite

from evalrunner._litellm import import_litellm
from evalrunner.suite._loader import load_suite

litellm = import_litellm()
SUPPORT = REPO / "tests" / "support"
HELLO = {"role": "user", "content": "hi"}
RPM, WINDOW = 120, 10.0
"""The endpoint lets 20 requests through in any 10 s (a provider counts a minute; shorter
here to keep the test short, which leaves the limiter less room for jitter, not more)."""


def test_the_fake_endpoint_answers_429_over_its_rpm() -> None:
    with FakeEndpoint(rpm=RPM, rpm_window_s=WINDOW) as ep:
        statuses, waits = [], []
        for _ in range(22):
            body = json.dumps({"model": "fake", "messages": [{"role": "user", "content": "hi"}]})
            request = urllib.request.Request(
                f"{ep.api_base}/chat/completions",
                data=body.encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
                waits.append(float(exc.headers["Retry-After"]))
    assert statuses == [200] * 20 + [429] * 2
    assert ep.rate_limited == 2 and all(0 < w <= WINDOW for w in waits)


def test_a_rate_limited_night_gets_no_429_and_keeps_waits_out_of_latency(tmp_path: Path) -> None:
    # 3 scenarios x 4 runs x 2 calls = 24 requests at 120 rpm: about 12 s of waiting.
    suite = load_suite(
        suite_file(tmp_path, runs=4, concurrency=6, rate_limits={"openai/fake": {"rpm": RPM}})
    )
    progress = io.StringIO()
    with FakeEndpoint(responder=respond, rpm=RPM, rpm_window_s=WINDOW) as ep:
        # litellm's first call in a process takes ~0.5 s more than the next (imports, its cost
        # map): requests admitted at even gaps would reach the endpoint bunched. A provider's
        # one-minute window absorbs that; this test's 10 s window is kept for the limiter.
        litellm.completion(
            model="openai/fake", api_base=ep.api_base, api_key=FAKE_KEY, messages=[HELLO]
        )
        ep.accepted_at.clear()  # the warm-up call does not count against the night
        t0 = time.monotonic()
        report = asyncio.run(
            run_suite(
                suite, out=tmp_path / "out", pool=fake_pool(ep.api_base), progress_stream=progress
            )
        )
        wall = time.monotonic() - t0
    assert ep.rate_limited == 0 and len(ep.accepted_at) == 24
    assert {r.outcome for r in report.records} == {"passed"}
    assert {r.attempts for r in report.records} == {1}
    assert wall > 23 * 60 / RPM  # the limiter did hold the requests back
    assert max(r.latency_s for r in report.records) < 3.0  # ... and that is not the agent's latency
    assert "rate-limit wait" in progress.getvalue()


def test_command_agents_share_the_rate_limit_through_the_capture_proxy(tmp_path: Path) -> None:
    # 12 runs of an OpenAI-SDK process x 2 calls = 24 requests at 120 rpm, all forwarded by
    # the night's capture proxy, which asks the same limiter as in-process runs.
    scenario = {
        "id": "sdk",
        "command": [sys.executable, str(SUPPORT / "sdk_agent_main.py"), "openai", "{task}"],
        "env": {"PYTHONPATH": str(SUPPORT)},
        "input": "Capitals of: France, Japan",
        "tools": ["lookup"],
        "checks": {"answer_contains": ["Paris", "Tokyo"]},
    }
    path = write_suite(
        tmp_path,
        "cmd",
        [scenario],
        runs=12,
        concurrency=6,
        timeout_s=60,
        rate_limits={"openai/fake": {"rpm": RPM}},
    )
    progress = io.StringIO()
    with FakeEndpoint(responder=content_responder, rpm=RPM, rpm_window_s=WINDOW) as ep:
        t0 = time.monotonic()
        report = asyncio.run(
            run_suite(
                load_suite(path),
                out=tmp_path / "out",
                pool=fake_pool(ep.api_base),
                progress_stream=progress,
            )
        )
        wall = time.monotonic() - t0
    assert ep.rate_limited == 0 and len(ep.accepted_at) == 24
    assert {r.outcome for r in report.records} == {"passed"}, [r.reason for r in report.records]
    assert wall > 23 * 60 / RPM  # held back by the shared limiter, not by 429s
    assert "rate-limit wait" in progress.getvalue()  # the proxy's waits reach the night's count
