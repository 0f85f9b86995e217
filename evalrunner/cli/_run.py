"""``evalrunner run``: a suite live, compared with its baselines, appended to the history."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from evalrunner import _clock as clock
from evalrunner._next import NextStep
from evalrunner._redact import redact_text
from evalrunner.baseline._compare import Comparison
from evalrunner.cli import _exit, _options
from evalrunner.cli._night_line import night_line, scope_of, several_models, young_cells
from evalrunner.cli._options import terminal_safe
from evalrunner.cli._tables import (
    SUMMARY_COLUMNS,
    VERDICT_COLUMNS,
    detectable,
    folded,
    format_table,
    summary_rows,
    unpriced_line,
    verdict_rows,
)
from evalrunner.live._driver import RunReport
from evalrunner.live._ray import EXECUTORS
from evalrunner.live._results import AdaptiveSettings
from evalrunner.night import LiveResult, run_live
from evalrunner.night._night import NightOptions
from evalrunner.suite import Outcome, load_suite_by_name
from evalrunner.suite._record import RunRecord

if TYPE_CHECKING:
    pass

# Every default below is the options model's own, stated once there.
_NIGHT = NightOptions.model_fields
_ADAPTIVE = AdaptiveSettings.model_fields


def default_out(suite: str) -> Path:
    return Path("results") / f"{suite}-{clock.stamp()}"


def notice(text: str) -> None:
    """A one-line notice on stderr (results location, local model, concurrency cap)."""
    click.echo(text, err=True)


def _print_sequential(report: RunReport) -> None:
    """What --adaptive and escalation did: per cell, then in one line."""
    summary = report.adaptive
    what = "adaptive" if summary is None or summary.adaptive else "escalation"
    for note in report.adaptive_notes:
        click.echo(f"{what}: {note}", err=True)
    if summary is not None and (summary.adaptive or summary.escalated):
        click.echo(f"{what}: {summary.line()}", err=True)


def judge_lines(records: Sequence[RunRecord]) -> list[str]:
    """Per judged scenario x model: how often the judge's grades of one answer disagreed."""
    graded: dict[tuple[str, str], list[bool]] = {}
    for r in records:
        if r.judge_agreed is not None:
            graded.setdefault((r.scenario, r.model), []).append(r.judge_agreed)
    return [
        f"{scenario} × {model}: its grades of one answer disagreed on "
        f"{agreed.count(False)} of {len(agreed)} runs (metric judge_agreement)"
        for (scenario, model), agreed in sorted(graded.items())
    ]


_KEPT_ON_RESUME = (
    "suites_dir",
    "baselines_dir",
    "no_compare",
    "history",
    "no_history",
    "executor",
    "ray_address",
    "ray_workers",
    "concurrency",
    "outage_share",
    "explain",
    "gate",
    "fail_on_failure",
    "fail_on_unmatched",
)
"""Options of ``run`` that say where the night's files go and what follows the runs: a
resume given without them would, say, append to the history a night run with
--no-history. The plan's own options (runs, models, ...) are in the manifest."""


def _resume_command(suite_name: str, out: Path) -> str:
    """The command that finishes this night as it was started."""
    params = click.get_current_context().command.params
    kept = [p.name for p in params if p.name is not None and p.name in _KEPT_ON_RESUME]
    words = ["evalrunner", "run", "--suite", suite_name, "--out", str(out), "--resume"]
    return shlex.join(words + _options.given(kept))


def _say_what_options_do(unwritten_history: str | None, adaptive_runs: int | None) -> None:
    """Notes on options that do less than they seem to: ``--no-history`` beside a --history
    given (``unwritten_history``), ``--runs`` beside ``--adaptive`` (``adaptive_runs``)."""
    given = click.get_current_context().get_parameter_source
    if unwritten_history is not None and given("history") is ParameterSource.COMMANDLINE:
        # A wrapper may pass --history always and a person add --no-history: the
        # latter wins, and the night says so rather than leave it unsaid.
        click.echo(
            f"note: --no-history: nothing is appended to --history {unwritten_history}", err=True
        )
    if adaptive_runs is not None:
        # Said, because --runs 1 --adaptive running 10 runs of a scenario reads as a bug.
        click.echo(
            f"note: --adaptive: a scenario with a baseline is planned for --max-runs (default "
            f"{_ADAPTIVE['max_runs'].default}), may stop at half of it, and may escalate to its "
            f"escalate_to times it (default 3) when a change looks likely; --runs "
            f"{adaptive_runs} is for those without one",
            err=True,
        )


