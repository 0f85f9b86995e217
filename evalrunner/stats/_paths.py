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
from collections.abc import Callable

import numpy as np

from evalrunner.stats._formulas import (
    BoolArray,
    FloatArray,
    IntArray,
    compositions3,
    dirmult3_logpmf,
    dirmult3_pmf,
    hermite,
    normal_sf,
    z_upper,
)
from evalrunner.stats._measured import (
    POWER,
    Measured,
    Moments,
    Reference,
    mid_z,
    normal_interval,
    normal_mde,
)
from evalrunner.suite._metrics import sequence_label

EXACT_MAX_N = 300
"""Above this many runs the exact sum (n^2 / 2 splits) gives way to the normal tail."""
_BASE_NODES = 5
"""Gauss-Hermite nodes over the baseline's usual share in :func:`mde`."""
_NO_NIGHT = 1e6
"""The Dirichlet total standing for no night effect: tonight's variance within n / 1e6 of
a multinomial's (3e-4 at 300 runs)."""


def moments(values: FloatArray) -> Moments:
    """The smoothed shares of the usual, another known and a new path, and the mean
    atypicality and its run variance they give."""
    n = values.size
    usual, other = float((values == 0).sum()), float((values == 1).sum())
    total = n + 1.5
    shares = ((usual + 0.5) / total, (other + 0.5) / total, 0.5 / total)
    mean = shares[1] + 2 * shares[2]
    return Moments(mean, shares[1] + 4 * shares[2] - mean**2, np.zeros(0), shares)


def _concentration(ref: Reference) -> float:
    """The Dirichlet's total: how tightly a night's shares sit around the baseline's, given
    the night effect and the baseline's own uncertainty."""
    return max(ref.run_var / (ref.night_var + ref.base_var) - 1.0, 0.1)


def _null(ref: Reference, n: int) -> tuple[IntArray, FloatArray]:
    """Tonight's compositions (usual, other known, new) of ``n`` runs and their chances
    when nothing changed."""
    c = _concentration(ref)
    return dirmult3_pmf(n, (c * ref.shares[0], c * ref.shares[1], c * ref.shares[2]))


def mde(ref: Reference, n: int, bar: float, margin: float, level: float, side: int) -> float | None:
    """Smallest rise in mean atypicality flagged with probability 0.8 at ``n`` runs.

    Exact, as tonight's test is: a night's score is flagged where its Dirichlet-multinomial
    tail is <= ``bar`` and its interval still reaches the margin; the change moves runs
    from the usual path to another known one. Tonight's shares spread around the changed
    ones by the night effect alone (a Dirichlet), and the usual share the change starts
    from is the baseline's give or take its own error (:func:`_starts`). Inside the
    Dirichlet, as the null has it, the baseline's part of the spread shrank as runs left the
    usual path, while a real baseline's error stays put: stated MDEs held 74.5-78.9 % power
    at each baseline's own MDE, not 80 % (docs/calibration.md, "Reported MDE"). The normal
    model's MDE (which ignores how heavy the exact tail is) read 0.515 where a simulated
    80 % took 0.587 (issue 52). Above :data:`EXACT_MAX_N` runs, and for a fall (paths only rise), the normal model.
    """
    if side < 0 or n > EXACT_MAX_N:
        return normal_mde(ref, n, bar, margin, level)
    comps, null = _null(ref, n)
    scores = comps[:, 1] + 2 * comps[:, 2]
    # A composition's tail is P(S >= its score), shared by every composition of that score.
    _, which = np.unique(scores, return_inverse=True)
    tail = np.cumsum(np.bincount(which, weights=null)[::-1])[::-1][which]
    se = math.sqrt(ref.within_var(n) + ref.base_var)
    reaches = scores / n - ref.estimate + z_upper((1 - level) / 2) * se >= margin
    flagged = (tail <= bar) & reaches
    if not flagged.any():
        return None
    starts, weights = _starts(ref)
    power = _power_of(ref, n, flagged, starts, weights)
    low, high = 0.0, float(starts.max()) - 1e-6  # every run of the night off the usual path
    if power(high) < POWER:
        return None
    for _ in range(14):  # power rises with the shift: bisect to 1e-4 of the range
        mid = (low + high) / 2
        low, high = (mid, high) if power(mid) < POWER else (low, mid)
    return high


def _starts(ref: Reference) -> tuple[FloatArray, FloatArray]:
    """The usual share a change starts from, as quadrature nodes and weights: the baseline's
    estimate give or take its own uncertainty (``base_var``), a Beta of the usual path's
    part of the known paths with that mean and variance, read at Gauss-Hermite normal
    scores (as the rates' baseline is, :func:`evalrunner.stats._binary.predictive_pmf`).
    A Beta, not a normal: near a share of 1 the estimate's error is lopsided, and a
    normal cut at the bound moved the mean (0.004-0.025 low where the usual path took
    nearly every run)."""
    from scipy import special

    usual, other, _ = ref.shares
    known = usual + other
    share, spread = usual / known, ref.base_var / known**2
    total = share * (1 - share) / spread - 1 if spread > 0 else 0.0
    if total <= 0:
        return np.array([usual]), np.array([1.0])
    nodes, weights = hermite(_BASE_NODES)
    beta = special.betaincinv(share * total, (1 - share) * total, special.ndtr(nodes))
    starts: FloatArray = known * np.clip(beta, 1e-6, 1 - 1e-6)
    return starts, weights


def _power_of(
    ref: Reference, n: int, flagged: BoolArray, starts: FloatArray, weights: FloatArray
) -> Callable[[float], float]:
    """The chance that a night of ``n`` runs lands in ``flagged``, as a function of the
    share of runs moved from the usual path to another known one, averaged over the
    usual share it starts from (``starts``, ``weights``: :func:`_starts`)."""
    c = _concentration_tonight(ref)
    known, new = ref.shares[0] + ref.shares[1], ref.shares[2]
    comps = compositions3(n)[flagged]  # the flagged nights' terms alone: exact, not renormalised

    def power(shift: float) -> float:
        total = 0.0
        for start, weight in zip(starts, weights, strict=True):
            moved = min(shift, start - 1e-6)
            alpha = (c * (start - moved), c * (known - start + moved), c * new)
            total += weight * float(np.exp(dirmult3_logpmf(comps, alpha)).sum())
        return min(total, 1.0)

    return power


def _concentration_tonight(ref: Reference) -> float:
    """The Dirichlet's total for tonight's night effect alone (the baseline's uncertainty
    is integrated apart); capped where the night effect is nil, a multinomial in effect."""
    return min(max(ref.run_var / max(ref.night_var, 1e-12) - 1.0, 0.1), _NO_NIGHT)


def measure(ref: Reference, values: FloatArray, level: float) -> Measured:
    n = values.size
    counts = [int((values == g).sum()) for g in (0, 1, 2)]
    score = counts[1] + 2 * counts[2]
    x = score / n
    if n <= EXACT_MAX_N:
        comps, pmf = _null(ref, n)
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
