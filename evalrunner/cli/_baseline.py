"""``evalrunner baseline``: write baseline files from a live run or existing results."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import click

from evalrunner import _clock as clock
from evalrunner._jsonio import read_json
from evalrunner._next import NextStep, Said
from evalrunner.baseline import build_baselines
from evalrunner.cli import _exit, _options
from evalrunner.cli._run import default_out, notice, print_run
from evalrunner.errors import EvalrunnerError
from evalrunner.night import NightOptions, run_live
from evalrunner.suite import Suite, load_suite_by_name


def _run_for_baseline(
    suite: Suite,
    out: Path | None,
    runs: int | None,
    models: tuple[str, ...],
    scenarios: tuple[str, ...],
) -> Path:
    """One live night, neither compared nor kept in the history; its results directory."""
    out = out or default_out(suite.name)
    click.echo(f"suite {suite.name}: running for a baseline", err=True)
    finish = _options.say(
        Said(
            "Finish them with:\n  ",
            NextStep(
                "run",
                suite.name,
                ("--out", str(out), "--resume", "--no-compare", "--no-history"),
                locations=("suites_dir",),
            ),
            "\nthen: ",
            NextStep("baseline", suite.name, ("--from", str(out))),
        )
    )
    with _exit.on_interrupt(finish, out):
        options = NightOptions(
            out=out,
            runs=runs,
            models=models,
            scenarios=scenarios,
            baselines_dir=None,
            history=None,
        )
        result = run_live(suite, options, notify=notice)
    print_run(result, suite.name, _options.locations())
    code = _exit.run_code(result, gate=False, fail_on_failure=False)
    if result.outage is not None:
        # No baseline from an outage: it would describe the endpoint, not the agent.
        click.echo(
            f"no baseline written: the night was an outage; its runs are in {out}, the "
            "baselines as they were. Run this again once what the night's line above says to "
            "check is mended",
            err=True,
        )
        _exit.exit_with(code)
    return out


@click.command(short_help="Accept nights into the committed baselines.")
@_options.suite_name
@click.option(
    "--from",
    "sources",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Build from existing results directories (one per night) instead of running.",
)
@_options.runs("Runs per scenario and model when running (default: the suite's).")
@_options.models(
    "litellm model string when running; 'local' = embedded model. With --from: accept only "
    "this model's runs (repeatable)."
)
@_options.scenarios("Only these scenario ids (when running, or of the --from nights).")
@_options.out("Results directory for the run (with --nights, NAME-1, NAME-2, ...).")
@click.option(
    "--nights",
    type=click.IntRange(1, 30),
    default=1,
    show_default=True,
    help="Nights to run, one after another, and accept together: a baseline gates once it "
    "holds the tolerance's min_baseline_nights (default 3).",
)
@click.option(
    "--window",
    type=int,
    default=None,
    hidden=True,
    help="Removed: baselines are anchored (every accepted night is kept).",
)
@click.option(
    "--append",
    is_flag=True,
    help="Accept these nights into the existing baselines (all their nights are kept) "
    "instead of replacing them. Either way the accumulated evidence starts again.",
)
@click.option(
    "--accept-flagged",
    is_flag=True,
    help="With --append: take nights that fail a gating metric against the baseline they "
    "join (refused otherwise: a baseline of both behaviours flags neither).",
)
@_options.baselines_dir()
@_options.suites_dir
def baseline(
    suite_name: str,
    sources: tuple[Path, ...],
    runs: int | None,
    models: tuple[str, ...],
    scenarios: tuple[str, ...],
    out: Path | None,
    nights: int,
    window: int | None,
    append: bool,
    accept_flagged: bool,
    baselines_dir: Path,
    suites_dir: Path,
) -> None:
    """Accept nights as the baselines/<suite>/<scenario>--<model>.json files, from a live run
    or existing results (one directory per night).

    Baselines are anchored: only this command changes them, and a nightly run never
    rolls them forward. A scenario gates once its baseline has the tolerance's
    min_baseline_nights (default 3) accepted nights.
    """
    _refuse_what_does_nothing(window, bool(sources), runs, out, nights)
    suite = load_suite_by_name(suite_name, suites_dir)
    if not sources:
        sources = tuple(_run_nights(suite, out, nights, runs, models, scenarios))
        models = scenarios = ()  # the nights ran only these
    before = _nights_held(baselines_dir / suite.name)
    written = build_baselines(
        suite,
        list(sources),
        baselines_dir,
        append=append,
        models=models,
        scenarios=scenarios,
        accept_flagged=accept_flagged,
    )
    for path, rewritten in written.items():
        click.echo(f"{'wrote' if rewritten else 'unchanged'} {path}")
        _say_what_moved(path, before.get(path), append)
    _say_when_they_gate(suite, written)


def _refuse_what_does_nothing(
    window: int | None, building: bool, runs: int | None, out: Path | None, nights: int
) -> None:
    """Options that would be ignored: the removed --window, and with --from (nothing runs)
    those that shape a live run."""
    if window is not None:
        raise click.UsageError(
            "--window is gone: baselines are anchored, never rolled (a rolling window absorbs "
            "a slow regression into its own reference); accept nights on purpose with "
            "--from DIR [--from DIR ...] [--append], and rebuild without --append to start afresh"
        )
    if building:
        # These shape a live run; with --from nothing runs, so they would be ignored.
        given = [
            name
            for name, value in (("--runs", runs), ("--out", out), ("--nights", nights > 1))
            if value
        ]
        if given:
            raise click.UsageError(
                f"{' and '.join(given)} shape{'s' if len(given) == 1 else ''} a live run, and "
                "--from builds from existing results: drop them, or drop --from to run"
            )


def _say_when_they_gate(suite: Suite, written: Mapping[Path, bool]) -> None:
    """A note when the baselines hold fewer nights than they need to gate: a night then
    flags nothing, and the team should know before it reads a green night as a pass."""
    need = max((s.tolerance.min_baseline_nights for s in suite.scenarios), default=1)
    held = [len(n) for path in written if (n := _nights_in(path)) is not None]
    if held and min(held) < need:
        click.echo(
            f"note: these baselines hold {min(held)} night{'s' if min(held) != 1 else ''}; a "
            f"scenario gates once its baseline holds {need} (min_baseline_nights), so until "
            "then a night flags nothing: accept more nights that behave as intended with "
            "--from NIGHT --append, or run several now with --nights",
            err=True,
        )


def _run_nights(
    suite: Suite,
    out: Path | None,
    nights: int,
    runs: int | None,
    models: tuple[str, ...],
    scenarios: tuple[str, ...],
) -> Iterator[Path]:
    """The --nights live nights, one after another; their results directories."""
    for i, where in enumerate(_night_dirs(out or default_out(suite.name), nights)):
        if i:
            # A night is known by its start (to the second) and its runs: a deterministic
            # agent's cell run twice inside one second would be refused as one night twice.
            clock.past_this_second()
        yield _run_for_baseline(suite, where, runs, models, scenarios)


def _night_dirs(out: Path, nights: int) -> list[Path]:
    """Each night's results directory: ``out`` for one night, ``out-1`` ... for several."""
    return (
        [out] if nights == 1 else [out.with_name(f"{out.name}-{i}") for i in range(1, nights + 1)]
    )


