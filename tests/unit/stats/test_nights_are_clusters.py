"""Tonight is compared with the baseline's nights, not with a pool of exchangeable runs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from evalrunner.stats import CellNight, compare_night
from evalrunner.stats._reference import integrated_tau2
from evalrunner.suite import Tolerance

from .conftest import RunsMaker


def _success_of(night: CellNight) -> tuple[str, float | None, float | None]:
    result = next(r for r in compare_night([night]).results if r.metric == "success_rate")
    return result.verdict, result.p, result.night_share


def test_a_night_as_low_as_the_baseline_s_own_low_nights_is_not_flagged(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    tonight = runs(20, passed=10)
    steady = [runs(20, passed=17) for _ in range(6)]  # 0.85 every night
    drifting = [runs(20, passed=p) for p in (20, 20, 10, 20, 20, 12)]  # also 0.85 pooled
    verdict, p_steady, share_steady = _success_of(cell(steady, tonight))
    assert verdict == "regression" and p_steady is not None and p_steady < 0.005
    verdict, p_drifting, share_drifting = _success_of(cell(drifting, tonight))
    assert verdict != "regression" and p_drifting is not None and p_drifting > 0.01
    # Identical nights: no drift, save 0.35 standard errors of that estimate.
    assert share_steady is not None and share_steady < 0.02
    assert share_drifting is not None and share_drifting > 0.2


def test_a_cell_borrows_the_suite_s_night_to_night_spread(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    steady = cell([runs(20, passed=17) for _ in range(4)], runs(20, passed=17), scenario="a")
    others = [
        cell(
            [runs(20, passed=p, scenario=s) for p in (20, 12, 19, 13)],
            runs(20, scenario=s),
            scenario=s,
        )
        for s in ("b", "c", "d")
    ]
    night = compare_night([steady, *others])
    share = next(
        r.night_share for r in night.results if r.scenario == "a" and r.metric == "success_rate"
    )
    assert share is not None and share > 0.05  # its own 4 nights say 0; the suite says otherwise


def test_an_escalated_night_is_judged_with_the_suite_s_drift_not_an_anchor_that_agreed_by_chance(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Scenario a's anchor nights happen to agree (17-18 of 20) while the suite's other
    cells swing from 0.65 to 1.0 a night, far beyond what 20 runs' sampling noise
    explains. Escalated to 60 runs, tonight's 39 passes (0.65) sit within the night effect
    the suite shows (moved to a's rate on the logit scale), not the one a's own anchor
    saw by chance: inconclusive, not a regression."""
    swings = {
        "b": (20, 13, 19, 14, 18),
        "c": (14, 20, 13, 19, 15),
        "d": (19, 14, 20, 13, 17),
        "e": (13, 19, 15, 20, 18),
    }
    nights = [
        cell(
            [runs(20, passed=p, scenario="a") for p in (17, 17, 18, 17, 18)],
            runs(60, passed=39, scenario="a"),
            scenario="a",
        ),
        *(
            cell(
                [runs(20, passed=p, scenario=s) for p in passes],
                runs(20, passed=17, scenario=s),
                scenario=s,
            )
            for s, passes in swings.items()
        ),
    ]
    found = next(
        r for r in compare_night(nights).results if r.scenario == "a" and r.metric == "success_rate"
    )
    assert found.verdict == "inconclusive" and found.p is not None and found.bar is not None
    assert found.p > found.bar


def test_a_young_baseline_is_compared_but_does_not_gate(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    night = compare_night([cell([runs(10, passed=9)], runs(20, passed=2))])
    only = night.cells[0]
    assert not only.gating
    assert only.notes == [
        "s [m]: baseline too young to gate (1 night of 10 runs; 3 needed): compared and reported, "
        "not gating; accept 2 more nights into it"
    ]
    success = next(r for r in only.results if r.metric == "success_rate")
    assert success.verdict == "regression" and not success.gating and not success.fails_night
    assert night.failures == []
    # A suite can ask for fewer nights.
    relaxed = compare_night(
        [cell([runs(10, passed=9)], runs(20, passed=2), tolerance=Tolerance(min_baseline_nights=1))]
    )
    assert relaxed.cells[0].gating and relaxed.failures


def test_infra_errors_are_excluded_and_counted(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, passed=17, infra=2) for _ in range(3)]
    result = next(
        r
        for r in compare_night([cell(nights, runs(20, passed=15, infra=3))]).results
        if r.metric == "success_rate"
    )
    assert (result.baseline_n, result.baseline_infra) == (54, 6)
    assert (result.night_n, result.night_attempted, result.night_infra) == (17, 20, 3)
    assert result.night_estimate == 15 / 17


def test_no_valid_runs_tonight_says_so(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    nights = [runs(20, passed=17) for _ in range(3)]
    found = {r.metric: r for r in compare_night([cell(nights, runs(5, skipped=5))]).results}
    assert found["skip_rate"].verdict in ("regression", "inconclusive")
    assert found["step_count"].note == "no valid runs tonight"
    assert found["step_count"].p is None and found["step_count"].verdict == "inconclusive"


def test_integrating_tau2_s_uncertainty_matches_the_mixture_s_tail_at_the_bar() -> None:
    """The calibration's alternative to padding (``TAU2_ERRORS = None``): the tau^2 whose
    normal tail at the bar equals the tail averaged over tau^2's uncertainty, checked
    against the mixture drawn at random (the oracle: tau^2 drawn, then a difference)."""
    rng = np.random.default_rng(7)
    fixed, slope, bar = 0.006, 1.2, 0.002
    for tau2, var in ((0.0045, 0.0027**2), (0.0, 0.0067**2), (-0.002, 0.003**2)):
        used = integrated_tau2(tau2, var, fixed, slope, bar)
        drawn = np.maximum(rng.normal(tau2, math.sqrt(var), 2_000_000), 0.0)
        diffs = rng.normal(0.0, np.sqrt(fixed + slope * drawn))
        cut = stats.norm.isf(bar / 2) * math.sqrt(fixed + slope * used)
        tail = float((np.abs(diffs) > cut).mean())
        assert abs(tail - bar) < 0.15 * bar, (tau2, tail)
        # More than the estimate itself (the mixture's tail is fatter than any one normal's).
        assert used > max(tau2, 0.0) + 0.1 * math.sqrt(var)
    # Known exactly: nothing to integrate.
    assert integrated_tau2(0.004, 0.0, fixed, slope, bar) == 0.004
