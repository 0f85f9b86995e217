"""The HTML page's sections, built from a suite's selected nights: :class:`SuiteView` per suite,
:class:`CellDetail` per scenario x model (charts, evidence and flag tables, tool-sequence
bars, trajectory diffs), and the suite's skip and infra-error reasons. What every format shows
of a cell is :class:`~evalrunner.report._views.CellView`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from evalrunner.history._entry import Why
from evalrunner.report._charts import ChartView, SuiteCharts, metric_chart, suite_charts
from evalrunner.report._format import (
    accumulated,
    day,
    effect_label,
    fmt,
    interval,
    margin,
    night_labels,
    pct,
    short_time,
)
from evalrunner.report._select import SelectedNight, SuiteSelection, cell_key
from evalrunner.report._series import Gathered, gather
from evalrunner.report._verdicts import (
    FLAGGED,
    NO_BASELINE,
    NOT_COMPARED,
    safe_verdict,
)
from evalrunner.report._views import CellView, absent_line, absent_views, cell_views, night_note
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._metrics import rank, sequence_label
from evalrunner.suite._record import CellKey, Outcome

_MAX_FLAG_ROWS = 30
_MAX_SEQUENCES = 8
_MAX_REASONS = 8
_DIFF_LINES = 150


@dataclass(frozen=True)
class EvidenceRow:
    """One metric result as the evidence and flag tables show it."""

    metric: str
    role: str
    verdict: str
    baseline: str
    baseline_ci: str
    baseline_n: str
    night: str
    night_ci: str
    night_n: str
    effect: str
    effect_ci: str
    effect_label: str
    p: str
    q: str
    margin: str
    resolve: str
    test: str
    note: str
    day: str = ""
    """The night, in the flag table."""
    since: str = ""
    """Evidence accumulated since the baseline was accepted (:func:`accumulated`)."""

    @classmethod
    def of(cls, r: MetricResult, day: str = "") -> EvidenceRow:
        night_n = f"n {r.night_n}"
        if r.night_attempted:
            night_n += f" of {r.night_attempted}" + (
                f", {r.night_infra} infra" if r.night_infra else ""
            )
        verdict = safe_verdict(r.verdict)
        resolve = ""
        if verdict == "inconclusive":
            resolve = f"MDE {fmt(r.mde)}; " + (
                f"{r.runs_needed} night runs" if r.runs_needed is not None else "baseline too small"
            )
            if r.unconfirmed:
                resolve = f"changed, unconfirmed (every run moved); {resolve}"
        return cls(
            metric=r.metric,
            role="gating" if r.gating else "diagnostic",
            verdict=verdict,
            baseline=fmt(r.baseline_estimate),
            baseline_ci=interval(r.baseline_ci),
            baseline_n=f"n {r.baseline_n}",
            night=fmt(r.night_estimate),
            night_ci=interval(r.night_ci),
            night_n=night_n,
            effect=fmt(r.effect),
            effect_ci=interval(r.effect_ci),
            effect_label=effect_label(r),
            p=fmt(r.shown_pq[0]),
            q=fmt(r.shown_pq[1]),
            margin=margin(r),
            resolve=resolve,
            test=r.test,
            note=r.note or "",
            day=day,
            since=accumulated(r),
        )


@dataclass(frozen=True)
class Bar:
    """A tool sequence's share of the baseline's and the latest night's valid runs."""

    label: str
    base: float
    latest: float


@dataclass(frozen=True)
class ReasonRow:
    reason: str
    count: str
    share: str
    latest: str
    scenarios: str
    last_seen: str


@dataclass(frozen=True)
class CellDetail:
    """A scenario x model's section of the HTML page."""

    cell: CellView
    anchor: str
    charts: list[ChartView]
    evidence: list[EvidenceRow]
    """Gating and flagged metrics."""
    more_evidence: list[EvidenceRow]
    """The other diagnostics, folded away."""
    flags: list[EvidenceRow]
    """Flagged results in the window, newest first (at most _MAX_FLAG_ROWS)."""
    flags_more: int
    sequences: list[Bar]
    sequences_note: str
    diff_lines: list[tuple[str, str]]
    """(CSS class, line) of the trajectory diff; only for flagged scenarios."""
    diff_note: str
    why_diff: list[tuple[str, str]]
    """(CSS class, line) of the first request's text diff, when that is why it changed."""
    why_rows: list[tuple[str, str]]
    """A dataset scenario's rows that moved most: (line, a typical run's trajectory as JSON
    text, or '' when the night kept none)."""


