"""Rates (success, crash, skip, usual answer, usual first tool, tool used): exact beta-binomial.

Tonight's rate is, when nothing changed, one more night drawn around the
baseline's rate: a Beta distribution with the baseline's (smoothed) rate as mean
and variance tau^2 (tonight's night effect) + var(baseline rate). Tonight's count
is then beta-binomial, and its tail is summed exactly: no resampling floor, so a
night where 20 runs of 20 fail against a 0.9 baseline gets p ~ 1e-12, not 1/2001.
"""

from __future__ import annotations

import numpy as np

from evalrunner.stats._formulas import (
    FloatArray,
    betabinom_pmf,
    newcombe_arrays,
    newcombe_diff,
    wilson,
)
from evalrunner.stats._measured import Measured
from evalrunner.stats._reference import MetricReference

MIN_SHAPE = 0.5
"""Neither Beta parameter goes below Jeffreys' 1/2: for a rare event (no crash in 100 runs) an
assumed between-night share would otherwise pile the predictive rate up near 0 and 1 at once,
making 5 crashes in 20 runs look ordinary. Where nights really differ, rho is estimated and the
floor rarely binds (it binds only for rates within ~1/(2 concentration) of 0 or 1)."""
_GRID = 24


def concentration(rate: float | FloatArray, var: float | FloatArray) -> FloatArray:
    """a + b of a Beta with mean ``rate`` and variance ``var``, shapes floored at MIN_SHAPE."""
    rate = np.clip(rate, 1e-9, 1 - 1e-9)
    raw = rate * (1 - rate) / np.maximum(var, 1e-300) - 1.0
    out: FloatArray = np.maximum(raw, MIN_SHAPE / np.minimum(rate, 1 - rate))
    return out


def predictive(ref: MetricReference) -> tuple[float, float]:
    """Beta(a, b) of tonight's rate when nothing changed."""
    conc = float(concentration(ref.mean, ref.night_var + ref.base_var))
    return conc * ref.mean, conc * (1 - ref.mean)


def effective_baseline(ref: MetricReference) -> tuple[float, float]:
    """(k, n) of an unclustered sample as precise as the clustered baseline."""
    n_eff = max(ref.run_var / ref.base_var, 1.0)
    return ref.estimate * n_eff, n_eff


def measure(ref: MetricReference, values: FloatArray, level: float) -> Measured:
    n, k = values.size, int(round(values.sum()))
    pmf = betabinom_pmf(n, *predictive(ref))
    k_b, n_b = effective_baseline(ref)
    diff, low, high = newcombe_diff(k, n, k_b, n_b, level)
    return Measured(
        n=n,
        x=k / n,
        p_lower=min(1.0, float(pmf[: k + 1].sum())),
        p_higher=min(1.0, float(pmf[k:].sum())),
        p_min_lower=float(pmf[0]),
        p_min_higher=float(pmf[-1]),
        effect=diff,
        effect_ci=(low, high),
        baseline_estimate=ref.estimate,
        baseline_ci=wilson(k_b, n_b, level),
        night_estimate=k / n,
        night_ci=wilson(k, n, level),
        test=f"beta-binomial exact, nights as clusters (rho {ref.icc:.3f})",
    )


def mde(ref: MetricReference, n: int, bar: float, margin: float, level: float, side: int) -> float | None:
    """Smallest drop (side -1) or rise (+1) in the rate flagged with probability 0.8 at n runs.

    Exact: a night count is flagged when its beta-binomial tail is <= ``bar`` and its
    interval still reaches the margin (the verdict's two conditions); the chance of that
    is summed over tonight's count, whose rate varies around the shifted rate by the
    night effect. None when no count of n runs would be flagged.
    """
    null = betabinom_pmf(n, *predictive(ref))
    k = np.arange(n + 1, dtype=float)
    k_b, n_b = effective_baseline(ref)
    low, high = newcombe_arrays(k, n, k_b, n_b, level)
    if side < 0:
        flagged = (np.cumsum(null) <= bar) & (low <= -margin)
    else:
        flagged = (np.cumsum(null[::-1])[::-1] <= bar) & (high >= margin)
    if not flagged.any():
        return None
    end = ref.estimate if side < 0 else 1.0 - ref.estimate

    def power(shifts: FloatArray) -> FloatArray:
        rows = _shifted_pmf(n, ref.estimate + side * shifts, ref.icc)
        out: FloatArray = (rows * flagged[None, :]).sum(axis=1)
        return out

    # A coarse grid, then a fine one inside the bracket where the power crosses 0.8.
    coarse = np.linspace(0.0, end, _GRID)
    hits = np.nonzero(power(coarse) >= 0.8)[0]
    if not hits.size:
        return None
    i = int(hits[0])
    if i == 0:
        return 0.0
    fine = np.linspace(coarse[i - 1], coarse[i], _GRID)
    values = power(fine)
    j = max(1, int(np.argmax(values >= 0.8)))
    frac = (0.8 - values[j - 1]) / max(values[j] - values[j - 1], 1e-12)
    return float(fine[j - 1] + min(max(frac, 0.0), 1.0) * (fine[j] - fine[j - 1]))


def _shifted_pmf(n: int, rates: FloatArray, icc: float) -> FloatArray:
    """Rows of P(count) for nights whose true rate is ``rates`` give or take the night effect."""
    from scipy import special

    k = np.arange(n + 1, dtype=float)[None, :]
    p = np.clip(rates, 1e-9, 1 - 1e-9)[:, None]
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    if icc <= 0:
        log = log_choose + k * np.log(p) + (n - k) * np.log1p(-p)
    else:
        conc = concentration(p, icc * p * (1 - p))
        a, b = conc * p, conc * (1 - p)
        log = log_choose + special.betaln(k + a, n - k + b) - special.betaln(a, b)
    out: FloatArray = np.exp(log)
    return out
