"""The Markdown summary of the latest night per suite, for ``$GITHUB_STEP_SUMMARY``.

Everything a model or tool wrote is escaped: HTML entities for markup, a
backslash before Markdown's formatting characters and the table's ``|``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from evalrunner.history._store import History
from evalrunner.report._format import (
    accumulated,
    effect_label,
    fmt,
    interval,
    margin,
    pct,
    short_time,
)
from evalrunner.report._select import SuiteSelection, select
from evalrunner.report._verdicts import (
    NO_BASELINE,
    NOT_COMPARED,
    UNGATED,
    VERDICT_ORDER,
    VERDICT_TEXT,
    YOUNG,
    counted,
    severity,
)
from evalrunner.report._views import CellView, absent_line, cell_views, night_note
from evalrunner.stats._metric_result import FAILING, MetricResult
from evalrunner.suite._cost import spent

_MARKS = {
    "regression": "🔴",
    "changed": "🟠",
    "improvement": "🔵",
    "inconclusive": "⚪",
    "ok": "🟢",
    YOUNG: "🔘",
    NOT_COMPARED: "⬜",
    NO_BASELINE: "⚫",
}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def md(text: str) -> str:
    """A Markdown table cell or inline text: no HTML, no formatting, no column breaks.

    ``<`` and ``&`` are escaped (no tag, no entity can start without them); ``>`` is
    not, so ``passed 3/3 -> 0/3`` reads the same in a terminal as on GitHub (it starts a
    quote only at a line's start, where this text never is).
    """
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def render_markdown(
    history: History,
    *,
    suites: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    title: str = "evalrunner",
) -> str:
    """A compact summary of the latest night per suite, for ``$GITHUB_STEP_SUMMARY``."""
    selected = select(history, suites, models, since, until)
    lines = [f"# {md(title)}", ""]
    lines += [f"Left out, unreadable: {md(line)}" for line in history.skipped]
    lines += [""] if history.skipped else []
    if not selected:
        lines.append("No runs yet" + (" in the selected window." if since or until else "."))
    for suite in selected:
        lines += _suite(suite)
    if selected:
        lines.append("Token and spend totals per night are in the HTML report.")
    return "\n".join(lines) + "\n"


def _suite(suite: SuiteSelection) -> list[str]:
    views = sorted(cell_views(suite), key=lambda v: (severity(v.verdict), v.cell))
    counts = Counter(v.verdict for v in views)
    lines = [
        f"## Suite {md(suite.name)}, night {md(short_time(suite.night.created_at))}",
        "",
        *_night_lines(suite),
        ", ".join(
            f"{_MARKS[v]} {counted(counts[v], v)}" for v in (*VERDICT_ORDER, *UNGATED) if counts[v]
        )
        + " (scenario x model, worst gating verdict)",
        "",
        "| scenario | model | verdict | success | N | skip | cost |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for v in views:
        lines.append(
            f"| {md(v.scenario)} | {md(v.model)} | {_verdict_text(v)} "
            f"| {pct(v.success)} | {v.n_text} | {pct(v.skip)} "
            f"| {spent([r.cost_usd for r in v.records])} |"
        )
    absent = absent_line(suite)
    lines += ["", md(absent) + "."] if absent else []
    return [*lines, "", *_sections(suite, views)]


def _sections(suite: SuiteSelection, views: Sequence[CellView]) -> list[str]:
    """The regressions, and what is moving but not failing."""
    regressions, building, unconfirmed = (
        _each(views, lines) for lines in (_regressions, _building, _unconfirmed)
    )
    # A night that compared nothing found no regression, and cleared none either.
    none = "None." if suite.night.compared or suite.night.outage else "None compared on this night."
    out = ["### Regressions", "", *(regressions or [none]), ""]
    if unconfirmed:
        out += ["### Changed, unconfirmed (every run moved; not failing)", "", *unconfirmed, ""]
    if building:
        out += ["### Evidence building up since the baseline", "", *building, ""]
    return out


def _each(views: Sequence[CellView], lines: Callable[[CellView], list[str]]) -> list[str]:
    """The ``lines`` of every view, in order."""
    return [line for v in views for line in lines(v)]


def _verdict_text(v: CellView) -> str:
    """'🟢 ok', with the night it is of when that is not the suite's latest (its latest
    night did not measure it), and the last compared verdict of a cell not compared."""
    text = f"{_MARKS[v.verdict]} {VERDICT_TEXT[v.verdict]}"
    if v.stale:
        text += " " + md(f"(as of {short_time(v.night)})")
    if v.last_compared:
        last = v.last_compared
        as_of = md(f"(as of {short_time(last.night.created_at)})")
        text += f"; last compared: {_MARKS[last.verdict]} {VERDICT_TEXT[last.verdict]} {as_of}"
    if v.why_not_compared:
        text += " " + md(f"({v.why_not_compared})")
    return text


def _night_lines(suite: SuiteSelection) -> list[str]:
    broken = [f"Warning: {md(line)}." for line in suite.night.broken_checks]
    out = [*broken, ""] if broken else []
    if suite.night.outage:
        return [
            *out,
            "That night was an outage (the endpoints failed; nothing was compared): each "
            "scenario shows its last measured night.",
            "",
        ]
    note = night_note(suite.night)
    return [*out, _sentence(note), ""] if note else out


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _unconfirmed(v: CellView) -> list[str]:
    """Changes every run showed that the night could not confirm (a small N, a young
    baseline): listed so they are never silent, with what would confirm them."""
    return [
        f"- **{md(v.scenario)}** · {md(v.model)} · {md(r.metric)}: "
        f"baseline {fmt(r.baseline_estimate)} (n {r.baseline_n}) → night "
        f"{fmt(r.night_estimate)} (n {r.night_n}), p {fmt(r.p)}; "
        + md(
            f"{r.runs_needed} night runs would settle it"
            if r.runs_needed is not None
            else "more baseline nights, then runs, would settle it"
        )
        for r in v.results
        if r.unconfirmed
    ]


def _building(v: CellView) -> list[str]:
    """Gating metrics not failing tonight whose accumulated evidence is halfway to its
    boundary: a slow change the nights add up to, before it flags."""
    return [
        f"- **{md(v.scenario)}** · {md(v.model)} · {md(r.metric)}: {accumulated(r)}"
        for r in v.results
        if r.verdict not in FAILING and r.evidence_building
    ]


def _regressions(v: CellView) -> list[str]:
    """A line per gating regression with its evidence; one line naming the regressed diagnostics."""
    regressed = [r for r in v.results if r.verdict in FAILING]
    lines = [_regression(v, r) for r in regressed if r.gating]
    if lines:
        lines += _why(v)
    diagnostics = [r.metric for r in regressed if not r.gating]
    if diagnostics:
        lines.append(
            f"- **{md(v.scenario)}** · {md(v.model)} · {_not_gating(v)}: "
            + ", ".join(md(m) for m in diagnostics)
        )
    return lines


def _regression(v: CellView, r: MetricResult) -> str:
    """A gating regression's line, with its evidence."""
    since = accumulated(r)
    return (
        f"- **{md(v.scenario)}** · {md(v.model)} · {md(r.metric)}: "
        f"{md(effect_label(r))} {fmt(r.effect)} {interval(r.effect_ci)}, q {fmt(r.q)}, "
        f"margin {margin(r)}; baseline {fmt(r.baseline_estimate)} (n {r.baseline_n}) → "
        f"night {fmt(r.night_estimate)} (n {r.night_n})"
        + (f"; since the baseline: {since}" if since else "")
    )


def _why(v: CellView) -> list[str]:
    """Under a cell's regressions: its cause, and the dataset rows that moved most."""
    lines = [f"  - {md(v.cause)}"] if v.cause else []
    if v.why and v.why.rows:
        lines.append(f"  - rows that moved most: {md('; '.join(v.why.rows))}")
    return lines


def _not_gating(v: CellView) -> str:
    """Why a cell's regressions do not fail the night. A young baseline's metrics gate by
    default and will once it has its nights: not diagnostics."""
    if v.verdict == YOUNG:
        return "baseline too young to gate (does not fail the night)"
    return "diagnostics (do not fail the night)"
