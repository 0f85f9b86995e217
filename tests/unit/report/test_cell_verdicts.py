"""Which verdict a scenario x model shows, in every format: the worst gating verdict of its latest night."""

from __future__ import annotations

import typing
import xml.etree.ElementTree as ET
from pathlib import Path

from history_factory import build_entries, history_from_entries, write_history
from report_pages import cells, latest_gating, worst

from evalrunner.history._entry import HistoryEntry
from evalrunner.history._store import History, load_history
from evalrunner.live._results import Manifest
from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import render_markdown
from evalrunner.report._verdicts import VERDICT_ORDER
from evalrunner.stats._metric_result import MetricResult, Verdict
from evalrunner.suite._record import RunRecord


def test_overview_colour_is_the_worst_gating_verdict(history: History, html: str) -> None:
    expected = {key: worst(rows) for key, rows in latest_gating(history).items()}
    assert "regression" in expected.values()  # the fixture has something to show
    assert cells(html) == expected


def test_runs_without_verdicts_read_no_baseline() -> None:
    entries = build_entries(nights=2, scenarios=2)
    bare = [
        e.model_copy(update={"verdicts": [], "baselines": {}, "baseline_typical": {}})
        for e in entries
    ]
    history = history_from_entries(bare)
    page = render_html(history)
    assert set(cells(page).values()) == {"none"}
    assert "No comparison with a baseline" in page
    root = ET.fromstring(render_junit(history))
    assert root.get("skipped") == "2" and root.get("failures") == "0"


def test_a_night_that_compared_nothing_reads_not_compared_with_the_last_compared_verdict(
    tmp_path: Path,
) -> None:
    # Before: a night run with --no-compare (or whose comparison failed) read "no baseline"
    # for every cell, though the night before had compared them all. Its entry holds what
    # `evalrunner run --no-compare` writes: runs, and no results, baselines or evidence.
    entries = build_entries(nights=3, scenarios=2, regressed=(0,), regress_nights=2)
    entries[-1] = entries[-1].model_copy(
        update={"verdicts": [], "baselines": {}, "baseline_typical": {}, "evidence": {}}
    )
    write_history(str(tmp_path), entries)
    history = load_history(str(tmp_path))

    summary = render_markdown(history)
    assert "no baseline" not in summary
    assert "\n⬜ 2 not compared on this night (scenario x model" in summary
    assert "Nothing was compared on this night (run with --no-compare, " in summary
    assert (
        "| scenario-00 | openai/gpt-4o-mini | ⬜ not compared on this night; last compared: "
        "🔴 regression (as of 2025-01-02 02:00 UTC) |"
    ) in summary
    assert "None compared on this night." in summary.split("### Regressions", 1)[1]

    page = render_html(history, generated_at="x")
    assert set(cells(page).values()) == {"uncompared"}
    assert "last compared: regression, as of 2025-01-02 02:00 UTC" in page
    # Its trends stay: the charts of the metrics last compared, badged as not compared.
    assert 'aria-label="success_rate over 2 nights"' in page
    assert '<span class="badge small uncompared">not compared on this night</span>' in page
    assert "no baseline</span>" not in page

    messages = [s.get("message", "") for s in ET.fromstring(render_junit(history)).iter("skipped")]
    assert len(messages) == 2
    assert all(m.startswith("not compared on this night; last compared: ") for m in messages)


def test_a_baseline_too_young_to_gate_reads_young_not_no_baseline() -> None:
    # Compared, with rows to show, but nothing gating: the cell was compared, so "no
    # baseline" would be wrong.
    entries = build_entries(nights=2, scenarios=2)
    young = [
        e.model_copy(
            update={"verdicts": [v.model_copy(update={"gating": False}) for v in e.verdicts]}
        )
        for e in entries
    ]
    history = history_from_entries(young)
    page = render_html(history)
    assert set(cells(page).values()) == {"young"}
    assert "young baseline" in page
    summary = render_markdown(history)
    assert "🔘 young baseline" in summary
    # Its regressions are of metrics that gate once the baseline has its nights, not
    # diagnostics (review 4, defect 1).
    assert "baseline too young to gate (does not fail the night): " in summary
    assert "diagnostics (do not fail the night)" not in summary
    messages = [s.get("message", "") for s in ET.fromstring(render_junit(history)).iter("skipped")]
    assert messages and all(m.startswith("nothing gating (a young baseline?)") for m in messages)


def test_minimal_entries_render() -> None:
    """Records and results with only their required fields (hand-made histories) render, not crash."""
    nights = ("2025-01-01T02:00:00Z", "2025-01-02T02:00:00Z")
    entries = [
        HistoryEntry(
            suite="s",
            created_at=night,
            manifest=Manifest(
                suite="s",
                models=["m"],
                runs={"a": 3},
                scenarios={"a": "f"},
                started_at=night,
                evalrunner_version="0",
            ),
            records=[
                RunRecord(run_id=f"a/m/{i}", suite="s", scenario="a", model="m", index=i, outcome=o)
                for i, o in enumerate(("passed", "failed", "skipped"))
            ],
            verdicts=[
                MetricResult(
                    scenario="a",
                    model="m",
                    metric="success_rate",
                    kind="binary",
                    gating=True,
                    direction="lower",
                    margin=0.1,
                    verdict=verdict,
                )
            ],
        )
        for night, verdict in zip(nights, ("ok", "regression"), strict=True)
    ]
    history = History(entries)
    assert cells(render_html(history)) == {("a", "m"): "regression"}
    assert "| a | m | 🔴 regression | 33% | 3 | 33% |" in render_markdown(history)
    assert ET.fromstring(render_junit(history)).get("failures") == "1"


def test_every_verdict_the_statistics_give_has_a_rank() -> None:
    assert set(VERDICT_ORDER) == set(typing.get_args(Verdict))
