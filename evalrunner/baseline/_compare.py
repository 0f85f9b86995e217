"""Comparing runs: tonight with the committed baselines, or one results directory with another.

Both read and pair records here and make one statistics call,
:func:`compare_night`, for the whole night, so the multiple-comparison
correction spans every scenario x model compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner.baseline._file import Baseline, baseline_path, load_baseline
from evalrunner.live._endpoints import LOCAL
from evalrunner.live._record import CellKey, RunRecord
from evalrunner.live._results import group_records, records_frame
from evalrunner.live._settings import Suite
from evalrunner.stats._metrics import REGISTRY
from evalrunner.stats._tolerance import Tolerance

LATENCY = "latency_s"

if TYPE_CHECKING:
    from evalrunner.stats._results import MetricResult

__all__ = ["CellPair", "Comparison", "compare_night", "compare_records", "compare_with_baselines"]


@dataclass(frozen=True)
class CellPair:
    """One scenario x model to compare: reference runs, candidate runs, and how strictly."""

    cell: CellKey
    """The name results carry (for two models compared, ``model`` reads 'a -> b')."""
    baseline: Sequence[RunRecord]
    night: Sequence[RunRecord]
    tolerance: Tolerance

    @property
    def metrics(self) -> list[str] | None:
        """The metrics compared (None: all). Latency against the embedded model is left out
        unless the tolerance gates it: a CPU server on a shared machine times the machine."""
        on_local = LOCAL in (self.cell.model, *self.cell.model.split(" -> "))
        if not on_local or self.tolerance.is_gating(LATENCY):
            return None
        return [m.name for m in REGISTRY if m.name != LATENCY]


def compare_night(pairs: Sequence[CellPair], *, seed: int = 0) -> list[MetricResult]:
    """Every pair's metric results, then the verdicts, corrected across all pairs together.

    Pure statistics (``compare_scenario`` per pair, then ``finalize``); its
    home is the stats package, which will provide this signature.
    """
    from evalrunner.stats._stats import compare_scenario, finalize

    raw: list[MetricResult] = []
    for pair in pairs:
        raw += compare_scenario(
            records_frame(list(pair.baseline)),
            records_frame(list(pair.night)),
            tolerance=pair.tolerance,
            scenario=pair.cell.scenario,
            model=pair.cell.model,
            seed=seed,
            metrics=pair.metrics,
        )
    return finalize(raw, {pair.cell.scenario: pair.tolerance for pair in pairs})


@dataclass
class Comparison:
    """Tonight against the baselines: metric results plus why some pairs were not compared."""

    results: list[MetricResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baselines: dict[CellKey, Baseline] = field(default_factory=dict)

    @property
    def regressions(self) -> list[MetricResult]:
        """Gating metrics that fail the night (a regression, or a two-sided change)."""
        from evalrunner.stats._results import FAILING

        return [r for r in self.results if r.gating and r.verdict in FAILING]


def _usable_baseline(
    root: Path, suite: str, cell: CellKey, fingerprint: str
) -> tuple[Baseline | None, str]:
    """The cell's baseline if it fits tonight's runs; otherwise None and why not."""
    path = baseline_path(root, suite, cell.scenario, cell.model)
    refresh = f"evalrunner baseline --suite {suite} --scenario {cell.scenario} --model {cell.model}"
    if not path.exists():
        return None, f"{cell}: no baseline at {path}; create one with: {refresh}"
    baseline = load_baseline(path)
    if baseline.model != cell.model:
        return None, (
            f"{cell}: not compared, {path} is for model {baseline.model!r}; refresh with: {refresh}"
        )
    if baseline.fingerprint != fingerprint:
        return None, (
            f"{cell}: not compared, the scenario's configuration changed since {path} "
            f"was recorded (fingerprint {baseline.fingerprint} -> {fingerprint}); refresh with: {refresh}"
        )
    return baseline, ""


def compare_with_baselines(
    suite: Suite,
    records: Sequence[RunRecord],
    root: Path,
    *,
    fingerprints: Mapping[str, str] | None = None,
    seed: int = 0,
) -> Comparison:
    """Compare each scenario x model of tonight with its baseline file under ``root``.

    ``fingerprints`` (scenario id -> fingerprint, from the results manifest)
    say what configuration tonight's runs used; by default the suite's.
    """
    comparison = Comparison()
    scenarios = {s.id: s for s in suite.scenarios}
    pairs = []
    for cell, night in group_records(records).items():
        scenario = scenarios.get(cell.scenario)
        if scenario is None:
            continue
        fingerprint = (fingerprints or {}).get(cell.scenario) or scenario.fingerprint
        baseline, why_not = _usable_baseline(root, suite.name, cell, fingerprint)
        if baseline is None:
            comparison.notes.append(why_not)
            continue
        comparison.baselines[cell] = baseline
        pairs.append(CellPair(cell, baseline.records, night, scenario.tolerance))
    comparison.results = compare_night(pairs, seed=seed)
    return comparison


def compare_records(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], *, seed: int = 0
) -> list[MetricResult]:
    """Compare two record sets scenario by scenario (``evalrunner compare A B``), default tolerances.

    Cells pair by scenario and model; when none match (A/B of a model swap),
    by scenario alone, each result's model reading 'a -> b'.
    """
    a, b = group_records(baseline), group_records(candidate)
    pairs = [CellPair(cell, a[cell], b[cell], Tolerance()) for cell in sorted(a.keys() & b.keys())]
    if not pairs:
        b_by_scenario = {cell.scenario: cell for cell in b}
        pairs = [
            CellPair(
                CellKey(cell.scenario, f"{cell.model} -> {b_by_scenario[cell.scenario].model}"),
                a[cell],
                b[b_by_scenario[cell.scenario]],
                Tolerance(),
            )
            for cell in sorted(a)
            if cell.scenario in b_by_scenario
        ]
    return compare_night(pairs, seed=seed)
