"""Counts (steps, LLM calls, tool calls): Mann-Whitney with nights as clusters.

Each run tonight is placed among the baseline's counts (share below it plus half
the share tied with it); the mean placement is 0.5 when nothing changed and
Cliff's delta is 2 * (mean placement - 0.5). Its variance is the tie-corrected
Mann-Whitney variance with the night terms of :mod:`evalrunner.stats._reference`
added. Ranks make the test indifferent to the count's distribution
(over-dispersed or not).

Two places where the normal tail of that score is wrong, and what is used there:

- **Small nights, skewed placements.** A nearly constant count (1 step, now and
  then 2) places its runs at two values, and a mean of a few such placements is
  skewed like a rare binomial: the normal tail was up to 14 times too small at
  N = 3. For N <= :data:`EXACT_UP_TO` the tail is computed exactly: tonight's
  runs as draws from the baseline's counts under a Dirichlet predictive (the
  baseline's counts, plus half a run beyond each end, so a value the baseline
  never showed is possible but not presumed), convolved with the normal night
  terms.
- **Every run moved.** Placements are bounded, so with a large night share the
  rank score cannot get past the night term however far the counts moved (5 ->
  15 steps could not be flagged in a 50 x 3 suite at a night share of 0.2). When
  Cliff's delta is past :data:`SATURATED` and the baseline's counts spread
  (:data:`SPREAD`), a location test on log counts with the same night share is
  taken beside it (the smaller p, Bonferroni-doubled).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from evalrunner.stats._formulas import FloatArray, normal_sf, placements, tie_factor
from evalrunner.stats._measured import Measured, Moments, Reference, normal_interval

EXACT_UP_TO = 20
"""Nights of at most this many runs get the exact tail (above it the normal one holds)."""
SATURATED = 0.8
"""Cliff's delta from which the rank score is near its bound and the log test joins it."""
SPREAD = 0.5
"""...and only where the baseline's counts spread: its ties leave at least this share of the
rank variance. A nearly constant count is a rare event on a log scale, its mean far from normal."""
_CELLS = 2000
"""Grid points for the sum of a night's placements: each placement is rounded to
1/(_CELLS // N), at most 0.005 off at N = 20 (tonight's and the baseline's alike)."""
_BEYOND = 0.5
"""Runs' worth of predictive weight on a count below / above all the baseline's."""


def moments(values: FloatArray) -> Moments:
    """Placements: a null mean of 0.5, the tie-corrected rank variance, the sorted baseline."""
    n = values.size
    ordered = np.sort(values)
    # A baseline of identical counts would make any change infinitely significant:
    # floor at the rank variance one differing run would leave.
    var = max(tie_factor(ordered), 3.0 / (n + 1)) / 12.0 if n else 1 / 12
    return Moments(0.5, var, ordered)


def measure(ref: Reference, values: FloatArray, level: float) -> Measured:
    n, base = values.size, ref.sorted_base
    placed = placements(values, base)
    x = float(placed.mean())
    # Tie correction over both samples, as Mann-Whitney's (permutation) variance has it.
    var_run = max(tie_factor(np.concatenate([base, values])), 3.0 / (base.size + n + 1)) / 12.0
    rho, share = ref.icc, ref.within_share
    base_part = var_run * ((1 - rho) * share / base.size + rho * ref.size_sq)
    null = var_run * (1 - rho) * share / n + rho * var_run + base_part
    z = (x - 0.5) / math.sqrt(null)
    p_lower, p_higher, test = normal_sf(-z), normal_sf(z), "normal tail"
    if share < 1:
        test += f", rows paired (share {share:.2f})"
    elif n <= EXACT_UP_TO:  # the exact tail draws runs as exchangeable: unpaired only
        night_sd = math.sqrt(rho * var_run * (1 + ref.size_sq))
        p_lower, p_higher = _exact_tails(base, placed, night_sd)
        test = "exact tail"
    effect = 2 * (x - 0.5)
    if abs(effect) >= SATURATED and tie_factor(base) >= SPREAD:
        log_lower, log_higher = _log_location(ref, values)
        p_lower = min(p_lower, 2 * log_lower)
        p_higher = min(p_higher, 2 * log_higher)
        test += " and a t on log counts (ranks near their bound)"
    within = var_run * (1 - rho) * share / n + base_part
    low, high = normal_interval(effect, 4 * within, level)
    night_mean, base_mean = float(values.mean()), ref.estimate
    night_var = float(values.var(ddof=1)) / n if n > 1 else 0.0
    base_var = _mean_var(ref)
    return Measured(
        n=n,
        z=z,
        p_lower=min(1.0, p_lower),
        p_higher=min(1.0, p_higher),
        effect=effect,
        effect_ci=(max(-1.0, low), min(1.0, high)),
        baseline_estimate=base_mean,
        baseline_ci=normal_interval(base_mean, base_var, level),
        night_estimate=night_mean,
        night_ci=normal_interval(night_mean, night_var, level),
        mean_diff=night_mean - base_mean,
        mean_diff_ci=normal_interval(night_mean - base_mean, night_var + base_var, level),
        test=f"Mann-Whitney, nights as clusters (rho {rho:.3f}), {test}",
    )


