"""Published formulas and exact distributions, pure and vectorised.

Everything here is closed form (no resampling), so p values can be as small as
the data make them: a night of 50 scenarios x 3 models has ~750 gating tests and
Benjamini-Hochberg needs p <= q/750 for a lone change.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


# ---------------------------------------------------------------------------
# Normal distribution


@functools.lru_cache(maxsize=4096)
def z_upper(p: float) -> float:
    """The standard normal quantile with ``p`` above it (z_upper(0.05) = 1.645)."""
    from scipy import special  # 26 MB: not for the report, which reads this module's neighbours

    return float(-special.ndtri(min(max(p, 1e-300), 1.0)))


@functools.lru_cache(maxsize=8)
def hermite(count: int) -> tuple[FloatArray, FloatArray]:
    """Probabilists' Gauss-Hermite nodes and weights (weights sum to 1): E f(Z) for a
    standard normal Z is sum(weights * f(nodes))."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(count)
    return nodes, weights / weights.sum()


def normal_sf(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    from scipy import special

    return float(special.ndtr(-z))


# ---------------------------------------------------------------------------
# Rates


def wilson(k: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (no continuity correction).

    ``k`` and ``n`` may be effective (non-integer) counts, as for a baseline whose
    nights are clusters: n_eff = p(1 - p) / var(p-hat).
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"wilson needs 0 <= k <= n and n > 0, got k={k}, n={n}")
    z = z_upper((1 - confidence) / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k <= 0 else min(max(centre - half, 0.0), 1.0)
    high = 1.0 if k >= n else min(max(centre + half, 0.0), 1.0)
    return low, high


def wilson_arrays(k: FloatArray, n: float, confidence: float) -> tuple[FloatArray, FloatArray]:
    """Wilson intervals for every count in ``k`` out of the same ``n``."""
    z = z_upper((1 - confidence) / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(np.clip(p * (1 - p), 0, None) / n + z * z / (4 * n * n)) / denom
    low = np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return low, high


def newcombe_diff(
    k1: float, n1: float, k2: float, n2: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Difference p1 - p2 with Newcombe's hybrid score interval (his method 10).

    Returns ``(difference, low, high)``; built from the two Wilson intervals.
    """
    if n1 <= 0 or not 0 <= k1 <= n1:
        raise ValueError(f"newcombe_diff needs 0 <= k1 <= n1 and n1 > 0, got k1={k1}, n1={n1}")
    low, high = newcombe_arrays(np.array([float(k1)]), n1, k2, n2, confidence)
    return k1 / n1 - k2 / n2, float(low[0]), float(high[0])


def newcombe_arrays(
    k1: FloatArray, n1: float, k2: float, n2: float, confidence: float
) -> tuple[FloatArray, FloatArray]:
    """Newcombe's (low, high) for every night count in ``k1`` against one baseline."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_arrays(k1, n1, confidence)
    l2, u2 = wilson(k2, n2, confidence)
    diff = p1 - p2
    low = diff - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = diff + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)


# ---------------------------------------------------------------------------
# Categories: the exact Dirichlet-multinomial over three groups


@functools.lru_cache(maxsize=512)
def compositions3(n: int) -> IntArray:
    """Every (c0, c1, c2) with c0 + c1 + c2 = n, one per row (c0 ascending, then c1);
    read-only, as it is cached."""
    first = np.repeat(np.arange(n + 1), np.arange(n + 1, 0, -1))
    second = np.arange(first.size) - np.repeat(
        np.cumsum(np.arange(n + 1, 0, -1)) - np.arange(n + 1, 0, -1), np.arange(n + 1, 0, -1)
    )
    out: IntArray = np.stack([first, second, n - first - second], axis=1).astype(np.intp)
    out.flags.writeable = False
    return out


def dirmult3_pmf(n: int, alpha: tuple[float, float, float]) -> tuple[IntArray, FloatArray]:
    """The Dirichlet-multinomial(n, alpha) over three groups: (compositions, probabilities)."""
    comps = compositions3(n)
    log = dirmult3_logpmf(comps, alpha)
    pmf: FloatArray = np.exp(log - log.max())
    return comps, pmf / pmf.sum()


def dirmult3_logpmf(comps: IntArray, alpha: tuple[float, float, float]) -> FloatArray:
    """log P(composition) of the Dirichlet-multinomial(alpha) for the rows of ``comps`` (all of
    one total n), exact: a tail over a few compositions needs only those. Each group's terms
    are looked up from the n + 1 values a count can take, not evaluated row by row."""
    from scipy import special

    al = np.asarray(alpha, dtype=float)
    n = int(comps[0].sum()) if len(comps) else 0
    k = np.arange(n + 1, dtype=float)
    log_fact = special.gammaln(k + 1)
    out: FloatArray = np.full(
        len(comps),
        special.gammaln(n + 1) + special.gammaln(al.sum()) - special.gammaln(n + al.sum()),
    )
    for j in range(3):
        out += (special.gammaln(k + al[j]) - special.gammaln(al[j]) - log_fact)[comps[:, j]]
    return out


# ---------------------------------------------------------------------------
# Counts


def cliffs_delta(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Cliff's delta P(X > Y) - P(X < Y) over all pairs (= 2U/(n_x n_y) - 1)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.size == 0 or ys.size == 0:
        raise ValueError("cliffs_delta needs two non-empty samples")
    return float(2 * placements(xs, np.sort(ys)).mean() - 1)


def placements(x: FloatArray, sorted_base: FloatArray) -> FloatArray:
    """Where each x falls in the baseline: share below it plus half the share tied with it."""
    below = np.searchsorted(sorted_base, x, side="left")
    upto = np.searchsorted(sorted_base, x, side="right")
    out: FloatArray = (below + upto) / (2.0 * sorted_base.size)
    return out


def tie_factor(values: FloatArray) -> float:
    """1 - sum(t^3 - t) / (N^3 - N) over groups of tied values: the share of rank variance ties leave."""
    n = values.size
    if n < 2:
        return 0.0
    _, counts = np.unique(values, return_counts=True)
    t = counts.astype(float)
    return float(1.0 - (t**3 - t).sum() / (n**3 - n))


# ---------------------------------------------------------------------------
# Nights as clusters


def icc(groups: Sequence[FloatArray]) -> tuple[float, int] | None:
    """ANOVA estimate of the intraclass correlation of per-run values grouped by night.

    Returns (rho, k - 1) with rho unclipped (it may be negative by chance), or None
    when it is undefined (fewer than two nights, or no spread at all).
    The share of a run's variance that is shared by its night: between-night
    variance tau^2 = rho * sigma^2.
    """
    used = [g for g in groups if g.size]
    k = len(used)
    sizes = np.array([g.size for g in used], dtype=float)
    total = float(sizes.sum())
    if k < 2 or total - k < 1:
        return None
    values = np.concatenate(used)
    labels = np.repeat(np.arange(k), sizes.astype(np.intp))
    means = np.bincount(labels, values, minlength=k) / sizes
    grand = float(values.mean())
    msb = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    msw = float(((values - means[labels]) ** 2).sum() / (total - k))
    n0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    denom = msb + (n0 - 1) * msw
    if denom <= 1e-15:
        return None
    return (msb - msw) / denom, k - 1


# ---------------------------------------------------------------------------
# Many tests a night


def bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p values (q values), in the order given."""
    m = len(pvalues)
    if not m:
        return []
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return [float(v) for v in out]


# ---------------------------------------------------------------------------
# pass^k / pass@k and answers


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: chance that k tries drawn from the n runs (c passed) all pass, C(c,k)/C(n,k)."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k: chance that at least one of k tries passes (Chen et al.'s unbiased estimator)."""
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def normalize_answer(answer: object) -> str | None:
    """Final answer for matching: whitespace collapsed, stripped, casefolded; None stays None."""
    if not isinstance(answer, str):
        return None
    return " ".join(answer.split()).casefold()


# ---------------------------------------------------------------------------
# Two proportions, exactly


@functools.lru_cache(maxsize=4096)
def two_proportions_p(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """Two-sided p that two binomial samples share one rate: Boschloo's exact test.

    Uniformly more powerful than Fisher's exact test, which conditions on both margins
    and so holds its level with room to spare at the small counts the sentinel and the
    divergence point test (0.9 -> 0.6 at 20 calls against 60 runs: 81.7 % against 78.9 %,
    by exact enumeration in tests/unit/stats/test_formulas.py).
    """
    from scipy.stats import boschloo_exact

    if n_a == 0 or n_b == 0 or (hits_a + hits_b) in (0, n_a + n_b):
        return 1.0  # nothing varies: no evidence either way
    table = [[hits_a, n_a - hits_a], [hits_b, n_b - hits_b]]
    p = float(boschloo_exact(table, alternative="two-sided", n=32).pvalue)
    return min(1.0, p) if math.isfinite(p) else 1.0
