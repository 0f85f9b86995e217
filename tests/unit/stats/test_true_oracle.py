"""The true oracle of docs/calibration.md (tests/support/true_oracle.py): it holds its size
at the engine's bar, and no engine row beats it (issue 52)."""

from __future__ import annotations

import math
import os
import sys

import pytest
from true_oracle import ORACLE_STATISTICS, Law, critical, statistic, true_oracle

from evalrunner.stats._formulas import wilson

BAR = 0.05 / 25
"""A lone change's bar in a 5 x 1 night: fdr_q over 5 cells x 5 gating metrics."""


def _within(size: float, bar: float, draws: int) -> bool:
    """At most the bar, up to four simulation standard errors (of the quantile and of the
    fresh draws that measure it)."""
    return size <= bar + 4 * math.sqrt(2 * bar * (1 - bar) / draws)


@pytest.mark.parametrize("law", ["quiet", "drift", "logit"])
@pytest.mark.parametrize("metric", ORACLE_STATISTICS)
def test_the_oracle_holds_its_size_at_a_lax_bar(metric: str, law: str) -> None:
    oracle = true_oracle(metric, Law(law), Law(law), (5, 20), 20, 0.05, draws=20_000, seed=3)
    assert _within(oracle.size, 0.05, 20_000)
    # Not far below it either where the statistic is nearly continuous.
    if metric in ("success_rate", "step_count"):
        assert oracle.size >= 0.04


def test_the_oracle_holds_its_size_at_the_engine_bar() -> None:
    oracle = true_oracle(
        "success_rate", Law("logit"), Law("logit"), (5, 20), 60, BAR, draws=200_000
    )
    assert _within(oracle.size, BAR, 200_000)
    assert oracle.size >= BAR / 2


def test_the_statistic_is_signed_so_that_harm_is_large() -> None:
    """A drop in success and a rise in steps both move the statistic up."""
    drop = statistic("success_rate", Law("quiet"), Law("quiet", p_pass=0.6), (5, 20), 60, 2000, 1)
    rise = statistic("step_count", Law("quiet"), Law("quiet", steps=8.0), (5, 20), 60, 2000, 1)
    assert drop.mean() == pytest.approx(0.3, abs=0.01)
    assert rise.mean() == pytest.approx(3.0, abs=0.1)


def test_the_critical_value_widens_with_the_night_law() -> None:
    quiet = critical("success_rate", Law("quiet"), (5, 20), 60, 0.01, 20_000, 0)
    logit = critical("success_rate", Law("logit"), (5, 20), 60, 0.01, 20_000, 0)
    assert logit > quiet


def test_the_engine_told_tau2_does_not_beat_the_oracle() -> None:
    """Quiet endpoint, success 0.9 -> 0.6 in a 5 x 1 night, 5 x 20 anchor: the engine told
    tau^2 = 0 (escalation, the power table's row) on 16 fixed nights flags no more than
    the true oracle with the cap of runs, up to its Wilson interval."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
    import calibrate_stats as cs  # type: ignore[import-not-found]

    tasks = [
        cs.NightTask(seed, cs.Suite(5, 1), cs.CHANGES[0], cs.QUIET, (5, 20), (cs.TOLD_QUIET,))
        for seed in range(16)
    ]
    nights = [cs.one_night(t)[cs.TOLD_QUIET.name] for t in tasks]
    hits = sum("success_rate" in x.changed_metrics for x in nights)
    oracle = true_oracle(
        "success_rate", Law("quiet"), Law("quiet", p_pass=0.6), (5, 20), 3 * cs.N, BAR
    )
    low, _ = wilson(hits, len(nights))
    assert oracle.power >= low
    assert oracle.power > 0.95


@pytest.mark.parametrize("endpoint", ["drift", "logit"])
def test_the_oracle_law_is_the_generators(endpoint: str) -> None:
    """The oracle's vectorised nights move rates, path shares and steps as the calibration's
    generator (``Profile.night``) does: the same means and spreads on 4,000 nights."""
    import numpy as np
    from true_oracle import _path, _rates, _steps

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
    import calibrate_stats as cs  # type: ignore[import-not-found]

    rng = np.random.default_rng(5)
    drift = cs.LOGIT if endpoint == "logit" else cs.UNIFORM
    nights = [cs.Profile().night(rng, drift) for _ in range(4000)]
    passed, skip = _rates(Law(endpoint), rng, 4000)
    step_sd = {"logit": 0.1, "drift": 0.05}[endpoint]
    pairs = (
        ([p.p_pass for p in nights], passed),
        ([p.p_skip for p in nights], skip),
        ([p.steps for p in nights], 5 * np.exp(rng.normal(0, step_sd, 4000))),
        ([p.shares[0] for p in nights], rng.beta(140, 60, 4000)),
    )
    for theirs, ours in pairs:
        assert np.mean(ours) == pytest.approx(np.mean(theirs), rel=0.02)
        assert np.std(ours) == pytest.approx(np.std(theirs), rel=0.08)
    # The path and step draws are the ones the statistic uses.
    assert _path(Law(endpoint), rng, 10, 20)[0].shape == (10,)
    assert _steps(Law(endpoint), rng, 10, 20)[0].shape == (10,)
