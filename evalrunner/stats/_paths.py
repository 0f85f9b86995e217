"""Tool paths: atypicality against the baseline, exact Dirichlet-multinomial.

Each valid run scores 0 on the baseline's usual tool path, 1 on another path the
baseline took, 2 on a path it never took. The harm is runs leaving the baseline's
behaviour (the mean score rising); a night where every run takes the usual path
scores 0 and is not a regression. When nothing changed, tonight's counts of the
three groups are Dirichlet-multinomial around the baseline's (smoothed) shares,
spread by the night effect and the baseline's uncertainty, and the tail of the
score is summed exactly over every split of tonight's runs into the groups.
"""

from __future__ import annotations

import math

import numpy as np

from evalrunner.stats._formulas import FloatArray, dirmult3_pmf, normal_sf
from evalrunner.stats._measured import Measured, Moments, Reference, mid_z, normal_interval
from evalrunner.suite._metrics import sequence_label

EXACT_MAX_N = 300
"""Above this many runs the exact sum (n^2 / 2 splits) gives way to the normal tail."""


def moments(values: FloatArray) -> Moments:
    """The smoothed shares of the usual, another known and a new path, and the mean
    atypicality and its run variance they give."""
    n = values.size
    usual, other = float((values == 0).sum()), float((values == 1).sum())
    total = n + 1.5
    shares = ((usual + 0.5) / total, (other + 0.5) / total, 0.5 / total)
    mean = shares[1] + 2 * shares[2]
    return Moments(mean, shares[1] + 4 * shares[2] - mean**2, np.zeros(0), shares)


def measure(ref: Reference, values: FloatArray, level: float) -> Measured:
    n = values.size
    counts = [int((values == g).sum()) for g in (0, 1, 2)]
    score = counts[1] + 2 * counts[2]
    x = score / n
    var = ref.night_var + ref.base_var
    if n <= EXACT_MAX_N:
        concentration = max(ref.run_var / var - 1.0, 0.1)
        alpha = tuple(concentration * s for s in ref.shares)
        comps, pmf = dirmult3_pmf(n, (alpha[0], alpha[1], alpha[2]))
        scores = comps[:, 1] + 2 * comps[:, 2]
        p_higher = float(pmf[scores >= score].sum())
        p_lower = float(pmf[scores <= score].sum())
        p_min = float(pmf[scores == 2 * n].sum())
        z = mid_z(float(pmf[scores < score].sum() + pmf[scores == score].sum() / 2))
        test = "atypicality, Dirichlet-multinomial exact"
    else:
        z = (x - ref.mean) / math.sqrt(ref.null_var(n))
        p_higher, p_lower, p_min = normal_sf(z), normal_sf(-z), 0.0
        test = "atypicality, normal tail"
    own = float(values.var(ddof=1)) / n if n > 1 else 0.0
    within = max(ref.within_var(n), own)
    low, high = normal_interval(x - ref.estimate, within + ref.base_var, level)
    usual = sequence_label(ref.coding.usual) if isinstance(ref.coding.usual, tuple) else "-"
    base_shares = [float((np.concatenate(ref.nights) == g).mean()) for g in (0, 1)]
    night_shares = [c / n for c in counts]
    return Measured(
        n=n,
        z=z,
        p_lower=min(1.0, p_lower),
        p_higher=min(1.0, p_higher),
        p_min_lower=None,
        p_min_higher=p_min,
        effect=x - ref.estimate,
        effect_ci=(low, high),
        baseline_estimate=ref.estimate,
        baseline_ci=normal_interval(ref.estimate, ref.base_var, level),
        night_estimate=x,
        night_ci=normal_interval(x, own, level),
        test=f"{test}, nights as clusters (rho {ref.icc:.3f})",
        note=(
            f"atypicality: 0 = the usual path ({usual}), 1 = another known path, 2 = a new path; "
            f"usual {base_shares[0]:.0%} -> {night_shares[0]:.0%}, "
            f"other known {base_shares[1]:.0%} -> {night_shares[1]:.0%}, "
            f"new 0% -> {night_shares[2]:.0%}"
        ),
    )
