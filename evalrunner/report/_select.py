"""Selection: the part of the history a report is about, by suite and night.

A report covers some suites, some models and a time window. :func:`select`
turns the history's typed entries into :class:`SuiteSelection` objects: the
suite's nights, oldest first, each holding the records and metric results of
the selected models, and each scenario x model's latest night.

A "night" is one ``created_at``: the entries of a suite written at that time
(several CI machines may write at the same second). A night counts only when
it holds runs or results of the selected models.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import itertools
import weakref
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from evalrunner import _clock as clock
from evalrunner.errors import ConfigError
from evalrunner.history._entry import BaselineSummary, HistoryEntry, Trajectory, Why
from evalrunner.history._store import History, Source
from evalrunner.history._values import Words
from evalrunner.report._totals import RecordTotals
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._record import OUTCOME_TRAITS, CellKey, RunRecord

_NEVER = _dt.datetime.min.replace(tzinfo=_dt.UTC)
if TYPE_CHECKING:
    from evalrunner.history._values import FloatArray

T = TypeVar("T")


def when(created_at: str) -> _dt.datetime:
    """The time of a night; one that does not parse sorts first (and is shown as written)."""
    try:
        return clock.parse(created_at)
    except ValueError:
        return _NEVER


def _bound(text: str, *, until: bool) -> _dt.datetime:
    try:
        value = clock.parse(text)
    except ValueError:
        raise ConfigError(
            f"{text!r} is not an ISO 8601 date or time (e.g. 2025-01-31 or 2025-01-31T02:00:00Z)"
        ) from None
    if until:  # exclusive bound: a date-only "until" includes the whole day
        date_only = len(text.strip()) <= 10
        value += _dt.timedelta(days=1) if date_only else _dt.timedelta(microseconds=1)
    return value


def check_window(since: str | None, until: str | None) -> None:
    """Refuse a window that is not a date or time, or that ends before it starts.

    Either would otherwise give an empty report, which reads as "no runs".
    """
    low = _bound(since, until=False) if since else None
    high = _bound(until, until=True) if until else None
    if low is not None and high is not None and low >= high:
        raise ConfigError(
            f"--since {since} is not before --until {until}: that window holds no night; swap them"
        )


def files_from(since: str | None) -> str | None:
    """The earliest night whose files a window from ``since`` needs, as history file names
    and ``created_at`` compare (UTC, ISO 8601): a day early, so a zone or a fraction of a
    second never leaves a night of the window unread (selecting applies it exactly)."""
    if not since:
        return None
    early = _bound(since, until=False).astimezone(_dt.UTC) - _dt.timedelta(days=1)
    return early.strftime("%Y-%m-%dT%H:%M:%SZ")


def _by_cell(items: Sequence[T], cell: Callable[[T], CellKey]) -> dict[CellKey, list[T]]:
    out: dict[CellKey, list[T]] = {}
    for item in items:
        out.setdefault(cell(item), []).append(item)
    return out


@functools.lru_cache(maxsize=1 << 16)
def cell_key(scenario: str, model: str) -> CellKey:
    """The one key of a scenario x model: each night's cell sets share it (a key apiece
    for every cell of every night of a year at 800 cells a night took 150 MB)."""
    return CellKey(scenario, model)


@functools.lru_cache(maxsize=64)
def _named_cells(
    scenarios: tuple[str, ...], models: tuple[str, ...], found: bytes
) -> frozenset[CellKey]:
    """The cells of ``found`` (scenario code x len(models) + model code, as int64 bytes):
    one set shared by the nights that ran the same cells (most nights of a year), not 800
    keys hashed into a new one each night."""
    width = max(len(models), 1)
    codes = np.frombuffer(found, dtype=np.int64).tolist()
    return frozenset(cell_key(scenarios[c // width], models[c % width]) for c in codes)


def _first(values: Sequence[T | None]) -> T | None:
    return next((v for v in values if v is not None), None)


@dataclass
class _Part:
    """The rows one entry contributes to a night: its kept records and results."""

    source: Source
    records: Sequence[int]
    results: Sequence[int]
    totals: RecordTotals


@dataclass
class SelectedNight:
    """One suite's entries written at one time, with the selected models' records and results.

    The rows stay in their files until asked for: ``record_column``/``result_column``
    read one field of every row (what trend charts and counts need over a year of
    nights), ``records``/``results`` build the rows (what the latest night shows).
    """

    created_at: str
    when: _dt.datetime
    parts: list[_Part] = field(default_factory=list)

    @functools.cached_property
    def stamp(self) -> float:
        """``when`` as a POSIX timestamp (charts place nights by it)."""
        return self.when.timestamp()

    @property
    def entries(self) -> list[HistoryEntry]:
        """The night's entries without their records and results (manifest, baselines, trajectories)."""
        return [p.source.head for p in self.parts]

    def _column(self, table: str, fieldname: str) -> list[Any]:
        """One field of the night's rows, as Python values, made anew for each caller: its
        files keep it compact (:class:`~evalrunner.history._values.Words`), and a year of
        nights' columns kept as lists took 400 MB at 800 cells a night."""
        parts = []
        for p in self.parts:
            column = p.source.column(table, fieldname)
            rows = p.records if table == "records" else p.results
            # rows are ascending: as many as the column holds means all of them
            parts.append(column if len(rows) == len(column) else [column[i] for i in rows])
        # the usual night, one part: its column itself, no copy
        return parts[0] if len(parts) == 1 else [v for p in parts for v in p]

    def result_words(self, fieldname: str) -> Words:
        """A text field of the night's metric results as codes into its distinct values:
        what a reader computing over a year of nights' rows reads (no list apiece)."""
        return self.words("verdicts", fieldname)

    def words(self, table: str, fieldname: str) -> Words:
        """A text field of the night's records or metric results as :class:`Words`."""
        parts = []
        for p in self.parts:
            words = p.source.words(table, fieldname)
            rows = p.records if table == "records" else p.results
            parts.append(
                words if len(rows) == len(words) else words.take(np.asarray(rows, dtype=np.int64))
            )
        return Words.joined(parts) if parts else Words([], np.zeros(0, dtype=np.int64))

    def _results_array(self, read: Callable[[Source], FloatArray], empty: FloatArray) -> FloatArray:
        """A field of the night's metric results as one array, handed over (not kept: the
        trend charts gather it once over every night)."""
        parts = []
        for p in self.parts:
            array = read(p.source)
            parts.append(array if len(p.results) == len(array) else array[list(p.results)])
        return np.concatenate(parts) if parts else empty

    def preload(self, table: str, fields: Sequence[str], pairs: Sequence[str] = ()) -> None:
        """Read these fields of the night's rows in one go (``pairs``: intervals), then let
        the files go: a reader going night by night holds one night's numbers at a time."""
        for p in self.parts:
            p.source.preload(table, fields, pairs)
            p.source.release()

    @property
    def record_totals(self) -> RecordTotals:
        """What the suite's charts sum of the night's records."""
        if len(self.parts) == 1:
            return self.parts[0].totals
        totals = [p.totals for p in self.parts]
        return RecordTotals(
            sum(t.prompt for t in totals),
            sum(t.completion for t in totals),
            np.concatenate([t.costs for t in totals]),
        )

    def record_column(self, fieldname: str) -> list[Any]:
        """One field of each of the night's records, in order."""
        return self._column("records", fieldname)

    def result_column(self, fieldname: str) -> list[Any]:
        """One field of each of the night's metric results, in order."""
        return self._column("verdicts", fieldname)

    def result_floats(self, fieldname: str) -> FloatArray:
        """A number field of the night's metric results as floats (missing: NaN)."""
        return self._results_array(lambda s: s.floats("verdicts", fieldname), np.empty(0))

    def result_pairs(self, fieldname: str, rows: Any = None) -> FloatArray:
        """An interval field of the night's metric results, (n, 2) (missing: NaN, NaN);
        ``rows`` (an index array): only those results' (the others' texts not parsed)."""
        if rows is not None and len(self.parts) == 1:
            part = self.parts[0]  # the usual night: its rows are its one file's
            kept = part.results
            every = isinstance(kept, range) and kept.start == 0 and kept.step == 1
            own = rows if every else np.asarray(kept, dtype=np.int64)[rows]
            return part.source.pairs("verdicts", fieldname, own.tolist())
        whole = self._results_array(lambda s: s.pairs("verdicts", fieldname), np.empty((0, 2)))
        return whole if rows is None else whole[rows]

    @property
    def record_count(self) -> int:
        return sum(len(p.records) for p in self.parts)

    @property
    def result_count(self) -> int:
        return sum(len(p.results) for p in self.parts)

    def result_rows(self, positions: Sequence[int]) -> list[MetricResult]:
        """The metric results at ``positions`` (in :meth:`result_column` order), built."""
        wanted = self._located(positions)
        out: list[MetricResult | None] = [None] * len(positions)
        for part, p in enumerate(self.parts):
            mine = [(row, k) for q, row, k in wanted if q == part]
            if mine:
                built = p.source.rows("verdicts", [row for row, _ in mine])
                p.source.release()  # read once: a year of opened footers is 100 MB
                for (_, k), r in zip(mine, built, strict=True):
                    out[k] = r
        return [r for r in out if r is not None]

    def _located(self, positions: Sequence[int]) -> list[tuple[int, int, int]]:
        """(part, row in its file, position asked) of each of ``positions``."""
        bounds = list(itertools.accumulate((len(p.results) for p in self.parts[:-1]), initial=0))
        wanted = []
        for k, pos in enumerate(positions):
            part = bisect.bisect_right(bounds, pos) - 1
            wanted.append((part, self.parts[part].results[pos - bounds[part]], k))
        return wanted

    @functools.cached_property
    def records(self) -> list[RunRecord]:
        return [r for p in self.parts for r in p.source.rows("records", p.records)]

    @functools.cached_property
    def results(self) -> list[MetricResult]:
        return [r for p in self.parts for r in p.source.rows("verdicts", p.results)]

    @functools.cached_property
    def cells(self) -> frozenset[CellKey]:
        """Every scenario x model with a record or a result this night."""
        return self._run_cells | self.compared_cells

    @functools.cached_property
    def _run_cells(self) -> frozenset[CellKey]:
        return self._cells("records")

    @functools.cached_property
    def compared_cells(self) -> frozenset[CellKey]:
        """The cells with a metric result this night: compared with a baseline."""
        return self._cells("verdicts")

    def _cells(self, table: str, rows: Any = None) -> frozenset[CellKey]:
        """The cells of a table's rows (of ``rows``, a mask or index array, where given),
        found over the rows' codes: a pair of texts per row (12,000 a night at 800 cells)
        cost the year's report seconds."""
        scenarios, models = self.words(table, "scenario"), self.words(table, "model")
        width = max(len(models.words), 1)
        pairs = scenarios.codes.astype(np.int64) * width + models.codes
        kept = pairs if rows is None else pairs[rows]
        found = np.flatnonzero(np.bincount(kept, minlength=1)).astype(np.int64)
        return _named_cells(tuple(scenarios.words), tuple(models.words), found.tobytes())

    def forget_cells(self) -> None:
        """Let the night's cell sets go (they are made again if asked for): a suite's
        selection reads them once, and a year of them at 800 cells a night is 35 MB."""
        for name in ("cells", "_run_cells", "compared_cells", "measured", "shown_for"):
            self.__dict__.pop(name, None)

    @property
    def compared(self) -> bool:
        """The night compared some cell with a baseline, of any model (selected or not).

        A night that compared nothing cannot say why: --no-compare, a comparison that
        failed, and no usable baseline for any cell write the same entry (no metric
        results, no baseline summaries).
        """
        return any(p.source.column("verdicts", "model") for p in self.parts)

    @functools.cached_property
    def measured(self) -> frozenset[CellKey]:
        """The cells this night measured: compared, or with a run that reached the agent.
        A cell whose every run the endpoint failed measured nothing of the agent."""
        outcomes = self.words("records", "outcome")
        behaviour = np.array([OUTCOME_TRAITS[o].behaviour for o in outcomes.words], dtype=bool)
        if behaviour.all():  # the usual night: every run reached the agent
            return self.compared_cells | self._run_cells
        return self.compared_cells | self._cells("records", behaviour[outcomes.codes])

    @functools.cached_property
    def shown_for(self) -> frozenset[CellKey]:
        """The cells for which this night is the one to show: those it measured, but on an
        outage night only those it compared (none: nothing was), since its runs that
        reached the agent before the endpoint died were compared with nothing."""
        return self.compared_cells if self.outage else self.measured

    @property
    def outage(self) -> bool:
        """The night was an outage: the endpoints failed, so nothing was compared."""
        return any(p.source.outage for p in self.parts)

    @property
    def broken_checks(self) -> list[str]:
        """One line per check that failed itself on runs of this night (they were judged
        without it): the terminal said it once; a reader of the report must see it too."""
        counts: dict[tuple[str, str], int] = {}
        for entry in self.entries:
            for scenario, checks in entry.broken_checks.items():
                for name, runs in checks.items():
                    counts[(scenario, name)] = counts.get((scenario, name), 0) + runs
        return [
            f"scenario {scenario}: "
            f"{'the judge' if name == 'judge' else f'code check {name}'} failed itself on "
            f"{runs} run{'s' if runs != 1 else ''}; they were judged without it"
            for (scenario, name), runs in sorted(counts.items())
        ]

    @functools.cached_property
    def records_by_cell(self) -> dict[CellKey, list[RunRecord]]:
        return _by_cell(self.records, lambda r: r.cell)

    @functools.cached_property
    def results_by_cell(self) -> dict[CellKey, list[MetricResult]]:
        return _by_cell(self.results, lambda r: CellKey(r.scenario, r.model))

    def baseline(self, cell: CellKey) -> BaselineSummary | None:
        """The summary of the baseline this night compared ``cell`` with."""
        return _first([e.baselines.get(cell) for e in self.entries])

    def typical(self, cell: CellKey) -> Trajectory | None:
        """The normalised trajectory of a typical run of ``cell`` this night."""
        return _first([e.typical.get(cell) for e in self.entries])

    def baseline_typical(self, cell: CellKey) -> Trajectory | None:
        """The baseline's typical normalised trajectory of ``cell``."""
        return _first([e.baseline_typical.get(cell) for e in self.entries])

    def why(self, cell: CellKey) -> Why | None:
        """Why ``cell`` changed, when it failed this night."""
        return _first([e.causes.get(cell) for e in self.entries])

    def why_not_compared(self, cell: CellKey) -> str | None:
        """Why this night ran ``cell`` but did not compare it (None: it did, or the night
        predates the history saying so)."""
        return _first([e.not_compared.get(cell) for e in self.entries])


