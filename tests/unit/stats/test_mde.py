"""MDE and runs needed are computed at the level the verdict uses (BH bar and the margin rule)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from path_fit import PathFit
from scipy import integrate
from scipy import stats as sps

from evalrunner.stats import CellNight, CellReference, compare_night, fit_references
from evalrunner.stats._binary import effective_baseline, predictive_pmf
from evalrunner.stats._formulas import newcombe_arrays, z_upper
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._observe import Coding
from evalrunner.stats._paths import _null as paths_null
from evalrunner.stats._paths import mde as paths_mde
from evalrunner.stats._power import mde, runs_needed
from evalrunner.suite._record import CellKey

from .conftest import RunsMaker

PROMPT = (900, 1100, 1000, 950, 1050, 1200, 800, 1000, 1020, 980)


def _reference(runs: RunsMaker, cell: Callable[..., CellNight]) -> CellReference:
    nights = [runs(20, passed=18, prompt=PROMPT, start=20 * i) for i in range(5)]
    return fit_references([cell(nights, []).baseline])[CellKey("s", "m")]


def test_a_rate_s_mde_has_power_0_8_by_direct_summation(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell).reference(Coding("success_rate"))
    n, bar, margin, level = 20, 0.002, 0.1, 0.9
    found = mde(ref, n, bar, margin, level)
    assert found is not None
    # Flagged tonight: the predictive lower tail <= bar and Newcombe's interval reaching -margin.
    k = np.arange(n + 1, dtype=float)
    k_b, n_b = effective_baseline(ref)
    low, _ = newcombe_arrays(k, n, k_b, n_b, level)
    flagged = (np.cumsum(predictive_pmf(ref, n)) <= bar) & (low <= -margin)
    # Tonight's rate: the shifted rate give or take a normal night effect of sd tau.
    rate = ref.estimate - found
    tau = math.sqrt(ref.icc * rate * (1 - rate))

    def chance(count: int) -> float:
        def at(u: float) -> float:
            p = min(max(rate + u, 1e-9), 1 - 1e-9)
            return float(sps.binom.pmf(count, n, p) * sps.norm.pdf(u, scale=tau))

        return float(integrate.quad(at, -8 * tau, 8 * tau, limit=200)[0])

    power = sum(chance(int(c)) for c in k[flagged])
    assert power == pytest.approx(0.8, abs=0.01)


def test_a_continuous_mde_is_the_normal_formula(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell).reference(Coding("prompt_tokens"))
    n, bar, margin, level = 20, 0.001, 1.25, 0.9
    spread = math.sqrt(ref.null_var(n))
    se = math.sqrt(ref.within_var(n) + ref.base_var)
    threshold = max(z_upper(bar) * spread, math.log(margin) - z_upper(0.05) * se)
    assert mde(ref, n, bar, margin, level) == pytest.approx(
        math.exp(threshold + z_upper(0.2) * spread)
    )


def test_runs_needed_is_where_the_mde_reaches_the_margin(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell).reference(Coding("prompt_tokens"))
    needed = runs_needed(ref, 0.001, 1.25, 0.9)
    assert needed is not None
    assert mde(ref, needed, 0.001, 1.25, 0.9) <= 1.25 < mde(ref, needed - 1, 0.001, 1.25, 0.9)  # type: ignore[operator]


def test_a_margin_the_baseline_cannot_resolve_needs_no_number_of_runs(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # 100 baseline runs at 0.9: the baseline alone is uncertain by +/-0.03, so at the
    # BH bar of a big suite a drop of 0.10 is never seen with 80 % power.
    ref = _reference(runs, cell).reference(Coding("success_rate"))
    assert runs_needed(ref, 0.05 / 750, 0.10, 0.9) is None
    assert runs_needed(ref, 0.05 / 5, 0.25, 0.9) is not None


def test_a_rate_s_normal_mde_never_exceeds_the_room_the_rate_has(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # 3 baseline runs, 2 passing: a drop of 0.67 is all there is, and the normal
    # model's 80 %-power drop at a strict bar is more than that.
    nights = [runs(3, passed=2, start=3 * i) for i in range(3)]
    ref = fit_references([cell(nights, []).baseline])[CellKey("s", "m")]
    success = ref.reference(Coding("success_rate"))
    assert mde(success, 3, 0.0001, 0.1, 0.9, exact=False) is None
    assert mde(success, 3, 0.0001, 0.1, 0.9) is None
    usual = _reference(runs, cell).reference(Coding("success_rate"))
    found = mde(usual, 20, 0.002, 0.1, 0.9, exact=False)
    assert found is not None and 0 < found <= usual.estimate


def test_the_night_reports_the_bar_it_used(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    cells = [
        cell(
            [runs(20, passed=18, scenario=s) for _ in range(3)],
            runs(20, passed=18, scenario=s),
            scenario=s,
        )
        for s in ("a", "b")
    ]
    results = compare_night(cells).results
    gating = [r for r in results if r.gating and r.p is not None]
    assert all(r.bar == pytest.approx(0.05 / len(gating)) for r in gating)
    success = next(r for r in results if r.metric == "success_rate")
    assert success.mde is not None and success.mde > success.margin


def test_a_tool_path_s_mde_is_flagged_80_percent_of_the_time_against_baselines_of_that_truth(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """A quiet endpoint: one scenario takes its usual path 70 % of the time, four others
    50-85 %. Against each of many suites' baselines drawn from it (5 nights x 20 runs a
    scenario), a night of 20 runs whose usual share fell by that baseline's own MDE is
    flagged, by the path test itself, with the chance the MDE promises: 80 % on average
    over the baselines, summed exactly over tonight's runs. With the baseline's uncertainty
    spread into tonight's Dirichlet, as the null has it, the stated MDEs were flagged
    76.9 % of the time here (these 80 suites' baselines); a baseline that read the usual share high leaves the truth's
    changed night less atypical than the estimate says."""
    usual, other = ("search", "read"), ("search",)
    n, bar, margin, level = 20, 0.002, 0.1, 0.9
    rng = np.random.default_rng(7)
    kind = KINDS["categorical"]
    powers = []
    for _ in range(80):
        cells = []
        for i, share in enumerate((0.7, *rng.uniform(0.5, 0.85, 4))):
            nights = []
            for night in range(5):
                tools = [usual if took else other for took in rng.random(20) < share]
                nights.append(runs(20, tools=tools, start=20 * night, scenario=f"s{i}"))
            cells.append(cell(nights, [], scenario=f"s{i}").baseline)
        fitted = fit_references(cells)[CellKey("s0", "m")]
        ref = fitted.reference(next(c for c in fitted.codings() if c.metric == "tool_sequence"))
        found = mde(ref, n, bar, margin, level)
        assert found is not None and 0 < found < 0.7
        power = 0.0
        for away in range(n + 1):  # tonight: `away` runs of n on the other known path
            m = kind.measure(ref, np.repeat([0.0, 1.0], [n - away, away]), level)
            if m.p_higher <= bar and m.effect_ci[1] >= margin:
                power += sps.binom.pmf(away, n, 0.3 + found)
        powers.append(power)
    assert 0.775 <= float(np.mean(powers)) <= 0.86  # 0.787 here


def test_a_tool_path_s_mde_exists_wherever_moving_every_run_would_be_flagged() -> None:
    """A baseline of 3 nights x 20 runs on its usual path half the time, nights moving it by
    a twentieth of its run variance: a night of 60 runs all off that path is flagged, so
    some change has 80 % power. The search once stopped at the estimate's usual share while
    the baseline's uncertainty let the change start above it, and said no MDE at all."""
    fit = PathFit((30.5 / 61.5, 30.5 / 61.5, 0.5 / 61.5), icc=0.05, nights=3, per=20)
    n, bar, margin, level = 60, 0.002, 0.1, 0.9
    comps, null = paths_null(fit, n)  # type: ignore[arg-type]
    every_run_off = comps[:, 1] + 2 * comps[:, 2] >= n
    assert null[every_run_off].sum() <= bar  # the test flags that night (its effect is 0.5)
    found = paths_mde(fit, n, bar, margin, level, 1)  # type: ignore[arg-type]
    assert found is not None and fit.shares[0] - 0.05 < found < 1
