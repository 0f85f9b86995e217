"""The budget planner behind ``evalrunner plan``: runs per scenario for 80 % power, and the cost.

For every gating metric of every cell: the change a night detects with
probability 0.8 (the MDE) at the scenario's runs and at its escalation cap, and
the runs at which a change of exactly the margin is detected with probability
0.8, at the level the verdict uses (Benjamini-Hochberg over the suite's gating
tests for a lone change, and the margin rule). The cost per run (model calls and
tokens) is the baseline's mean. A margin is unattainable at the budget when more
runs than the budget would be needed, and unattainable at any budget when the
baseline's own uncertainty plus the night-to-night drift already exceed it:
then only a larger baseline (more accepted nights) helps.

The night-to-night variance is fitted as tonight's test will fit it: from the
anchor's nights and, given the history's evidence, the nights compared since the
anchor (which can only widen it), so the plan is for the test a night will run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalrunner.stats._evidence_state import EvidenceState
from evalrunner.stats._formulas import FloatArray
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._power import MAX_RUNS, mde, runs_needed
from evalrunner.stats._reference import (
    CellBaseline,
    CellReference,
    MetricReference,
    fit_references,
)
from evalrunner.suite._cost import usd
from evalrunner.suite._record import CellKey

MAX_NIGHTS = 30
"""The largest baseline the planner prices: past a month of nights, say so instead."""


class MetricPlan(BaseModel):
    """One gating metric of one cell."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    margin: float
    mde_at_runs: float | None = Field(
        description="MDE at the scenario's runs (None: nothing detectable)."
    )
    mde_at_budget: float | None = Field(description="MDE at the budget.")
    runs_for_margin: int | None = Field(
        description="Runs for 80 % power at the margin (None: no number of runs reaches it)."
    )
    attainable: bool = Field(description="runs_for_margin is within the budget.")
    nights_for_margin: int | None = Field(
        default=None,
        description="Where the budget cannot reach the margin: the baseline nights (of its "
        f"mean size) at which it would; None when reachable, or not within {MAX_NIGHTS} nights.",
    )


