"""Opening a night: the results directory claimed, the schedule settled, and every check that
needs no model made before the first run (a typo costs one line, not a night)."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_agents import FAKE_MODEL, write_suite

from evalrunner.errors import ConfigError
from evalrunner.live._schedule import RunOptions
from evalrunner.night._open import open_night
from evalrunner.suite._loader import load_suite

AGENT = "runner_agents:plain_agent"


def suite_in(tmp_path: Path, agent: str = AGENT, models: list[str] | None = None) -> Path:
    scenario = {"id": "s", "agent": agent, "input": "Capital of France?"}
    return write_suite(tmp_path, "t", [scenario], models=models or [FAKE_MODEL], runs=2)


def test_a_fresh_night_is_scheduled_from_the_suite_and_the_options(tmp_path: Path) -> None:
    suite = load_suite(suite_in(tmp_path))
    with open_night(suite, tmp_path / "out", RunOptions(runs=3)) as night:
        assert [(p.scenario.id, p.scenario.runs, p.models) for p in night.schedules] == [
            ("s", 3, (FAKE_MODEL,))
        ]
        assert night.labels == [FAKE_MODEL]
        assert night.manifest.runs == {"s": 3} and night.manifest.status == "running"
        assert night.previous == [] and not night.unclosed and night.adaptive is None


def test_an_agent_that_does_not_import_stops_the_night_before_its_first_run(
    tmp_path: Path,
) -> None:
    suite = load_suite(suite_in(tmp_path, agent="no_such_module:agent"))
    with (
        pytest.raises(ConfigError, match="no_such_module"),
        open_night(suite, tmp_path / "out", RunOptions()),
    ):
        pytest.fail("the night opened")
    assert not (tmp_path / "out" / "runs").exists()


def test_two_models_whose_files_would_share_a_name_are_refused(tmp_path: Path) -> None:
    suite = load_suite(suite_in(tmp_path))
    options = RunOptions(models=("openai/org/x", "openai/org_x"))
    with (
        pytest.raises(ConfigError, match="would share their results and baseline files"),
        open_night(suite, tmp_path / "out", options),
    ):
        pytest.fail("the night opened")


def test_a_resumed_night_continues_the_schedule_its_manifest_recorded(tmp_path: Path) -> None:
    suite = load_suite(suite_in(tmp_path))
    out = tmp_path / "out"
    with open_night(suite, out, RunOptions(runs=3)) as night:
        night.save()  # as run_night does first; the process then ends without closing it
    with open_night(suite, out, RunOptions(resume=True)) as night:
        assert [p.scenario.runs for p in night.schedules] == [3]  # not the suite's 2
        assert night.manifest.invocations == 2 and night.unclosed
    with (
        pytest.raises(ConfigError, match="--runs 4 conflicts with the plan"),
        open_night(suite, out, RunOptions(resume=True, runs=4)),
    ):
        pytest.fail("the night opened")
