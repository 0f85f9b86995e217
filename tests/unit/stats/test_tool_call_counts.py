"""``tool_calls_of:<tool>`` (issue 56): one tool's calls per run, compared by rank as the
total ``tool_calls`` is, for each tool some run on either side called twice or more; and the
tools a run executed with no model call asking (its tool spans) counted with the rest.

An agent that loops on one tool shows in the total, but not which tool; one that calls
each tool once at most already shows in ``tool_used:<tool>``, so no count row repeats it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker


def _results(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    baseline: Sequence[Sequence[str]],
    tonight: Sequence[Sequence[str]],
) -> dict[str, MetricResult]:
    nights = [runs(30, start=30 * i, tools=baseline) for i in range(5)]
    found = compare_night([cell(nights, runs(30, tools=tonight))]).results
    return {r.metric: r for r in found}


def test_one_tool_called_three_times_where_it_was_called_once_is_its_count_changed(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    once = [("search", "read"), ("search", "read", "read")]
    looping = [("search", "search", "search", "read")]
    found = _results(runs, cell, once, looping)
    assert found["tool_calls_of:search"].verdict == "changed"
    assert found["tool_calls_of:read"].verdict == "changed"  # read: 1.5 a run -> 1
    assert found["tool_used:search"].verdict == "ok"  # every run still calls it
    assert not found["tool_calls_of:search"].fails_night  # a diagnostic unless gated


def test_a_tool_no_run_called_twice_has_no_count_row(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    found = _results(runs, cell, [("search", "read")], [("search",), ("read",)])
    assert not [m for m in found if m.startswith("tool_calls_of:")]
    assert {"tool_used:search", "tool_used:read", "tool_calls"} <= found.keys()


def test_tools_run_with_no_model_call_count_with_the_calls(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    def alone(records: list[RunRecord], *tools: str) -> list[RunRecord]:
        return [r.model_copy(update={"tools_alone": list(tools)}) for r in records]

    nights = [alone(runs(30, start=30 * i), "audit", "audit") for i in range(5)]
    tonight = alone(runs(30))  # the agent stopped auditing on its own
    found = {r.metric: r for r in compare_night([cell(nights, tonight)]).results}
    assert found["tool_used:audit"].verdict == "changed"  # used in every run, now in none
    assert found["tool_calls_of:audit"].verdict == "changed"
    assert found["tool_sequence"].verdict == "ok"  # the model's calls did not change


def test_a_baseline_from_before_runs_recorded_their_tools_run_alone_reads_none_as_new(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Records written before ``tools_alone`` existed hold None, not "none run alone": the
    tools tonight's runs ran alone are left out of the comparison, not flagged as new."""
    nights = [runs(30, start=30 * i) for i in range(5)]
    tonight = [r.model_copy(update={"tools_alone": ["audit", "audit"]}) for r in runs(30)]
    found = {r.metric for r in compare_night([cell(nights, tonight)]).results}
    assert not {"tool_used:audit", "tool_calls_of:audit"} & found
    assert {"tool_used:search", "tool_used:read"} <= found