@dataclass
class SuiteSelection:
    """One suite's selected nights, oldest first, and each scenario x model's latest night.

    ``latest`` holds every cell the window ever ran; only :attr:`current` ones are the
    suite's now. A cell with no run in the suite's latest night (not even an infra
    error) was removed from the suite, renamed, or not selected for that night: its
    verdict is history, not the suite's state (:attr:`absent`).
    """

    name: str
    nights: list[SelectedNight]
    latest: dict[CellKey, SelectedNight]
    compared: dict[CellKey, SelectedNight] = field(default_factory=dict)
    """Each cell's last night with a metric result (a night that compared it)."""

    @property
    def night(self) -> SelectedNight:
        """The suite's latest night."""
        return self.nights[-1]

    @property
    def current(self) -> dict[CellKey, SelectedNight]:
        """The cells of the suite's latest night, each with the night it shows."""
        return {cell: n for cell, n in self.latest.items() if cell in self.night.cells}

    @property
    def absent(self) -> dict[CellKey, SelectedNight]:
        """The cells the suite's latest night did not run at all, each with its last night."""
        return {cell: n for cell, n in self.latest.items() if cell not in self.night.cells}


@dataclass(frozen=True)
class _Wanted:
    """What a selection keeps: suites and models (None: all), nights in [low, high)."""

    suites: frozenset[str] | None
    models: frozenset[str] | None
    low: _dt.datetime | None
    high: _dt.datetime | None

    def night(self, suite: str, t: _dt.datetime) -> bool:
        if self.suites is not None and suite not in self.suites:
            return False
        return (self.low is None or t >= self.low) and (self.high is None or t < self.high)

    def model(self, name: str) -> bool:
        return self.models is None or name in self.models


