"""The budget plan of a suite against its accepted baselines (``evalrunner plan``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner.baseline._file import baseline_models, baseline_path, load_baseline
from evalrunner.endpoints._pricing import Price, suite_price
from evalrunner.live._schedule import ScenarioSchedule, choose
from evalrunner.suite._settings import Suite

if TYPE_CHECKING:
    from evalrunner.stats._evidence_state import EvidenceState
    from evalrunner.stats._planner import Plan
    from evalrunner.stats._reference import CellBaseline
    from evalrunner.suite._record import CellKey, RunRecord

__all__ = ["SuitePlan", "plan_suite"]


@dataclass
class SuitePlan:
    """The statistics' plan for the cells that have a usable baseline, and why others have none."""

    plan: Plan | None
    notes: list[str] = field(default_factory=list)
    since_anchor: int = 0
    """Cells planned with nights since their anchor (the rest as for a first night)."""
    other_models: list[str] = field(default_factory=list)
    """With no cell planned: the models the suite's baselines there are for."""


def planned_cells(
    suite: Suite, *, runs: int | None, rows: int | None, models: Sequence[str]
) -> list[CellKey]:
    """The scenario x models :func:`plan_suite` plans for, as a night would run them."""
    return [
        c for chosen in choose(suite, runs=runs, rows=rows, models=models) for c in chosen.cells()
    ]


def plan_suite(
    suite: Suite,
    root: Path,
    *,
    runs: int | None = None,
    rows: int | None = None,
    budget: int | None = None,
    evidence: Mapping[CellKey, EvidenceState] | None = None,
    models: Sequence[str] = (),
) -> SuitePlan:
    """Runs per scenario for 80 % power on each gating metric, at the level the verdicts use
    (Benjamini-Hochberg over the suite's gating tests, and the margin rule), and the cost.

    ``evidence``: each cell's state from the history; the nights compared since each anchor
    widen the night-to-night variance as they will in tonight's test (None: none, as for a
    first night). ``models``: the models to plan for, as ``run --model`` gives them (default:
    the ones a night would run).
    """
    from evalrunner.stats._planner import plan

    cells, notes, per_scenario = [], [], {}
    for chosen in choose(suite, runs=runs, rows=rows, models=models):
        per_scenario[chosen.scenario.id] = chosen.scenario.cell_runs
        if chosen.scenario.data is not None:
            sc = chosen.scenario
            notes.append(
                f"{sc.id}: a dataset: {len(sc.selected_rows)} rows x {sc.runs} runs = "
                f"{sc.cell_runs} runs per model (the runs below count them all)"
            )
        for cell in chosen.cells():
            price = suite_price(suite.spec.pricing, cell.model, cell.model)
            if (found := _baseline_of(root, suite.name, chosen, cell, notes, price)) is not None:
                cells.append(found)
    if not cells:
        return SuitePlan(None, notes, other_models=baseline_models(root, suite.name))
    evidence = evidence or {}
    since = sum((s := evidence.get(c.key)) is not None and s.anchor == c.anchor for c in cells)
    return SuitePlan(plan(cells, per_scenario, budget=budget, evidence=evidence), notes, since)


def _baseline_of(
    root: Path,
    suite: str,
    chosen: ScenarioSchedule,
    cell: CellKey,
    notes: list[str],
    price: Price | None,
) -> CellBaseline | None:
    """``cell``'s baseline to plan against, or None with a note saying why there is none."""
    from evalrunner.stats._reference import CellBaseline

    path = baseline_path(root, suite, cell.scenario, cell.model)
    if not path.exists():
        notes.append(f"{cell}: no baseline at {path}; nothing to plan against")
        return None
    found = load_baseline(path)
    if found.fingerprint != chosen.scenario.fingerprint or found.model != cell.model:
        notes.append(f"{cell}: {path} is for another configuration or model; not planned")
        return None
    nights = [_priced(n.records, price) for n in found.nights]
    sc = chosen.scenario
    return CellBaseline(cell, sc.tolerance, nights, found.anchor, sc.row_ids)


def _priced(records: Sequence[RunRecord], price: Price | None) -> list[RunRecord]:
    """A baseline night's runs, those recorded before runs were priced given the cost of
    their tokens at the model's price now (None: left as they are)."""
    if price is None:
        return list(records)
    return [
        r
        if r.cost_usd is not None
        else r.model_copy(
            update={
                "cost_usd": price.cost(
                    r.prompt_tokens, r.completion_tokens, r.cache_read_tokens, r.cache_write_tokens
                )
            }
        )
        for r in records
    ]
