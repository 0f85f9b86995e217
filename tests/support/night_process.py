"""`evalrunner run` as a real process against the fake endpoint: started, watched, signalled.

For the tests of what survives a kill, a SIGTERM or a second writer: the
resumable suite (three scenarios whose agent makes two model calls per run),
and helpers that start the command, wait until it has written some runs, and
stop it with a signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fake_endpoint import FakeEndpoint, Reply
from runner_agents import fake_env, write_suite

from evalrunner.live._results import ResultsDir

EVALRUNNER = str(Path(sys.executable).with_name("evalrunner"))
SCENARIOS = ("capital", "population", "plain")
RUNS = 8


def respond(body: dict[str, Any], n: int) -> Reply:
    """A tool call first, then the answer: two model calls per run."""
    if body.get("tools") and not any(m["role"] == "tool" for m in body["messages"]):
        return Reply(None, tool_calls=[("lookup_capital", '{"country": "Japan"}')])
    return Reply("Tokyo.")


def suite_file(root: Path, *, task: str = "Capital of Japan?", **settings: Any) -> Path:
    """``root/resumable.yaml``: SCENARIOS, RUNS runs each, two at a time."""
    scenarios = [
        {
            "id": sid,
            "agent": "runner_agents:tool_agent",
            "input": f"{task} ({sid})",
            "tools": ["lookup_capital"],
            "checks": {"answer_contains": ["Tokyo"]},
        }
        for sid in SCENARIOS
    ]
    options = {"runs": RUNS, "concurrency": 2, "timeout_s": 10, **settings}
    return write_suite(root, "resumable", scenarios, **options)


def planned(scenarios: tuple[str, ...] = SCENARIOS, runs: int = RUNS) -> set[str]:
    return {f"{sid}/openai_fake/{i}" for sid in scenarios for i in range(runs)}


def evalrunner(ep: FakeEndpoint, cwd: Path, *args: str, **kwargs: Any) -> Any:
    """``evalrunner run --suites-dir CWD ARGS`` to its end."""
    return subprocess.run(
        [EVALRUNNER, "run", "--suites-dir", str(cwd), *args],
        cwd=cwd,
        env=fake_env(ep.api_base),
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def start(ep: FakeEndpoint, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``evalrunner run --suites-dir CWD ARGS``, running."""
    return subprocess.Popen(
        [EVALRUNNER, "run", "--suites-dir", str(cwd), *args],
        cwd=cwd,
        env=fake_env(ep.api_base),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_runs(proc: subprocess.Popen[str], out: Path, count: int) -> None:
    """Until ``out`` holds ``count`` run files (the process must still be running)."""
    results = ResultsDir(out)
    deadline = time.monotonic() + 90
    while len(results.run_files()) < count:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "no run files appeared"
        time.sleep(0.02)


def stop(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[str, str]:
    """Send ``sig``, wait for the process; its stdout and stderr."""
    try:
        os.kill(proc.pid, sig)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def interrupt_later(ep: FakeEndpoint, root: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """The resumable suite into ``root/out`` (``args`` added), running with two runs written."""
    suite_file(root)
    out = root / "out"
    proc = start(ep, root, "--suite", "resumable", "--out", str(out), *args)
    wait_for_runs(proc, out, 2)
    return proc, out


def error_line(stderr: str) -> str:
    """The one ``error:`` line of a command's stderr."""
    [line] = [line for line in stderr.splitlines() if line.startswith("error:")]
    return line
