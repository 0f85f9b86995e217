"""The night from Python, as a script or a notebook calls it (``evalrunner.run_live``)."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import threading
import time
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, Reply
from runner_agents import FAKE_KEY, write_suite

from evalrunner import NightOptions, run_live
from evalrunner.errors import ConfigError
from evalrunner.night import LiveResult


@pytest.fixture
def suite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    return write_suite(tmp_path, "py", [scenario], runs=2, models=["openai/fake"])


def night(suite_file: Path, out: str) -> LiveResult:
    options = NightOptions(out=Path(out), baselines_dir=None, history=None)
    return run_live(str(suite_file), options, progress_stream=io.StringIO())


def test_a_night_runs_inside_a_running_event_loop(
    suite_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "RuntimeError: asyncio.run() cannot be called from a running event loop" from
    # inside evalrunner, in a notebook's cell (a review).
    async def cell() -> LiveResult:
        return night(suite_file, "in-a-loop")

    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        result = asyncio.run(cell())
        again = night(suite_file, "no-loop")  # and the plain way still works after it
    for done in (result, again):
        assert [r.outcome for r in done.report.records] == ["passed", "passed"]
        assert done.exit_code() == 0


def test_a_suite_name_given_as_a_path_says_how_to_load_one_by_name(suite_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"load_suite_by_name\('py'\)"):
        night(Path("py"), "out")
    assert not Path("out").exists()


SLEEPY_AGENT = """
import pathlib
import time


def agent(task, ctx):
    pathlib.Path("agent-started").touch()
    time.sleep(60)  # still running when the cell is interrupted
    return "Paris."
"""


def test_an_interrupted_cell_stops_the_night_its_loop_runs_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the interrupt reached the cell only once the night had ended on its own (every
    # run at its timeout); the night's thread was never told.
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "sleepy_agent.py").write_text(SLEEPY_AGENT, encoding="utf-8")
    scenario = {"id": "s", "agent": "sleepy_agent:agent", "input": "Capital of France?"}
    suite = write_suite(tmp_path, "sleepy", [scenario], runs=2, timeout_s=120)

    def interrupt_once_an_agent_runs() -> None:
        deadline = time.monotonic() + 30
        while not (tmp_path / "agent-started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    async def cell() -> LiveResult:
        return night(suite, "out")

    loop = asyncio.new_event_loop()  # a notebook's: it leaves SIGINT to Python's own handler
    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        threading.Thread(target=interrupt_once_an_agent_runs, daemon=True).start()
        started = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt):
                loop.run_until_complete(cell())
        finally:
            loop.close()
    assert time.monotonic() - started < 30  # not the runs' 60 s
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"
