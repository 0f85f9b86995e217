"""A response cache answering an agent's model calls is named as the cause, never read as
behaviour; and the proxy hands every run an empty cache directory and no trace export.

A warm dspy cache made a replay read as "llm_calls 3 -> 0" and a live run as an
unexplained "no model calls". Here a tiny on-disk cache in the dspy manner (keyed
by the request, under ``DSPY_CACHEDIR``) stands in for dspy, which is not installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.proxy._server import ProxyServer

pytest_plugins = ["pytester"]

CACHED_AGENT = """
import hashlib
import json
import os
from pathlib import Path

import openai


def cached_agent(task):
    # Like dspy: answers from a disk cache when the same request was seen before.
    request = {"model": "m", "messages": [{"role": "user", "content": task}]}
    key = hashlib.sha256(json.dumps(request).encode()).hexdigest()
    cache = Path(os.environ.get("DEMO_CACHE") or os.environ["DSPY_CACHEDIR"]) / key
    if cache.exists():
        return cache.read_text()
    answer = openai.OpenAI().chat.completions.create(**request).choices[0].message.content
    cache.write_text(answer)
    return answer


def test_cached(golden_trajectory):
    golden_trajectory.proxied(cached_agent, "hi")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # In a process of its own: the agent imports openai, which an in-process run
    # would import into this one and then half-unload.
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_a_replay_answered_by_a_warm_cache_names_the_cache_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(test_cache=CACHED_AGENT)
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    monkeypatch.delenv("DEMO_CACHE", raising=False)
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=1)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    # The proxy's own cache directory is fresh each run: replay makes its call.
    run(pytester).assert_outcomes(passed=1)

    # A cache the agent keeps elsewhere (a warm ~/.dspy_cache) answers instead.
    warm = tmp_path / "warm"
    warm.mkdir()
    monkeypatch.setenv("DEMO_CACHE", str(warm))
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-update")  # fills the warm cache through a real call
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    assert len(list(warm.iterdir())) == 1
    run(pytester, "--golden-record").assert_outcomes(failed=1)  # nothing to record
    result = run(pytester)
    result.assert_outcomes(failed=1)
    report = result.stdout.str().split("short test summary info")[0]
    first = report.index("the agent made no model call, while the recording holds 1")
    assert first < report.index("llm_calls: 1 -> 0")
    assert "response cache" in report and "dspy" in report


def test_each_proxied_run_gets_an_empty_cache_directory_and_no_trace_export(
    tmp_path: Path,
) -> None:
    with ProxyServer("replay", tmp_path) as proxy:
        first, second = proxy.run_env("a"), proxy.run_env("b")
        dirs = [Path(first["DSPY_CACHEDIR"]), Path(second["DSPY_CACHEDIR"])]
        assert dirs[0] != dirs[1]
        assert all(d.is_dir() and not any(d.iterdir()) for d in dirs)
        assert first["OPENAI_AGENTS_DISABLE_TRACING"] == "1"
        (dirs[0] / "entry").write_text("cached", encoding="utf-8")
    assert not any(os.path.exists(d) for d in dirs)  # removed with the proxy
