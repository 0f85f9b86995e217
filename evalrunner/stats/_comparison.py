"""Compare a whole night: every cell's runs against its anchored baseline, in one call.

The CLI's ``run``, the calibration script and the tests call :func:`compare_night`
and nothing else, so what the calibration measures is what users get.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrunner.stats._evidence import Accumulated, add_night, metric_alpha, restarted, start
from evalrunner.stats._evidence_state import EvidenceState
from evalrunner.stats._formulas import FloatArray
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._measured import Measured
from evalrunner.stats._metric_result import MetricResult
from evalrunner.stats._observe import LOG_OFFSETS, REPORTED, Runs
from evalrunner.stats._power import mde, runs_needed
from evalrunner.stats._reference import CellBaseline, CellReference, MetricReference, fit_references
from evalrunner.stats._verdict import finalize
from evalrunner.suite._metrics import EFFECT_LABELS, NoteFacts, metric
from evalrunner.suite._record import CellKey, Outcome, RunRecord


@dataclass(frozen=True)
class CellNight:
    """One cell tonight: its baseline, tonight's runs, and its evidence so far (None: none yet)."""

    baseline: CellBaseline
    tonight: Sequence[RunRecord]
    evidence: EvidenceState | None = None

    @property
    def key(self) -> CellKey:
        return self.baseline.key


@dataclass(frozen=True)
class CellComparison:
    """One cell's results tonight and what to store for the next night."""

    key: CellKey
    results: list[MetricResult]
    evidence: EvidenceState
    """The evidence after tonight: history stores it and passes it back tomorrow."""
    gating: bool
    """False when the baseline is too young to gate (``notes`` says so in one line)."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NightComparison:
    """The night: every cell, verdicts decided across all of them."""

    cells: list[CellComparison]

    @property
    def results(self) -> list[MetricResult]:
        return [r for cell in self.cells for r in cell.results]

    @property
    def failures(self) -> list[MetricResult]:
        """Gating metrics flagged as a regression or a change: the night fails."""
        return [r for r in self.results if r.fails_night]

    @property
    def notes(self) -> list[str]:
        return [note for cell in self.cells for note in cell.notes]


@dataclass(frozen=True)
class _Draft:
    """One metric of one cell before the night's family is known."""

    ref: MetricReference
    measured: Measured | None
    why: str | None


def measure(ref: MetricReference, tonight: Runs, level: float) -> Measured | str:
    """Tonight's numbers for one metric, or why there are none."""
    values = ref.coding.values(tonight)
    if not ref.n or not values.size:
        sides = [s for s, n in (("in the baseline", ref.n), ("tonight", values.size)) if not n]
        return f"no {metric(ref.name).covers} {' or '.join(sides)}"
    kind = KINDS[ref.kind]
    # A reported metric's zero is a value (no cache read): not reporting it is None.
    if kind.zero_unrecorded and ref.name not in REPORTED and ref.n and _all_zero(ref, values):
        return f"{ref.name} is all zero on one side (not recorded?)"
    return kind.measure(ref, values, level)


def _all_zero(ref: MetricReference, values: FloatArray) -> bool:
    zero = math.log(LOG_OFFSETS[ref.name])
    base_zero = all((v <= zero + 1e-12).all() for v in ref.nights)
    return base_zero != bool((values <= zero + 1e-12).all())


def compare_night(
    cells: Sequence[CellNight], references: Mapping[CellKey, CellReference] | None = None
) -> NightComparison:
    """Compare every cell tonight with its baseline; verdicts are decided across the night.

    Benjamini-Hochberg runs over the night's gating tests (one family) and its
    diagnostics (another); MDE and runs needed are computed at the level a lone
    change must reach in that family. Evidence accumulates per cell and resets when
    a cell's anchor changes. ``references``: the fit of these cells' baselines
    (:func:`fit_references`, given the same evidence) when the caller already made it
    for escalation; the same baselines and evidence give the same fit. A fit of another set
    of cells is not used (the suite-wide pooling depends on the set).
    """
    refs = _fitted(cells, references)
    drafts = {c.key: _drafts(refs[c.key], Runs.of(c.tonight)) for c in cells}
    family = _family_sizes(drafts, refs)
    out = [_cell(c, refs[c.key], drafts[c.key], family) for c in cells]
    results = finalize(
        [r for cell in out for r in cell.results],
        {cell.key.scenario: refs[cell.key].tolerance for cell in out},
    )
    final, i = [], 0
    for c, cell in zip(cells, out, strict=True):
        final.append(_decided(c, cell, refs[cell.key], results[i : i + len(cell.results)]))
        i += len(cell.results)
    return NightComparison(final)


