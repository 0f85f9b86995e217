"""The exact chance that the step-count test flags a nearly constant count (1 step, now and
then 2) when nothing changed: every baseline and every night enumerated, not sampled.

Shared by ``tests/unit/stats/test_counts.py`` (which asserts it stays under the bar) and
``benchmarks/calibrate_stats.py --only tails`` (which prints it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from evalrunner.stats import CellBaseline, CellNight, MetricResult, compare_night
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord

KEY = CellKey("s", "m")


def twos(k: int, runs: int, start: int = 0) -> list[RunRecord]:
    """``runs`` passed runs of 1 step, ``k`` of them with 2."""
    return [
        RunRecord(
            run_id=f"s/m/{start + i}",
            suite="t",
            scenario="s",
            model="m",
            index=start + i,
            outcome="passed",
            step_count=2 if i < k else 1,
            llm_calls=2 if i < k else 1,
        )
        for i in range(runs)
    ]


def steps_result(
    nights: Sequence[Sequence[RunRecord]], tonight: Sequence[RunRecord]
) -> MetricResult:
    """The step_count result of one cell's night, as ``evalrunner run`` computes it."""
    night = CellNight(CellBaseline(KEY, Tolerance(), nights, "a1"), tonight)
    return next(r for r in compare_night([night]).results if r.metric == "step_count")


def night_law(rate: float, drift_sd: float, runs: int) -> np.ndarray:
    """P(k runs of 2 steps in a night of ``runs``), the rate logit-normal across nights."""
    if drift_sd == 0:
        return np.asarray(stats.binom.pmf(np.arange(runs + 1), runs, rate))
    x, w = np.polynomial.hermite_e.hermegauss(40)
    rates = special.expit(special.logit(rate) + drift_sd * x)
    return np.array(
        [(w * stats.binom.pmf(k, runs, rates)).sum() / w.sum() for k in range(runs + 1)]
    )


def false_alarm_chances(
    rate: float, drift_sd: float, bars: Sequence[float], runs: int, nights: int
) -> list[float]:
    """P(p <= bar) for each bar: every baseline (per-night counts of 2s, order aside) and
    every night, weighted by their chance when nothing changed."""
    law = night_law(rate, drift_sd, runs)
    totals = [0.0] * len(bars)
    for per_night in itertools.combinations_with_replacement(range(runs + 1), nights):
        orders = math.factorial(nights) / math.prod(
            math.factorial(per_night.count(k)) for k in set(per_night)
        )
        weight = orders * math.prod(law[k] for k in per_night)
        baseline = [twos(k, runs, start=runs * j) for j, k in enumerate(per_night)]
        for k in range(runs + 1):
            p = steps_result(baseline, twos(k, runs, start=1000)).p
            for i, bar in enumerate(bars):
                totals[i] += weight * law[k] * (p is not None and p <= bar)
    return totals
