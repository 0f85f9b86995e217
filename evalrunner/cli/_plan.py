"""``evalrunner plan``: runs per scenario for 80 % power, MDEs and cost, from the baselines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from evalrunner._next import NextStep, Placeholder, Said, each
from evalrunner.cli import _options
from evalrunner.cli._tables import format_table
from evalrunner.errors import ConfigError
from evalrunner.night._sentinel import DEFAULT_CALLS, DEFAULT_SHARE, MIN_CALLS
from evalrunner.suite import Tolerance, load_suite_by_name
from evalrunner.suite._cost import usd

if TYPE_CHECKING:
    from evalrunner.stats._planner import CellPlan, Plan

COLUMNS = (
    ("scenario", "scenario"),
    ("model", "model"),
    ("metric", "metric"),
    ("margin", "margin"),
    ("mde_runs", "MDE at runs"),
    ("mde_budget", "MDE at budget"),
    ("needed", "runs for margin"),
    ("note", "note"),
)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _check_history(history: str) -> None:
    """A --history typed out must exist. The default may not yet (no night has run), typed
    out or not; another location given that does not is a typo, and planning without its
    nights promises too much."""
    from evalrunner.history._store import check_readable, exists

    check_readable(history)
    given = click.get_current_context().get_parameter_source("history")
    typed = given is ParameterSource.COMMANDLINE and history != _options.DEFAULT_HISTORY
    if typed and not exists(history):
        raise ConfigError(
            f"history location {history!r} does not exist; pass --history with the location "
            f"'evalrunner run' wrote to (default {_options.DEFAULT_HISTORY})"
        )


def _check_budget(runs: int | None, budget: int | None) -> None:
    if budget is not None and runs is not None and budget < runs:
        raise ConfigError(
            f"--budget {budget} is below --runs {runs}: a night spends its N runs before any "
            f"more; give --budget of at least {runs}"
        )


def _no_baseline(
    suite: str, baselines_dir: Path, models: tuple[str, ...], others: list[str]
) -> ConfigError:
    """Nothing to plan against: the command that makes a baseline, or, when the suite's
    baselines are all for other models than the night's, those models."""
    if others and not models:
        return ConfigError(
            Said(
                f"suite {suite!r} has no baseline under {baselines_dir} for the models a night "
                f"would run; its baselines are for {', '.join(others)}: ",
                NextStep("plan", suite, each("--model", others)),
            )
        )
    others = [m for m in others if m not in models]
    asked = each("--model", models)
    if others:
        return ConfigError(
            Said(
                f"suite {suite!r} has no baseline under {baselines_dir} for {', '.join(models)}; "
                f"its baselines are for {', '.join(others)} (",
                NextStep("plan", suite, each("--model", others)),
                "), or accept nights first: ",
                NextStep("baseline", suite, asked),
            )
        )
    # Both ways, as the night's own hint gives them: a team that has run nights has their
    # runs to accept, and the bare command starts a night of its own.
    night = Placeholder("<a night's results directory>")
    return ConfigError(
        Said(
            f"suite {suite!r} has no usable baseline under {baselines_dir}; accept nights first: ",
            NextStep("baseline", suite, ("--from", night, *asked)),
            ", or with a night of its own: ",
            NextStep("baseline", suite, asked),
        )
    )


