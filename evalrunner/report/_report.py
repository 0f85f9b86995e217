"""Writing the three reports over the run history: HTML, Markdown and JUnit XML.

The renderers are pure (a loaded :class:`~evalrunner.history._store.History`
and a selection in, text out); this is the only function that touches the disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalrunner._jsonio import write_text_atomic
from evalrunner.history._store import History
from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import render_markdown


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
    """Write ``report.html``, ``summary.md`` and ``junit.xml`` atomically; return their paths."""
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
