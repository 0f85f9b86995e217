"""Counts (steps, LLM calls, tool calls): p values that hold in the far tail of a small
night, and a blatant change that is flagged whatever the night share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from count_tails import false_alarm_chances

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import cell_night, make_runs


def steps_result(night: CellNight) -> MetricResult:
    return next(r for r in compare_night([night]).results if r.metric == "step_count")


def twos(k: int, runs: int = 3, start: int = 0) -> list[RunRecord]:
    """``runs`` runs of 1 step, ``k`` of them with 2."""
    return make_runs(runs, steps=[2] * k + [1] * (runs - k), start=start)


@pytest.mark.parametrize("drift_sd", [0.0, 0.3])
def test_a_nearly_constant_count_is_flagged_no_more_often_than_its_bar_at_three_runs(
    drift_sd: float,
) -> None:
    # 1 step, now and then (5 %) 2, in a 5 x 3 baseline and a night of 3: a mean of three
    # such placements is skewed like a rare binomial, and the normal tail flagged it 1.7
    # times as often as the bar (0.34 % of nights at 0.002; 0.39 % with drift).
    bars = (0.002, 6.7e-5)  # a 5 x 1 suite's lone change, a 50 x 3 suite's
    chances = false_alarm_chances(0.05, drift_sd, bars, runs=3, nights=5)
    assert all(chance <= bar for chance, bar in zip(chances, bars, strict=True)), chances


def test_three_new_counts_in_three_runs_are_weighed_against_what_fifteen_runs_cannot_rule_out() -> (
    None
):
    # Fifteen runs of 1 step cannot rule out a 5 % rate of 2 steps (0.95^15 = 0.46), at
    # which three 2s in three runs happen with chance 0.05^3; the p may not be below it.
    baseline = [twos(0, start=3 * j) for j in range(5)]
    result = steps_result(cell_night(baseline, twos(3, start=1000)))
    assert result.p is not None and result.p >= 2 * 0.05**3
    assert "exact tail" in result.test


def _suite(tonight_steps: Sequence[int], cells: int = 50) -> list[CellNight]:
    """A 50 x 3 suite whose nights differ a lot (a night share of 0.5 for steps); the
    first cell's night has ``tonight_steps``, the others an ordinary night."""
    rng = np.random.default_rng(7)
    out = []
    for c in range(cells):
        nights = []
        for j in range(5):
            shift = rng.normal(0, 1.0)
            steps = [max(1, round(5 + shift + rng.normal(0, 1.0))) for _ in range(3)]
            nights.append(make_runs(3, steps=steps, scenario=f"s{c}", start=3 * j))
        steps = list(tonight_steps) if c == 0 else [5, 4, 6]
        tonight = make_runs(len(steps), steps=steps, scenario=f"s{c}", start=1000)
        out.append(cell_night(nights, tonight, scenario=f"s{c}"))
    return out


def test_a_blatant_step_change_is_flagged_however_much_nights_differ() -> None:
    # Placements are bounded: with a large night share the rank score cannot get past
    # the night term however far the counts moved, and 5 -> 15 steps went unflagged.
    night = compare_night(_suite([15, 14, 16]))
    first = next(r for r in night.results if r.scenario == "s0" and r.metric == "step_count")
    assert first.night_share is not None and first.night_share >= 0.2
    assert first.verdict == "changed", (first.p, first.bar, first.test)
    assert first.test is not None and "log counts" in first.test


def test_the_log_count_test_does_not_join_an_ordinary_night() -> None:
    night = compare_night(_suite([5, 6, 4]))
    assert {r.verdict for r in night.results if r.metric == "step_count"} <= {"ok", "inconclusive"}
