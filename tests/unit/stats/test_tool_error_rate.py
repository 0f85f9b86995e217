"""``tool_error_rate`` (issue 56): the share of runs in which a tool failed, where the runs
recorded their tool errors (the agent's own tool spans say which failed).

A tool that starts raising is a change of behaviour the model API may never show: the
agent retries or carries on, and the answer can stay right. Records written before the
field existed hold no tool errors: a baseline of them has no such metric, rather than a
row in every cell saying it has nothing to compare with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker


def _with_errors(records: Sequence[RunRecord], failing: int) -> list[RunRecord]:
    """``records`` with one tool error in each of the first ``failing`` runs."""
    return [r.model_copy(update={"tool_errors": int(i < failing)}) for i, r in enumerate(records)]


def _compare(
    runs: RunsMaker, cell: Callable[..., CellNight], failing_tonight: int
) -> dict[str, MetricResult]:
    # One run in 40 meets a failing tool on each baseline night.
    nights = [_with_errors(runs(40, start=40 * i), 1) for i in range(5)]
    tonight = _with_errors(runs(40), failing_tonight)
    return {r.metric: r for r in compare_night([cell(nights, tonight)]).results}


def test_tools_failing_in_more_runs_is_a_regression_of_the_tool_error_rate(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _compare(runs, cell, failing_tonight=20)["tool_error_rate"]
    assert result.verdict == "regression"
    assert not result.fails_night  # a diagnostic unless the suite gates on it


def test_the_same_share_of_failing_tools_is_ok(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    assert _compare(runs, cell, failing_tonight=1)["tool_error_rate"].verdict == "ok"


def test_a_baseline_that_recorded_no_tool_errors_has_no_tool_error_rate(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, start=20 * i) for i in range(5)]
    found = {r.metric for r in compare_night([cell(nights, _with_errors(runs(20), 12))]).results}
    assert "tool_error_rate" not in found and "tool_calls" in found


def test_a_tool_error_rate_can_gate_the_night(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    from evalrunner.suite import Tolerance

    nights = [_with_errors(runs(20, start=20 * i), 1) for i in range(5)]
    gating = Tolerance(gating=["success_rate", "tool_error_rate"])
    night = cell(nights, _with_errors(runs(20), 12), tolerance=gating)
    result = next(r for r in compare_night([night]).results if r.metric == "tool_error_rate")
    assert result.fails_night
