"""``evalrunner explain``: why a night's cells differ from their baselines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from evalrunner._next import NextStep, each
from evalrunner.baseline import Explanation, explain_results
from evalrunner.baseline._file import baseline_models
from evalrunner.cli import _options
from evalrunner.cli._compare import no_runs, stop_on_outage, unfinished_note
from evalrunner.errors import ConfigError
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
    for note in _unfinished(results_dir, manifest, records, scenarios, models):
        click.echo(f"note: {note}", err=True)
    cells = _measured(cells, records)
    if not cells:
        return  # each model asked about failed tonight: its line is said
    explained = explain_results(suite, results, baselines_dir, cells)
    if not explained:
        raise _no_baseline(suite.name, results_dir, baselines_dir, cells, scenarios)
    for cell, why in explained.items():
        scope = ("--scenario", cell.scenario, "--model", cell.model)
        _say(cell, why, diff, _options.say(NextStep("baseline", suite.name, scope)))


def _say(cell: CellKey, why: Explanation, diff: bool, refresh: str) -> None:
    """One cell's explanation: the cause line, then what it rests on, indented.
    ``refresh``: the command that accepts a new baseline for the cell."""
    head = f"{cell.scenario} × {cell.model}:"
    indent = "  "
    if why.stale is not None:
        # The night refused this baseline: its differences are the configuration's change
        # as much as anything, so they are shown under that heading, not as the cell's cause.
        click.echo(
            f"{head} its baseline is {why.stale}, so the night did not compare it; refresh it "
            f"with: {refresh}"
        )
        head, indent = "  against that baseline all the same:", "    "
    click.echo(f"{head} {why.line()}")
    if why.divergence is not None and why.divergence.line() not in why.line():
        click.echo(f"{indent}runs diverge {why.divergence.line()}")  # unless the cause said it
    for change in why.request:
        click.echo(f"{indent}request: {change}")
    for line in why.rows:
        click.echo(f"{indent}row {line}")
    if diff:
        for line in why.request_diff:
            click.echo(f"{indent}  {line}")


def _no_baseline(
    suite: str,
    results_dir: Path,
    baselines_dir: Path,
    cells: list[CellKey],
    scenarios: tuple[str, ...],
) -> ConfigError:
    """Nothing to explain against: the models the suite's baselines are for, when they are
    all for other models than the night's (as ``plan`` says it), and the command that
    accepts baselines for the night's."""
    ours = sorted({c.model for c in cells})
    others = [m for m in baseline_models(baselines_dir, suite) if m not in ours]
    where = f"{results_dir} has a baseline under {baselines_dir / suite}"
    among = f" among {', '.join(scenarios)}" if scenarios else ""
    scope = (*each("--model", ours), *each("--scenario", scenarios))
    accept = _options.say(NextStep("baseline", suite, scope))
    if not others:
        return ConfigError(f"no scenario of {where}{among}; accept nights first: {accept}")
    ran = f"the model{'s' if len(ours) != 1 else ''} it ran"
    those = "that model" if len(others) == 1 else "those models"
    return ConfigError(
        f"no scenario of {where} for {', '.join(ours)}, {ran}{among}; the baselines there "
        f"are for {', '.join(others)} (explain a night of {those} instead), or accept nights "
        f"of {', '.join(ours)} first: {accept}"
    )


_NAMED = 3
"""Cells of an unfinished night without a run named one by one up to this many."""


def _unfinished(
    results_dir: Path,
    manifest: Manifest,
    records: Sequence[RunRecord],
    scenarios: tuple[str, ...],
    models: tuple[str, ...],
) -> list[str]:
    """For a night not finished: compare's note on it, and the cells it planned that have
    no finished run, which explain cannot speak of (it used to leave them out unsaid)."""
    note = unfinished_note(results_dir, manifest, "explained")
    if note is None:
        return []
    notes = [note]
    ran = {r.cell for r in records}
    waiting = [c for c in _planned(manifest) if c not in ran and _asked(c, scenarios, models)]
    if waiting:
        named = ", ".join(map(str, waiting[:_NAMED]))
        more = f" and {len(waiting) - _NAMED} more" if len(waiting) > _NAMED else ""
        notes.append(f"no run of {named}{more} has finished yet: not explained")
    return notes


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
    return sorted({r.cell for r in records if _asked(r.cell, scenarios, models)})


def _planned(manifest: Manifest) -> list[CellKey]:
    """The cells a night planned, in scenario order."""
    by_scenario = manifest.models_by_scenario or {}
    return [
        CellKey(s, m) for s in sorted(manifest.runs) for m in by_scenario.get(s) or manifest.models
    ]


def _asked(cell: CellKey, scenarios: tuple[str, ...], models: tuple[str, ...]) -> bool:
    """Whether ``cell`` is among those asked about (every one, when none is named)."""
    return (not scenarios or cell.scenario in scenarios) and (not models or cell.model in models)