@dataclass(frozen=True)
class SuiteView:
    name: str
    anchor: str
    night: str
    nights: int
    models: list[str]
    rows: list[tuple[str, list[CellDetail | None]]]
    """Scenario -> its detail per model (None: not run), for the grid of several models."""
    details: list[CellDetail]
    """The current cells'."""
    absent: list[CellDetail]
    """The cells the latest night did not run: their history, apart from the current."""
    absent_line: str | None
    counts: dict[str, int]
    charts: SuiteCharts
    skip_reasons: list[ReasonRow]
    infra_reasons: list[ReasonRow]
    broken_checks: list[str]
    """Checks that failed themselves on the latest night's runs (judged without them)."""


def suite_view(suite: SuiteSelection, index: int, diagnostics: Sequence[str]) -> SuiteView:
    """The HTML section of ``suite`` (the ``index``-th on the page)."""
    views = cell_views(suite)
    every = [*views, *absent_views(suite)]
    charted = {v.cell: _charted(v, diagnostics) for v in every}
    series = gather(suite.nights, _series_keys(charted))
    flags = _flags(suite)
    details = [
        _detail(
            v,
            f"s{index}-k{n}",
            charted[v.cell],
            series,
            flags.get(v.cell, _Flags([], 0)),
            suite.nights,
        )
        for n, v in enumerate(every)
    ]
    current = details[: len(views)]
    models = sorted({v.model for v in views})
    by_cell = {d.cell.cell: d for d in current}
    note = night_note(suite.night)
    return SuiteView(
        name=suite.name,
        anchor=f"s{index}",
        night=short_time(suite.night.created_at) + (f" ({note})" if note else ""),
        nights=len(suite.nights),
        models=models,
        rows=[
            (scenario, [by_cell.get(CellKey(scenario, m)) for m in models])
            for scenario in sorted({v.scenario for v in views})
        ],
        details=current,
        absent=details[len(views) :],
        absent_line=absent_line(suite),
        counts=dict(Counter(v.verdict for v in views)),
        broken_checks=suite.night.broken_checks,
        charts=suite_charts(suite.nights),
        skip_reasons=_reasons(suite, Outcome.SKIPPED),
        infra_reasons=_reasons(suite, Outcome.INFRA_ERROR),
    )


def _series_keys(charted: dict[CellKey, list[str]]) -> list[tuple[str, str, str]]:
    """(scenario, model, metric) of every chart of the suite."""
    return [(cell.scenario, cell.model, m) for cell, metrics in charted.items() for m in metrics]


def _detail(
    v: CellView,
    anchor: str,
    charted: list[str],
    series: Gathered,
    flagged: _Flags,
    span: Sequence[SelectedNight],
) -> CellDetail:
    """The section of ``v``: charts over the suite's nights ``span``, evidence, flags, bars, diff."""
    sequences, sequences_note = _sequences(v)
    diff_lines, diff_note = _diff(v) if v.flagged else ([], "")
    labels = night_labels([night.created_at for night, _ in flagged.shown])
    return CellDetail(
        cell=v,
        anchor=anchor,
        charts=_charts(v, charted, series, span),
        evidence=[EvidenceRow.of(r) for r in v.results if _in_evidence(r)],
        more_evidence=[EvidenceRow.of(r) for r in v.results if not _in_evidence(r)],
        flags=[EvidenceRow.of(r, labels[night.created_at]) for night, r in flagged.shown],
        flags_more=flagged.total - len(flagged.shown),
        sequences=sequences,
        sequences_note=sequences_note,
        diff_lines=diff_lines,
        diff_note=diff_note,
        why_diff=[(_diff_class(x), x) for x in (v.why.request_diff if v.why else [])],
        why_rows=_why_rows(v.why),
    )


def _in_evidence(r: MetricResult) -> bool:
    """Shown in the evidence table: gating or flagged (the other diagnostics are folded)."""
    return r.gating or r.verdict in FLAGGED


