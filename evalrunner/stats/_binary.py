"""Rates (success, crash, skip, usual answer, usual first tool, tool used): exact tails.

When nothing changed, tonight's rate is the baseline's rate plus tonight's night
effect. The baseline's rate is uncertain as a Beta (its Jeffreys posterior, with
the clustered baseline's effective number of runs), the night effect shifts it by
a normal amount of variance tau^2 (an endpoint's drift moves a rate by so much,
not by a share of what is left to 1: a Beta for the night effect would give a
0.9 rate a long tail down to 0.6 and hide exactly the drops we look for).
Tonight's count is binomial at that rate; its distribution is the mixture,
integrated by Gauss-Hermite quadrature over both (in the Beta's normal-score
space, so its tails are represented), and its tail is summed exactly: no
resampling floor, so a night where 20 runs of 20 fail against a 0.9 baseline
gets p ~ 1e-12, not 1/2001.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

from evalrunner.stats._formulas import (
    FloatArray,
    hermite,
    newcombe_arrays,
    newcombe_diff,
    wilson,
)
from evalrunner.stats._measured import Measured, Moments, Reference, mid_z

_NODES = 12
"""Gauss-Hermite nodes per dimension (baseline rate, night effect)."""
_GRID = 24
_EPS = 1e-9


def effective_baseline(ref: Reference) -> tuple[float, float]:
    """(k, n) of an unclustered sample as precise as the clustered baseline."""
    n_eff = max(ref.run_var / ref.base_var, 1.0)
    return ref.estimate * n_eff, n_eff


@functools.lru_cache(maxsize=512)
def _log_choose(n: int) -> tuple[FloatArray, FloatArray]:
    k = np.arange(n + 1, dtype=float)
    return k, special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _binomial_rows(n: int, rates: FloatArray) -> FloatArray:
    """P(Y = 0..n) for Y ~ Binomial(n, rate), one row per rate."""
    k, log_choose = _log_choose(n)
    p = np.clip(rates, _EPS, 1 - _EPS)[:, None]
    out: FloatArray = np.exp(log_choose + k * np.log(p) + (n - k) * np.log1p(-p))
    return out


def _night_shifts(icc: float, rate: float | FloatArray) -> tuple[FloatArray, FloatArray]:
    """Night effects (normal, sd tau) as quadrature nodes and weights; tau^2 = rho p (1 - p)."""
    nodes, weights = hermite(_NODES)
    tau = np.sqrt(icc * np.asarray(rate) * (1 - np.asarray(rate)))
    return np.multiply.outer(tau, nodes), weights


def predictive_pmf(ref: Reference, n: int) -> FloatArray:
    """P(tonight's count = 0..n) when nothing changed."""
    k_b, n_b = effective_baseline(ref)
    nodes, weights = hermite(_NODES)
    base = special.betaincinv(k_b + 0.5, n_b - k_b + 0.5, special.ndtr(nodes))
    shifts, shift_w = _night_shifts(ref.icc, ref.mean)
    rates = (base[:, None] + shifts[None, :]).ravel()
    w = np.multiply.outer(weights, shift_w).ravel()
    pmf: FloatArray = (w[:, None] * _binomial_rows(n, rates)).sum(axis=0)
    out: FloatArray = pmf / pmf.sum()
    return out


def moments(values: FloatArray) -> Moments:
    """The null mean (a smoothed rate) and its run variance."""
    n = values.size
    mean = (float(values.sum()) + 0.5) / (n + 1)
    return Moments(mean, mean * (1 - mean), np.zeros(0))


def measure(ref: Reference, values: FloatArray, level: float) -> Measured:
    n_runs, passed = values.size, int(values.sum() + 0.5)
    # Runs paired by dataset row count as the exchangeable runs they are worth.
    n = ref.effective_runs(n_runs)
    k = round(passed * n / n_runs)
    pmf = predictive_pmf(ref, n)
    k_b, n_b = effective_baseline(ref)
    diff, low, high = newcombe_diff(k, n, k_b, n_b, level)
    mid = float(pmf[:k].sum() + pmf[k] / 2)
    paired = f", rows paired ({n_runs} runs worth {n})" if n != n_runs else ""
    return Measured(
        n=n_runs,
        z=mid_z(mid),
        p_lower=min(1.0, float(pmf[: k + 1].sum())),
        p_higher=min(1.0, float(pmf[k:].sum())),
        p_min_lower=float(pmf[0]),
        p_min_higher=float(pmf[-1]),
        effect=diff,
        effect_ci=(low, high),
        baseline_estimate=ref.estimate,
        baseline_ci=wilson(k_b, n_b, level),
        night_estimate=passed / n_runs,
        night_ci=wilson(passed, n_runs, level),
        test=f"binomial exact, baseline and night effect integrated (rho {ref.icc:.3f}){paired}",
    )


def mde(ref: Reference, n: int, bar: float, margin: float, level: float, side: int) -> float | None:
    """Smallest drop (side -1) or rise (+1) in the rate flagged with probability 0.8 at n runs.

    Exact: a night count is flagged when its predictive tail is <= ``bar`` and its
    interval still reaches the margin (the verdict's two conditions); the chance of that
    is summed over tonight's count, whose rate varies around the shifted rate by the
    night effect. None when no count of n runs would be flagged.
    """
    n = ref.effective_runs(n)
    null = predictive_pmf(ref, n)
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
    shifts, weights = _night_shifts(icc, rates)
    rows = _binomial_rows(n, (rates[:, None] + shifts).ravel()).reshape(rates.size, -1, n + 1)
    out: FloatArray = (rows * weights[None, :, None]).sum(axis=1)
    return out
