"""View models the formats render, built from a suite's selected nights.

:class:`CellView` is one scenario x model on its latest night (every format
shows the current ones; :func:`absent_line` names the others); :class:`SuiteView`
and :class:`CellDetail` add what only the HTML page shows: charts, evidence tables,
flags, tool-sequence bars, trajectory diffs and the suite's skip and infra-error
reasons.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalrunner.history._store import Why
from evalrunner.report._charts import (
    INTERVALS,
    NUMBER_FIELDS,
    TEXT_FIELDS,
    ChartView,
    Points,
    SuiteCharts,
    metric_chart,
    suite_charts,
)
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
from evalrunner.report._select import SelectedNight, SuiteSelection
from evalrunner.report._verdicts import (
    FLAGGED,
    NO_BASELINE,
    NOT_COMPARED,
    VERDICT_ORDER,
    VERDICT_TEXT,
    YOUNG,
    safe_verdict,
    severity,
)
from evalrunner.stats._metric_result import MetricResult
from evalrunner.stats._summary import CellCounts
from evalrunner.suite._metrics import rank, sequence_label
from evalrunner.suite._record import CellKey, Outcome, RunRecord

_MAX_FLAG_ROWS = 30
_MAX_SEQUENCES = 8
_MAX_REASONS = 8
_MAX_ABSENT = 20
_DIFF_LINES = 150


@dataclass(frozen=True)
class LastCompared:
    """The last night that compared a cell, shown where its own night compared nothing."""

    night: SelectedNight
    results: list[MetricResult]
    verdict: str

    @property
    def text(self) -> str:
        """'last compared: ok, as of 2025-01-02 02:00 UTC'."""
        as_of = short_time(self.night.created_at)
        return f"last compared: {VERDICT_TEXT[self.verdict]}, as of {as_of}"


@dataclass(frozen=True)
class CellView:
    """One scenario x model on its latest night."""

    suite: str
    cell: CellKey
    latest: SelectedNight
    stale: bool
    """Its latest night is older than its suite's ("as of ...")."""
    records: list[RunRecord]
    results: list[MetricResult]
    """That night's metric results, in registry order."""
    verdict: str
    counts: dict[str, int]
    """Gating verdict -> how many gating metrics have it."""
    by_outcome: CellCounts
    current: bool = True
    """It ran in its suite's latest night; if not, it is history (:func:`absent_line`)."""
    stale_why: str | None = None
    """Why a current cell shows an older night: what the suite's latest night did to it."""
    last_compared: LastCompared | None = None
    """Where its night compared nothing (:data:`NOT_COMPARED`): the last night that did."""

    @property
    def scenario(self) -> str:
        return self.cell.scenario

    @property
    def why(self) -> Why | None:
        """Why it changed, when it failed its night (docs/explain.md)."""
        return self.latest.why(self.cell)

    @property
    def cause(self) -> str | None:
        """The verdict line of :attr:`why`: "cause: ..."."""
        return self.why.cause if self.why else None

    @property
    def model(self) -> str:
        return self.cell.model

    @property
    def night(self) -> str:
        return self.latest.created_at

    @property
    def attempted(self) -> int:
        return len(self.records)

    @property
    def infra(self) -> int:
        return self.by_outcome.infra

    @property
    def crashed(self) -> int:
        return self.by_outcome.outcomes[Outcome.CRASHED]

    @property
    def latency(self) -> float:
        return math.fsum(r.latency_s for r in self.records)

    @property
    def n(self) -> int:
        return self.by_outcome.n

    @property
    def n_text(self) -> str:
        return f"{self.n}" + (f" (+{self.infra} infra)" if self.infra else "")

    @property
    def success(self) -> float | None:
        return self.by_outcome.rate(Outcome.PASSED)

    @property
    def skip(self) -> float | None:
        return self.by_outcome.rate(Outcome.SKIPPED)

    @property
    def flagged(self) -> bool:
        return self.verdict in FLAGGED

    @property
    def counts_text(self) -> str:
        text = ", ".join(f"{self.counts[v]} {v}" for v in VERDICT_ORDER if self.counts.get(v))
        # Every run moved, and the night could not confirm it: said on the card, as the
        # Markdown summary's section says it (not only in a collapsed row's cell).
        moved = [r.metric for r in self.results if r.unconfirmed]
        return text + (f"; changed, unconfirmed: {', '.join(moved)}" if moved else "")

    @property
    def gating(self) -> list[MetricResult]:
        return [r for r in self.results if r.gating]

    @property
    def charted_results(self) -> list[MetricResult]:
        """The results whose metrics its charts draw: its night's, else its last compared
        night's (a night not compared keeps the trends it had)."""
        return self.results or (self.last_compared.results if self.last_compared else [])