def _charts(
    v: CellView,
    charted: list[str],
    series: Gathered,
    span: Sequence[SelectedNight],
) -> list[ChartView]:
    """The charts of ``v``'s ``charted`` metrics that have results over ``span``."""
    uncompared = NOT_COMPARED if v.last_compared else NO_BASELINE
    return [
        metric_chart(m, points, span, v.latest, uncompared)
        for m in charted
        if (points := series.take((v.scenario, v.model, m))) is not None
    ]


def _why_rows(why: Why | None) -> list[tuple[str, str]]:
    """Each moved row's line, with a typical run of it tonight to open."""
    if why is None:
        return []
    out = []
    for line in why.rows:
        run = why.row_runs.get(line.partition(":")[0])
        out.append((line, json.dumps(run, indent=1, ensure_ascii=False) if run else ""))
    return out


def _charted(v: CellView, diagnostics: Sequence[str]) -> list[str]:
    """The metrics charted for a scenario x model: gating, chosen diagnostics, anything flagged."""
    metrics = {
        r.metric
        for r in v.charted_results
        if r.gating or r.metric in diagnostics or r.verdict in FLAGGED
    }
    return sorted(metrics, key=rank)


@dataclass(frozen=True)
class _Flags:
    """A scenario x model's flagged results in the window: the newest built, how many in all."""

    shown: list[tuple[SelectedNight, MetricResult]]
    total: int


def _flagged_rows(night: SelectedNight) -> list[tuple[int, CellKey]]:
    """The night's flagged results (their place among its results) and their cells, found
    over the codes: a few rows of a night's thousands, without a list of them all."""
    verdicts = night.result_words("verdict")
    is_flagged = np.array([w in FLAGGED for w in verdicts.words], dtype=bool)
    flagged = np.flatnonzero(is_flagged[verdicts.codes] if len(is_flagged) else is_flagged)
    scenarios = night.result_words("scenario").take(flagged).values()
    models = night.result_words("model").take(flagged).values()
    named = zip(flagged.tolist(), scenarios, models, strict=True)
    return [(i, cell_key(scenario, model)) for i, scenario, model in named]


def _flags(suite: SuiteSelection) -> dict[CellKey, _Flags]:
    """Scenario x model -> its flagged results in the window, newest night first.

    Only the results the flag table lists (_MAX_FLAG_ROWS per scenario x model)
    are built; the others are counted from their verdicts.
    """
    found: dict[CellKey, list[tuple[SelectedNight, int]]] = {}
    for night in reversed(suite.nights):
        for i, cell in _flagged_rows(night):
            found.setdefault(cell, []).append((night, i))
    wanted: dict[
        int, tuple[SelectedNight, list[int]]
    ] = {}  # id(night) -> the night, its rows to build
    for points in found.values():
        for night, i in points[:_MAX_FLAG_ROWS]:
            wanted.setdefault(id(night), (night, []))[1].append(i)
    built: dict[tuple[int, int], MetricResult] = {}
    for key, (night, positions) in wanted.items():
        results = night.result_rows(positions)
        built.update({(key, i): r for i, r in zip(positions, results, strict=True)})
    return {
        cell: _Flags(
            [(night, built[(id(night), i)]) for night, i in points[:_MAX_FLAG_ROWS]], len(points)
        )
        for cell, points in found.items()
    }


def _baseline_sequences(v: CellView) -> tuple[dict[str, float], str]:
    """The baseline's tool-sequence shares: the stored summary's, else its typical run's."""
    summary = v.latest.baseline(v.cell)
    if summary is not None and summary.tool_sequences:
        shares = {k: x for k, x in summary.tool_sequences.items() if math.isfinite(x)}
        return shares, "baseline: top sequences of the stored baseline summary"
    typical = v.latest.baseline_typical(v.cell)
    if typical is None:
        return {}, ""
    from evalrunner.core._shape import shape

    try:
        label = sequence_label(shape(typical).tools)
    except (TypeError, ValueError, AttributeError):
        return {}, ""
    return {label: 1.0}, "baseline distribution not stored: showing the typical baseline run only"