RECORD_COLUMNS = ("scenario", "model", "outcome", "reason")
"""The texts the report reads of every record of every night, when it selects them (kept:
the HTML, Markdown and JUnit reports select in turn)."""
RECORD_NUMBERS = ("prompt_tokens", "completion_tokens", "cost_usd")
"""The numbers the HTML report sums of every record of every night: read with the night's
texts when it is selected and summed at once (:class:`RecordTotals`), so a year of them is
never held and no file is opened twice for them."""
RESULT_COLUMNS = ("scenario", "model", "metric", "kind", "verdict", "effect_label")
"""The texts the report reads of every metric result of every night (trend charts, flags)."""


def _kept(source: Source, wanted: _Wanted, held: set[str] | None) -> Sequence[int]:
    """The source's records of wanted models not already held by an earlier entry
    (``held``: the run ids seen so far of the entries that share its start; None: it has
    that start to itself, so all of its runs are new and their ids are not read)."""
    models = source.column("records", "model")
    if held is None:
        if wanted.models is None:
            return range(len(models))  # the usual night: every run new, every model wanted
        return [i for i, model in enumerate(models) if wanted.model(model)]
    kept = []
    for i, (run_id, model) in enumerate(
        zip(source.column("records", "run_id"), models, strict=True)
    ):
        if run_id not in held and wanted.model(model):
            held.add(run_id)
            kept.append(i)
    return kept