def _say_what_moved(path: Path, held: set[tuple[str, str]] | None, append: bool) -> None:
    """A note when a rewritten baseline dropped accepted nights, or --append added none."""
    now = _nights_in(path) or set()
    if held and not append and held - now:
        click.echo(
            f"note: {path.name} held {len(held)} accepted night{'s' if len(held) != 1 else ''}; "
            f"without --append it now holds only the {len(now)} given, {len(held - now)} of the "
            "old not among them (restore it from version control to undo, or rebuild with "
            "--append to keep them)",
            err=True,
        )
    elif held and append and now == held:
        click.echo(f"note: {path.name} held every night given already; none added", err=True)


def _nights_held(folder: Path) -> dict[Path, set[tuple[str, str]]]:
    """Accepted nights of each baseline file already in ``folder`` (unreadable ones left
    out: a rebuild is the way to replace a broken file)."""
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return {path: n for path in files if (n := _nights_in(path)) is not None}


def _nights_in(path: Path) -> set[tuple[str, str]] | None:
    """The nights a baseline file holds, as (start, source), read without validating its
    runs (every file of the suite is read for this)."""
    with contextlib.suppress(EvalrunnerError):
        doc = read_json(path, "baseline")
        nights = doc.get("nights") if isinstance(doc, dict) else None
        if isinstance(nights, list):
            return {
                (str(n.get("started_at")), str(n.get("source")))
                for n in nights
                if isinstance(n, dict)
            }
    return None
