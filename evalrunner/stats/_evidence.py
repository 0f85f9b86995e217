"""Evidence that accumulates across nights against an anchored baseline (an e-process).

Each night adds its mean on the metric's test scale, weighted by the inverse of
its variance around its own night's truth plus the night effect. After t nights
the weighted mean minus the baseline's mean, D_t, has variance 1/W_t + var(baseline
mean), and because every night is compared with the *same* baseline,
cov(D_s, D_t) = var(D_t) for s < t: the score S_t = D_t / var(D_t) is a Brownian
motion in the information I_t = 1 / var(D_t) (the canonical form of group-sequential
tests), capped at 1 / var(baseline mean) however many nights come: an anchored
baseline of 100 runs cannot resolve a change much smaller than 3 of its standard
errors, and no e-process can pretend otherwise.

The e-value is Robbins' normal mixture of likelihood ratios exp(theta S - theta^2 I / 2)
over a change theta drawn from a normal of scale ``margin`` (half-normal on the
harmful side for one-sided metrics): a nonnegative martingale under "no change", so
by Ville's inequality the chance it *ever* reaches 1/alpha is at most alpha, however
many nights are looked at. Gating metrics alarm at (gating metrics x cells) /
season_alpha, Bonferroni over every gating metric of the suite: the chance of any
false alarm in the suite over the whole life of its anchors is at most season_alpha.
A new anchor starts a new state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scipy import special

from evalrunner.stats._evidence_state import (
    EVIDENCE_FORMAT_VERSION,
    EvidenceState,
    MetricEvidence,
)
from evalrunner.stats._formulas import z_upper
from evalrunner.stats._measured import Measured
from evalrunner.stats._power import to_effect, to_test_scale
from evalrunner.stats._reference import MetricReference
from evalrunner.suite._metrics import Direction

_LOG_CAP = 690.0


@dataclass(frozen=True)
class Accumulated:
    """One metric's evidence after tonight."""

    e_value: float
    nights: int
    effect: float
    effect_ci: tuple[float, float]


def start(state: EvidenceState | None, anchor: str) -> EvidenceState:
    """The state to add tonight to: ``state`` if it is for this anchor, else a fresh one."""
    if state is None or state.anchor != anchor:
        return EvidenceState(anchor=anchor)
    return state


def add_night(
    state: EvidenceState,
    tonight: Mapping[str, tuple[MetricReference, Measured]],
    margins: Mapping[str, float],
    level: float,
    means: Mapping[str, float],
) -> tuple[EvidenceState, dict[str, Accumulated]]:
    """Tonight added to every metric's evidence; metrics not measured tonight carry over.

    ``means``: tonight's mean of each metric on its test scale, for the night-to-night
    spread (raw, not through the test's tail: that maps tonight through the night effect
    the spread is there to estimate).
    """
    metrics = dict(state.metrics)
    out: dict[str, Accumulated] = {}
    for name, (ref, measured) in tonight.items():
        before = metrics.get(name, MetricEvidence())
        within = ref.within_var(measured.n)
        var = within + ref.night_var
        # Tonight's estimate as the normal model sees it, through the test's own tail:
        # exact for rates and paths, so three crashes in 60 runs weigh what their p says.
        x = ref.mean + measured.z * math.sqrt(ref.null_var(measured.n))
        weight = before.weight + 1.0 / var
        total = before.weighted_sum + x / var
        diff = total / weight - ref.mean
        spread = 1.0 / weight + ref.base_var
        e = math.exp(log_e_value(diff, spread, ref.direction, to_test_scale(ref, margins[name])))
        metrics[name] = MetricEvidence(
            nights=before.nights + 1,
            weight=weight,
            weighted_sum=total,
            e_value=e,
            **_pair(before, means[name], within),
        )
        centre = total / weight - (
            ref.mean if ref.kind in ("count", "continuous") else ref.estimate
        )
        half = z_upper((1 - level) / 2) * math.sqrt(spread)
        low, high = to_effect(ref, centre - half), to_effect(ref, centre + half)
        if ref.kind == "binary":
            low, high = max(low, -1.0), min(high, 1.0)
        out[name] = Accumulated(
            e_value=e,
            nights=before.nights + 1,
            effect=to_effect(ref, centre),
            effect_ci=(low, high),
        )
    update = {"nights": state.nights + 1, "metrics": metrics}
    return state.model_copy(update={**update, "format_version": EVIDENCE_FORMAT_VERSION}), out


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


def log_e_value(diff: float, var: float, direction: Direction, scale: float) -> float:
    """log of the normal-mixture e-value for an accumulated change ``diff`` of variance ``var``."""
    info = 1.0 / var
    score = diff * info
    a = info + 1.0 / scale**2
    log_norm = -0.5 * math.log(scale**2 * info + 1.0)
    if direction == "changed":
        value = log_norm + score**2 / (2 * a)
    else:
        signed = score if direction == "higher" else -score
        value = (
            math.log(2.0)
            + log_norm
            + signed**2 / (2 * a)
            + float(special.log_ndtr(signed / math.sqrt(a)))
        )
    return min(value, _LOG_CAP)


def threshold(gating_metrics: int, cells: int, season_alpha: float) -> float:
    """The e-value at which a gating metric's accumulated evidence flags."""
    return max(1, gating_metrics) * max(1, cells) / season_alpha
