"""Scheduling runs: choosing scenarios and models, and the fixed and adaptive schedulers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from suite_texts import write_full

from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.errors import ConfigError
from evalrunner.live._schedule import (
    Adaptive,
    AdaptiveScheduler,
    AdaptiveSummary,
    CellBudget,
    FixedScheduler,
    ScenarioSchedule,
    choose,
)
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import CellKey, RunRecord
from evalrunner.suite._settings import Suite


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    return load_suite(write_full(tmp_path))


ENDPOINTS = {m: Endpoint(label=m, model=m) for m in ("a/x", "b/y")}


def record(cell: CellKey, index: int) -> RunRecord:
    return RunRecord(
        run_id=f"{cell.scenario}/{cell.model}/{index}",
        suite="demo",
        scenario=cell.scenario,
        model=cell.model,
        index=index,
        outcome="passed",
    )


def test_unknown_scenario_lists_ids(suite: Suite) -> None:
    with pytest.raises(
        ConfigError,
        match=r"no scenario 'tool_chain'; did you mean 'tool-chain'\? its scenarios: direct_answer, tool-chain",
    ):
        choose(suite, scenario_ids=["tool_chain"])


def test_choose_applies_the_cli_overrides(suite: Suite) -> None:
    [schedule] = choose(suite, runs=2, models=["a/x", "b/y", "a/x"], scenario_ids=["tool-chain"])
    assert schedule.scenario.id == "tool-chain" and schedule.scenario.runs == 2
    assert schedule.models == ("a/x", "b/y")
    # A CLI run count is not part of the experiment: the fingerprint stays.
    assert schedule.scenario.fingerprint == suite.scenarios[1].fingerprint
    assert schedule.cells() == [CellKey("tool-chain", "a/x"), CellKey("tool-chain", "b/y")]


def test_the_fixed_scheduler_schedules_every_run_once(suite: Suite) -> None:
    schedules = choose(suite, runs=2, models=["a/x", "b/y"])
    scheduler = FixedScheduler(schedules, ENDPOINTS)
    batch = scheduler.next_jobs([])
    assert [job.run_id for job in batch] == [
        f"{sid}/{m}/{i}"
        for sid in ("direct_answer", "tool-chain")
        for m in ("a_x", "b_y")
        for i in (0, 1)
    ]
    assert scheduler.scheduled == batch
    assert scheduler.next_jobs([record(job.key.cell, job.index) for job in batch]) == []


def test_the_adaptive_scheduler_asks_its_look_after_each_batch(suite: Suite) -> None:
    stoppable = CellKey("tool-chain", "a/x")
    asked: list[tuple[CellKey, int]] = []

    def look(cell: CellKey, records: Sequence[RunRecord]) -> tuple[int, str]:
        asked.append((cell, len(records)))
        return (0, "settled") if len(records) >= 4 else (2, "more")

    schedules = [ScenarioSchedule(suite.scenarios[1], ("a/x", "b/y"))]
    budgets = {stoppable: CellBudget(first=3, runs=10, cap=10)}
    scheduler = AdaptiveScheduler.of(
        schedules, ENDPOINTS, Adaptive(look, budgets, batch=2, max_runs=10)
    )
    assert scheduler.notes == ["tool-chain|b/y: no baseline, runs the full 20"]
    finished: list[RunRecord] = []
    sizes = []
    while batch := scheduler.next_jobs(finished):
        sizes.append(
            {cell: sum(j.key.cell == cell for j in batch) for cell in {j.key.cell for j in batch}}
        )
        finished += [record(job.key.cell, job.index) for job in batch]
    other = CellKey("tool-chain", "b/y")
    # First its first look's 3; then what the look asks for until it settles it at 5 runs.
    assert [s.get(stoppable, 0) for s in sizes][:2] == [3, 2]
    assert sum(s.get(stoppable, 0) for s in sizes) == 5
    assert sizes[0].get(other) == 20  # never asked: no baseline, all its runs at once
    assert asked == [(stoppable, 3), (stoppable, 5)]
    # The numbers the words are checked against: 25 made, of at most 10 + 20.
    assert scheduler.summary == AdaptiveSummary(made=25, maximum=30, fixed=40, stopped=1, cells=2)
    assert scheduler.notes[-1] == "tool-chain|a/x: stopped after 5 of at most 10 runs: settled"
    assert len(scheduler.scheduled) == 25 and len({j.run_id for j in scheduler.scheduled}) == 25


def test_a_look_rule_escalates_a_fixed_schedule_where_it_says_and_nowhere_else(
    suite: Suite,
) -> None:
    """Escalation on a fixed plan: each cell gets its N, then as many more as the rule asks."""
    watched = CellKey("tool-chain", "a/x")
    asked: list[int] = []

    def look(cell: CellKey, records: Sequence[RunRecord]) -> tuple[int, str]:
        asked.append(len(records))
        return (3, "suspicious") if len(records) < 9 else (0, "nothing suspicious")

    schedules = [
        ScenarioSchedule(suite.scenarios[1].model_copy(update={"runs": 4}), ("a/x", "b/y"))
    ]
    rule = Adaptive(look, {watched: CellBudget(first=4, runs=4, cap=12)}, adaptive=False)
    scheduler = AdaptiveScheduler.of(schedules, ENDPOINTS, rule)
    finished: list[RunRecord] = []
    sizes = []
    while batch := scheduler.next_jobs(finished):
        sizes.append((sum(j.key.cell == watched for j in batch), len(batch)))
        finished += [record(job.key.cell, job.index) for job in batch]
    # Both cells get their 4 at once; then only the watched one grows, 3 at a time to 10,
    # and the rule (not the cap of 12) stops it.
    assert sizes == [(4, 8), (3, 3), (3, 3)]
    assert asked == [4, 7, 10]
    summary = scheduler.summary
    assert (summary.made, summary.fixed, summary.escalated, summary.adaptive) == (14, 8, 1, False)
    assert summary.line().startswith("made 14 runs (+6 on the fixed plan's 8); 1 of 2")
    assert [n for n in scheduler.notes if "escalating" in n] == [
        "tool-chain|a/x: escalating, suspicious",
        "tool-chain|a/x: escalating, suspicious",
    ]
    assert not any("no baseline" in n for n in scheduler.notes)  # a fixed plan says nothing