def cell_views(suite: SuiteSelection) -> list[CellView]:
    """Every current scenario x model of the suite (one its latest night ran), by scenario
    and model, each on the latest night that shows it."""
    return [
        _view(suite, cell, night, stale_why=_stale_why(suite, cell, night))
        for cell, night in sorted(suite.current.items())
    ]


def absent_views(suite: SuiteSelection) -> list[CellView]:
    """The scenario x models the suite's latest night did not run, each on its last night."""
    return [
        _view(suite, cell, night, current=False) for cell, night in sorted(suite.absent.items())
    ]


def _results(night: SelectedNight, cell: CellKey) -> list[MetricResult]:
    return sorted(night.results_by_cell.get(cell, []), key=lambda r: rank(r.metric))


def _verdict(results: Sequence[MetricResult]) -> str:
    gating = [safe_verdict(r.verdict) for r in results if r.gating]
    return min(gating, key=severity) if gating else YOUNG if results else NO_BASELINE


def _last_compared(
    suite: SuiteSelection, cell: CellKey, night: SelectedNight, results: Sequence[MetricResult]
) -> LastCompared | None:
    """The cell's last compared night, when ``night`` compared nothing at all and an earlier
    one compared the cell: "no baseline" would be false, since it had one then."""
    earlier = suite.compared.get(cell)
    if results or night.compared or earlier is None:
        return None
    before = _results(earlier, cell)
    return LastCompared(earlier, before, _verdict(before))


def _view(
    suite: SuiteSelection,
    cell: CellKey,
    night: SelectedNight,
    *,
    current: bool = True,
    stale_why: str | None = None,
) -> CellView:
    results = _results(night, cell)
    records = night.records_by_cell.get(cell, [])
    last = _last_compared(suite, cell, night, results)
    return CellView(
        suite=suite.name,
        cell=cell,
        latest=night,
        stale=night is not suite.night,
        records=records,
        results=results,
        verdict=NOT_COMPARED if last else _verdict(results),
        counts=dict(Counter(safe_verdict(r.verdict) for r in results if r.gating)),
        by_outcome=CellCounts.of(records),
        current=current,
        stale_why=stale_why,
        last_compared=last,
    )


def _stale_why(suite: SuiteSelection, cell: CellKey, shown: SelectedNight) -> str | None:
    """Why a current cell shows ``shown`` rather than the suite's latest night, in words
    (None when it shows the latest). The latest night ran it, so it either failed every
    run of it at the endpoint, or was an outage (which compared nothing)."""
    latest = suite.night
    if shown is latest:
        return None
    runs = latest.records_by_cell.get(cell, [])
    if runs and not any(r.measured for r in runs):
        why = "an outage" if latest.outage else "its model's endpoint failed"
        return f"not measured on the latest night ({why}: its runs were infra_error)"
    # Some of its runs reached the agent: only an outage night leaves such a cell unshown.
    return "not compared on the latest night (an outage: nothing was compared)"


def absent_line(suite: SuiteSelection) -> str | None:
    """The cells the suite's latest night did not run, in one line (None: there are none):
    'Not in the latest night (removed from the suite, or not selected for it): a × m, b × m
    (last run 2025-01-02)'. A suite whose scenarios or models changed keeps them in its
    history; counting them as current would report verdicts of cells that no longer run."""
    by_day: dict[str, list[CellKey]] = {}
    for cell, night in sorted(suite.absent.items(), key=lambda kv: (-kv[1].stamp, kv[0])):
        by_day.setdefault(day(night.created_at), []).append(cell)
    if not by_day:
        return None
    groups, named = [], 0
    for last, cells in by_day.items():
        shown = cells[: max(0, _MAX_ABSENT - named)]
        named += len(shown)
        if shown:
            names = ", ".join(f"{c.scenario} × {c.model}" for c in shown)
            groups.append(f"{names} (last run {last})")
    more = len(suite.absent) - named
    return (
        "Not in the latest night (removed from the suite, or not selected for it): "
        + "; ".join(groups)
        + (f"; and {more} more" if more else "")
    )


def night_note(night: SelectedNight) -> str | None:
    """What a reader must know of a suite's latest night before its cells, or None."""
    if night.outage:
        return (
            "an outage: the endpoints failed, nothing was compared; each scenario shows its "
            "last measured night"
        )
    if not night.compared:
        return (
            "nothing was compared on this night (run with --no-compare, a comparison that "
            "failed, or no usable baseline: the history does not record which); a scenario "
            "compared before shows its last compared verdict"
        )
    return None


# ---------------------------------------------------------------------------
# The HTML page's sections


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
    series = _series(suite, charted)
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