def _nights(history: History, wanted: _Wanted) -> list[SelectedNight]:
    """The wanted entries grouped by suite and ``created_at``, in order of writing time.

    A run counts once: entries written by an earlier evalrunner may repeat the
    runs of a resumed results directory (same manifest start, same run id); the
    first entry that holds a run keeps it.
    """
    chosen = [
        source
        for source in sorted(history.sources, key=lambda s: s.created_at)
        if wanted.night(source.suite, when(source.created_at))
    ]
    starts = Counter((source.suite, source.started_at) for source in chosen)
    seen: dict[tuple[str, str], set[str]] = {
        start: set() for start, count in starts.items() if count > 1
    }
    nights: dict[tuple[str, str], SelectedNight] = {}
    for source in chosen:
        source.preload("records", (*RECORD_COLUMNS, *RECORD_NUMBERS))
        source.preload("verdicts", RESULT_COLUMNS)
        source.release()  # read once: a year of opened files would hold 110 MB
        night = nights.setdefault(
            (source.suite, source.created_at),
            SelectedNight(source.created_at, when(source.created_at)),
        )
        models = source.column("verdicts", "model")
        results: Sequence[int] = (
            range(len(models))
            if wanted.models is None
            else [i for i, model in enumerate(models) if model in wanted.models]
        )
        kept = _kept(source, wanted, seen.get((source.suite, source.started_at)))
        night.parts.append(_Part(source, kept, results, RecordTotals.of(source, kept)))
    return list(nights.values())