def _decided(
    c: CellNight, cell: CellComparison, ref: CellReference, results: list[MetricResult]
) -> CellComparison:
    """A cell with its verdicts decided across the night: inconclusive ones say what is
    known, and the evidence of a metric that failed the night restarts."""
    known = [_known(r, ref.tolerance.fdr_q, ref.young) for r in results]
    before = start(c.evidence, ref.anchor, ref.tolerance.season_nights)
    failed = [r.metric for r in known if r.fails_night]
    evidence = restarted(cell.evidence, failed, before)
    return CellComparison(cell.key, known, evidence, cell.gating, cell.notes)


def _fitted(
    cells: Sequence[CellNight], references: Mapping[CellKey, CellReference] | None
) -> Mapping[CellKey, CellReference]:
    """``references`` where they are a fit of these cells, else a fit made here."""
    if references is not None and _fits(references, cells):
        return references
    return fit_references([c.baseline for c in cells], {c.key: c.evidence for c in cells})


def _fits(refs: Mapping[CellKey, CellReference], cells: Sequence[CellNight]) -> bool:
    """Whether ``refs`` is a fit of these cells: one over another set of cells pools the
    suite's night effect differently, and one over other dataset rows asks other questions."""
    return set(refs) == {c.key for c in cells} and all(
        refs[c.key].rows == c.baseline.rows for c in cells
    )


def _family_sizes(
    drafts: Mapping[CellKey, list[_Draft]], refs: Mapping[CellKey, CellReference]
) -> dict[bool, int]:
    """Tests tonight in the gating family (True) and the diagnostic one (False)."""
    family = {True: 0, False: 0}
    for key, found in drafts.items():
        for d in found:
            if d.measured is not None:
                family[_gates(refs[key], d.ref.name)] += 1
    return family


def _gates(ref: CellReference, metric: str) -> bool:
    return ref.tolerance.is_gating(metric) and not ref.young


def _drafts(ref: CellReference, tonight: Runs) -> list[_Draft]:
    level = ref.tolerance.ci_level
    out = []
    for coding in ref.codings(tonight):
        mref = ref.reference(coding)
        found = measure(mref, tonight, level)
        out.append(
            _Draft(mref, None, found) if isinstance(found, str) else _Draft(mref, found, None)
        )
    return out


def _cell(
    c: CellNight, ref: CellReference, drafts: list[_Draft], family: dict[bool, int]
) -> CellComparison:
    tol = ref.tolerance
    tonight = Runs.of(c.tonight)
    state = start(c.evidence, ref.anchor, tol.season_nights)
    measured = {d.ref.name: (d.ref, d.measured) for d in drafts if d.measured is not None}
    means = {
        name: ref.night_mean(ref.coding.values(tonight)) for name, (ref, _) in measured.items()
    }
    gating_count = sum(tol.is_gating(d.ref.name) for d in drafts)
    state, accumulated = add_night(
        state,
        measured,
        tol.ci_level,
        means,
        alpha=metric_alpha(tol.season_alpha, gating_count),
        season_nights=tol.season_nights,
    )
    results = []
    for d in drafts:
        gates = _gates(ref, d.ref.name)
        bar = tol.fdr_q / max(1, family[gates])
        results.append(_result(ref, d, tonight, bar, accumulated.get(d.ref.name), gates))
    notes = [n for n in (ref.young_note(),) if n]
    return CellComparison(ref.key, results, state, not ref.young, notes)


