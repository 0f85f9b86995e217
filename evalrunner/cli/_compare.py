"""``evalrunner compare A B``: two results directories, A the reference, B the candidate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalrunner._next import NextStep, Said
from evalrunner.baseline import compare_records
from evalrunner.baseline._compare import row_notes
from evalrunner.cli import _exit, _options
from evalrunner.cli._tables import (
    BETWEEN_DIRECTORIES,
    dollars,
    flagged_names,
    format_table,
    undecided,
    verdict_columns,
    verdict_rows,
)
from evalrunner.live import ResultsDir
from evalrunner.live._outage import outage_of, what_to_check
from evalrunner.live._results import Manifest
from evalrunner.night._night import OUTAGE_EXIT
from evalrunner.suite._cost import usd
from evalrunner.suite._record import RunRecord

if TYPE_CHECKING:
    from evalrunner.stats._metric_result import MetricResult


def no_runs(results_dir: Path, manifest: Manifest) -> str:
    """The one line for a results directory with no finished run: how to finish it."""
    if manifest.status == "finished":
        return f"{results_dir} holds no runs (its night planned none)"
    return _options.say(
        Said(
            f"{results_dir} holds no finished run yet (its night is {manifest.status}): finish "
            "it with ",
            _finish(manifest, results_dir),
        )
    )


def _finish(manifest: Manifest, results_dir: Path) -> NextStep:
    """The command that finishes a night, as it was started."""
    return NextStep("run", manifest.suite, ("--out", str(results_dir), "--resume"))


def unfinished_note(path: Path, manifest: Manifest, done: str = "compared") -> str | None:
    """A night not finished is read as it stands (``done``: what this command did with it),
    and the command that finishes it; None for a finished night."""
    if manifest.status == "finished":
        return None
    return _options.say(
        Said(
            f"{path} is an unfinished night (its status is {manifest.status}): {done} on the "
            "runs it holds; finish it with ",
            _finish(manifest, path),
        )
    )


def _caveats(*nights: tuple[Path, Manifest]) -> list[str]:
    """What the comparison stands on that the table does not show: a night not finished
    (compared as it stands), or the same night on both sides (nothing can differ)."""
    notes = [note for path, manifest in nights if (note := unfinished_note(path, manifest))]
    (path_a, a), (path_b, b) = nights
    if (a.started_at, sorted(a.run_ids or ())) == (b.started_at, sorted(b.run_ids or ())):
        notes.append(f"{path_a} and {path_b} hold the same night: nothing in it can differ")
    return notes


def stop_on_outage(records: Sequence[RunRecord], said: str, heading: str | None = None) -> None:
    """For a command that reads a night: when it was an outage (every model's runs mostly
    infra_error), its outage line, ``said`` with the next step, and exit 3, as ``run``
    exits on it; nothing measured the agent, so nothing can be compared or explained."""
    outage = outage_of(records)
    if outage is None:
        return
    if heading is not None:
        click.echo(heading, err=True)
    click.echo(outage.line(), err=True)
    click.echo(f"{said}. Next: {what_to_check(records)}, and run that night again", err=True)
    _exit.exit_with(OUTAGE_EXIT)


def _one_side_only(records_a: Sequence[RunRecord], records_b: Sequence[RunRecord]) -> list[str]:
    """A note per side naming the scenario x models only it ran: they have no row, and a
    table without them read as if they had been compared (a review)."""
    cells = [{(r.scenario, r.model) for r in records} for records in (records_a, records_b)]
    notes = []
    for side, own, other in (("A", cells[0], cells[1]), ("B", cells[1], cells[0])):
        alone = sorted(own - other)
        if alone:
            named = ", ".join(f"{scenario} [{model}]" for scenario, model in alone)
            notes.append(f"not compared, only {side} ran them: {named}")
    return notes


@click.command()
@click.argument("results_a", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("results_b", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--all-metrics", is_flag=True, help="Show diagnostic metrics too.")
@_options.gate("Exit 1 when a gating metric regressed from A to B.")
def compare(results_a: Path, results_b: Path, all_metrics: bool, gate: bool) -> None:
    """Compare two results directories: A is the reference, B the candidate."""
    first, second, records_a, records_b = _read_both(results_a, results_b)
    for side, results_dir, records in (("A", results_a, records_a), ("B", results_b, records_b)):
        # "Nothing flagged" and exit 0 would pass a branch whose night never reached the model.
        stop_on_outage(
            records,
            f"compare: {side} is an outage night, so nothing was compared",
            heading=f"{side}: {results_dir}",
        )
    results = compare_records(records_a, records_b)
    if not results:
        ran_a, ran_b = (", ".join(sorted({r.scenario for r in x})) for x in (records_a, records_b))
        raise click.UsageError(
            f"the two directories share no scenario x model (A ran {ran_a}; B ran {ran_b})"
        )
    for note in [
        *_caveats((results_a, first), (results_b, second)),
        *_one_side_only(records_a, records_b),
        *row_notes(records_a, records_b),
    ]:
        click.echo(f"note: {note}", err=True)
    click.echo(f"A: {results_a}{_spent(records_a)}\nB: {results_b}{_spent(records_b)}")
    rows = verdict_rows(results, all_metrics=all_metrics, settles=BETWEEN_DIRECTORIES)
    click.echo(format_table(rows, verdict_columns("A", "B")))
    # The closing line `run` prints too: the table alone cuts its notes.
    click.echo(_closing_line(results, first.suite), err=True)
    _exit.exit_with(_exit.compare_code(results, gate=gate))


def _read_both(
    results_a: Path, results_b: Path
) -> tuple[Manifest, Manifest, list[RunRecord], list[RunRecord]]:
    """Both nights' manifests and runs: of one suite, and each with a finished run."""
    a, b = ResultsDir(results_a), ResultsDir(results_b)
    first, second = (each.read_manifest() for each in (a, b))  # not results: one line, exit 2
    if first.suite != second.suite:
        raise click.UsageError(
            f"A holds suite {first.suite!r} and B suite {second.suite!r}: compare two runs "
            "of one suite"
        )
    records_a, records_b = a.records(), b.records()
    for results_dir, records, manifest in (
        (results_a, records_a, first),
        (results_b, records_b, second),
    ):
        if not records:
            raise click.UsageError(no_runs(results_dir, manifest))
    return first, second, records_a, records_b


def _closing_line(results: Sequence[MetricResult], suite: str) -> str:
    several = len({r.model for r in results}) > 1
    flagged = flagged_names([r for r in results if r.fails_night], several_models=several)
    if flagged:
        return f"compare: flagged from A to B: {', '.join(flagged)}"
    return "compare: nothing flagged from A to B" + undecided(results, suite, BETWEEN_DIRECTORIES)


def _spent(records: Sequence[RunRecord]) -> str:
    """' (40 runs, $0.08; $0.002 a run)' where priced: what each side cost (issue 55)."""
    if not any(r.cost_usd is not None for r in records):
        return ""
    priced = [r.cost_usd for r in records if r.cost_usd is not None]
    each = usd(math.fsum(priced) / len(priced))
    return f" ({len(records)} runs, {dollars(records)}; {each} a run)"