@click.command("plan")
@_options.suite_name
@_options.runs("Runs per scenario to plan for, per row of a dataset (default: each scenario's).")
@_options.rows("Dataset scenarios: plan for a stable subset of this many rows.")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=None,
    help="Most runs per scenario a night may spend (default: runs x the tolerance's escalate_to).",
)
@_options.models(
    "Models to plan for, as run --model gives them (repeatable; default: the suite's)."
)
@_options.baselines_dir("Baselines to plan against.")
@_options.history
@_options.suites_dir
def plan_cmd(
    suite_name: str,
    runs: int | None,
    rows: int | None,
    budget: int | None,
    models: tuple[str, ...],
    baselines_dir: Path,
    history: str,
    suites_dir: Path,
) -> None:
    """Print, per gating metric, the change a night detects with 80 % power (MDE) and the runs
    a change of the margin needs, at the level the verdicts use (BH over the suite's gating
    tests and the margin rule), plus the nightly cost and the margins out of reach. The
    history's nights since each anchor count as tonight's test will count them."""
    from evalrunner.history._store import evidence_so_far
    from evalrunner.night._plan import plan_suite, planned_cells

    _check_history(history)
    _check_budget(runs, budget)
    suite = load_suite_by_name(suite_name, suites_dir)
    # The planned cells' evidence only: read from the newest nights until each has its own.
    cells = planned_cells(suite, runs=runs, rows=rows, models=models)
    evidence = evidence_so_far(history, suite.name, cells)
    found = plan_suite(
        suite, baselines_dir, runs=runs, rows=rows, budget=budget, evidence=evidence, models=models
    )
    for note in found.notes:
        click.echo(f"note: {_options.say(note)}", err=True)
    plan = found.plan
    if plan is None:
        raise _no_baseline(suite.name, baselines_dir, models, found.other_models)
    if found.since_anchor < len(plan.cells):
        # Said, not silent: planned without the nights since, a cell can be promised power
        # that tonight's test, widened by them, will not have.
        click.echo(
            f"note: {history} holds no night since the anchor of "
            f"{len(plan.cells) - found.since_anchor} of {len(plan.cells)} cells: planned from "
            "their baselines' nights alone, as for a first night",
            err=True,
        )
    click.echo(format_table([row for cell in plan.cells for row in _rows(cell)], COLUMNS))
    click.echo(
        f"\nlevel a lone change must reach: p <= {plan.level:.2g}; "
        f"runs a night: {plan.runs_now} now, {plan.runs_planned} with each scenario at the runs "
        "its margins need (within its budget); "
        f"model calls {plan.calls_now:.0f} -> {plan.calls_planned:.0f}; "
        f"tokens {plan.tokens_now:.0f} -> {plan.tokens_planned:.0f}"
        f"{_money(plan)}"
    )
    for line in plan.unattainable:
        click.echo(f"unattainable: {line}")
    tolerances = {s.id: s.tolerance for s in suite.scenarios}
    click.echo(_season_line([tolerances[cell.scenario] for cell in plan.cells]))
    click.echo(_sentinel_line(plan.calls_planned))


def _rows(cell: CellPlan) -> list[dict[str, object]]:
    """One table row per gating metric of a cell."""
    young = "" if cell.gating else f"too young to gate ({cell.baseline_nights} nights)"
    return [
        {
            "scenario": cell.scenario,
            "model": cell.model,
            "metric": m.metric,
            "margin": _num(m.margin),
            "mde_runs": f"{_num(m.mde_at_runs)} ({cell.runs})",
            "mde_budget": f"{_num(m.mde_at_budget)} ({cell.budget})",
            "needed": m.runs_for_margin or _nights_needed(m.nights_for_margin),
            "note": young or ("" if m.attainable else "out of reach at the budget"),
        }
        for m in cell.metrics
    ]


def _nights_needed(nights: int | None) -> str:
    if nights:
        return f"none; about {nights} baseline nights would do"
    return "none (needs a larger baseline)"


def _season_line(cells: list[Tolerance]) -> str:
    """The false-alarm budget of the evidence since the anchor, per scenario and suite."""
    alphas = sorted({t.season_alpha for t in cells})
    nights = sorted({t.season_nights for t in cells})
    each = "/".join(f"{a:.2g}" for a in alphas)
    return (
        f"evidence since the anchor: seasons of {'/'.join(map(str, nights))} nights; false-alarm "
        f"budget {each} per scenario-season (split over its gating metrics), about "
        f"{sum(t.season_alpha for t in cells):.2g} per suite-season of {len(cells)} cells"
    )


def _sentinel_line(calls_planned: float) -> str:
    """What explaining a failing night may add: the sentinel's share of the night's calls."""
    most = int(calls_planned * DEFAULT_SHARE)
    covers = most // MIN_CALLS
    reach = (
        "here too few for one, so it is skipped"
        if covers == 0
        else f"here enough for {covers} failing scenario{'' if covers == 1 else 's'}; with "
        "more, it is skipped"
    )
    return (
        f"when a night fails, the sentinel (for failing scenarios whose first request did not "
        f"change) adds at most {DEFAULT_SHARE:.0%} of its model calls, about {most}, at most "
        f"{DEFAULT_CALLS} and at least {MIN_CALLS} a scenario: {reach} (--no-explain: none)"
    )


def _money(plan: Plan) -> str:
    """'; cost $0.40 -> $1.20 a night, at most $1.20 with every scenario escalated to its
    budget' (from the baselines' priced runs), or why there is no figure."""
    if plan.cost_now is None or plan.cost_planned is None or plan.cost_cap is None:
        return "; cost unknown (some baseline runs are unpriced: pricing: in suites/README.md)"
    return (
        f"; cost {usd(plan.cost_now)} -> {usd(plan.cost_planned)} a night, at most "
        f"{usd(plan.cost_cap)} with every scenario escalated to its budget"
    )
