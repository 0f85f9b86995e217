"""``evalrunner explain``: why a night's cells differ from their baselines."""

from __future__ import annotations

from pathlib import Path

import click

from evalrunner.baseline import explain_results
from evalrunner.cli import _options
from evalrunner.cli._compare import no_runs, stop_on_outage
from evalrunner.live import ResultsDir
from evalrunner.live._outage import model_outages
from evalrunner.live._results import Manifest
from evalrunner.suite import CellKey, load_suite_by_name
from evalrunner.suite._record import RunRecord


@click.command("explain")
@_options.suite_name
@click.option(
    "--results",
    "results_dir",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The night's results directory (the one 'evalrunner run' printed).",
)
@click.option(
    "--scenario", "scenarios", multiple=True, help="Only these scenario ids (default: all)."
)
@click.option("--model", "models", multiple=True, help="Only these model labels (default: all).")
@click.option(
    "--diff/--no-diff", default=True, show_default=True, help="Show the request's text diff."
)
@_options.baselines_dir()
@_options.suites_dir
def explain_cmd(
    suite_name: str,
    results_dir: Path,
    scenarios: tuple[str, ...],
    models: tuple[str, ...],
    diff: bool,
    baselines_dir: Path,
    suites_dir: Path,
) -> None:
    """Say why each scenario of a night differs from its baseline: the first request
    (system prompt, tools), tools answering otherwise, the model, and where the runs
    diverge. docs/explain.md has the method and what it cannot tell."""
    suite = load_suite_by_name(suite_name, suites_dir)
    results = ResultsDir(results_dir)
    manifest = results.read_manifest()
    if manifest.suite != suite.name:
        raise click.UsageError(f"{results_dir} holds suite {manifest.suite!r}, not {suite.name!r}")
    records = results.records()
    cells = _cells(results_dir, records, manifest, scenarios, models)
    # Every run the endpoint's failure: "as in the baseline" would be said of runs that
    # never acted.
    stop_on_outage(
        records,
        f"explain: {results_dir} is an outage night: no run measured the agent, so there is "
        "nothing to explain",
    )
    cells = _measured(cells, records)
    explained = explain_results(suite, results, baselines_dir, cells)
    if not explained:
        raise click.UsageError(
            f"no scenario of {results_dir} has a baseline under {baselines_dir / suite.name}"
            + (f" among {', '.join(scenarios)}" if scenarios else "")
        )
    for cell, why in explained.items():
        click.echo(f"{cell.scenario} × {cell.model}: {why.line()}")
        if why.divergence is not None and why.divergence.line() not in why.line():
            click.echo(f"  runs diverge {why.divergence.line()}")  # unless the cause said it
        for change in why.request:
            click.echo(f"  request: {change}")
        for line in why.rows:
            click.echo(f"  row {line}")
        if diff:
            for line in why.request_diff:
                click.echo(f"    {line}")


def _measured(cells: list[CellKey], records: list[RunRecord]) -> list[CellKey]:
    """The cells whose model's endpoint answered tonight; a line for each of the others."""
    down = model_outages(records)
    for cell in cells:
        if cell.model in down:
            click.echo(f"{cell.scenario} × {cell.model}: not explained: {down[cell.model].line()}")
    return [c for c in cells if c.model not in down]


def _cells(
    results_dir: Path,
    records: list[RunRecord],
    manifest: Manifest,
    scenarios: tuple[str, ...],
    models: tuple[str, ...],
) -> list[CellKey]:
    """The night's scenario x model cells asked about; one line for what it did not run."""
    if not records:
        raise click.UsageError(no_runs(results_dir, manifest))
    for asked, what, there in (
        (scenarios, "scenario", {r.scenario for r in records}),
        (models, "model", {r.model for r in records}),
    ):
        if unknown := [x for x in asked if x not in there]:
            raise click.UsageError(
                f"{results_dir} has no runs of {what} {', '.join(map(repr, unknown))} "
                f"(its {what}s: {', '.join(sorted(there))})"
            )
    return sorted(
        {
            CellKey(r.scenario, r.model)
            for r in records
            if (not scenarios or r.scenario in scenarios) and (not models or r.model in models)
        }
    )