def _exact_tails(base: FloatArray, placed: FloatArray, night_sd: float) -> tuple[float, float]:
    """P(mean placement <= tonight's), P(>= tonight's) under the predictive, night terms added."""
    n = placed.size
    distinct, counts = np.unique(base, return_counts=True)
    # Each category: its placement on the grid and its predictive weight.
    grid = _CELLS // n
    steps = np.rint(placements(distinct, base) * grid).astype(int)
    steps = np.concatenate([[0], steps, [grid]])
    weights = np.concatenate([[_BEYOND], counts.astype(float), [_BEYOND]])
    pmf = _sum_pmf(tuple(steps.tolist()), tuple(weights.tolist()), n, grid)
    observed = int(np.rint(placed * grid).sum())
    sums = np.arange(pmf.size)
    if night_sd > 0:
        scale = night_sd * n * grid
        higher = float((pmf * special.ndtr((sums - observed + 0.5) / scale)).sum())
        lower = float((pmf * special.ndtr((observed - sums + 0.5) / scale)).sum())
    else:
        higher, lower = float(pmf[observed:].sum()), float(pmf[: observed + 1].sum())
    return min(1.0, lower), min(1.0, higher)


@functools.lru_cache(maxsize=512)
def _sum_pmf(steps: tuple[int, ...], weights: tuple[float, ...], n: int, grid: int) -> FloatArray:
    """The distribution of the sum of ``n`` placements drawn by a Dirichlet-multinomial.

    Its probability factorises over categories: n! Gamma(A) / Gamma(n + A) times, per
    category, Gamma(c + a) / (Gamma(a) c!) for c draws; so the joint law of (draws, sum)
    is built one category at a time and the row of n draws is read off. It depends on the
    baseline and N only, so it is cached: the night's looks and its comparison ask for the
    same one (read-only, as the cache shares it).
    """
    size = n * grid + 1
    table = np.zeros((n + 1, size))
    table[0, 0] = 1.0
    c = np.arange(n + 1)
    for step, a in zip(steps, weights, strict=True):
        factor = np.exp(special.gammaln(c + a) - special.gammaln(a) - special.gammaln(c + 1))
        grown = np.zeros_like(table)
        for draws in range(n + 1):
            shift = draws * step
            grown[draws:, shift:] += factor[draws] * table[: n + 1 - draws, : size - shift]
        table = grown
    total = sum(weights)
    scale = math.exp(special.gammaln(n + 1) + special.gammaln(total) - special.gammaln(n + total))
    row: FloatArray = table[n] * scale
    row.flags.writeable = False
    return row


def _log_location(ref: Reference, values: FloatArray) -> tuple[float, float]:
    """One-sided p values of tonight's mean log count against the baseline's, nights as clusters."""
    base = np.log1p(ref.sorted_base)
    tonight = np.log1p(values)
    n, m, rho = tonight.size, base.size, ref.icc
    # A constant baseline would make any move infinitely significant: floor the run
    # variance at what one run one count higher would leave.
    bumped = base.copy()
    bumped[-1] = math.log1p(ref.sorted_base[-1] + 1)
    floor = float(bumped.var(ddof=1)) if m > 1 else 1.0
    own = float(tonight.var(ddof=1)) if n > 1 else 0.0
    var = max(float(base.var(ddof=1)) if m > 1 else 0.0, own, floor)
    null = var * ((1 - rho) / n + rho + (1 - rho) / m + rho * ref.size_sq)
    z = (float(tonight.mean()) - float(base.mean())) / math.sqrt(null)
    return normal_sf(-z), normal_sf(z)


def _mean_var(ref: Reference) -> float:
    """Variance of the baseline's mean count, its nights as clusters."""
    values = ref.sorted_base
    if values.size < 2:
        return 0.0
    var = float(values.var(ddof=1))
    return var * ((1 - ref.icc) / values.size + ref.icc * ref.size_sq)
