"""The night variance a suite's cells share: pooled on the scale where one endpoint's
night is one size for every cell (issue 52, item 2)."""

from __future__ import annotations

import numpy as np

from evalrunner.stats import CellBaseline, CellNight, compare_night, fit_references, plan
from evalrunner.stats._formulas import placements
from evalrunner.stats._observe import Runs
from evalrunner.stats._pool import pool_tau2
from evalrunner.stats._reference import PRIOR_ICC, _fit_alone
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey

from .conftest import make_runs


def _logit_nights(rng: np.random.Generator, rate: float, nights: int, runs: int) -> list[int]:
    """Passes per night when every night moves the rate by N(0, 0.4) on the logit scale."""
    logit = np.log(rate / (1 - rate)) + rng.normal(0, 0.4, nights)
    return [int(rng.binomial(runs, 1 / (1 + np.exp(-x)))) for x in logit]


def test_a_night_moves_a_high_rate_less_than_a_middling_one() -> None:
    """Cells at 0.6 and 0.95 on the same drifting endpoint: the pooled night variance
    given to each is in proportion to (p (1 - p))^2, so the 0.95 cell is not handed the
    middling cells' raw swing (which made its test four times too wide)."""
    rng = np.random.default_rng(7)
    rates = {"a": 0.95, "b": 0.6, "c": 0.6, "d": 0.65, "e": 0.55, "f": 0.6, "g": 0.5, "h": 0.7}
    cells = [
        CellBaseline(
            CellKey(s, "m"),
            Tolerance(),
            [make_runs(40, passed=k, scenario=s) for k in _logit_nights(rng, rate, 12, 40)],
            "a1",
        )
        for s, rate in rates.items()
    ]
    refs = fit_references(cells)
    high, middling = (refs[CellKey(s, "m")].metrics["success_rate"] for s in ("a", "b"))
    ratio = high.night_var / middling.night_var
    expected = (high.run_var / middling.run_var) ** 2
    assert abs(ratio / expected - 1) < 0.35  # the padding adds a little to each
    assert ratio < 0.4 * high.run_var / middling.run_var  # not the same share of each


def test_cells_that_really_drift_differently_keep_part_of_their_own_estimate() -> None:
    """Two quiet cells and two wild ones: the pool sees a spread beyond sampling error."""
    rng = np.random.default_rng(5)
    wild = [(20, 6, 19, 8, 20, 5), (7, 20, 6, 19, 18, 5)]
    quiet = [tuple(int(x) for x in rng.binomial(20, 0.6, 6)) for _ in range(2)]
    cells = {
        f"c{i}": [make_runs(20, passed=k, scenario=f"c{i}") for k in passes]
        for i, passes in enumerate([*wild, *quiet])
    }
    fitted = [_fit_alone([Runs.of(n) for n in nights])["success_rate"] for nights in cells.values()]
    pool = pool_tau2(fitted)
    assert pool is not None and pool.spread > 0


def test_a_count_s_night_share_is_what_tonight_s_placements_vary_by() -> None:
    """Steps scaled by exp(N(0, 0.15)) a night: five anchor nights' estimate of the night
    share, averaged over many anchors, matches the share tonight's mean placement among
    the anchor's counts really varies by (here 0.065 against 0.068; the ANOVA of
    placements among every night it replaced read 0.061 on the same anchors, also within
    this test's bound: the test guards the estimate's accuracy, not the change)."""
    rng = np.random.default_rng(11)
    estimates, deviations, run_vars = [], [], []
    for _ in range(150):
        nights = [_counts(rng, 20) for _ in range(5)]
        tonight = _counts(rng, 20)
        ref = _fit_alone([Runs.of(make_runs(20, steps=list(v))) for v in nights])["step_count"]
        assert ref.own_icc is not None
        estimates.append(ref.own_icc[0])
        deviations.append(float(placements(tonight.astype(float), ref.sorted_base).mean()) - 0.5)
        run_vars.append(ref.run_var)
    run_var = float(np.mean(run_vars))
    # Tonight's mean placement: run_var [(1 - rho) (1/20 + 1/100) + rho (1 + 1/5)].
    noise = 1 / 20 + 1 / 100
    implied = (float(np.var(deviations)) / run_var - noise) / (1 + 1 / 5 - noise)
    assert implied > 0.03  # the law has a night effect worth estimating
    assert abs(float(np.mean(estimates)) / implied - 1) < 0.35


def _counts(rng: np.random.Generator, n: int) -> np.ndarray:
    mean = 6 * float(np.exp(rng.normal(0, 0.15)))
    return rng.negative_binomial(8, 8 / (8 + mean), n) + 1


def test_nights_of_one_run_each_fit_without_a_division_by_zero() -> None:
    """A baseline of 1-run nights (``--runs 1`` accepted night after night): a night's
    mean is its one run, so the left-out estimate of a count's night share has nothing to
    divide by. The example suite's committed baselines crashed `evalrunner run` here."""
    nights = [Runs.of(make_runs(1, steps=[s], start=i)) for i, s in enumerate((3, 4, 5, 3))]
    fitted = _fit_alone(nights)["step_count"]
    assert fitted.own_icc is None or np.isfinite(fitted.own_icc[0])
    two = [Runs.of(make_runs(1, steps=[3])), Runs.of(make_runs(2, steps=[4, 5], start=1))]
    assert np.isfinite(_fit_alone(two)["step_count"].run_var)


def test_a_rate_no_night_saw_move_takes_the_night_variance_of_the_model_s_other_rates() -> None:
    """No run of any cell crashed, so nothing estimates how far a night moves the crash
    rate. It used the fixed prior share of 0.05, a night sd of 0.067 at a rate of 0.1,
    and `plan` said no runs and no baseline of up to 30 nights could see it rise to 0.1.
    The success rate's pool is the same endpoint's night on the same logit scale."""
    rng = np.random.default_rng(3)
    cells = [
        CellBaseline(
            CellKey(s, "m"),
            Tolerance(),
            [make_runs(15, passed=k, scenario=s) for k in _logit_nights(rng, 0.8, 3, 15)],
            "a1",
        )
        for s in "abcde"
    ]
    ref = fit_references(cells)[CellKey("a", "m")]
    crash, success = ref.metrics["crash_rate"], ref.metrics["success_rate"]
    assert crash.icc < PRIOR_ICC / 5
    # On the common scale the two rates' night variances are the kind's law apart (both
    # padded by the same standard errors of the one pooled estimate).
    ratio = (crash.night_var / success.night_var) / (crash.run_var / success.run_var) ** 2
    assert 0.5 < ratio < 2
    # 15 runs a night (the budget) cannot see 0.1, but more runs on a longer baseline can.
    assert "crash_rate" not in plan(cells[:1], 5).cells[0].beyond
    # Tonight 4 of 15 runs crash: with the prior's night sd the p was 0.0057, past the bar.
    tonight = CellNight(cells[0], make_runs(15, crashed=4, scenario="a"))
    others = [CellNight(c, make_runs(15, passed=12, scenario=c.key.scenario)) for c in cells[1:]]
    [crashed] = [
        r
        for r in compare_night([tonight, *others]).results
        if r.metric == "crash_rate" and r.scenario == "a"
    ]
    assert crashed.verdict == "regression" and crashed.fails_night
