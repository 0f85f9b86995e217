"""The night from Python, as a script or a notebook calls it (``evalrunner.run_live``)."""

from __future__ import annotations

import asyncio
import io
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