def _say_if_baselines_elsewhere(suite: str, suites_dir: Path, baselines_dir: Path) -> None:
    """A note when the default baselines/ (beside where the command runs) has none of the
    suite's, and the project its suites come from has: run from another directory, a
    night compared nothing, said "no baselines yet" and offered to make new ones (a
    review). Not when --baselines was given: those are the ones meant."""
    if (
        click.get_current_context().get_parameter_source("baselines_dir")
        is ParameterSource.COMMANDLINE
    ):
        return
    here = baselines_dir / suite
    there = suites_dir.resolve().parent / baselines_dir / suite
    if here.is_dir() or not there.is_dir() or here.resolve() == there.resolve():
        return
    project = suites_dir.resolve().parent
    click.echo(
        f"note: no baselines of {suite} under {here.resolve()}; the project of "
        f"{suites_dir} has them in {there}: run from {project}, or pass --baselines "
        f"{project / baselines_dir} (and --history, whose default is relative too)",
        err=True,
    )


def print_run(result: LiveResult, suite: str, where: str = "", verbose: bool = False) -> None:
    """The run table on stdout; resume, adaptive, baseline and crash notes on stderr;
    then what went wrong after the runs (outage, a failed history append), last.

    ``where``: the locations the night was given, as words (:func:`._options.locations`),
    for the tables' suggestions; every other command it suggests is a NextStep that
    :func:`._options.say` renders with them."""
    report = result.report
    _print_resumed(report)
    _print_sequential(report)
    _print_runs(result)
    for line in judge_lines(report.records):
        click.echo(f"judge: {line}", err=True)
    if result.comparison is not None:
        _print_comparison(result.comparison, report, suite, verbose)
    _print_resent(result)
    _print_why(result, suite)
    for said in (result.history_path, result.history_note):
        if said:
            click.echo(f"history: {said}", err=True)
    for rid, tb in report.crashes:
        click.echo(f"\nCRASHED {rid}:\n{terminal_safe(redact_text(tb))}", err=True)
    for outage in [result.outage] if result.outage else result.model_outages.values():
        click.echo(outage.line(), err=True)
    # Last: what the night found and what to run next (after an outage's own line too).
    click.echo(night_line(result, suite, where), err=True)
    for problem in result.problems:
        click.echo(f"error: {_options.say(problem)}", err=True)


def _print_runs(result: LiveResult) -> None:
    """The table of runs per scenario x model, and which models are unpriced."""
    records = result.report.records
    click.echo(format_table(summary_rows(records, measured=result.outage is None), SUMMARY_COLUMNS))
    if (unpriced := unpriced_line(records)) is not None:
        click.echo(f"\n{unpriced}")  # after a blank line: the table ends where it ends


def _print_resent(result: LiveResult) -> None:
    """What the runs of each cell whose configuration changed sent otherwise."""
    for cell, sent in result.resent.items():
        what = (
            f"its runs sent otherwise than its baseline's: {'; '.join(sent)}"
            if sent
            else "its runs sent the first request its baseline's did: what changed is in its "
            "checks, skip rules or normalisation"
        )
        click.echo(f"note: {cell}: {what}", err=True)


def _print_resumed(report: RunReport) -> None:
    if report.resumed_unclosed:
        click.echo(
            "note: the last process on this directory ended without closing it (killed, out "
            "of memory, stopped by a full disk, or an in-process agent that called os._exit): "
            "its finished runs are kept and the runs it had under way run again",
            err=True,
        )
    if report.resumed_skipped:
        click.echo(f"resumed: {report.resumed_skipped} runs were already done", err=True)