class CellPlan(BaseModel):
    """One scenario x model."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    model: str
    runs: int = Field(description="The scenario's runs per night now.")
    budget: int = Field(description="Most runs per night the plan allows.")
    baseline_nights: int
    gating: bool = Field(description="False: the baseline is too young to gate.")
    metrics: list[MetricPlan]
    runs_needed: int | None = Field(
        description="Runs for 80 % power at the margin on every gating metric that can reach it."
    )
    calls_per_run: float = Field(description="Model calls per run (baseline mean).")
    tokens_per_run: float = Field(description="Prompt + completion tokens per run (baseline mean).")
    cost_per_run: float | None = Field(
        default=None,
        description="USD per run (the mean of the baseline's priced runs); None: unpriced.",
    )


class Plan(BaseModel):
    """The suite: per cell, and the nightly cost now and at the planned runs."""

    model_config = ConfigDict(extra="forbid")

    cells: list[CellPlan]
    level: float = Field(description="Raw p a lone change must reach (fdr_q / gating tests).")
    runs_now: int
    runs_planned: int = Field(description="Runs a night with every cell at its planned runs.")
    calls_now: float
    calls_planned: float
    tokens_now: float
    tokens_planned: float
    cost_now: float | None = Field(
        default=None, description="USD a night at the runs now; None: some cell is unpriced."
    )
    cost_planned: float | None = Field(
        default=None, description="USD a night with every cell at its planned runs."
    )
    cost_cap: float | None = Field(
        default=None, description="USD a night with every cell escalated to its budget."
    )
    unattainable: list[str] = Field(description="One line per margin the budget cannot reach.")


def plan(
    baselines: Sequence[CellBaseline],
    runs: Mapping[str, int] | int,
    *,
    budget: Mapping[str, int] | int | None = None,
    evidence: Mapping[CellKey, EvidenceState | None] | None = None,
) -> Plan:
    """Runs per scenario needed for 80 % power per gating metric, and what it costs.

    ``runs``: the scenario's runs per night now (per scenario id, or one number);
    ``budget``: the most runs per night a scenario may get (default: runs x the
    tolerance's ``escalate_to``); ``evidence``: each cell's state from the history,
    as the night's comparison gets it (None: planned as for a first night).
    """
    refs = fit_references(baselines, evidence)
    tests = sum(sum(c.tolerance.is_gating(name) for name in refs[c.key].metrics) for c in baselines)
    fdr = min((c.tolerance.fdr_q for c in baselines), default=0.05)
    level = fdr / max(1, tests)
    cells = []
    for c in baselines:
        n = runs if isinstance(runs, int) else runs[c.key.scenario]
        cells.append(_cell(c, refs[c.key], n, _budget(budget, c, n), level))
    return _totals(cells, level)


def _totals(cells: list[CellPlan], level: float) -> Plan:
    planned = [min(c.budget, c.runs_needed or c.runs) for c in cells]
    lines = [_unattainable(c, m) for c in cells for m in c.metrics if not m.attainable]
    runs_now, calls_now, tokens_now = _cost(cells, [c.runs for c in cells])
    runs_planned, calls_planned, tokens_planned = _cost(cells, planned)
    return Plan(
        cells=cells,
        level=level,
        runs_now=runs_now,
        runs_planned=runs_planned,
        calls_now=calls_now,
        calls_planned=calls_planned,
        tokens_now=tokens_now,
        tokens_planned=tokens_planned,
        cost_now=_dollars(cells, [c.runs for c in cells]),
        cost_planned=_dollars(cells, planned),
        cost_cap=_dollars(cells, [c.budget for c in cells]),
        unattainable=lines,
    )


def _cost(cells: list[CellPlan], runs: list[int]) -> tuple[int, float, float]:
    """Runs, LLM calls and tokens a night of ``runs`` per cell costs."""
    return (
        sum(runs),
        sum(r * c.calls_per_run for r, c in zip(runs, cells, strict=True)),
        sum(r * c.tokens_per_run for r, c in zip(runs, cells, strict=True)),
    )


def _unattainable(c: CellPlan, m: MetricPlan) -> str:
    """The line saying what a metric's margin would need."""
    return f"{c.scenario} [{c.model}] {m.metric}: margin {m.margin:g} needs " + (
        f"{m.runs_for_margin} runs{_a_night(c, m.runs_for_margin)}, budget {c.budget}"
        + (f"; or a baseline of {_nights(k)}{_once(c, k)}" if (k := m.nights_for_margin) else "")
        if m.runs_for_margin
        else f"a larger baseline: {_nights(m.nights_for_margin)} at the budget"
        + _once(c, m.nights_for_margin)
    )


def _a_night(c: CellPlan, runs: int) -> str:
    """' ($0.42 a night)' where the cell's runs are priced."""
    return "" if c.cost_per_run is None else f" ({usd(runs * c.cost_per_run)} a night)"


def _once(c: CellPlan, nights: int | None) -> str:
    """' ($1.20 once, for the nights it lacks at its runs)' where priced."""
    more = (nights or 0) - c.baseline_nights
    if c.cost_per_run is None or more <= 0:
        return ""
    return f" ({usd(more * c.runs * c.cost_per_run)} once, for {more} more at {c.runs} runs)"


def _cell(c: CellBaseline, ref: CellReference, runs: int, cap: int, level: float) -> CellPlan:
    tol = c.tolerance
    metrics = [
        _metric(m, runs, cap, level, tol.margin_for(name), tol.ci_level)
        for name, m in ref.metrics.items()
        if tol.is_gating(name)
    ]
    reachable = [m.runs_for_margin for m in metrics if m.runs_for_margin is not None]
    pooled = ref.pooled
    return CellPlan(
        scenario=c.key.scenario,
        model=c.key.model,
        runs=runs,
        budget=cap,
        baseline_nights=ref.nights,
        gating=not ref.young,
        metrics=metrics,
        runs_needed=max(reachable, default=None),
        calls_per_run=_mean(pooled.numbers["llm_calls"]),
        tokens_per_run=_mean(pooled.numbers["prompt_tokens"])
        + _mean(pooled.numbers["completion_tokens"]),
        cost_per_run=_priced_mean(pooled.numbers["cost_usd"]),
    )


def _priced_mean(costs: FloatArray) -> float | None:
    """The mean cost of the runs that have one (None: no run was priced)."""
    priced = costs[~np.isnan(costs)]
    return float(priced.mean()) if priced.size else None


def _dollars(cells: list[CellPlan], runs: list[int]) -> float | None:
    """USD a night of ``runs`` per cell costs (None: a cell's runs are unpriced)."""
    if any(c.cost_per_run is None for c in cells):
        return None
    return math.fsum(r * (c.cost_per_run or 0.0) for r, c in zip(runs, cells, strict=True))


def _nights(found: int | None) -> str:
    return f"about {found} nights" if found else f"more than {MAX_NIGHTS} nights"


def _budget(budget: Mapping[str, int] | int | None, c: CellBaseline, runs: int) -> int:
    if budget is None:
        return max(runs, math.floor(runs * c.tolerance.escalate_to))
    return budget if isinstance(budget, int) else budget[c.key.scenario]


def _metric(
    ref: MetricReference, runs: int, cap: int, level: float, margin: float, ci: float
) -> MetricPlan:
    needed = runs_for_margin(ref, level, margin, ci)
    attainable = needed is not None and needed <= cap
    return MetricPlan(
        metric=ref.name,
        margin=margin,
        mde_at_runs=mde(ref, runs, level, margin, ci),
        mde_at_budget=mde(ref, cap, level, margin, ci),
        runs_for_margin=needed,
        attainable=attainable,
        nights_for_margin=None if attainable else nights_for_margin(ref, cap, level, margin, ci),
    )


def nights_for_margin(
    ref: MetricReference, cap: int, level: float, margin: float, ci: float
) -> int | None:
    """The fewest baseline nights (each of the baseline's mean size, the night effect as
    fitted) at which ``cap`` runs tonight reach the margin; None past :data:`MAX_NIGHTS`.
    What "accept more nights" means in nights, where no number of runs tonight is enough:
    the baseline's own uncertainty shrinks with its nights, the night effect does not."""

    # The standard errors added to the night effect's estimate shrink as its nights
    # grow (its variance goes as 1 / (nights - 1)); the estimate itself is kept.
    now = len(ref.nights)
    point = ref.icc if ref.point_icc is None else min(ref.point_icc, ref.icc)

    def reaches(nights: int) -> bool:
        shrink = math.sqrt((now - 1) / (nights - 1)) if now > 1 else 1.0
        bigger = replace(
            ref,
            n=round(nights * ref.night_size),
            size_sq=1 / nights,
            icc=point + (ref.icc - point) * shrink,
        )
        found = runs_for_margin(bigger, level, margin, ci)
        return found is not None and found <= cap

    if ref.night_size < 1:
        return None
    # One night at a time, not bisected: the exact MDE of a rate moves in steps, so
    # "reaches" is not monotonic in the nights (a padding of 0.6 standard errors found 6
    # nights where a bisection that first asked 30 found none).
    return next((k for k in range(now + 1, MAX_NIGHTS + 1) if reaches(k)), None)


def runs_for_margin(ref: MetricReference, level: float, margin: float, ci: float) -> int | None:
    """Runs at which the MDE reaches the margin; rates are checked against the exact MDE."""
    guess = runs_needed(ref, level, margin, ci)
    if guess is None or KINDS[ref.kind].exact_mde is None:
        return guess

    def reaches(n: int) -> bool:
        found = mde(ref, n, level, margin, ci)
        return found is not None and found <= margin + 1e-9

    low, high = max(2, guess // 2), guess
    while not reaches(high):
        if high >= MAX_RUNS // 4:
            return None
        low, high = high, high * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid + 1, high)
    return low


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if values.size else 0.0
