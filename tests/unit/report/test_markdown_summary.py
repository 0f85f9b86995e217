"""The Markdown summary: one row per scenario x model with its verdict, the regressions, escaping."""

from __future__ import annotations

import re

from history_factory import HOSTILE
from report_pages import latest_gating, worst

from evalrunner.history._store import History
from evalrunner.report._markdown import md, render_markdown


def test_markdown_table_and_regressions(history: History) -> None:
    text = render_markdown(history)
    expected = {key: worst(rows) for key, rows in latest_gating(history).items()}
    rows = [line for line in text.splitlines() if line.startswith("| scenario-")]
    assert len(rows) == len(expected)
    for line in rows:
        cols = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cols) == 7
        assert cols[2].split()[-1] == expected[(cols[0], cols[1])]
        assert cols[6] == "unpriced"  # these runs have no cost, which is not $0
    regressions = text.split("### Regressions", 1)[1]
    assert "q " in regressions and "[" in regressions and "margin" in regressions


def test_markdown_escapes_pipes_and_html(hostile: History, hostile_model: History) -> None:
    assert "<" not in md(HOSTILE)  # no tag can open
    assert md("a|b") == "a\\|b"
    assert md("<b>x</b>\nnext") == "&lt;b>x&lt;/b> next"
    assert md("passed 3/3 -> 0/3") == "passed 3/3 -> 0/3"  # readable where it is not rendered
    assert md("**bold** _it_ [link](x)") == "\\*\\*bold\\*\\* \\_it\\_ \\[link\\](x)"
    for history in (hostile, hostile_model):
        text = render_markdown(history, title="night | <b>report</b>")
        assert "<" not in text
        for line in text.splitlines():
            if line.startswith("| "):
                # seven columns, no stray separators
                assert len(re.findall(r"(?<!\\)\|", line)) == 8
    assert "evil\\|&lt;script>" in render_markdown(hostile_model)


def test_a_change_the_night_could_not_confirm_is_listed_under_its_own_heading(
    unconfirmed: History,
) -> None:
    text = render_markdown(unconfirmed)
    section = text.split("### Changed, unconfirmed (every run moved; not failing)", 1)[1]
    (line,) = [x for x in section.splitlines() if x.startswith("- ")][:1]
    assert "p 0.02" in line and "more baseline nights, then runs, would settle it" in line