def _print_comparison(
    comparison: Comparison, report: RunReport, suite: str, verbose: bool = False
) -> None:
    """The verdict table, then the comparison's notes (with the locations given), then the
    baselines too young to gate."""
    rows = verdict_rows(comparison.results, attention_only=not verbose)
    rest = "" if verbose else folded(comparison.results, "--verbose")
    if rows or rest:
        click.echo("\nCompared with baselines:")
    if rows:
        click.echo(format_table(rows, VERDICT_COLUMNS))
    if rest:
        click.echo(rest)
    if line := detectable(comparison.results):
        click.echo(f"\n{line}")
    if comparison.escalation is not None:
        click.echo(comparison.escalation.line(), err=True)
    for note in comparison.notes:
        click.echo(f"note: {_options.say(note)}", err=True)
    young = young_cells(comparison.results)
    if young:
        scope = ("--from", "NIGHT", *scope_of(young, several_models(report)), "--append")
        click.echo(
            f"note: baselines too young to gate: {len(young)}; accept nights that behaved "
            f"as intended into them with {_options.say(NextStep('baseline', suite, scope))} "
            f"(tonight's: --from {report.out})",
            err=True,
        )


def _print_why(result: LiveResult, suite: str) -> None:
    """Why each failing scenario changed, one cause line each (docs/explain.md)."""
    if not result.explanations:
        return
    more = _options.say(NextStep("explain", suite, ("--results", str(result.report.out))))
    click.echo(f"\nWhy the failing scenarios changed (more: {more}):")
    for cell, why in result.explanations.items():
        click.echo(f"{cell.scenario} × {cell.model}: {why.line()}")
        if why.divergence is not None and why.divergence.line() not in why.line():
            click.echo(f"  runs diverge {why.divergence.line()}")
        if why.sentinel:
            click.echo(f"  {_options.say(why.sentinel.line())}")
        if why.rows:
            click.echo(f"  rows that moved most: {'; '.join(why.rows)}")


