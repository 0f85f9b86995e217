"""`evalrunner proxy` (the click command): prints the base URL and the environment
for agents, serves until Ctrl-C, then writes the recordings and says what it saw."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fake_endpoint import FakeEndpoint
from paths import REPO
from sdk_agents import anthropic_agent, content_responder, openai_agent

from evalrunner.cli._proxy import proxy
from evalrunner.proxy import ProxyServer

COMMAND = [sys.executable, "-c", "from evalrunner.cli._proxy import proxy; proxy()"]


def _until_ready(proc: subprocess.Popen[str]) -> list[str]:
    """The command's lines up to its "Ctrl-C to stop."."""
    assert proc.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "Ctrl-C to stop.":
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        lines.append(line.strip())
    return lines


def _exports(lines: list[str]) -> dict[str, str]:
    return dict(re.findall(r"^export (\w+)=(\S+)$", "\n".join(lines), re.M))


def _recording(folder: Path, ep: FakeEndpoint) -> subprocess.Popen[str]:
    """`evalrunner proxy --record FOLDER` to ``ep``'s openai/fake, on a port of its own."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "UPSTREAM_KEY": "k-0123456789"}
    args = ["--record", str(folder), "--model", "openai/fake", "--api-base", ep.api_base]
    args += ["--api-key-env", "UPSTREAM_KEY", "--port", "0"]
    return subprocess.Popen(
        [*COMMAND, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_command_records_until_stopped(tmp_path: Path, stop: signal.Signals) -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        proc = _recording(tmp_path, ep)
        try:
            lines = _until_ready(proc)
            # It says how it reaches the upstream: an openai/ model at an --api-base, directly.
            assert (
                lines[0] == f"evalrunner proxy: record ({tmp_path}), upstream openai/fake (direct)"
            )
            exports = _exports(lines)
            assert openai_agent(exports, "hello") == "echo: hello"
            assert exports["ANTHROPIC_BASE_URL"] + "/v1" == exports["OPENAI_BASE_URL"]
            # A token of this start's own, handed to agents as their key; nothing else gets in.
            token = exports["OPENAI_API_KEY"]
            assert token.startswith("evalrunner-") and len(token) > 30
            assert exports["ANTHROPIC_API_KEY"] == token
            url = exports["OPENAI_BASE_URL"] + "/chat/completions"
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            for headers in ({}, {"Authorization": "Bearer evalrunner-guess"}):
                refused = httpx.post(url, json=body, headers=headers)
                assert refused.status_code == 401
                assert "bearer token" in refused.json()["error"]["message"]
        finally:
            proc.send_signal(stop)
            out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"run default: 1 model call(s); recorded to {tmp_path / 'default.proxy.json'}" in out
    assert (tmp_path / "default.proxy.json").exists()


def test_a_second_signal_while_stopping_does_not_lose_the_recordings(tmp_path: Path) -> None:
    # A CI job's stop (or `timeout`) signals the whole process group, then the proxy again:
    # before, the second signal aborted the stopping ("Aborted!", exit 1, no recording).
    with FakeEndpoint(responder=content_responder) as ep:
        proc = _recording(tmp_path, ep)
        try:
            assert openai_agent(_exports(_until_ready(proc)), "hello") == "echo: hello"
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.send_signal(signal.SIGINT)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Aborted" not in out + err
    assert f"run default: 1 model call(s); recorded to {tmp_path / 'default.proxy.json'}" in out
    assert (tmp_path / "default.proxy.json").exists()


def test_an_anthropic_model_is_served_directly_from_the_command(tmp_path: Path) -> None:
    # A user's environment: no provider key but the one --api-key-env names.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
    env.update(PYTHONPATH=str(REPO), UPSTREAM_KEY="sk-ant-k-0123456789")
    with FakeEndpoint(responder=content_responder) as ep:
        args = ["--record", str(tmp_path), "--model", "anthropic/claude-x", "--port", "0"]
        args += ["--api-base", ep.api_base.removesuffix("/v1"), "--api-key-env", "UPSTREAM_KEY"]
        proc = subprocess.Popen(
            [*COMMAND, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            lines = _until_ready(proc)
            exports = _exports(lines)
            answer = anthropic_agent(exports, "Capitals of: Peru")
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    assert lines[0].endswith("upstream anthropic/claude-x (direct, Anthropic Messages)")
    assert answer == "Capitals: Lima." and proc.returncode == 0, err
    assert ep.hits == {"POST /v1/messages": 2}
    assert {h["x-api-key"] for h in ep.headers} == {"sk-ant-k-0123456789"}
    assert "run default: 2 model call(s); recorded to" in out
    assert "sk-ant-k-0123456789" not in (tmp_path / "default.proxy.json").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--record", "a", "--replay", "b"], "--record and --replay exclude each other"),
        (["--model", "openai/x", "--host", "0.0.0.0"], "pass --allow-remote"),
        (["--model", "openai/x", "--host", "0.0.0.0", "--allow-remote"], "needs a --token"),
        (["--record", "a"], "needs an upstream model (--model)"),
        (["--model", "openai/x", "--api-key-env", "NOT_SET_ANYWHERE"], "is not set"),
    ],
)
def test_bad_options_fail_with_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(proxy, args)
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


GOOD_CALL = {
    "call": 1,
    "request": {"api": "chat", "messages": [{"role": "user", "content": "hi"}]},
    "response": {"content": "hello", "finish_reason": "stop"},
}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"format_version": 1, "run_id": "run1", "calls": [', "not valid JSON at line 1"),
        (
            json.dumps(
                {"format_version": 1, "run_id": "run1", "calls": [{**GOOD_CALL, "response": None}]},
            ),
            "calls.0: has neither its response nor its error",
        ),
    ],
    ids=["truncated", "no-answer"],
)
def test_a_damaged_recording_stops_replay_before_anything_is_served(
    tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "run0.proxy.json").write_text(
        json.dumps({"format_version": 1, "run_id": "run0", "calls": [GOOD_CALL]})
    )
    damaged = tmp_path / "run1.proxy.json"
    damaged.write_text(text)
    # A subprocess with a deadline: a proxy that does not refuse serves until stopped.
    done = subprocess.run(
        [*COMMAND, "--replay", str(tmp_path), "--port", "0"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {damaged}: {said}") and "re-record it" in line, line
    assert damaged.read_text() == text  # left as it was


def test_a_recording_damaged_while_serving_is_a_400_naming_it_not_a_500(tmp_path: Path) -> None:
    damaged = tmp_path / "run1.proxy.json"
    with ProxyServer("replay", tmp_path) as server, httpx.Client() as client:
        damaged.write_text('{"run_id": "run1", "calls": [')
        reply = client.post(
            server.base_url + "/runs/run1/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 400  # SDKs retry a 500 again and again; a 400 they report
    error = reply.json()["error"]
    assert error["type"] == "malformed_recording"
    assert error["message"].startswith(f"{damaged}: not valid JSON at line 1")


def test_replay_says_it_reaches_no_upstream_even_given_one(tmp_path: Path) -> None:
    # Before: "upstream openai/my-model (direct)" on the start line, though replay never
    # sends anything upstream (a review).
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = ["--replay", str(tmp_path), "--model", "openai/my-model", "--port", "0"]
    args += ["--api-base", "http://127.0.0.1:9/v1"]
    proc = subprocess.Popen(
        [*COMMAND, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        lines = _until_ready(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert lines[0] == (
        f"evalrunner proxy: replay ({tmp_path}), upstream none (replay: answers come from the "
        "recordings)"
    )
    assert (
        "note: --replay answers from the recordings only; --model and --api-base are not used"
        in err
    )


def test_a_replay_that_could_not_answer_a_request_exits_1(tmp_path: Path) -> None:
    # Before: exit 0 after "1 replay mismatch(es)", so a shell or Node team's offline check
    # had to read the lines to fail (a review).
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def serve(args: list[str], *tasks: str) -> tuple[int, str, str]:
        proc = subprocess.Popen(
            [*COMMAND, *args, "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            exports = _exports(_until_ready(proc))
            for task in tasks:
                with contextlib.suppress(Exception):  # the replay's 400: the agent's to report
                    openai_agent(exports, task)
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err

    with FakeEndpoint(responder=content_responder) as ep:
        recorded = serve(
            ["--record", str(tmp_path), "--model", "openai/fake", "--api-base", ep.api_base],
            "hello",
        )
    assert recorded[0] == 0, recorded[2]
    same = serve(["--replay", str(tmp_path)], "hello")
    assert same[0] == 0, same[2]
    code, out, err = serve(["--replay", str(tmp_path)], "something else")
    assert "1 replay mismatch(es)" in out
    assert code == 1 and err.splitlines()[-1] == (
        "replay: 1 request(s) had no recorded response (exit 1)"
    ), err
