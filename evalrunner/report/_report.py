"""Writing the three reports over the run history: HTML, Markdown and JUnit XML.

The renderers are pure (a loaded :class:`~evalrunner.history._store.History`
and a selection in, text out); this is the only function that touches the disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalrunner._jsonio import write_text_atomic
from evalrunner.errors import ConfigError
from evalrunner.history._store import History, load_history
from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import render_markdown
from evalrunner.report._missing import missing
from evalrunner.report._select import check_window, files_from


def load_selected(
    root: str,
    *,
    suites: Sequence[str] = (),
    models: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
) -> History:
    """The history at ``root`` a report of ``suites`` from ``since`` needs: only those
    suites' files, and only those of nights from a day before ``since`` (chosen by name,
    none opened otherwise). Where something asked for is not there, the whole history, so
    the report's error can say what is (the suites there, the nights' span)."""
    check_window(since, until)
    loaded = load_history(root, suites=list(suites) or None, since=files_from(since))
    if missing(loaded, suites, models, since, until) is not None:
        return load_history(root)
    return loaded


def write_report(
    history: History,
    out_dir: str | Path,
    *,
    suites: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    title: str = "evalrunner report",
) -> dict[str, Path]:
    """Write ``report.html``, ``summary.md`` and ``junit.xml`` atomically; return their paths.

    A history with no entries, a suite or model it has no runs of, or a window it has
    no nights in is a :class:`~evalrunner.errors.ConfigError`, not an empty report
    (which would read as "no runs"), and nothing is written.
    """
    check_window(since, until)
    problem = missing(history, suites or (), models or (), since, until)
    if problem is not None:
        where = f"history location {history.location!r}" if history.location else "history"
        raise ConfigError(f"{where}: {problem}")
    out = Path(out_dir)
    texts = {
        "html": (
            "report.html",
            render_html(
                history, suites=suites, models=models, since=since, until=until, title=title
            ),
        ),
        "markdown": (
            "summary.md",
            render_markdown(
                history, suites=suites, models=models, since=since, until=until, title=title
            ),
        ),
        "junit": (
            "junit.xml",
            render_junit(history, suites=suites, models=models, since=since, until=until),
        ),
    }
    paths = {}
    for kind, (name, text) in texts.items():
        paths[kind] = out / name
        write_text_atomic(paths[kind], text)
    return paths
