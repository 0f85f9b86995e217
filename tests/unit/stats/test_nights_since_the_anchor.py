"""The nights compared since the anchor teach tonight's test how much nights differ.

Five baseline nights say little about the night-to-night variance tau^2; every night
compared since adds a consecutive pair to its estimate (the history keeps the sums).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalrunner.stats import CellNight, EvidenceState, compare_night, fit_references
from evalrunner.stats._evidence_state import EVIDENCE_FORMAT_VERSION

from .conftest import RunsMaker

STEADY = (17, 17, 17, 17, 17)  # anchor nights that happen to agree: tau^2 looks like 0


def _season(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    baseline: Sequence[int],
    passes: Sequence[int],
    anchor: str = "a1",
) -> EvidenceState | None:
    nights = [runs(20, passed=p) for p in baseline]
    state = None
    for p in passes:
        tonight = runs(20, passed=p)
        night = cell(nights, tonight, anchor=anchor)
        state = compare_night([CellNight(night.baseline, tonight, state)]).cells[0].evidence
    return state


def _success(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    baseline: Sequence[int],
    passed: int,
    state: EvidenceState | None,
) -> tuple[str, float, float]:
    night = cell([runs(20, passed=p) for p in baseline], runs(20, passed=passed))
    result = next(
        r
        for r in compare_night([CellNight(night.baseline, night.tonight, state)]).results
        if r.metric == "success_rate"
    )
    assert result.p is not None and result.night_share is not None
    return result.verdict, result.p, result.night_share


def test_a_drifting_season_teaches_the_test_what_its_anchor_could_not(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    swinging = _season(runs, cell, STEADY, [20, 13, 19, 14, 20, 12] * 5)
    verdict, p_alone, share_alone = _success(runs, cell, STEADY, 10, None)
    assert verdict == "regression"
    verdict, p_taught, share_taught = _success(runs, cell, STEADY, 10, swinging)
    assert verdict != "regression"
    assert share_taught > 5 * share_alone and p_taught > 10 * p_alone


def test_a_quiet_season_leaves_the_band_its_anchor_set(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Tonight's test is looked at every night of a season: narrowing its band whenever the
    nights since happen to agree more than the anchor's would make it cry wolf."""
    spread = (19, 15, 18, 16, 17)  # anchor nights that differ a little
    quiet = _season(runs, cell, spread, [17] * 40)
    assert quiet is not None and quiet.metrics["success_rate"].pair_excess < 0
    assert _success(runs, cell, spread, 13, quiet) == _success(runs, cell, spread, 13, None)


def test_a_quiet_season_narrows_the_evidences_night_effect_not_tonights(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """The evidence since the anchor has one bound for the whole season, so it may take the
    night effect the nights since show: a quiet season brings it down from what the
    anchor's nights happened to show, and a persistent change is found sooner (a 0.9 -> 0.8
    drop on a 5 x 20 anchor: 39.5 -> 43 % of sequences by night 7, 52.5 -> 61 % by night 20;
    docs/calibration.md). Tonight's test, looked at every night, keeps the anchor's band."""
    spread = (20, 13, 19, 12, 17)  # anchor nights that differ by more than their noise
    quiet = _season(runs, cell, spread, [17] * 40)
    assert quiet is not None
    baseline = cell([runs(20, passed=p) for p in spread], runs(20, passed=17)).baseline
    alone = fit_references([baseline])[baseline.key].metrics["success_rate"]
    taught = fit_references([baseline], {baseline.key: quiet})[baseline.key].metrics["success_rate"]
    assert taught.icc == alone.icc  # tonight's test: the anchor's band
    assert alone.for_evidence().icc > 0
    assert taught.for_evidence().icc < alone.for_evidence().icc / 2


def test_a_season_against_another_anchor_teaches_nothing(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    other = _season(runs, cell, STEADY, [20, 13, 19, 14, 20, 12] * 5, anchor="a0")
    assert _success(runs, cell, STEADY, 11, other) == _success(runs, cell, STEADY, 11, None)


def test_a_step_change_enters_one_pair_not_every_night_after(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Consecutive differences: a persistent change (what the evidence is there to find)
    must not pass for night-to-night noise and widen the band that would catch it."""
    step = _season(runs, cell, STEADY, [17] * 10 + [9] * 10)
    # Drifting nights, none far enough to fail (a pair into or out of a failed night is
    # a change point's, and stays out: test_evidence.py).
    swinging = _season(runs, cell, STEADY, [20, 14, 19, 14, 20, 15] * 3 + [20, 14])
    assert step is not None and swinging is not None
    assert swinging.metrics["success_rate"].pairs == 19
    tau2_step = step.metrics["success_rate"].pair_excess / step.metrics["success_rate"].pairs
    tau2_swing = (
        swinging.metrics["success_rate"].pair_excess / swinging.metrics["success_rate"].pairs
    )
    # 19 pairs but the one into the first failed night: the change point.
    assert step.metrics["success_rate"].pairs == 18
    assert tau2_swing > 0.01 and tau2_step < tau2_swing / 10


def test_a_version_1_state_reads_as_one_without_pairs(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    old = EvidenceState.model_validate(
        {
            "format_version": 1,
            "anchor": "a1",
            "nights": 3,
            "metrics": {
                "success_rate": {
                    "nights": 3,
                    "weight": 900.0,
                    "weighted_sum": 810.0,
                    "e_value": 2.0,
                }
            },
        }
    )
    assert old.metrics["success_rate"].pairs == 0
    assert _success(runs, cell, STEADY, 15, old) == _success(runs, cell, STEADY, 15, None)
    tonight = runs(20, passed=15)
    night = cell([runs(20, passed=p) for p in STEADY], tonight)
    after = compare_night([CellNight(night.baseline, tonight, old)]).cells[0].evidence
    assert after.format_version == EVIDENCE_FORMAT_VERSION == 4
    assert after.metrics["success_rate"].nights == 4 and after.metrics["success_rate"].pairs == 0


def test_nights_at_another_rate_than_the_anchor_are_not_taken_for_drift(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """A persistent drop from an anchor that always passed: nights since at about 0.7 differ
    by their binomial noise alone. Each pair's noise is the nights' own: taken from the
    anchor (0 at a success rate of 1.0), the noise passed for night-to-night drift, widened
    the band until the drop could not be flagged (a review: 30 points for 8 nights, the
    night share at its cap of 0.5, "nothing flagged" every night)."""
    nights = [runs(10, passed=10, start=10 * i) for i in range(3)]
    state = None
    for i, passed in enumerate([7, 6, 8, 7, 5, 8, 7, 6, 9, 7, 6, 8]):
        tonight = runs(10, passed=passed, start=100 + 10 * i)
        night = cell(nights, tonight)
        # As nights that tonight's test cannot fail: a suite of many cells at a strict bar.
        compared = compare_night([CellNight(night.baseline, tonight, state)])
        state = compared.cells[0].evidence
        state = state.model_copy(
            update={
                "metrics": {
                    k: v.model_copy(update={"last_failed": False}) for k, v in state.metrics.items()
                }
            }
        )
    assert state is not None
    success = state.metrics["success_rate"]
    drift = success.pair_excess / success.pairs  # an unbiased estimate of tau^2
    noise = success.pair_noise / success.pairs
    assert 0.015 < noise < 0.03  # a night of 10 at about 0.7: 0.7 x 0.3 / 10 = 0.021
    assert abs(drift) < 0.01, (drift, noise)  # before: 0.02, all of it the nights' noise
