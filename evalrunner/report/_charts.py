"""What the HTML report charts: each metric's trend, and a suite's outcomes and tokens per night.

A metric is drawn where its tolerance is defined, which depends only on its
kind (the registry's :data:`~evalrunner.suite._metrics.Kind`): rates and
continuous metrics in their own units (band: baseline +- margin, or baseline
x [1/margin, margin]); counts and the tool-sequence distribution as their
effect (Cliff's delta, atypicality change) against the margin, because their margin is
not in the metric's units. A new metric of a known kind needs nothing here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from markupsafe import Markup

from evalrunner.report._format import fmt, interval, short_time, span_ends
from evalrunner.report._select import SelectedNight
from evalrunner.report._svg import (
    Flag,
    FloatArray,
    Trend,
    fractions,
    nice_max,
    series_svg,
    trend_svg,
)
from evalrunner.report._verdicts import NO_BASELINE, safe_verdict
from evalrunner.suite._cost import usd
from evalrunner.suite._metrics import Kind
from evalrunner.suite._record import Outcome

_MAX_POINTS = 90
"""Longer series are drawn in runs of nights, about _TARGET_POINTS points per chart."""
_TARGET_POINTS = 60

Band = Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]
"""(baseline, margin) -> (band low, band high), night by night."""


def _finite_max(*arrays: FloatArray) -> float | None:
    seen = np.concatenate(arrays)
    seen = seen[np.isfinite(seen)]
    return float(seen.max()) if seen.size else None


def _rate_axis(t: Trend) -> tuple[float, float]:
    # Rare events (crashes, skips) get a zoomed axis; anything reaching 50 % the full one.
    top = _finite_max(t.est, t.high, t.band_high)
    top = 1.0 if top is None else top
    return 0.0, 1.0 if top > 0.5 else nice_max(top, 0.05)


def _ratio_band(base: FloatArray, margin: FloatArray) -> tuple[FloatArray, FloatArray]:
    with np.errstate(all="ignore"):
        return base / margin, base * margin


def _ratio_axis(t: Trend) -> tuple[float, float]:
    top = _finite_max(t.est, t.high, t.base, t.band_high)
    return 0.0, nice_max(top * 1.05 if top is not None else 1.0, 1e-9)


def _atypicality_axis(t: Trend) -> tuple[float, float]:
    # Up to 2 (every run on a path the baseline never took); below 0 only as far as a
    # night was more typical than the baseline itself.
    below = _finite_max(-t.est, -t.low)
    bottom = -nice_max(below, 0.5) if below is not None and below > 0 else 0.0
    return bottom, 2.0


@dataclass(frozen=True)
class _KindChart:
    axis: str
    effect: bool
    """Drawn as the effect against the margin (baseline 0) rather than estimates in the metric's units."""
    band: Band
    y_range: Callable[[Trend], tuple[float, float]]
    fmt: str


_BY_KIND: dict[Kind, _KindChart] = {
    "binary": _KindChart(
        "rate (band: baseline ± margin)",
        effect=False,
        band=lambda b, m: (np.clip(b - m, 0, 1), np.clip(b + m, 0, 1)),
        y_range=_rate_axis,
        fmt="pct",
    ),
    "continuous": _KindChart(
        "geometric mean (band: baseline ×/÷ margin)",
        effect=False,
        band=_ratio_band,
        y_range=_ratio_axis,
        fmt="num",
    ),
    "count": _KindChart(
        "Cliff's δ vs baseline (band: ± margin)",
        effect=True,
        band=lambda b, m: (-m, m),
        y_range=lambda t: (-1.0, 1.0),
        fmt="num",
    ),
    "categorical": _KindChart(
        "atypicality change vs baseline (band: ≤ margin)",
        effect=True,
        band=lambda b, m: (b - 2.0, m),
        y_range=_atypicality_axis,
        fmt="num",
    ),
}


@dataclass(frozen=True)
class ChartView:
    metric: str
    axis: str
    verdict: str
    svg: Markup


EFFECT_KINDS = frozenset(kind for kind, style in _BY_KIND.items() if style.effect)
"""The kinds charted as their effect against the margin (counts, tool paths)."""


