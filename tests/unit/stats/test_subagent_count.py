"""``subagent_count`` (issue 56's hand-off counts): the sub-agent runs a run made (hand-offs,
agents called as tools), a count compared by rank as steps are; a metric only where some
run on either side made one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker


def _handing_off(records: Sequence[RunRecord], every: int) -> list[RunRecord]:
    """``records`` with one sub-agent run in every ``every``-th run (0: none)."""
    return [
        r.model_copy(update={"subagent_count": int(every > 0 and i % every == 0)})
        for i, r in enumerate(records)
    ]


def _compare(
    runs: RunsMaker, cell: Callable[..., CellNight], baseline_every: int, tonight_every: int
) -> dict[str, MetricResult]:
    nights = [_handing_off(runs(20, start=20 * i), baseline_every) for i in range(5)]
    tonight = _handing_off(runs(20), tonight_every)
    return {r.metric: r for r in compare_night([cell(nights, tonight)]).results}


def test_an_agent_that_starts_handing_off_every_run_has_changed_its_sub_agent_runs(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _compare(runs, cell, baseline_every=0, tonight_every=1)["subagent_count"]
    assert result.verdict == "changed" and result.effect is not None and result.effect > 0.9
    assert not result.fails_night  # a diagnostic unless the suite gates on it


def test_the_same_hand_offs_are_not_flagged(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _compare(runs, cell, baseline_every=4, tonight_every=4)["subagent_count"]
    assert result.verdict in ("ok", "inconclusive")


def test_an_agent_that_never_hands_off_has_no_sub_agent_metric(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    found = _compare(runs, cell, baseline_every=0, tonight_every=0)
    assert "subagent_count" not in found and "tool_calls" in found
