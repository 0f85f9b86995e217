"""Evidence that accumulates across nights against an anchored baseline: a group-sequential test.

Each night adds its mean on the metric's test scale, weighted by the inverse of
its variance around its own night's truth plus the night effect. After t nights
the weighted mean minus the baseline's mean, D_t, has variance 1/W_t + var(baseline
mean), and because every night is compared with the *same* baseline the
z_t = D_t / sd(D_t) of successive nights are correlated: the baseline's own
error b is shared by all of them, so the information is capped at
1 / var(baseline mean) however many nights come (an anchored baseline of 100 runs
cannot resolve a change much smaller than 3 of its standard errors).

The test is the cumulative z since the anchor against one boundary for a whole
season (``season_nights`` nights from the anchor, a constant boundary as Pocock's,
which spends the error evenly over the nights, so a change is found early as well
as late), looked at from the second night of its sums (:data:`FIRST_LOOK`). The
boundary is exact for that correlation structure: the chance that max over the
season's nights of z_t reaches it, with the baseline's error drawn too,
is ``alpha`` (:func:`boundary`, by simulation with a fixed seed, so it is the same
on every machine). The cell's ``season_alpha`` is split evenly over its gating
metrics: the chance of any false alarm by the evidence in one scenario-season is
``season_alpha`` when the night effect is known. Nights are weighed by it as
estimated (the anchor's nights and the nights since), without the padding or the
anchor's floor tonight's test adds (:meth:`MetricReference.for_evidence`); measured
with it estimated, 2-5 % of scenario-seasons (docs/calibration.md). After ``season_nights`` nights the evidence starts a new
season (the night-to-night spread it has learned carries over); a new anchor
starts a new state.

It replaced a normal-mixture e-value against a Bonferroni threshold over every
gating test of the suite (Ville's bound): valid whatever the number of nights, but
so conservative that a persistent 0.9 -> 0.8 on a 5 x 20 anchor was never found by
it (docs/calibration.md, the season table).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalrunner.stats._evidence_state import (
    EVIDENCE_FORMAT_VERSION,
    EvidenceState,
    MetricEvidence,
)
from evalrunner.stats._formulas import FloatArray, z_upper
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._measured import Measured
from evalrunner.stats._reference import MetricReference

FIRST_LOOK = 2
"""The first night of its sums at which the evidence can flag. On the first night the
cumulative z is tonight's own test again, at a season's per-scenario bar instead of the
night's bar across the suite: in a 50-scenario suite that duplicate failed 5-15 % of
nights on which nothing changed (docs/calibration.md). The evidence is for what no
single night shows."""
SEASON_SIMULATIONS = 40_000
"""Null seasons simulated for a boundary: its chance is then known to about +/-5 % of itself."""
_SEED = 20_261_201
_SHARES = np.geomspace(1e-3, 1e2, 41)
"""Baseline-to-night variance ratios the boundary is simulated at (interpolated between)."""


@dataclass(frozen=True)
class Accumulated:
    """One metric's evidence after tonight."""

    z: float
    """The cumulative z since the anchor (harmful side positive for one-sided metrics)."""
    boundary: float
    """The z at which it flags: any false alarm in a season has chance ``alpha``."""
    nights: int
    effect: float
    effect_ci: tuple[float, float]

    @property
    def threshold(self) -> float | None:
        """The boundary once the evidence may flag (:data:`FIRST_LOOK`), else None."""
        return self.boundary if self.nights >= FIRST_LOOK else None


_SPREAD = {"last_mean", "last_var", "pairs", "pair_excess", "pair_noise", "last_failed"}
"""What a restart keeps of a metric's evidence: the night-to-night spread learned so far."""


