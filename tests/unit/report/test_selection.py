"""What a report covers: suites, models and a time window; the latest night per scenario x model."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from history_factory import build_entries, history_from_entries
from markupsafe import escape
from report_pages import cells

from evalrunner.errors import ConfigError
from evalrunner.history._entry import HistoryEntry
from evalrunner.history._store import History
from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import md, render_markdown
from evalrunner.report._select import select
from evalrunner.suite._record import CellKey


def test_selection_by_model_suite_and_window(history: History) -> None:
    other = build_entries(nights=2, scenarios=1, suite="other-suite", seed=3)
    both = history_from_entries([*history.entries, *other])
    assert "other-suite" in render_html(both)
    only_demo = render_html(both, suites=["demo"])
    assert "other-suite" not in only_demo and 'Suite <span class="name">demo</span>' in only_demo

    one_model = render_html(history, models=["openai/gpt-4o-mini"])
    assert "openai/gpt-4o-mini" in one_model and "anthropic/claude-3-5-haiku" not in one_model

    # Nights are 2025-01-01 .. 2025-01-06 at 02:00 UTC; a date-only "until" includes its day.
    window = render_html(history, since="2025-01-02", until="2025-01-04")
    assert "Latest night 2025-01-04 02:00 UTC · 3 nights" in window
    assert 'aria-label="success_rate over 3 nights"' in window
    assert "No runs yet" in render_html(history, since="2030-01-01")
    with pytest.raises(ConfigError, match="not an ISO 8601"):
        render_html(history, since="last tuesday")


def test_window_bounds_are_times_in_utc() -> None:
    history = history_from_entries(build_entries(nights=4, scenarios=1))  # 02:00 UTC nightly

    def nights(since: str | None = None, until: str | None = None) -> list[str]:
        return [n.created_at[:10] for n in select(history, since=since, until=until)[0].nights]

    assert nights(until="2025-01-02T02:00:00Z") == ["2025-01-01", "2025-01-02"]  # inclusive
    assert nights(until="2025-01-02T01:59:59") == ["2025-01-01"]  # naive times are UTC
    assert nights(since="2025-01-03T03:00:00+01:00") == ["2025-01-03", "2025-01-04"]
    assert nights(since="2025-01-02", until="2025-01-02") == ["2025-01-02"]


GPT = "openai/gpt-4o-mini"
GONE = (
    "Not in the latest night (removed from the suite, or not selected for it): "
    "scenario-00 × anthropic/claude-3-5-haiku, scenario-01 × anthropic/claude-3-5-haiku, "
    "scenario-02 × anthropic/claude-3-5-haiku, scenario-02 × openai/gpt-4o-mini "
    "(last run 2025-01-02)"
)


def _evolved() -> list[HistoryEntry]:
    """Three nights of 3 scenarios x 2 models; on the last, scenario-02 is gone from the
    suite and anthropic/claude-3-5-haiku from its models, and every run of scenario-01 was
    an infra error (so that night compared it with nothing)."""
    entries = build_entries(nights=3, scenarios=3, models=2, regressed=())
    last = entries[-1]
    kept = [r for r in last.records if r.scenario != "scenario-02" and r.model == GPT]
    down = [
        r.model_copy(update={"outcome": "infra_error", "reason": "Connection error."})
        if r.scenario == "scenario-01"
        else r
        for r in kept
    ]
    verdicts = [v for v in last.verdicts if v.scenario == "scenario-00" and v.model == GPT]
    entries[-1] = last.model_copy(update={"records": down, "verdicts": verdicts})
    return entries


def test_a_cell_the_latest_night_did_not_run_is_history_not_a_current_cell() -> None:
    # Before: every cell ever recorded was current: the header counted 6 cells for a suite
    # of 2, removed cells kept rows "(as of ...)", and JUnit skipped them saying their
    # model's endpoint failed, though they were removed.
    history = history_from_entries(_evolved())
    text = render_markdown(history)
    header = next(line for line in text.splitlines() if line.endswith("worst gating verdict)"))
    assert sum(int(n) for n in re.findall(r"(\d+) ", header)) == 2
    rows = [line for line in text.splitlines() if line.startswith("| scenario-")]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| scenario-00", GPT],
        ["| scenario-01", GPT],
    ]
    assert md(GONE) + "." in text.splitlines()

    root = ET.fromstring(render_junit(history))
    cases = {(c.get("classname"), c.get("name")) for c in root.iter("testcase")}
    assert cases == {("demo.scenario-00", GPT), ("demo.scenario-01", GPT)}
    assert root.get("tests") == "2"
    failed = [m for s in root.iter("skipped") if "endpoint failed" in (m := s.get("message", ""))]
    assert failed == [  # only the one whose endpoint did fail
        "not measured on the latest night (its model's endpoint failed: its runs were "
        "infra_error); the verdicts below are of night 2025-01-02T02:00:00Z"
    ]
    down = root.find("testsuite/testcase[@classname='demo.scenario-01']/skipped")
    assert down is not None and down.get("message") == failed[0]
    assert root.findtext("testsuite/system-out") == GONE

    page = render_html(history, generated_at="x")
    assert set(cells(page)) == {("scenario-00", GPT), ("scenario-01", GPT)}
    chips = re.search(r'<div class="totals">(.*?)</div>', page, re.S)
    assert chips is not None
    assert sum(int(n) for n in re.findall(r"<b>(\d+)</b>", chips.group(1))) == 2
    assert f'<p class="note absent">{escape(GONE)}.</p>' in page
    # Their trends stay, apart, marked as not in the latest night.
    assert page.count('<span class="badge gone">not in the latest night</span>') == 4
    assert page.count('<span class="stale">as of 2025-01-02</span>') == 1  # scenario-01 only
    [suite] = select(history)
    assert set(suite.current) == {CellKey("scenario-00", GPT), CellKey("scenario-01", GPT)}
    assert len(suite.absent) == 4


def test_models_outside_the_selection_leave_no_nights() -> None:
    entries = build_entries(nights=2, scenarios=1, models=2)
    only_second = [
        entries[0].model_copy(
            update={
                "records": [r for r in entries[0].records if r.model == "openai/gpt-4o-mini"],
                "verdicts": [v for v in entries[0].verdicts if v.model == "openai/gpt-4o-mini"],
            }
        ),
        entries[1],
    ]
    [suite] = select(history_from_entries(only_second), models=["anthropic/claude-3-5-haiku"])
    assert [n.created_at for n in suite.nights] == [entries[1].created_at]


def test_empty_history_gives_a_clear_page() -> None:
    empty = History([])
    page = render_html(empty)
    assert "No runs yet" in page and "<svg" not in page
    assert "No runs yet" in render_markdown(empty)
    root = ET.fromstring(render_junit(empty))
    assert root.get("tests") == "0" and len(root) == 0


def test_an_outage_night_keeps_each_cell_s_last_measured_night_and_says_it_was_an_outage() -> None:
    # Before: the latest night, an outage, had no verdicts: every cell read "no baseline"
    # and the regression of the night before was gone from the summary.
    entries = build_entries(nights=3, scenarios=2, regressed=(0,), regress_nights=1)
    down = entries[-1].model_copy(
        update={
            "created_at": "2025-01-09T02:00:00Z",
            "manifest": entries[-1].manifest.model_copy(
                update={"started_at": "2025-01-09T02:00:00Z"}
            ),
            "records": [
                r.model_copy(update={"outcome": "infra_error"}) for r in entries[-1].records
            ],
            "verdicts": [],
            "outage": True,
        }
    )
    history = history_from_entries([*entries, down])
    [suite] = select(history)
    assert suite.night.created_at == down.created_at
    assert {night.created_at for night in suite.latest.values()} == {entries[-1].created_at}
    text = render_markdown(history)
    assert "That night was an outage (the endpoints failed; nothing was compared)" in text
    regressions = text.split("### Regressions", 1)[1]
    assert "None." not in regressions.split("###", 1)[0]
    assert "no baseline" not in text
    assert "an outage: the endpoints failed, nothing was compared" in render_html(history)
    # JUnit said the night before's verdicts as that night's: every case passed (or failed)
    # on a night that measured nothing.
    root = ET.fromstring(render_junit(history))
    cases = root.findall(".//testcase")
    assert cases and root.get("skipped") == str(len(cases)) and root.get("failures") == "0"
    for case in cases:
        skipped = case.find("skipped")
        assert skipped is not None and skipped.get("message") == (
            "not measured on the latest night (an outage: its runs were infra_error); the "
            f"verdicts below are of night {entries[-1].created_at}"
        )


def test_an_outage_night_leaves_every_cell_its_last_compared_night() -> None:
    # The endpoint died partway: the cells whose runs reached the agent first showed "no
    # baseline" and no charts, though they had both (a review). Nothing was compared.
    entries = build_entries(nights=3, scenarios=2, regressed=())
    last = entries[-1]
    ran = [r for r in last.records if r.scenario == "scenario-00"]
    down = [
        r.model_copy(update={"outcome": "infra_error", "reason": "Connection error."})
        for r in last.records
        if r.scenario != "scenario-00"
    ]
    entries[-1] = last.model_copy(update={"records": ran + down, "verdicts": [], "outage": True})
    history = history_from_entries(entries)
    [suite] = select(history)
    for scenario in ("scenario-00", "scenario-01"):
        cell = CellKey(scenario, "openai/gpt-4o-mini")
        assert suite.latest[cell].created_at == entries[1].created_at, scenario
    assert "no baseline" not in render_markdown(history)
    # scenario-00's runs reached the agent: JUnit said they were infra errors.
    root = ET.fromstring(render_junit(history))
    reasons = {
        case.get("classname"): str(skipped.get("message")).split(";", 1)[0]
        for case in root.iter("testcase")
        if (skipped := case.find("skipped")) is not None
    }
    assert reasons == {
        "demo.scenario-00": "not compared on the latest night (an outage: nothing was compared)",
        "demo.scenario-01": "not measured on the latest night (an outage: its runs were infra_error)",
    }
