"""The `evalrunner` command: a thin click layer over the Python API.

Exit codes: 0 fine; 1 crashed runs or flagged regressions (and, with
--fail-on-failure, failed runs); 2 usage or configuration errors; 130
interrupted. User errors print one line without a traceback.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from evalrunner.errors import EvalrunnerError

F = TypeVar("F", bound=Callable[..., Any])

SUITES_DIR = click.option(
    "--suites-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: os.environ.get("EVALRUNNER_SUITES", "suites"),
    show_default="suites (env EVALRUNNER_SUITES)",
    help="Directory holding suite YAML files.",
)


def _user_errors(fn: F) -> F:
    """Turn EvalrunnerError into one line on stderr and its exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EvalrunnerError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="evalrunner")
def main() -> None:
    """Tell when an LLM agent's behaviour changed.

    Frozen mode runs in pytest (see the README); live mode runs suites against
    model endpoints: `evalrunner run --suite NAME`.
    """
    # Agents named in suites ("pkg.module:fn") are imported from the project
    # the command runs in, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


@main.command("list")
@SUITES_DIR
@_user_errors
def list_cmd(suites_dir: Path) -> None:
    """List suites and their scenarios."""
    from evalrunner.suite import find_suites, load_suite

    found = find_suites(suites_dir)
    if not found:
        click.echo(f"no suites in {suites_dir}/")
        return
    for name, path in found.items():
        suite = load_suite(path)
        click.echo(f"{name}  ({path}, {len(suite.scenarios)} scenarios, runs {suite.runs})")
        for sc in suite.scenarios:
            tags = f"  [{', '.join(sc.tags)}]" if sc.tags else ""
            click.echo(f"  {sc.id}{tags}  {sc.description}".rstrip())


@main.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@SUITES_DIR
@_user_errors
def validate(files: tuple[Path, ...], suites_dir: Path) -> None:
    """Check suite files without running anything (default: every suite in --suites-dir)."""
    from evalrunner.suite import find_suites, load_suite

    paths = list(files) or list(find_suites(suites_dir).values())
    if not paths:
        raise click.UsageError(f"no suite files given and none in {suites_dir}/")
    for path in paths:
        suite = load_suite(path)
        for sc in suite.scenarios:
            sc.load_agent()
        click.echo(f"ok  {path}  ({len(suite.scenarios)} scenarios)")


@main.command("serve-local")
@_user_errors
def serve_local() -> None:
    """Start the embedded model server and print how to reach it; Ctrl-C stops it."""
    from evalrunner.local_model import LocalModelServer

    with LocalModelServer() as server:
        click.echo(f"model:    {server.model}")
        click.echo(f"api_base: {server.api_base}")
        click.echo(f"api_key:  {server.api_key}  (any value works)")
        click.echo("litellm:  litellm.completion(model=..., api_base=..., api_key=..., messages=[...])")
        click.echo("Ctrl-C to stop.")
        try:
            while server.running:
                asyncio.run(asyncio.sleep(1))
        except KeyboardInterrupt:
            click.echo("stopping")


def _default_out(suite: str) -> Path:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("results") / f"{suite}-{stamp}"


@main.command()
@click.option("--suite", "suite_name", required=True, help="Suite name (suites/NAME.yaml) or path.")
@click.option("--runs", "-n", type=click.IntRange(min=1), help="Runs per scenario and model (default: the suite's).")
@click.option("--model", "models", multiple=True, help="litellm model string; repeat for a matrix; 'local' = embedded model.")
@click.option("--scenario", "scenarios", multiple=True, help="Only these scenario ids (repeatable).")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), help="Runs at the same time (default: the suite's).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: results/<suite>-<time>).")
@click.option("--resume", is_flag=True, help="Finish an interrupted results directory (needs --out).")
@click.option("--fail-on-failure", is_flag=True, help="Also exit 1 when any run failed its checks.")
@SUITES_DIR
@_user_errors
def run(
    suite_name: str,
    runs: int | None,
    models: tuple[str, ...],
    scenarios: tuple[str, ...],
    concurrency: int | None,
    out: Path | None,
    resume: bool,
    fail_on_failure: bool,
    suites_dir: Path,
) -> None:
    """Run a suite live: every scenario N times against each model."""
    from evalrunner.endpoints import EndpointPool
    from evalrunner.runner import SUMMARY_COLUMNS, format_table, run_suite, summary_rows
    from evalrunner.suite import load_suite_by_name

    suite = load_suite_by_name(suite_name, suites_dir)
    if resume and out is None:
        raise click.UsageError("--resume needs --out DIR (the directory to finish)")
    out = out or _default_out(suite.name)
    click.echo(f"suite {suite.name}: results in {out}", err=True)
    try:
        with EndpointPool() as pool:
            report = asyncio.run(
                run_suite(
                    suite,
                    out=out,
                    runs=runs,
                    models=models,
                    scenario_ids=scenarios,
                    concurrency=concurrency,
                    resume=resume,
                    pool=pool,
                )
            )
    except KeyboardInterrupt:
        click.echo(f"\ninterrupted; finished runs are saved. Resume with:\n  evalrunner run --suite {suite.name} --out {out} --resume", err=True)
        sys.exit(130)
    if report.resumed_skipped:
        click.echo(f"resumed: {report.resumed_skipped} runs were already done", err=True)
    click.echo(format_table(summary_rows(report.records), SUMMARY_COLUMNS))
    for rid, tb in report.crashes:
        click.echo(f"\nCRASHED {rid}:\n{tb}", err=True)
    failed = any(r.outcome == "failed" for r in report.records)
    if report.crashes or (fail_on_failure and failed):
        sys.exit(1)
