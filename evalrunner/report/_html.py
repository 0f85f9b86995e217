"""The HTML report: one self-contained page (inline CSS and SVG, no script at all).

Everything a model or tool wrote is escaped: jinja2 autoescaping in the
template, :func:`markupsafe.escape` in the generated SVG.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalrunner.history._store import History
from evalrunner.report._format import fmt, now, pct
from evalrunner.report._select import select, selection_text
from evalrunner.report._suite_view import suite_view
from evalrunner.report._verdicts import UNGATED, VERDICT_ORDER, VERDICT_TEXT, verdict_label

if TYPE_CHECKING:
    import jinja2

DEFAULT_CHART_DIAGNOSTICS = ("prompt_tokens", "latency_s")
"""Diagnostics charted besides the gating metrics (and any diagnostic flagged on the latest night)."""


def render_html(
    history: History,
    *,
    suites: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    title: str = "evalrunner report",
    chart_diagnostics: Sequence[str] = DEFAULT_CHART_DIAGNOSTICS,
    generated_at: str | None = None,
) -> str:
    """The whole report as one self-contained HTML page (inline CSS and SVG, no script).

    ``since``/``until`` are ISO 8601 dates or times (UTC when no zone is given);
    a date-only ``until`` includes that whole day. ``chart_diagnostics`` names the
    diagnostic metrics charted next to the gating ones.
    """
    selected = select(history, suites, models, since, until)
    views = [suite_view(s, n, chart_diagnostics) for n, s in enumerate(selected)]
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            generated_at=generated_at or now(),
            selection=selection_text(suites, models, since, until),
            suites=views,
            totals=Counter(d.cell.verdict for v in views for d in v.details),
            verdict_order=(*VERDICT_ORDER, *UNGATED),
            skipped=history.skipped,
        )
    )


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evalrunner.report", "templates"),
        autoescape=True,  # every template, whatever its extension
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    env.globals["verdict_text"] = VERDICT_TEXT
    env.globals["verdict_label"] = verdict_label
    return env