def select(
    history: History,
    suites: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[SuiteSelection]:
    """The selected suites, by name, each with its selected nights.

    ``since``/``until`` are ISO 8601 dates or times (UTC when no zone is given);
    a date-only ``until`` includes that whole day. A bad one is a ConfigError.
    Selected once per history and selection: the HTML, Markdown and JUnit reports of one
    `evalrunner report` share it (each selecting anew was a fifth of its CPU).
    """
    key = (
        len(history.sources),
        tuple(suites) if suites else None,
        tuple(models) if models else None,
        since,
        until,
    )
    made = _SELECTED.setdefault(history, {})
    if key not in made:
        made[key] = _select(history, suites, models, since, until)
    return made[key]


_SELECTED: weakref.WeakKeyDictionary[History, dict[Hashable, list[SuiteSelection]]] = (
    weakref.WeakKeyDictionary()
)
"""Each history's selections, for as long as the history lives."""


def _select(
    history: History,
    suites: Sequence[str] | None,
    models: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> list[SuiteSelection]:
    wanted = _Wanted(
        suites=frozenset(suites) if suites else None,
        models=frozenset(models) if models else None,
        low=_bound(since, until=False) if since else None,
        high=_bound(until, until=True) if until else None,
    )
    by_suite: dict[str, list[SelectedNight]] = {}
    for night in _nights(history, wanted):
        if night.record_count or night.result_count:
            by_suite.setdefault(night.parts[0].source.suite, []).append(night)
    out = []
    for suite in sorted(by_suite):
        ordered = sorted(by_suite[suite], key=lambda n: (n.when, n.created_at))
        out.append(_suite_selection(suite, ordered))
    return out


def _suite_selection(suite: str, ordered: Sequence[SelectedNight]) -> SuiteSelection:
    latest: dict[CellKey, SelectedNight] = {}
    compared: dict[CellKey, SelectedNight] = {}
    for night in ordered:
        # A night the endpoint failed a cell whole shows nothing of the agent, and an
        # outage night compared nothing: the cell keeps its last measured night ("as
        # of ..."), so an outage does not turn a regression into "no baseline". In set
        # operations, which reuse each key's stored hash (800 cells x 365 nights of them).
        shown = (night.cells & night.shown_for) | night.cells.difference(latest)
        latest.update(dict.fromkeys(shown, night))
        compared.update(dict.fromkeys(night.compared_cells, night))
    for night in ordered[:-1]:
        night.forget_cells()
    return SuiteSelection(suite, list(ordered), latest, compared)


def selection_text(
    suites: Sequence[str] | None, models: Sequence[str] | None, since: str | None, until: str | None
) -> str:
    """'suites: a, b; all models; window: 2025-01-01 to latest'."""
    parts = [
        f"suites: {', '.join(suites)}" if suites else "all suites",
        f"models: {', '.join(models)}" if models else "all models",
    ]
    if since or until:
        parts.append(f"window: {since or 'start'} to {until or 'latest'}")
    return "; ".join(parts)
