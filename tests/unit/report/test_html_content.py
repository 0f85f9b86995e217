"""The HTML page: its sections and flagged scenarios' evidence."""

from __future__ import annotations

import re

from report_pages import latest_gating, worst

from evalrunner.history._store import History


def test_html_has_every_section(history: History, html: str) -> None:
    for text in (
        "Latest night",
        "Skips, infra errors and crashes",
        "Tokens</b> per night",
        "No run is priced: give its model a <code>pricing:</code> entry",
        "Top skip reasons",
        "Top infra-error reasons",
        "Evidence, night of",
        "Tool sequences: baseline vs latest night",
        "Trajectory diff: typical baseline run vs typical run of the latest night",
        "Behaviour changed:",
    ):
        assert text in html, text
    assert (
        html.count("<svg") > 4 * 2 * 5
    )  # a chart per gating metric and scenario x model, at least
    nights = len({e.created_at for e in history.entries})
    assert f'aria-label="success_rate over {nights} nights"' in html
    assert "<script" not in html  # the page needs no script at all
    assert "http://" not in html and "https://" not in html  # nothing to fetch


def test_flagged_scenarios_show_evidence_and_open(history: History, html: str) -> None:
    flagged = [key for key, rows in latest_gating(history).items() if worst(rows) == "regression"]
    scenario, model = flagged[0]
    section = re.search(
        rf'<details class="key regression" id="[\w-]+" open>\s*<summary>.*?<span class="scn">{scenario}</span> '
        rf'<span class="mdl">{re.escape(model)}</span>(.*?)(?=<details class="key|</section>)',
        html,
        re.S,
    )
    assert section, "a flagged scenario's section is open"
    body = section.group(1)
    for column in (
        "Baseline",
        "Night",
        "Effect",
        '<th class="r">p</th>',
        '<th class="r">q</th>',
        "Margin",
        "Test",
    ):
        assert column in body
    assert "binomial exact" in body  # the test that decided a rate
    assert "Behaviour changed:" in body


def test_inconclusive_rows_say_what_would_resolve_them(html: str) -> None:
    assert re.search(r"MDE [\d.]+; (\d+ night runs|baseline too small)", html)


def test_a_flag_table_tells_apart_nights_of_one_day_by_their_time() -> None:
    from history_factory import build_entries, history_from_entries

    from evalrunner.report._html import render_html

    entries = build_entries(nights=3, scenarios=1, regressed=(0,), regress_nights=2)
    # The two regressed nights, run by hand on one day: each of their flags names its night.
    times = ("2025-01-05T09:15:00Z", "2025-01-05T16:40:00Z")
    entries[-2:] = [
        e.model_copy(
            update={"created_at": t, "manifest": e.manifest.model_copy(update={"started_at": t})}
        )
        for e, t in zip(entries[-2:], times, strict=True)
    ]
    html = render_html(history_from_entries(entries), generated_at="test")
    table = html.split("in the report's window</summary>", 1)[1].split("</table>", 1)[0]
    first_cells = set(re.findall(r'<tr><td class="num">([^<]*)</td>', table))
    assert first_cells == {"2025-01-05 09:15 UTC", "2025-01-05 16:40 UTC"}, first_cells


def test_an_unconfirmed_change_shows_on_its_scenario_s_card(unconfirmed: History) -> None:
    # Before: only in the "To resolve" cell of a collapsed row; the card read "inconclusive".
    from evalrunner.report._html import render_html

    html = render_html(unconfirmed, generated_at="test")
    cards = re.findall(r'<span class="counts">([^<]*)</span>', html)
    assert any("changed, unconfirmed: success_rate" in c for c in cards), cards
