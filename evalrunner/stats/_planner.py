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
from dataclasses import dataclass, replace

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


class Route(BaseModel):
    """A baseline of so many nights and so many runs a night, at which every gating margin of
    a cell is reached with 80 % power."""

    model_config = ConfigDict(extra="forbid")

    nights: int = Field(description="Baseline nights (each of the baseline's mean size).")
    runs: int = Field(description="Runs a night: the budget a night may escalate to.")
    season_runs: int = Field(
        description="What the route costs in runs: the baseline nights it adds, and a season "
        "(the tolerance's season_nights) of nights at its runs."
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
    routes: list[Route] = Field(
        default_factory=list,
        description="Where a gating margin is out of reach at the budget: ways to reach every "
        "margin that can be reached, cheapest over a season first (more runs with the baseline "
        "as it is, the budget with more baseline nights, and the cheapest mix of the two).",
    )
    beyond: list[str] = Field(
        default_factory=list,
        description=f"Gating metrics whose margin no baseline of up to {MAX_NIGHTS} nights "
        "reaches at any number of runs.",
    )
    season_nights: int = Field(default=90, description="Nights a route's cost counts.")


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
    lines = [_unattainable(c) for c in cells if not all(m.attainable for m in c.metrics)]
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


def _unattainable(c: CellPlan) -> str:
    """One line per cell: the margins its budget cannot reach, and the ways that would."""
    out = ", ".join(f"{m.metric} {m.margin:g}" for m in c.metrics if not m.attainable)
    line = f"{c.scenario} [{c.model}]: {out} out of reach at {c.budget} runs a night"
    ways = [_route(c, r) for r in c.routes]
    if ways:
        line += f"; cheapest over a {c.season_nights}-night season: " + "; or ".join(ways)
    if c.beyond:
        line += f"; {', '.join(c.beyond)}: no runs reach it with up to {MAX_NIGHTS} nights"
    return line


def _route(c: CellPlan, r: Route) -> str:
    """'120 runs a night with a baseline of 9 nights (6 more) (11,106 runs a season, $4.20)'."""
    more = r.nights - c.baseline_nights
    nights = f"a baseline of {r.nights} nights ({more} more)" if more else "the baseline as it is"
    money = "" if c.cost_per_run is None else f", {usd(r.season_runs * c.cost_per_run)}"
    return f"{r.runs} runs a night with {nights} ({r.season_runs:,} runs a season{money})"


def _cell(c: CellBaseline, ref: CellReference, runs: int, cap: int, level: float) -> CellPlan:
    tol = c.tolerance
    gating = [(m, tol.margin_for(name)) for name, m in ref.metrics.items() if tol.is_gating(name)]
    metrics = [_metric(m, runs, cap, level, margin, tol.ci_level) for m, margin in gating]
    reachable = [m.runs_for_margin for m in metrics if m.runs_for_margin is not None]
    out = [
        (*g, m.nights_for_margin) for g, m in zip(gating, metrics, strict=True) if not m.attainable
    ]
    routes, beyond = routes_for(out, Reach(cap, level, tol.ci_level, tol.season_nights))
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
        routes=routes,
        beyond=beyond,
        season_nights=tol.season_nights,
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


def grown(ref: MetricReference, nights: int) -> MetricReference:
    """``ref`` as a baseline of ``nights`` nights of its mean size would fit it: its own
    uncertainty shrinks with the nights, the night effect's estimate is kept, and the
    standard errors added to it shrink as its variance does (as 1 / (nights - 1))."""
    now = len(ref.nights)
    if nights == now:
        return ref
    point = ref.icc if ref.point_icc is None else min(ref.point_icc, ref.icc)
    shrink = math.sqrt((now - 1) / (nights - 1)) if now > 1 else 1.0
    return replace(
        ref,
        n=round(nights * ref.night_size),
        size_sq=1 / nights,
        icc=point + (ref.icc - point) * shrink,
    )


def nights_for_margin(
    ref: MetricReference, cap: int, level: float, margin: float, ci: float
) -> int | None:
    """The fewest baseline nights (each of the baseline's mean size, the night effect as
    fitted) at which ``cap`` runs tonight reach the margin; None past :data:`MAX_NIGHTS`.
    What "accept more nights" means in nights, where no number of runs tonight is enough."""

    def reaches(nights: int) -> bool:
        found = runs_for_margin(grown(ref, nights), level, margin, ci)
        return found is not None and found <= cap

    def near(nights: int) -> bool:
        # The normal model, far cheaper than the exact sums, says where to start looking:
        # where the two differ the exact sums need more runs (a rate's counts move in
        # steps), so a size it puts past half again the budget is not tried exactly.
        found = runs_needed(grown(ref, nights), level, margin, ci)
        return found is not None and found <= 1.5 * cap + 2

    now = len(ref.nights)
    if ref.night_size < 1:
        return None
    start = next((k for k in range(now + 1, MAX_NIGHTS + 1) if near(k)), None)
    if start is None:
        start = now + 1 if reaches(MAX_NIGHTS) else MAX_NIGHTS + 1
    # One night at a time, not bisected: the exact MDE of a rate moves in steps, so
    # "reaches" is not monotonic in the nights (a padding of 0.6 standard errors found 6
    # nights where a bisection that first asked 30 found none).
    return next((k for k in range(max(now + 1, start - 2), MAX_NIGHTS + 1) if reaches(k)), None)


@dataclass(frozen=True)
class Reach:
    """What a cell's routes are planned against."""

    cap: int
    level: float
    ci: float
    season: int


SIZES = (0, 1, 2, 4, 7, 12, 17, 27)
"""Baseline sizes a route is priced at, in nights added to the baseline's (up to
:data:`MAX_NIGHTS`): exact MDEs cost too much to try every size, and a route's cost changes
slowly with its nights."""


def routes_for(
    out: Sequence[tuple[MetricReference, float, int | None]], reach: Reach
) -> tuple[list[Route], list[str]]:
    """Ways for every margin in ``out`` (metric, margin, its nights at the budget; all out of
    reach at the budget) to be reached, cheapest over a season first, and the metrics no
    baseline of up to :data:`MAX_NIGHTS` nights reaches at any runs.

    A route is a baseline size and runs a night, priced exactly. Up to three are offered:
    the fewest runs with the baseline as it is, the fewest nights at the budget, and the
    mix that costs the fewest runs over a season (nights added once, runs every night).
    """
    if not out:
        return [], []
    now = len(out[0][0].nights)
    table, reached = _table(out, now, reach)
    size = max(1, round(out[0][0].night_size))
    routes = []
    for k, row in table.items():
        runs = _most([row[i] for i in reached])
        if runs is not None:
            routes.append(
                Route(nights=k, runs=runs, season_runs=(k - now) * size + reach.season * runs)
            )
    beyond = [m.name for i, (m, _, _) in enumerate(out) if i not in reached]
    return _chosen(routes, now, reach.cap), beyond


def _table(
    out: Sequence[tuple[MetricReference, float, int | None]], now: int, reach: Reach
) -> tuple[dict[int, list[int | None]], list[int]]:
    """Each margin's runs per baseline size tried, and which margins some size reaches."""
    table = {now + k: _runs_at(out, now + k, reach) for k in SIZES if now + k <= MAX_NIGHTS}
    reached = [i for i in range(len(out)) if any(row[i] is not None for row in table.values())]
    # The fewest nights at which the budget reaches every margin that can be reached.
    fewest = _most([out[i][2] for i in reached])
    if fewest is not None:
        table.setdefault(fewest, _runs_at(out, fewest, reach))
    return table, reached


def _chosen(routes: list[Route], now: int, cap: int) -> list[Route]:
    """The routes worth offering, cheapest over a season first."""
    picks = [
        *(r for r in routes if r.nights == now),  # more runs, the baseline as it is
        min((r for r in routes if r.runs <= cap), key=lambda r: r.nights, default=None),
        min(routes, key=lambda r: r.season_runs, default=None),  # the cheapest mix
    ]
    unique = {(r.nights, r.runs): r for r in picks if r is not None}
    return sorted(unique.values(), key=lambda r: (r.season_runs, r.nights))


def _runs_at(
    out: Sequence[tuple[MetricReference, float, int | None]], nights: int, reach: Reach
) -> list[int | None]:
    """Each margin's runs for 80 % power with a baseline of ``nights``."""
    return [
        runs_for_margin(grown(m, nights), reach.level, margin, reach.ci) for m, margin, _ in out
    ]


def _most(runs: list[int | None]) -> int | None:
    """The runs every margin needs (None: one is out of reach, or there are none)."""
    found = [r for r in runs if r is not None]
    return max(found) if found and len(found) == len(runs) else None


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
