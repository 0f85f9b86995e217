"""Counts (steps, LLM calls, tool calls): Mann-Whitney with nights as clusters.

Each run tonight is placed among the baseline's counts (share below it plus half
the share tied with it); the mean placement is 0.5 when nothing changed and
Cliff's delta is 2 * (mean placement - 0.5). Its variance is the tie-corrected
Mann-Whitney variance with the night terms of :mod:`evalrunner.stats._reference`
added, and the tail is the normal one: a sum of 20+ bounded placements has
lighter tails than the normal, so the p value errs on the safe side. Ranks make
the test indifferent to the count's distribution (over-dispersed or not).
"""

from __future__ import annotations

import math

import numpy as np

from evalrunner.stats._formulas import FloatArray, normal_sf, placements, tie_factor
from evalrunner.stats._measured import Measured, normal_interval
from evalrunner.stats._reference import MetricReference


def measure(ref: MetricReference, values: FloatArray, level: float) -> Measured:
    n, base = values.size, ref.sorted_base
    placed = placements(values, base)
    x = float(placed.mean())
    # Tie correction over both samples, as Mann-Whitney's (permutation) variance has it.
    var_run = max(tie_factor(np.concatenate([base, values])), 3.0 / (base.size + n + 1)) / 12.0
    rho = ref.icc
    base_part = var_run * ((1 - rho) / base.size + rho * ref.size_sq)
    null = var_run * (1 - rho) / n + rho * var_run + base_part
    z = (x - 0.5) / math.sqrt(null)
    within = var_run * (1 - rho) / n + base_part
    low, high = normal_interval(2 * (x - 0.5), 4 * within, level)
    night_mean, base_mean = float(values.mean()), ref.estimate
    night_var = float(values.var(ddof=1)) / n if n > 1 else 0.0
    base_var = _mean_var(ref)
    return Measured(
        n=n,
        z=z,
        p_lower=normal_sf(-z),
        p_higher=normal_sf(z),
        effect=2 * (x - 0.5),
        effect_ci=(max(-1.0, low), min(1.0, high)),
        baseline_estimate=base_mean,
        baseline_ci=normal_interval(base_mean, base_var, level),
        night_estimate=night_mean,
        night_ci=normal_interval(night_mean, night_var, level),
        mean_diff=night_mean - base_mean,
        mean_diff_ci=normal_interval(night_mean - base_mean, night_var + base_var, level),
        test=f"Mann-Whitney, nights as clusters (rho {rho:.3f}), normal tail",
    )


def _mean_var(ref: MetricReference) -> float:
    """Variance of the baseline's mean count, its nights as clusters."""
    values = ref.sorted_base
    if values.size < 2:
        return 0.0
    var = float(values.var(ddof=1))
    return var * ((1 - ref.icc) / values.size + ref.icc * ref.size_sq)
