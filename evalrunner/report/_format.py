"""Numbers, times and metric results as short text, the same in every format."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from evalrunner import _clock as clock
from evalrunner.report._select import when
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._metrics import EFFECT_LABELS, SCALES


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def fmt(value: float | None) -> str:
    """Three significant digits; thousands as k/M/G; missing as an en dash."""
    x = _finite(value)
    if x is None:
        return "–"
    if x == 0:
        return "0"
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g}{suffix}"
    text = f"{x:.3g}"
    return "−" + text[1:] if text.startswith("-") else text


def pct(value: float | None) -> str:
    x = _finite(value)
    return "–" if x is None else f"{100 * x:.0f}%"


def interval(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def margin(result: MetricResult) -> str:
    scale = SCALES.get(result.kind)  # type: ignore[call-overload]
    return f"{scale.margin_prefix if scale else '±'}{fmt(result.margin)}"


def effect_label(result: MetricResult) -> str:
    return result.effect_label or EFFECT_LABELS.get(result.kind, "effect")


def short_time(created_at: str) -> str:
    t = when(created_at)
    return created_at if t.year == 1 else t.strftime("%Y-%m-%d %H:%M UTC")


def day(created_at: str) -> str:
    t = when(created_at)
    return created_at[:10] if t.year == 1 else t.strftime("%Y-%m-%d")


def night_labels(created_ats: Sequence[str]) -> dict[str, str]:
    """Each night's label in a table: its day, or its time where several nights fell on
    that day (a table of flags from three nights of one day would read as one night)."""
    nights_a_day = Counter(day(c) for c in set(created_ats))
    return {c: short_time(c) if nights_a_day[day(c)] > 1 else day(c) for c in created_ats}


def span_ends(first: str, last: str) -> tuple[str, str]:
    """A chart's axis ends: the days, or the times when every night fell on one day
    (four nights of one day would otherwise read as one)."""
    if first != last and day(first) == day(last) and when(first).year != 1:
        return when(first).strftime("%Y-%m-%d %H:%M"), when(last).strftime("%H:%M UTC")
    return day(first), day(last)


def now() -> str:
    return short_time(clock.iso_now())


def evidence_line(r: MetricResult) -> str:
    """One result in one line, for plain-text readers (JUnit)."""
    verdict = "changed, unconfirmed" if r.unconfirmed else r.verdict
    return (
        f"{r.metric} {verdict}: {effect_label(r)} {fmt(r.effect)} {interval(r.effect_ci)}, "
        f"p {fmt(r.shown_pq[0])}, q {fmt(r.shown_pq[1])}, margin {margin(r)}, "
        f"baseline {fmt(r.baseline_estimate)} "
        f"(n {r.baseline_n}), night {fmt(r.night_estimate)} (n {r.night_n}), {r.test or 'no test'}"
    )


def accumulated(r: MetricResult) -> str:
    """The evidence accumulated since the baseline was accepted, in one phrase ('' if none):
    'z 2.1 of 2.9 over 6 nights, change as tested -0.07 [-0.11, -0.03]'; 'flagged' when it
    flagged. "As tested": each night enters as its test's p puts it (exact for rates, the
    night effect included), which for a small night is less than its raw difference
    (12/18 against 18/18: -0.20, not -0.33), so it is not labelled as that difference."""
    if r.evidence is None or not r.evidence_nights:
        return ""
    limit = f" of {fmt(r.evidence_threshold)}" if r.evidence_threshold is not None else ""
    nights = f"{r.evidence_nights} night{'s' * (r.evidence_nights != 1)}"
    change = f", change as tested {fmt(r.evidence_effect)} {interval(r.evidence_ci)}".rstrip()
    flagged = "; flagged by the accumulated evidence" if r.flagged_by == "evidence" else ""
    test = "z" if r.evidence_test == "z" else "e"
    return f"{test} {fmt(r.evidence)}{limit} over {nights}{change}{flagged}"
