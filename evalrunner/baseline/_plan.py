"""The budget plan of a suite against its accepted baselines (``evalrunner plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner.baseline._file import baseline_path, load_baseline
from evalrunner.live._plan import choose
from evalrunner.live._settings import Suite

if TYPE_CHECKING:
    from evalrunner.stats._planner import Plan

__all__ = ["SuitePlan", "plan_suite"]


@dataclass
class SuitePlan:
    """The statistics' plan for the cells that have a usable baseline, and why others have none."""

    plan: Plan | None
    notes: list[str] = field(default_factory=list)


def plan_suite(
    suite: Suite, root: Path, *, runs: int | None = None, budget: int | None = None
) -> SuitePlan:
    """Runs per scenario for 80 % power on each gating metric, at the level the verdicts use
    (Benjamini-Hochberg over the suite's gating tests, and the margin rule), and the cost."""
    from evalrunner.stats._planner import plan
    from evalrunner.stats._reference import CellBaseline

    cells, notes, per_scenario = [], [], {}
    for chosen in choose(suite, runs=runs):
        per_scenario[chosen.scenario.id] = chosen.scenario.runs
        for cell in chosen.cells():
            path = baseline_path(root, suite.name, cell.scenario, cell.model)
            if not path.exists():
                notes.append(f"{cell}: no baseline at {path}; nothing to plan against")
                continue
            found = load_baseline(path)
            if found.fingerprint != chosen.scenario.fingerprint or found.model != cell.model:
                notes.append(f"{cell}: {path} is for another configuration or model; not planned")
                continue
            nights = [n.records for n in found.nights]
            cells.append(CellBaseline(cell, chosen.scenario.tolerance, nights, found.anchor))
    if not cells:
        return SuitePlan(None, notes)
    return SuitePlan(plan(cells, per_scenario, budget=budget), notes)