def _detail(
    v: CellView,
    anchor: str,
    charted: list[str],
    series: dict[tuple[str, str, str], Points],
    flagged: _Flags,
    span: Sequence[SelectedNight],
) -> CellDetail:
    """The section of ``v``: charts over the suite's nights ``span``, evidence, flags, bars, diff."""
    shown = [r.gating or r.verdict in FLAGGED for r in v.results]
    sequences, sequences_note = _sequences(v)
    diff_lines, diff_note = _diff(v) if v.flagged else ([], "")
    labels = night_labels([night.created_at for night, _ in flagged.shown])
    uncompared = NOT_COMPARED if v.last_compared else NO_BASELINE
    return CellDetail(
        cell=v,
        anchor=anchor,
        charts=[
            metric_chart(m, series[(v.scenario, v.model, m)], span, v.latest, uncompared)
            for m in charted
            if (v.scenario, v.model, m) in series
        ],
        evidence=[EvidenceRow.of(r) for r, s in zip(v.results, shown, strict=True) if s],
        more_evidence=[EvidenceRow.of(r) for r, s in zip(v.results, shown, strict=True) if not s],
        flags=[EvidenceRow.of(r, labels[night.created_at]) for night, r in flagged.shown],
        flags_more=flagged.total - len(flagged.shown),
        sequences=sequences,
        sequences_note=sequences_note,
        diff_lines=diff_lines,
        diff_note=diff_note,
        why_diff=[(_diff_class(x), x) for x in (v.why.request_diff if v.why else [])],
        why_rows=_why_rows(v.why),
    )


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


def _series(
    suite: SuiteSelection, charted: dict[CellKey, list[str]]
) -> dict[tuple[str, str, str], Points]:
    """(scenario, model, metric) -> its results over the suite's nights, oldest first."""
    wanted = {(cell.scenario, cell.model, m) for cell, ms in charted.items() for m in ms}
    hits: dict[tuple[str, str, str], list[int]] = {}  # -> rows of the suite's results, in order
    nights: list[SelectedNight] = []  # the night of each row
    texts: dict[str, list[Any]] = {name: [] for name in TEXT_FIELDS}
    arrays: dict[str, list[Any]] = {name: [] for name in (*NUMBER_FIELDS, *INTERVALS)}
    for night in suite.nights:
        keys = zip(
            night.result_column("scenario"),
            night.result_column("model"),
            night.result_column("metric"),
            strict=True,
        )
        offset = len(nights)
        for i, key in enumerate(keys):
            if key in wanted:
                hits.setdefault(key, []).append(offset + i)
        nights += [night] * night.result_count
        for name, values in texts.items():
            values += night.result_column(name)
        for name in NUMBER_FIELDS:
            arrays[name].append(night.result_floats(name))
        for name in INTERVALS:
            arrays[name].append(night.result_pairs(name))
    columns: dict[str, Any] = {
        **texts,
        **{
            name: np.concatenate(parts) if parts else np.empty((0, 2) if name in INTERVALS else 0)
            for name, parts in arrays.items()
        },
    }
    return {key: Points(rows, nights, columns) for key, rows in hits.items()}


@dataclass(frozen=True)
class _Flags:
    """A scenario x model's flagged results in the window: the newest built, how many in all."""

    shown: list[tuple[SelectedNight, MetricResult]]
    total: int


def _flags(suite: SuiteSelection) -> dict[CellKey, _Flags]:
    """Scenario x model -> its flagged results in the window, newest night first.

    Only the results the flag table lists (_MAX_FLAG_ROWS per scenario x model)
    are built; the others are counted from their verdicts.
    """
    found: dict[CellKey, list[tuple[SelectedNight, int]]] = {}
    for night in reversed(suite.nights):
        rows = zip(
            night.result_column("scenario"),
            night.result_column("model"),
            night.result_column("verdict"),
            strict=True,
        )
        for i, (scenario, model, verdict) in enumerate(rows):
            if verdict in FLAGGED:
                found.setdefault(CellKey(scenario, model), []).append((night, i))
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
    if rest:
        bars.append(
            Bar(
                f"{len(rest)} other sequences",
                sum(base.get(lab, 0.0) for lab in rest),
                sum(shares.get(lab, 0.0) for lab in rest),
            )
        )
    return bars, note


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


def _reasons(suite: SuiteSelection, outcome: str) -> list[ReasonRow]:
    """The suite's most common reasons for ``outcome`` over the window, with the latest night's count."""
    by_reason: dict[
        str, list[tuple[SelectedNight, str]]
    ] = {}  # reason -> (night, scenario) of each run
    for night in suite.nights:
        rows = zip(
            night.record_column("outcome"),
            night.record_column("reason"),
            night.record_column("scenario"),
            strict=True,
        )
        for got, reason, scenario in rows:
            if got == outcome:
                text = "(no reason given)" if reason is None else reason
                by_reason.setdefault(text, []).append((night, scenario))
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
