"""A slow decline is flagged by evidence accumulated against an anchored baseline.

On the old engine each night stood alone and the README's rolling baseline
(``--append --window 5``) took every night in: a success rate falling a little
each night never looked different from the last five nights. Here no night alone
is significant, the anchored baseline's evidence flags it, and a baseline that
rolls forward (a new anchor every night) never does.
"""

from __future__ import annotations

from collections.abc import Callable

from evalrunner.stats import CellNight, EvidenceState, MetricResult, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker

PASSES = [18, 17, 17, 16, 16, 16, 15, 15, 15, 15, 14, 14, 14, 14]
"""Runs of 20 passing each night: from 0.90 down to 0.70, against ten nights at 0.90."""


def _success(night: list[MetricResult]) -> MetricResult:
    return next(r for r in night if r.metric == "success_rate")


def test_anchored_evidence_flags_a_slow_decline_that_no_night_shows(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    baseline = [runs(20, passed=18, start=20 * i) for i in range(10)]
    state: EvidenceState | None = None
    flags: list[int] = []
    for night, passes in enumerate(PASSES, start=1):
        tonight = runs(20, passed=passes)
        anchored = cell(baseline, tonight)
        result = compare_night([CellNight(anchored.baseline, tonight, state)]).cells[0]
        state = result.evidence
        success = _success(result.results)
        assert success.q is not None and success.q > 0.05  # no night alone is significant
        # After a flag the metric's evidence starts over (the alarm was raised); a decline
        # that goes on raises it again from the nights since.
        assert success.evidence_nights == night - (flags[-1] if flags else 0)
        if success.fails_night:
            flags.append(night)
            assert success.flagged_by == "evidence"
            assert success.verdict == "regression"
            assert success.evidence is not None and success.evidence_threshold is not None
            assert success.evidence >= success.evidence_threshold
    assert flags and flags[0] <= 10, flags  # night 11 while the evidence took the padded drift
    assert state is not None and state.nights == len(PASSES)


def test_a_rolling_baseline_absorbs_the_same_decline(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    window: list[list[RunRecord]] = [runs(20, passed=18, start=20 * i) for i in range(10)]
    state: EvidenceState | None = None
    for night, passes in enumerate(PASSES, start=1):
        tonight = runs(20, passed=passes)
        rolling = cell(window, tonight, anchor=f"rolled-{night}")  # accepted anew every night
        result = compare_night([CellNight(rolling.baseline, tonight, state)]).cells[0]
        state = result.evidence
        assert state.nights == 1  # a new anchor resets the evidence
        assert not any(r.fails_night for r in result.results)
        window = [*window[1:], tonight]