def _result(
    cell: CellReference,
    draft: _Draft,
    tonight: Runs,
    bar: float,
    acc: Accumulated | None,
    gates: bool,
) -> MetricResult:
    ref, tol = draft.ref, cell.tolerance
    name = ref.name
    base: dict[str, Any] = {
        "scenario": cell.key.scenario,
        "model": cell.key.model,
        "metric": name,
        "kind": ref.kind,
        "gating": gates,
        "direction": ref.direction,
        "baseline_n": ref.n,
        "baseline_infra": cell.pooled.infra,
        "night_attempted": tonight.attempted,
        "night_infra": tonight.infra,
        "effect_label": EFFECT_LABELS[ref.kind],
        "ci_level": tol.ci_level,
        "margin": tol.margin_for(name),
        "baseline_nights": cell.nights,
        "night_share": ref.icc,
        "bar": bar,
    }
    m = draft.measured
    if m is None:
        return MetricResult(note=draft.why, night_n=len(ref.coding.values(tonight)), **base)
    p, p_good = m.p_values(ref.direction, improvable=KINDS[ref.kind].improvable)
    if acc is not None:
        base.update(
            evidence=acc.z,
            evidence_test="z",
            evidence_threshold=acc.threshold if gates else None,
            evidence_nights=acc.nights,
            evidence_effect=acc.effect,
            evidence_ci=acc.effect_ci,
        )
    return MetricResult(
        baseline_estimate=m.baseline_estimate,
        baseline_ci=m.baseline_ci,
        night_estimate=m.night_estimate,
        night_ci=m.night_ci,
        night_n=m.n,
        effect=m.effect,
        effect_ci=m.effect_ci,
        mean_diff=m.mean_diff,
        mean_diff_ci=m.mean_diff_ci,
        test=m.test,
        p=p,
        p_improvement=p_good,
        p_min=m.p_min(ref.direction),
        mde=mde(ref, m.n, bar, tol.margin_for(name), tol.ci_level, exact=base["gating"]),
        runs_needed=runs_needed(ref, bar, tol.margin_for(name), tol.ci_level),
        note=_note(ref, m, cell, tonight),
        **base,
    )


def _note(ref: MetricReference, m: Measured, cell: CellReference, tonight: Runs) -> str | None:
    """The test's note and the metric's own (the registry's ``Metric.note``)."""
    own = metric(ref.name).note
    notes = [m.note, own(_facts(ref, cell, tonight)) if own else None]
    return "; ".join(n for n in notes if n) or None


def _facts(ref: MetricReference, cell: CellReference, tonight: Runs) -> NoteFacts:
    base = cell.pooled
    skipped = (
        (base.count(Outcome.SKIPPED) / base.n, tonight.count(Outcome.SKIPPED) / tonight.n)
        if base.n and tonight.n
        else None
    )
    return NoteFacts(ref.coding.usual, len(ref.coding.by_row), skipped, cell.tolerance.margin_for)


def _known(result: MetricResult, level: float, young: bool) -> MetricResult:
    """An inconclusive verdict says what is known: which changes remain possible and what
    would settle it. One where every run moved, which the night could not confirm (a small
    N, a young baseline, many tests), is marked ``unconfirmed``: never silent."""
    if result.verdict != "inconclusive" or result.effect_ci is None:
        return result
    low, high = result.effect_ci
    runs = (
        f"{result.runs_needed} runs tonight would flag a change of the margin with probability 0.8"
        if result.runs_needed is not None
        else "no number of runs tonight resolves the margin against this baseline: it needs "
        "more baseline nights first, then runs"
    )
    unconfirmed = (
        result.p is not None
        and result.p <= level
        and result.effect is not None
        and KINDS[result.kind].every_run_moved(result)
    )
    if unconfirmed:
        why = "the baseline is too young to gate" if young else "short of the night's bar"
        known = (
            f"changed, unconfirmed: every run moved (p {result.p:.2g} alone; {why}); the change "
            f"is {low:+.3g} to {high:+.3g} (margin {result.margin:g}); {runs}"
        )
    else:
        known = f"nothing flagged; changes from {low:+.3g} to {high:+.3g} are still possible (margin {result.margin:g}); {runs}"
    note = f"{result.note}; {known}" if result.note else known
    return result.model_copy(update={"note": note, "unconfirmed": unconfirmed})