def _sequences(v: CellView) -> tuple[list[Bar], str]:
    """Bars of the most common tool sequences, baseline vs the latest night's valid runs."""
    night = Counter(sequence_label(r.tools) for r in v.records if r.judged)
    total = sum(night.values())
    base, note = _baseline_sequences(v)
    if not base and not total:
        return [], note
    shares = {label: c / total for label, c in night.items()} if total else {}
    labels = sorted(
        set(base) | set(shares),
        key=lambda lab: (-max(base.get(lab, 0), shares.get(lab, 0)), lab),
    )
    bars = [Bar(lab, base.get(lab, 0.0), shares.get(lab, 0.0)) for lab in labels[:_MAX_SEQUENCES]]
    rest = labels[_MAX_SEQUENCES:]
    return bars + ([_other_sequences(rest, base, shares)] if rest else []), note


def _other_sequences(rest: Sequence[str], base: dict[str, float], shares: dict[str, float]) -> Bar:
    """One bar for the sequences beyond the first _MAX_SEQUENCES."""
    return Bar(
        f"{len(rest)} other sequences",
        sum(base.get(lab, 0.0) for lab in rest),
        sum(shares.get(lab, 0.0) for lab in rest),
    )


def _diff_class(line: str) -> str:
    for prefix, cls in (("+", "add"), ("-", "del"), ("@@", "hunk")):
        if line.startswith(prefix):
            return cls
    return ""


def _diff(v: CellView) -> tuple[list[tuple[str, str]], str]:
    """The typical baseline run against the typical run of the latest night, as classed lines."""
    from evalrunner.core._diff import diff, render

    typical, baseline = v.latest.typical(v.cell), v.latest.baseline_typical(v.cell)
    if typical is None or baseline is None:
        return [], "no typical trajectories stored for this night"
    try:
        text = render(baseline, typical, diff(baseline, typical), max_lines=_DIFF_LINES)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return [], f"the stored trajectories could not be compared: {exc}"
    text = text.replace("--- golden", "--- baseline (typical run)").replace(
        "+++ actual", "+++ latest night (typical run)"
    )
    return [(_diff_class(line), line) for line in text.splitlines()], ""


def _reasons(suite: SuiteSelection, outcome: Outcome) -> list[ReasonRow]:
    """The suite's most common reasons for ``outcome`` over the window, with the latest night's count."""
    by_reason = _by_reason(suite.nights, outcome)
    total = sum(len(rows) for rows in by_reason.values())
    ranked = sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0]))

    def latest(rows: Iterable[tuple[SelectedNight, str]]) -> int:
        return sum(night is suite.night for night, _ in rows)

    out = [
        ReasonRow(
            reason=text,
            count=str(len(rows)),
            share=pct(len(rows) / total),
            latest=str(latest(rows)),
            scenarios=str(len({scenario for _, scenario in rows})),
            last_seen=day(max((night for night, _ in rows), key=lambda n: n.when).created_at),
        )
        for text, rows in ranked[:_MAX_REASONS]
    ]
    rest = [row for _, rows in ranked[_MAX_REASONS:] for row in rows]
    if rest:
        out.append(
            ReasonRow(
                reason=f"{len(ranked) - _MAX_REASONS} other reasons",
                count=str(len(rest)),
                share=pct(len(rest) / total),
                latest=str(latest(rest)),
                scenarios="",
                last_seen="",
            )
        )
    return out


def _by_reason(
    nights: Sequence[SelectedNight], outcome: Outcome
) -> dict[str, list[tuple[SelectedNight, str]]]:
    """Reason -> (night, scenario) of each run of ``nights`` that ended in ``outcome``."""
    by_reason: dict[str, list[tuple[SelectedNight, str]]] = {}
    for night in nights:
        outcomes = night.words("records", "outcome")
        matched = np.array([o == outcome for o in outcomes.words], dtype=bool)
        rows = np.flatnonzero(matched[outcomes.codes] if len(matched) else matched)
        if not rows.size:  # most nights skip no run: no reason read
            continue
        reasons = night.record_column("reason")
        scenarios = night.words("records", "scenario").take(rows).values()
        for i, scenario in zip(rows.tolist(), scenarios, strict=True):
            text = "(no reason given)" if reasons[i] is None else reasons[i]
            by_reason.setdefault(text, []).append((night, scenario))
    return by_reason
