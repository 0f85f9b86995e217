"""Comparing runs: tonight with the committed baselines, or one results directory with another.

Both read and pair records here and make one statistics call,
:func:`evalrunner.stats.compare_night`, for the whole night, so the
multiple-comparison correction spans every scenario x model compared. A
baseline's accepted nights stay separate (the engine treats nights as clusters),
and the evidence accumulated since the baseline was accepted comes in from the
history and goes back out with the results.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner._next import NextStep, Said
from evalrunner.baseline._file import Baseline, baseline_models, baseline_path, load_baseline
from evalrunner.endpoints._endpoints import LOCAL
from evalrunner.suite._record import (
    CellKey,
    RunRecord,
    group_records,
    measured_rows,
    rows_of,
    unmeasured_rows,
)
from evalrunner.suite._settings import Suite
from evalrunner.suite._tolerance import Tolerance

LATENCY = "latency_s"

if TYPE_CHECKING:
    from evalrunner.stats._evidence_state import EvidenceState
    from evalrunner.stats._metric_result import MetricResult
    from evalrunner.stats._reference import CellReference

__all__ = [
    "CellPair",
    "Comparison",
    "compare_pairs",
    "compare_records",
    "compare_with_baselines",
    "row_notes",
]


@dataclass(frozen=True)
class CellPair:
    """One scenario x model to compare: reference nights, candidate runs, and how strictly."""

    cell: CellKey
    """The name results carry (for two models compared, ``model`` reads 'a -> b')."""
    nights: Sequence[Sequence[RunRecord]]
    """The reference's nights, oldest first (a results directory is one night)."""
    night: Sequence[RunRecord]
    tolerance: Tolerance
    anchor: str = ""
    """Identifies the accepted baseline: accumulated evidence resets when it changes."""
    evidence: EvidenceState | None = None
    """The evidence accumulated against ``anchor`` before tonight (from the history)."""
    rows: frozenset[str] | None = None
    """A dataset scenario's rows tonight: the reference's runs of other rows are left out."""

    @property
    def drops_latency(self) -> bool:
        """Latency against the embedded model is left out unless the tolerance gates it: a
        CPU server on a shared machine times the machine."""
        on_local = LOCAL in (self.cell.model, *self.cell.model.split(" -> "))
        return on_local and not self.tolerance.is_gating(LATENCY)


@dataclass(frozen=True)
class Escalation:
    """Escalated cells judged twice: on the runs they ended with (the verdict) and on their
    planned runs alone, the rest of the night as it was. A cell whose verdict (the worst of
    its gating metrics', as the summary shows it) is the same both ways paid for runs that
    changed nothing."""

    cells: int
    """Cells that ran past their planned runs."""
    runs: int
    """The runs they made past their plans."""
    changed: tuple[CellKey, ...]
    """Escalated cells whose verdict is not the one their planned runs alone get."""

    def line(self) -> str:
        same = self.cells - len(self.changed)
        cells = f"{self.cells} cell{'s' if self.cells != 1 else ''}"
        return (
            f"escalated: {cells} (+{self.runs} runs); the extra runs changed a "
            f"verdict in {len(self.changed)}, would not have helped: {same} (the same verdicts "
            "at their planned runs)"
        )