@dataclass(frozen=True)
class Series:
    """One metric of one scenario x model over nights, oldest first: what its trend chart
    draws, and no more (``report/_series.py`` reads it night by night)."""

    nights: list[SelectedNight]
    stamps: FloatArray
    """Each point's night as a POSIX time (charts place points by it)."""
    verdicts: list[str]
    kind: str
    """The kind stored with the newest result: it decides how the whole series reads."""
    est: FloatArray
    """Each night's effect (a kind charted as its effect) or estimate, as ``kind`` reads."""
    low: FloatArray
    high: FloatArray
    base: FloatArray
    """The baseline's estimate (0 where the effect is charted)."""
    margin: FloatArray
    tips: dict[int, str]
    """The tooltip of each flagged point, by its place in the series."""


def tip_text(
    created_at: str,
    verdict: str,
    numbers: dict[str, float],
    ci: tuple[float, float],
    label: str,
) -> str:
    """The tooltip of a flagged point: what the flag table says of it, in one line.
    ``numbers``: its baseline_estimate, night_estimate, effect, q and q_improvement."""
    # An improvement's q is the good direction's (MetricResult.shown_pq).
    q = numbers["q_improvement"] if verdict == "improvement" else numbers["q"]
    low, high = ci
    shown = None if math.isnan(low) and math.isnan(high) else (low, high)
    return (
        f"{short_time(created_at)} {safe_verdict(verdict)}: baseline "
        f"{fmt(numbers['baseline_estimate'])} → night {fmt(numbers['night_estimate'])}; {label} "
        f"{fmt(numbers['effect'])} {interval(shown)}; q {fmt(q)}"
    )


def metric_chart(
    metric: str,
    series: Series,
    span: Sequence[SelectedNight],
    latest: SelectedNight,
    uncompared: str = NO_BASELINE,
) -> ChartView:
    """One metric's trend over the suite's nights ``span``.

    ``latest`` is the scenario x model's latest night: the chart's badge shows
    the verdict of that night, or ``uncompared`` ("no baseline" unless said otherwise)
    when the metric was not compared then.
    """
    verdicts = series.verdicts
    style = _BY_KIND[cast(Kind, series.kind)]
    frac = fractions([span[0].stamp, span[-1].stamp], series.stamps)
    trend = Trend(
        frac,
        series.est,
        series.low,
        series.high,
        series.base,
        *style.band(series.base, series.margin),
    )
    flags = [
        Flag(float(frac[i]), float(trend.est[i]), safe_verdict(verdicts[i]), tip)
        for i, tip in sorted(series.tips.items())
    ]
    axis, y_range = style.axis, style.y_range(trend)
    first, last = span_ends(span[0].created_at, span[-1].created_at)
    if len(verdicts) > _MAX_POINTS:
        # A year of noisy nights drawn one by one is a grey wall: draw each run of
        # `size` nights as its median with the range of its nightly values.
        size = math.ceil(len(verdicts) / _TARGET_POINTS)
        trend = trend.bucketed(size)
        axis += f"; each point: median of {size} nights, bar: their range"
    svg = trend_svg(
        label=f"{metric} over {len(verdicts)} nights",
        trend=trend,
        y_range=y_range,
        fmt=style.fmt,
        flags=flags,
        first=first,
        last=last,
    )
    verdict = safe_verdict(verdicts[-1]) if series.nights[-1] is latest else uncompared
    return ChartView(metric=metric, axis=axis, verdict=verdict, svg=svg)


@dataclass(frozen=True)
class SuiteCharts:
    outcomes: Markup | None
    tokens: Markup | None
    token_totals: str
    spend: Markup | None = None
    """USD per night, where some of its runs were priced (issue 55)."""
    spend_totals: str = ""


_CHARTED = (Outcome.INFRA_ERROR, Outcome.SKIPPED, Outcome.CRASHED)
"""The outcomes whose rates the suite's outcome chart draws."""


