"""``evalrunner report``: the trend report, a Markdown summary and JUnit XML from the history."""

from __future__ import annotations

from pathlib import Path

import click

from evalrunner._heap import arrow_on_malloc, heap_frozen
from evalrunner.cli import _options
from evalrunner.errors import ConfigError


@click.command()
@_options.history
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports/out"),
    show_default=True,
    help="Where report.html, summary.md and junit.xml go.",
)
@click.option("--suite", "suites", multiple=True, help="Only these suites (repeatable).")
@click.option("--model", "models", multiple=True, help="Only these models (repeatable).")
@click.option("--since", help="Start of the time window (ISO 8601 date or time, UTC).")
@click.option("--until", help="End of the time window (a date includes that whole day).")
@click.option("--title", default="evalrunner report", show_default=True)
def report(
    history: str,
    out: Path,
    suites: tuple[str, ...],
    models: tuple[str, ...],
    since: str | None,
    until: str | None,
    title: str,
) -> None:
    """Render the HTML trend report, a Markdown summary and JUnit XML from the run history.

    A history location that does not exist or holds no entries, or a --suite or
    --model it has no runs of, is an error (exit 2), not an empty report.
    """
    from evalrunner.history._store import exists
    from evalrunner.report import write_report  # jinja2, fsspec: only when used
    from evalrunner.report._report import load_selected
    from evalrunner.report._select import check_window

    check_window(since, until)
    if not exists(history):
        raise ConfigError(
            f"history location {history!r} does not exist; pass --history with the location "
            f"'evalrunner run' wrote to (default {_options.DEFAULT_HISTORY})"
        )
    # The suites and window asked for choose the files before any is opened.
    loaded = load_selected(history, suites=suites, models=models, since=since, until=until)
    # A year of history is ~500,000 objects that live while the report is rendered: frozen,
    # the cyclic collector stops rescanning them (half the rendering's time). Arrow's
    # buffers come from malloc, not its default pool, which keeps freed pages for reuse
    # (60 MB at a year's peak).
    with heap_frozen(), arrow_on_malloc():
        paths = write_report(
            loaded,
            out,
            suites=list(suites) or None,
            models=list(models) or None,
            since=since,
            until=until,
            title=title,
        )
    for kind, path in paths.items():
        click.echo(f"{kind}: {path}")