@dataclass
class Comparison:
    """Tonight against the baselines: metric results, evidence to keep, and notes.

    ``notes`` say why some pairs were not compared, and which baselines are too
    young to gate (one line each)."""

    results: list[MetricResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baselines: dict[CellKey, Baseline] = field(default_factory=dict)
    evidence: dict[CellKey, EvidenceState] = field(default_factory=dict)
    """Each compared cell's evidence after tonight: the history stores it for tomorrow."""
    unfit: list[CellKey] = field(default_factory=list)
    """Cells whose baseline exists but is for another model or configuration (not compared)."""
    missing: list[CellKey] = field(default_factory=list)
    """Cells run tonight with no baseline file (not compared)."""
    other_models: list[str] = field(default_factory=list)
    """When no cell had a baseline: the models the suite's baselines are for."""
    stale: dict[CellKey, Baseline] = field(default_factory=dict)
    """Unfit cells whose baseline is for tonight's model but another configuration: what
    their runs send differently can be read from it (``explain_night``'s request)."""
    why_not: dict[CellKey, str] = field(default_factory=dict)
    """Each cell run but not compared (unfit or missing), and why, in one line."""
    escalation: Escalation | None = None
    """What the runs escalation added changed; None where no cell ran past its plan."""

    @property
    def regressions(self) -> list[MetricResult]:
        """Gating metrics that fail the night (a regression, or a two-sided change)."""
        return [r for r in self.results if r.fails_night]


def compare_pairs(
    pairs: Sequence[CellPair], references: Mapping[CellKey, CellReference] | None = None
) -> Comparison:
    """Every pair's metric results and evidence; verdicts corrected across all pairs together.

    ``references``: the fit of these pairs' baselines and evidence when the caller already
    made it (the night's escalation did); see :func:`evalrunner.stats.compare_night`.
    """
    from evalrunner.stats._comparison import CellNight, compare_night
    from evalrunner.stats._reference import CellBaseline

    cells = [
        CellNight(
            CellBaseline(p.cell, p.tolerance, [list(n) for n in p.nights], p.anchor, p.rows),
            list(p.night),
            p.evidence,
        )
        for p in pairs
    ]
    night = compare_night(cells, references)
    dropped = {p.cell for p in pairs if p.drops_latency}
    return Comparison(
        results=[
            r
            for r in night.results
            if not (r.metric == LATENCY and CellKey(r.scenario, r.model) in dropped)
        ],
        notes=night.notes,
        evidence={c.key: c.evidence for c in night.cells},
    )


def _escalation(
    pairs: Sequence[CellPair],
    references: Mapping[CellKey, CellReference] | None,
    comparison: Comparison,
    planned: Mapping[str, int],
) -> Escalation | None:
    """Judge escalated cells again on their planned runs (everything else as tonight)."""
    plan = {
        p.cell: planned[p.cell.scenario]
        for p in pairs
        if len(p.night) > planned.get(p.cell.scenario, len(p.night))
    }
    if not plan:
        return None
    at_plan = compare_pairs([_cut(p, plan.get(p.cell)) for p in pairs], references)
    ended, planned_verdicts = _cell_verdicts(comparison), _cell_verdicts(at_plan)
    return Escalation(
        cells=len(plan),
        runs=sum(len(p.night) - plan[p.cell] for p in pairs if p.cell in plan),
        changed=tuple(sorted(c for c in plan if ended.get(c) != planned_verdicts.get(c))),
    )


def _cut(pair: CellPair, runs: int | None) -> CellPair:
    """The pair with tonight's runs cut to its first ``runs`` (None: as it is)."""
    if runs is None:
        return pair
    return replace(pair, night=[r for r in pair.night if r.index < runs])


def _cell_verdicts(comparison: Comparison) -> dict[CellKey, str]:
    """Each cell's verdict: the worst of its gating metrics' (as the summary shows it)."""
    from evalrunner.stats._metric_result import VERDICT_ORDER

    out: dict[CellKey, str] = {}
    for r in comparison.results:
        cell = CellKey(r.scenario, r.model)
        if r.gating and VERDICT_ORDER.index(r.verdict) < VERDICT_ORDER.index(out.get(cell, "ok")):
            out[cell] = r.verdict
    return out


def _usable_baseline(
    root: Path,
    suite: str,
    cell: CellKey,
    fingerprint: str,
    loaded: Mapping[CellKey, Baseline] | None,
    night_dir: Path | None = None,
) -> tuple[Baseline | None, str, bool]:
    """The cell's baseline, why it does not fit tonight's runs (empty: it does), and whether
    it is there but does not fit (then the baseline is returned only where it is for
    tonight's model, with another configuration).
    ``loaded``: the suite's baselines as read before the night (None: read the file now).
    ``night_dir``: tonight's results, which the note offers to accept."""
    path = baseline_path(root, suite, cell.scenario, cell.model)
    scope = ("--scenario", cell.scenario, "--model", cell.model)
    refresh = NextStep("baseline", suite, scope)
    if loaded is not None:
        baseline = loaded.get(cell)
    else:
        baseline = load_baseline(path) if path.exists() else None
    if baseline is None:
        create = (
            Said(
                "create one from tonight's runs with: ",
                NextStep("baseline", suite, ("--from", str(night_dir), *scope)),
                ", or with a night of its own: ",
                refresh,
            )
            if night_dir is not None
            else Said("create one with: ", refresh)
        )
        return None, Said(f"{cell}: no baseline at {path}; ", create), False
    if baseline.model != cell.model:
        why = Said(
            f"{cell}: not compared, {path} is for model {baseline.model!r}; refresh with: ",
            refresh,
        )
        return None, why, True
    if baseline.fingerprint != fingerprint:
        why = Said(
            f"{cell}: not compared, the scenario's configuration changed since {path} "
            f"was recorded (fingerprint {baseline.fingerprint} -> {fingerprint}); refresh with: ",
            refresh,
        )
        return baseline, why, True  # stale: kept to say what its runs send differently
    return baseline, "", False


_MISSING_SHOWN = 3
"""Cells without a baseline named one note each up to this many; more are one note."""


def _missing_notes(
    missing: list[tuple[CellKey, str]], where: Path, suite: str, night_dir: Path | None
) -> list[str]:
    """A note per cell without a baseline, or one for all of them: a first night of a big
    suite printed 80 notes that said the same (a review)."""
    if len(missing) <= _MISSING_SHOWN:
        return [note for _, note in missing]
    named = ", ".join(str(cell) for cell, _ in missing[:_MISSING_SHOWN])
    night = str(night_dir) if night_dir is not None else "NIGHT"
    return [
        Said(
            f"{len(missing)} scenario × models have no baseline under {where}/ ({named} and "
            f"{len(missing) - _MISSING_SHOWN} more); create them from a night that ran them with ",
            NextStep("baseline", suite, ("--from", night)),
            ", or with a night of their own: ",
            NextStep("baseline", suite),
        )
    ]


def compare_with_baselines(
    suite: Suite,
    records: Sequence[RunRecord],
    root: Path,
    *,
    fingerprints: Mapping[str, str] | None = None,
    evidence: Mapping[CellKey, EvidenceState] | None = None,
    loaded: Mapping[CellKey, Baseline] | None = None,
    references: Mapping[CellKey, CellReference] | None = None,
    night_dir: Path | None = None,
    planned: Mapping[str, int] | None = None,
) -> Comparison:
    """Compare each scenario x model of tonight with its baseline file under ``root``.

    ``fingerprints`` (scenario id -> fingerprint, from the results manifest)
    say what configuration tonight's runs used; by default the suite's.
    ``evidence``: each cell's accumulated evidence from the history's latest entry
    (a state for another anchor is ignored: the baseline was accepted anew).
    ``loaded`` and ``references``: the baselines the night read before its runs and
    their fit, so a night reads and fits them once. ``planned``: each scenario's runs per
    cell in tonight's plan, to say what escalation past them changed.
    """
    found = _sorted_cells(suite, records, root, fingerprints, loaded, night_dir, evidence)
    notes, baselines, pairs, missing = found.notes, found.baselines, found.pairs, found.missing
    comparison = compare_pairs(pairs, references)
    comparison.escalation = _escalation(pairs, references, comparison, planned or {})
    comparison.notes[:0] = [
        *_missing_notes(missing, root / suite.name, suite.name, night_dir),
        *notes,
    ]
    comparison.baselines, comparison.unfit, comparison.stale = baselines, found.unfit, found.stale
    comparison.missing = [cell for cell, _ in missing]
    comparison.why_not = found.why_not
    if not baselines:  # "no baselines yet" would be wrong when other models have them
        comparison.other_models = _other_models(root, suite.name, records)
    return comparison


def _sorted_cells(
    suite: Suite,
    records: Sequence[RunRecord],
    root: Path,
    fingerprints: Mapping[str, str] | None,
    loaded: Mapping[CellKey, Baseline] | None,
    night_dir: Path | None,
    evidence: Mapping[CellKey, EvidenceState] | None,
) -> _Found:
    """Tonight's cells, each with the baseline it is compared with, or why none."""
    found = _Found()
    scenarios = {s.id: s for s in suite.scenarios}
    for cell, night in group_records(records).items():
        scenario = scenarios.get(cell.scenario)
        if scenario is None:
            continue
        fingerprint = (fingerprints or {}).get(cell.scenario) or scenario.fingerprint
        baseline, why_not, stale = _usable_baseline(
            root, suite.name, cell, fingerprint, loaded, night_dir
        )
        if baseline is None or stale:
            found.unusable(cell, baseline, why_not, stale)
            continue
        found.baselines[cell] = baseline
        found.notes += _unmeasured_notes(cell, night)
        found.pairs.append(_pair(cell, night, scenario.tolerance, baseline, evidence))
    return found


@dataclass
class _Found:
    """Tonight's cells sorted by their baselines: compared (with their pairs), unfit (for
    another model or configuration; ``stale``: those for tonight's model), or missing."""

    notes: list[str] = field(default_factory=list)
    baselines: dict[CellKey, Baseline] = field(default_factory=dict)
    pairs: list[CellPair] = field(default_factory=list)
    unfit: list[CellKey] = field(default_factory=list)
    stale: dict[CellKey, Baseline] = field(default_factory=dict)
    missing: list[tuple[CellKey, str]] = field(default_factory=list)
    why_not: dict[CellKey, str] = field(default_factory=dict)

    def unusable(self, cell: CellKey, baseline: Baseline | None, why: str, stale: bool) -> None:
        self.why_not[cell] = why
        if not stale:
            self.missing.append((cell, why))
            return
        self.notes.append(why)
        self.unfit.append(cell)
        if baseline is not None:
            self.stale[cell] = baseline


def _pair(
    cell: CellKey,
    night: Sequence[RunRecord],
    tolerance: Tolerance,
    baseline: Baseline,
    evidence: Mapping[CellKey, EvidenceState] | None,
) -> CellPair:
    """Tonight's runs of a cell beside its baseline's nights, with the evidence so far."""
    return CellPair(
        cell,
        [n.records for n in baseline.nights],
        night,
        tolerance,
        baseline.anchor,
        (evidence or {}).get(cell),
        measured_rows(night),
    )


def _other_models(root: Path, suite: str, records: Sequence[RunRecord]) -> list[str]:
    """The models the suite has baselines for that tonight did not run."""
    tonight = {r.model for r in records}
    return [m for m in baseline_models(root, suite) if m not in tonight]


_ROWS_SHOWN = 3
"""Unmeasured rows named in a cell's note; more are counted."""


def _unmeasured_notes(cell: CellKey, night: Sequence[RunRecord]) -> list[str]:
    """One line per cell: an endpoint that always fails on some inputs (a content filter)
    shrank the suite night after night while the night said nothing was flagged."""
    unmeasured = unmeasured_rows(night)
    if not unmeasured:
        return []
    names = list(unmeasured)
    runs = sum(unmeasured.values())
    named = ", ".join(names[:_ROWS_SHOWN])
    if len(names) > _ROWS_SHOWN:
        named += f" and {len(names) - _ROWS_SHOWN} more"
    which, its = ("row", "its row was") if len(names) == 1 else ("rows", "those rows were")
    return [
        f"dataset scenario {cell}: {which} {named} not measured tonight ({runs} of {runs} runs "
        f"infra_error); {its} left out of the paired comparison, the baseline's runs too"
    ]


def _rows_differ(
    a: dict[CellKey, list[RunRecord]], b: dict[CellKey, list[RunRecord]]
) -> Iterator[tuple[CellKey, frozenset[str], frozenset[str]]]:
    """The dataset cells whose two sides ran different rows: (cell, A's rows, B's rows)."""
    for cell in sorted(a.keys() & b.keys()):
        rows_a, rows_b = rows_of(a[cell]), rows_of(b[cell])
        if rows_a is not None and rows_b is not None and rows_a != rows_b:
            yield cell, rows_a, rows_b


def _on_common_rows(
    a: dict[CellKey, list[RunRecord]], b: dict[CellKey, list[RunRecord]]
) -> tuple[dict[CellKey, list[RunRecord]], dict[CellKey, list[RunRecord]]]:
    """Both sides' runs of a dataset scenario cut to the rows both ran: rows differ in how
    hard they are, so rows run on one side only would pass for a change of the agent."""
    a, b = dict(a), dict(b)
    for cell, rows_a, rows_b in list(_rows_differ(a, b)):
        both = rows_a & rows_b
        a[cell] = [r for r in a[cell] if r.row in both]
        b[cell] = [r for r in b[cell] if r.row in both]
        if not both:
            del a[cell], b[cell]
    return a, b


def row_notes(baseline: Sequence[RunRecord], candidate: Sequence[RunRecord]) -> list[str]:
    """For :func:`compare_records`' caller: the dataset scenarios compared on fewer rows
    than a side ran (only the rows both ran are compared)."""
    return [
        f"{cell.scenario} [{cell.model}]: compared on the {len(rows_a & rows_b)} dataset rows "
        f"both ran (A ran {len(rows_a)}, B {len(rows_b)}): a row's difficulty is not the "
        "agent's change"
        for cell, rows_a, rows_b in _rows_differ(group_records(baseline), group_records(candidate))
    ]


def compare_records(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord]
) -> list[MetricResult]:
    """Compare two record sets scenario by scenario (``evalrunner compare A B``), default tolerances.

    Each side is one night, and A is taken as a baseline old enough to gate: the
    user chose it. A dataset scenario is compared on the rows both sides ran
    (:func:`row_notes` says where that left rows out). Cells pair by scenario and model; when none match (A/B of a model
    swap), by scenario alone, each result's model reading 'a -> b'.
    """
    a, b = _on_common_rows(group_records(baseline), group_records(candidate))
    tolerance = Tolerance(min_baseline_nights=1)
    pairs = [CellPair(cell, [a[cell]], b[cell], tolerance) for cell in sorted(a.keys() & b.keys())]
    if not pairs:
        b_by_scenario = {cell.scenario: cell for cell in b}
        pairs = [
            CellPair(
                CellKey(cell.scenario, f"{cell.model} -> {b_by_scenario[cell.scenario].model}"),
                [a[cell]],
                b[b_by_scenario[cell.scenario]],
                tolerance,
            )
            for cell in sorted(a)
            if cell.scenario in b_by_scenario
        ]
    return compare_pairs(pairs).results