def _sums(nights: Sequence[SelectedNight]) -> dict[str, FloatArray]:
    """Per night with runs: runs attempted, infra errors, skips, crashes, prompt and completion tokens."""
    columns: dict[str, list[float]] = {
        k: [] for k in ("attempted", *_CHARTED, "prompt", "completion", "cost", "priced")
    }
    for night in nights:
        outcomes = Counter(night.record_column("outcome"))
        columns["attempted"].append(night.record_count)
        for outcome in _CHARTED:
            columns[outcome].append(outcomes[outcome])
        totals = night.record_totals
        columns["prompt"].append(totals.prompt)
        columns["completion"].append(totals.completion)
        columns["cost"].append(math.fsum(totals.costs))
        columns["priced"].append(len(totals.costs))
    return {k: np.array(v, dtype=float) for k, v in columns.items()}


def suite_charts(nights: Sequence[SelectedNight]) -> SuiteCharts:
    """Skip, infra-error and crash rates per night; prompt and completion tokens per night."""
    ran = [n for n in nights if n.record_count]
    if not ran:
        return SuiteCharts(None, None, "")
    sums = _sums(ran)
    frac = fractions([n.when.timestamp() for n in nights], [n.when.timestamp() for n in ran])
    attempted = sums["attempted"]
    valid = attempted - sums[Outcome.INFRA_ERROR]
    with np.errstate(all="ignore"):
        infra_rate = sums[Outcome.INFRA_ERROR] / attempted
        skip_rate = np.where(valid > 0, sums[Outcome.SKIPPED] / np.maximum(valid, 1), np.nan)
        crash_rate = np.where(valid > 0, sums[Outcome.CRASHED] / np.maximum(valid, 1), np.nan)
    peak = np.nanmax(np.concatenate([infra_rate, skip_rate, crash_rate, [0.0]]))
    first, last = span_ends(nights[0].created_at, nights[-1].created_at)
    outcomes = series_svg(
        label="skip, infra-error and crash rates per night",
        frac=frac,
        series=[skip_rate, infra_rate, crash_rate],
        y_high=min(1.0, nice_max(float(peak) * 1.1, 0.05)),
        fmt="pct",
        first=first,
        last=last,
    )
    prompt, completion = sums["prompt"], sums["completion"]
    # A night the endpoint failed whole used no tokens because nothing ran: a gap, not a
    # dip that reads as the agent's behaviour (as its skip and crash rates are gaps).
    lines = [np.where(valid > 0, x, np.nan) for x in (prompt, completion, prompt + completion)]
    tokens = series_svg(
        label="prompt and completion tokens per night",
        frac=frac,
        series=lines,
        y_high=nice_max(float((prompt + completion).max()) * 1.05, 1.0),
        fmt="num",
        first=first,
        last=last,
    )
    totals = (
        f"{fmt(prompt.sum() + completion.sum())} tokens over {len(ran)} nights "
        f"({fmt(prompt.sum())} prompt, {fmt(completion.sum())} completion); "
        f"latest night {fmt(prompt[-1] + completion[-1])}"
    )
    return SuiteCharts(outcomes, tokens, totals, *_spend(sums, frac, first, last))


def _spend(
    sums: dict[str, FloatArray], frac: FloatArray, first: str, last: str
) -> tuple[Markup | None, str]:
    """USD per night (a gap where no run was priced), and the totals under it; nothing
    where no night priced a run."""
    priced = sums["priced"]
    if not priced.any():
        return None, ""
    cost = np.where(priced > 0, sums["cost"], np.nan)
    svg = series_svg(
        label="spend per night, USD",
        frac=frac,
        series=[cost],
        y_high=nice_max(float(np.nanmax(cost)) * 1.05, 0.01),
        fmt="num",
        first=first,
        last=last,
    )
    unpriced = int((sums["attempted"] - priced).sum())
    said = f"{usd(float(np.nansum(cost)))} over {int((priced > 0).sum())} nights; latest night "
    said += usd(float(sums["cost"][-1])) if priced[-1] else "unpriced"
    if unpriced:
        said += f"; {unpriced} runs unpriced (their model has no price: suites/README.md)"
    return svg, said