@click.command()
@_options.suite_name
@_options.runs("Runs per scenario and model, per row of a dataset (default: the suite's).")
@_options.rows("Dataset scenarios: run a stable subset of this many rows (the same every night).")
@_options.models("litellm model string; repeat for a matrix; 'local' = embedded model.")
@_options.scenarios("Only these scenario ids (repeatable).")
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    help="Runs at the same time (default: the suite's).",
)
@_options.out("Results directory (default: results/<suite>-<time>).")
@click.option(
    "--resume", is_flag=True, help="Finish an interrupted results directory (needs --out)."
)
@_options.baselines_dir("Baselines to compare with.")
@click.option("--no-compare", is_flag=True, help="Do not compare with baselines.")
@_options.history
@click.option("--no-history", is_flag=True, help="Do not append this run to the history.")
@click.option(
    "--adaptive",
    is_flag=True,
    help="Look at each scenario after half its runs, then every --batch runs, and stop it at "
    "the first look where nothing looks suspicious (a scenario with a baseline; suspicious "
    "ones still escalate).",
)
@_options.positive(
    "--batch",
    None,
    "Runs per look after the first with --adaptive (escalation's too).",
    shown=_ADAPTIVE["batch"].default,
)
@_options.positive(
    "--max-runs",
    None,
    "With --adaptive, the N a scenario with a baseline is planned for (one without a "
    "baseline cannot stop early and runs the suite's runs, as without --adaptive).",
    shown=_ADAPTIVE["max_runs"].default,
)
@click.option(
    "--outage-share",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=_NIGHT["outage_share"].default,
    show_default=True,
    help="A model more than this share of whose runs are infra_error had an outage: its runs "
    "are not compared, and the night exits 3 (1 if another model's regression or a crash).",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default=_NIGHT["executor"].default,
    show_default=True,
    help="Where runs execute: this process, or a Ray cluster (pip install 'evalrunner[ray]').",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    help="Ray cluster for --executor ray (ray://head:10001, auto); default: a local Ray.",
)
@_options.positive(
    "--ray-workers", _NIGHT["ray_workers"].default, "Worker processes for --executor ray."
)
@click.option(
    "--explain/--no-explain",
    default=_NIGHT["explain"].default,
    show_default=True,
    help="Say why each scenario that fails the night changed (see 'evalrunner explain').",
)
@_options.gate("Exit 1 when a gating metric regressed.")
@click.option("--fail-on-failure", is_flag=True, help="Also exit 1 when any run failed its checks.")
@click.option(
    "--verbose",
    is_flag=True,
    help="List every row of the verdict table (by default: the rows that need attention, "
    "and one line counting the rest; the report keeps them all).",
)
@click.option(
    "--fail-on-unmatched",
    is_flag=True,
    help="Also exit 1 when a scenario x model was not compared because its baseline is for "
    "another configuration or model (a changed temperature, prompt or check).",
)
@click.option(
    "--budget",
    "budget_usd",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="USD the night may spend (default: the suite's budget_usd): no run starts that "
    "would cross it, and the night exits 4; --resume with a larger one finishes it. Every "
    "model needs a price (pricing: in the suite, or litellm's price table).",
)
@_options.suites_dir
def run(
    suite_name: str,
    runs: int | None,
    rows: int | None,
    models: tuple[str, ...],
    scenarios: tuple[str, ...],
    concurrency: int | None,
    out: Path | None,
    resume: bool,
    baselines_dir: Path,
    no_compare: bool,
    history: str,
    no_history: bool,
    adaptive: bool,
    batch: int | None,
    max_runs: int | None,
    outage_share: float,
    executor: str,
    ray_address: str | None,
    ray_workers: int,
    explain: bool,
    gate: bool,
    fail_on_failure: bool,
    fail_on_unmatched: bool,
    verbose: bool,
    budget_usd: float | None,
    suites_dir: Path,
) -> None:
    """Run a suite live: every scenario N times against each model, then compare with baselines.

    With --resume, the directory's own plan (scenarios, models, runs, --adaptive)
    is continued; options given again must agree with it.
    """
    _say_what_options_do(
        history if no_history else None, runs if adaptive and max_runs is None else None
    )
    _check_executor(executor, ray_address)
    suite = load_suite_by_name(suite_name, suites_dir)
    if not no_compare:
        _say_if_baselines_elsewhere(suite.name, suites_dir, baselines_dir)
    if resume and out is None:
        raise click.UsageError("--resume needs --out DIR (the directory to finish)")
    out = out or default_out(suite.name)
    with _exit.on_interrupt(f"Resume with:\n  {_resume_command(suite_name, out)}", out):
        options = NightOptions(
            out=out,
            runs=runs,
            rows=rows,
            models=models,
            scenarios=scenarios,
            concurrency=concurrency,
            resume=resume,
            baselines_dir=None if no_compare else baselines_dir,
            history=None if no_history else history,
            adaptive=adaptive,
            batch=batch,
            max_runs=max_runs,
            outage_share=outage_share,
            executor=executor,
            ray_address=ray_address,
            ray_workers=ray_workers,
            explain=explain,
            budget_usd=budget_usd,
        )
        result = run_live(suite, options, notify=notice)
    print_run(result, suite.name, _options.locations(), verbose)
    _exit_for(result, gate, fail_on_failure, fail_on_unmatched)


def _check_executor(executor: str, ray_address: str | None) -> None:
    if ray_address is not None and executor != "ray":
        raise click.UsageError("--ray-address is for --executor ray; add it, or drop --ray-address")


def _exit_for(
    result: LiveResult, gate: bool, fail_on_failure: bool, fail_on_unmatched: bool
) -> None:
    """Exit with the night's code, saying so when --fail-on-failure or --fail-on-unmatched
    alone made it 1."""
    code = _exit.run_code(
        result, gate=gate, fail_on_failure=fail_on_failure, fail_on_unmatched=fail_on_unmatched
    )
    if code != _exit.run_code(result, gate=gate, fail_on_failure=False):
        failed = sum(r.outcome == Outcome.FAILED for r in result.report.records)
        unfit = len(result.comparison.unfit) if result.comparison is not None else 0
        said = [f"{failed} runs failed their checks (--fail-on-failure)"] if failed else []
        if fail_on_unmatched and unfit:
            said.append(
                f"{unfit} scenario x models were not compared: their baseline is for another "
                "configuration or model (--fail-on-unmatched)"
            )
        click.echo(f"exit 1: {'; '.join(said)}", err=True)
    _exit.exit_with(code)