def restarted(
    state: EvidenceState, metrics: Iterable[str], before: EvidenceState | None = None
) -> EvidenceState:
    """``state`` with these metrics' sums started over: each failed the night, so its alarm
    has been raised (a group-sequential test stops at its first crossing). Carrying the
    sums on would raise the same alarm every night after, even once the agent is fixed;
    started over, a later alarm is new evidence.

    ``before``: the state tonight was added to. A night that failed a metric after one
    that did not is a change point, and so is a night that passed it after one that
    failed (the change was fixed, or was one night's): the pair of nights across either
    measures the change, not the night-to-night drift, and is taken back out of the
    spread (tonight's mean stays the last one, so the next pair starts from the new
    level; a pair of two failed nights is drift within the change, and counts). Left in,
    the pair into a failed night made the band so wide that the same change, every night
    after, passed unflagged; the pair out of it, that a regression found and fixed left
    the metric about half as sensitive until the next baseline.
    """
    kept = dict(state.metrics)
    failed = set(metrics)
    for name in failed & kept.keys():
        spread = kept[name].model_dump(include=_SPREAD)
        if before is not None:
            spread["last_failed"] = True
        kept[name] = MetricEvidence(**spread)
    if before is not None:
        for name, now in kept.items():
            old = before.metrics.get(name)
            if old is not None and old.last_failed != (name in failed) and now.pairs > old.pairs:
                kept[name] = now.model_copy(update=_pairs_of(old))
    return state.model_copy(update={"metrics": kept})


def _pairs_of(evidence: MetricEvidence) -> dict[str, Any]:
    return evidence.model_dump(include={"pairs", "pair_excess", "pair_noise"})


def start(state: EvidenceState | None, anchor: str, season_nights: int) -> EvidenceState:
    """The state to add tonight to: ``state`` if it is for this anchor and its season has
    nights left; a new season (keeping the night-to-night spread) after ``season_nights``;
    a fresh state for a new anchor."""
    if state is None or state.anchor != anchor:
        return EvidenceState(anchor=anchor)
    if state.nights < season_nights:
        return state
    fresh = restarted(state, state.metrics).metrics
    return EvidenceState(anchor=anchor, season=state.season + 1, metrics=fresh)


def add_night(
    state: EvidenceState,
    tonight: Mapping[str, tuple[MetricReference, Measured]],
    level: float,
    means: Mapping[str, tuple[float, float]],
    *,
    alpha: float,
    season_nights: int,
) -> tuple[EvidenceState, dict[str, Accumulated]]:
    """Tonight added to every metric's evidence; metrics not measured tonight carry over.

    ``means``: tonight's mean of each metric on its test scale and its sampling variance
    from tonight's own runs (:meth:`MetricReference.night_mean`), for the night-to-night
    spread (raw, not through the test's tail: that maps tonight through the night effect
    the spread is there to estimate). ``alpha``: each metric's chance of a false alarm in
    a season of ``season_nights`` nights.
    """
    metrics = dict(state.metrics)
    out: dict[str, Accumulated] = {}
    for name, (ref, measured) in tonight.items():
        before = metrics.get(name, MetricEvidence())
        x = night_value(ref, measured, means[name][0])
        # Weighed, and the season's spread taken, with the night effect as estimated: the
        # padding is for tonight's test (MetricReference.for_evidence).
        seen = ref.for_evidence()
        var = seen.within_var(measured.n) + seen.night_var
        weight = before.weight + 1.0 / var
        total = before.weighted_sum + x / var
        diff = total / weight - ref.mean
        spread = 1.0 / weight + seen.base_var
        z = diff / math.sqrt(spread)
        if ref.direction == "lower":
            z = -z
        two_sided = ref.direction == "changed"
        limit = boundary(
            seen.base_var * weight / (before.nights + 1), season_nights, alpha, two_sided
        )
        metrics[name] = MetricEvidence(
            nights=before.nights + 1,
            weight=weight,
            weighted_sum=total,
            z=z,
            boundary=limit,
            **_pair(before, *means[name]),
        )
        kind = KINDS[ref.kind]
        centre = total / weight - (ref.estimate if kind.smoothed else ref.mean)
        half = z_upper((1 - level) / 2) * math.sqrt(spread)
        low, high = kind.clipped(kind.to_effect(centre - half), kind.to_effect(centre + half))
        out[name] = Accumulated(
            z=z,
            boundary=limit,
            nights=before.nights + 1,
            effect=kind.to_effect(centre),
            effect_ci=(low, high),
        )
    update = {"nights": state.nights + 1, "metrics": metrics}
    return state.model_copy(update={**update, "format_version": EVIDENCE_FORMAT_VERSION}), out


