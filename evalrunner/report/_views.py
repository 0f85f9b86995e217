"""What every format shows of a suite's cells, built from its selected nights.

:class:`CellView` is one scenario x model on its latest night (every format
shows the current ones; :func:`absent_line` names the others). What only the HTML
page shows (charts, evidence tables, flags, tool-sequence bars, trajectory diffs and
the suite's skip and infra-error reasons) is built in :mod:`evalrunner.report._suite_view`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evalrunner.history._entry import Why
from evalrunner.report._format import (
    day,
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
from evalrunner.suite._metrics import rank
from evalrunner.suite._record import CellKey, Outcome, RunRecord

_MAX_ABSENT = 20


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
    def why_not_compared(self) -> str | None:
        """Why its night ran it without comparing it ("no baseline ...", "its baseline is
        for another configuration ... (its runs sent otherwise: temperature 0.0 -> 0.8)")."""
        return self.latest.why_not_compared(self.cell)

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
