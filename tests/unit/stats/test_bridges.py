"""The DataFrame bridges the synthetic history (tests/support/history_factory.py) calls."""

from __future__ import annotations

import pandas as pd
import pytest
from stats_bridges import compare_scenario, finalize, summarize

from evalrunner.errors import FileFormatError
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker


def _frame(records: list[RunRecord]) -> pd.DataFrame:
    return pd.DataFrame([r.model_dump() for r in records])


def test_compare_scenario_treats_the_frame_as_one_gating_night(runs: RunsMaker) -> None:
    results = compare_scenario(
        _frame(runs(30, passed=28)), _frame(runs(20, passed=8)), scenario="s", model="m"
    )
    success = next(r for r in results if r.metric == "success_rate")
    assert success.gating and success.verdict == "regression"
    only = compare_scenario(
        _frame(runs(30)), _frame(runs(20)), metrics=["success_rate", "tool_used"]
    )
    assert {r.metric.split(":")[0] for r in only} == {"success_rate", "tool_used"}
    assert finalize(results) == results


def test_frames_without_outcomes_are_refused() -> None:
    with pytest.raises(FileFormatError, match="outcome"):
        compare_scenario(pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [1]}))


def test_summarize_bridge_is_the_baseline_file_dict(runs: RunsMaker) -> None:
    summary = summarize(_frame(runs(10, passed=8)))
    assert summary["n"] == 10 and summary["rates"]["success_rate"]["k"] == 8
    assert summary["rates"]["success_rate"]["ci95"] == pytest.approx(
        list(summary["rates"]["success_rate"]["ci95"])
    )
