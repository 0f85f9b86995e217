"""Prompt-cache tokens (issue 53, row 17) are metrics where the endpoint reports them.

Fewer tokens read from the cache, or more written to it, means the provider's cache
stopped holding the prompt (its prefix changed): the agent got dearer and slower with
every answer the same. Runs whose endpoint reports no caching have no such metric, and
a run that reports none among runs that do is left out of it, not counted as zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker

READS = (900, 1000, 950, 1100, 1000, 1050, 980, 1020, 990, 1010)


def _cached(
    records: Sequence[RunRecord], reads: Sequence[int | None], write: int | None = 40
) -> list[RunRecord]:
    return [
        r.model_copy(
            update={"cache_read_tokens": reads[i % len(reads)], "cache_write_tokens": write}
        )
        for i, r in enumerate(records)
    ]


def _compare(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    tonight_reads: Sequence[int | None],
    tonight_write: int | None = 40,
) -> dict[str, MetricResult]:
    nights = [_cached(runs(20, start=20 * i), READS) for i in range(5)]
    tonight = _cached(runs(20), tonight_reads, tonight_write)
    return {r.metric: r for r in compare_night([cell(nights, tonight)]).results}


def test_a_cache_that_stopped_holding_is_a_regression_of_its_reads_and_writes(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    found = _compare(runs, cell, [0], tonight_write=1000)
    assert found["cache_read_tokens"].verdict == "regression"
    assert found["cache_write_tokens"].verdict == "regression"
    assert not found["cache_read_tokens"].fails_night  # a diagnostic, as tokens are


def test_the_same_cache_use_is_ok(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    found = _compare(runs, cell, READS)
    assert found["cache_read_tokens"].verdict == "ok"
    assert found["cache_write_tokens"].verdict == "ok"


def test_runs_that_report_no_caching_have_no_cache_metric(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, start=20 * i) for i in range(5)]
    found = {r.metric for r in compare_night([cell(nights, runs(20))]).results}
    assert "cache_read_tokens" not in found and "cache_write_tokens" not in found
    assert "prompt_tokens" in found


def test_a_run_that_reports_none_is_left_out_not_counted_as_zero(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # Half of tonight's runs went to a route without caching: the rest read as usual.
    found = _compare(runs, cell, [*READS[:5], None, None, None, None, None])
    result = found["cache_read_tokens"]
    assert result.verdict == "ok" and result.night_n == 10