RAW_RARER = 5.0
"""A rate's night enters the evidence as its own share where its runs expect at least this
many of the rarer outcome at the baseline's rate (the textbook n p >= 5 for a binomial's
normal approximation)."""


def night_value(ref: MetricReference, measured: Measured, raw: float) -> float:
    """Tonight's mean on the test scale, as the evidence sums it.

    A rate's own share (``raw``) where a normal model fits tonight's runs: a sum over
    nights needs their raw means, and a change then adds its full size every night.
    Through the test's own tail otherwise (ref.mean + z x sd), as every other kind: a rare
    outcome (three crashes in 20 runs against none) weighs what its exact p says, not a
    5-sigma event. The tail maps a 0.9 rate's drop to a smaller one (0.10 read as 0.094
    at 60 runs: its lower tail is skewed), which summed over a season cost the evidence
    power (0.9 -> 0.8 by night 7: 44.5 % through the tail, 46.8 % so, on the same 400
    sequences of ``benchmarks/evidence_statistic.py --engine``). Paired rows keep the
    tail: their test removes the rows' differences, a raw mean would not.
    """
    common = measured.n * min(ref.mean, 1.0 - ref.mean) >= RAW_RARER
    if ref.kind == "binary" and ref.within_share >= 1.0 and common:
        return raw
    return ref.mean + measured.z * math.sqrt(ref.null_var(measured.n))


def _pair(before: MetricEvidence, x: float, within: float) -> dict[str, Any]:
    """Tonight and the last night as one more consecutive pair of the night-to-night spread.

    Differences of consecutive nights, not the spread around the season's mean: a slow
    trend (what the evidence is there to find) moves a pair by its nightly slope only,
    and a persistent step enters one pair instead of every night after it.
    """
    out: dict[str, Any] = {"last_mean": x, "last_var": within}
    if before.last_mean is None:
        return out
    noise = before.last_var + within
    return {
        **out,
        "pairs": before.pairs + 1,
        "pair_excess": before.pair_excess + ((x - before.last_mean) ** 2 - noise) / 2,
        "pair_noise": before.pair_noise + noise / 2,
    }


def metric_alpha(season_alpha: float, gating_metrics: int) -> float:
    """Each metric's share of a scenario-season's false-alarm chance (Bonferroni in the cell)."""
    return season_alpha / max(1, gating_metrics)


def boundary(
    base_share: float, nights: int, alpha: float, two_sided: bool, first: int = FIRST_LOOK
) -> float:
    """The z that max over a season's nights ``first`` to ``nights`` of the cumulative z
    reaches with chance ``alpha``.

    ``base_share``: the baseline mean's variance over one night's (their ratio sets how
    strongly the nights' z's are tied together by the shared baseline error). Simulated
    once per season length and sidedness at a grid of shares, then interpolated on the
    log share, so every night of every cell reads the same table.
    """
    maxima = _season_maxima(max(nights, first), two_sided, first)
    share = min(max(base_share, _SHARES[0]), _SHARES[-1])
    rank = min(SEASON_SIMULATIONS - 1, max(0, math.ceil((1.0 - alpha) * SEASON_SIMULATIONS) - 1))
    at = maxima[:, rank]
    return float(np.interp(math.log(share), np.log(_SHARES), at))


@functools.lru_cache(maxsize=8)
def _season_maxima(nights: int, two_sided: bool, first: int) -> FloatArray:
    """Per share of the grid, :data:`SEASON_SIMULATIONS` null seasons' largest z from night
    ``first`` on, sorted."""
    rng = np.random.default_rng([_SEED, nights, int(two_sided)])
    out = np.empty((len(_SHARES), SEASON_SIMULATIONS))
    t = np.arange(1, nights + 1)
    chunk = 5_000
    for lo in range(0, SEASON_SIMULATIONS, chunk):
        hi = min(lo + chunk, SEASON_SIMULATIONS)
        means = np.cumsum(rng.standard_normal((hi - lo, nights)), axis=1) / t
        base = rng.standard_normal((hi - lo, 1))
        for i, share in enumerate(_SHARES):
            z = (means - math.sqrt(share) * base) / np.sqrt(1.0 / t + share)
            out[i, lo:hi] = (np.abs(z) if two_sided else z)[:, first - 1 :].max(axis=1)
    out.sort(axis=1)
    return out
