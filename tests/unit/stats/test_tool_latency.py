"""``tool_latency_s`` (issue 56): seconds per tool execution, where the runs' tool spans
timed them, compared as the other continuous metrics are (a ratio of geometric means).

A tool that got slower (its API, its data) hides behind the model's time in the run's
own latency. Runs whose tools were never timed (the proxy alone, records written before
the field existed) have no value: a cell of them has no such metric rather than a row
that can only say it has nothing to compare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker


def _timed(records: Sequence[RunRecord], seconds: float, seed: int) -> list[RunRecord]:
    """``records`` with tools taking ``seconds`` each, give or take a fifth, run to run."""
    spread = np.random.default_rng(seed).lognormal(0.0, 0.2, len(records))
    return [
        r.model_copy(update={"tool_latency_s": seconds * float(s)})
        for r, s in zip(records, spread, strict=True)
    ]


def _compare(
    runs: RunsMaker, cell: Callable[..., CellNight], tonight_seconds: float
) -> dict[str, MetricResult]:
    nights = [_timed(runs(30, start=30 * i), 0.1, seed=i) for i in range(5)]
    tonight = _timed(runs(30), tonight_seconds, seed=99)
    return {r.metric: r for r in compare_night([cell(nights, tonight)]).results}


def test_tools_twice_as_slow_are_a_regression_of_tool_latency(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _compare(runs, cell, tonight_seconds=0.2)["tool_latency_s"]
    assert result.verdict == "regression" and (result.effect or 0) > 1.25
    assert not result.fails_night  # a diagnostic unless the suite gates on it


def test_tools_as_fast_as_the_baseline_s_are_ok(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    assert _compare(runs, cell, tonight_seconds=0.1)["tool_latency_s"].verdict == "ok"


def test_runs_whose_tools_were_never_timed_have_no_tool_latency(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, start=20 * i) for i in range(5)]
    found = {r.metric for r in compare_night([cell(nights, runs(20))]).results}
    assert "tool_latency_s" not in found and "latency_s" in found
    # A baseline of records from before tools were timed: no row in every cell of it
    # saying it has nothing to compare tonight's timed tools with.
    timed = _timed(runs(20), 0.1, seed=7)
    assert "tool_latency_s" not in {r.metric for r in compare_night([cell(nights, timed)]).results}
