"""The evidence accumulated since a baseline was accepted: stored per entry, shown per metric."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_factory import build_entries, history_from_entries, write_history

from evalrunner.history import _store
from evalrunner.history._entry import HistoryEntry
from evalrunner.history._store import InParquet, evidence_so_far, load_history
from evalrunner.report._html import render_html
from evalrunner.report._markdown import render_markdown
from evalrunner.stats._evidence_state import EvidenceState, MetricEvidence
from evalrunner.suite._record import CellKey


def _with_evidence(
    entry: HistoryEntry, e_value: float, test: str = "e-value", limit: float = 400.0
) -> HistoryEntry:
    """The entry with its gating success_rate results carrying accumulated evidence."""
    verdicts = [
        v.model_copy(
            update={
                "evidence": e_value,
                "evidence_test": test,
                "evidence_threshold": limit,
                "evidence_nights": 6,
                "evidence_effect": -0.07,
                "evidence_ci": (-0.11, -0.03),
            }
        )
        if v.metric == "success_rate"
        else v
        for v in entry.verdicts
    ]
    cells = {CellKey(v.scenario, v.model) for v in verdicts}
    state = EvidenceState(
        anchor="a1",
        nights=6,
        metrics={"success_rate": MetricEvidence(nights=6, z=e_value, boundary=2.5)},
    )
    return entry.model_copy(update={"verdicts": verdicts, "evidence": dict.fromkeys(cells, state)})


def test_entries_keep_their_evidence_and_the_newest_per_cell_is_found(tmp_path: Path) -> None:
    first, second = build_entries(nights=2, scenarios=2)
    entries = [_with_evidence(first, 3.0), second.model_copy(update={"evidence": {}})]
    write_history(str(tmp_path), entries)
    loaded = load_history(str(tmp_path)).entries
    assert loaded == entries
    # The newest entry has none (an outage night, say): the one before it still counts.
    found = evidence_so_far(str(tmp_path), "demo")
    assert found and all(s.metrics["success_rate"].z == 3.0 for s in found.values())
    # Entries without evidence are written as they were before the field existed.
    assert "evidence" not in second.model_dump(mode="json")


def test_a_night_reads_the_newest_files_until_each_of_its_cells_has_its_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A year of an organisation's nights is 365 heads, each holding every cell's baseline
    # and typical trajectory: reading them all took 12 s at 800 cells before a night began.
    entries = build_entries(nights=5, scenarios=2, models=2, evidence=True)
    first, second, third, fourth = sorted(entries[0].evidence)
    # The newest night compared two cells; the night before, a third; the fourth was
    # last compared three nights back.
    entries[4] = entries[4].model_copy(
        update={"evidence": {c: _state(4.0) for c in (first, second)}}
    )
    entries[3] = entries[3].model_copy(update={"evidence": {third: _state(3.0)}})
    entries[2] = entries[2].model_copy(update={"evidence": {fourth: _state(2.0)}})
    write_history(str(tmp_path), entries)
    opened: list[InParquet] = []
    real_open = _store._open

    def counted(fs: object, path: str) -> _store.Source:
        source = real_open(fs, path)
        opened.append(source)  # type: ignore[arg-type]
        return source

    monkeypatch.setattr(_store, "_open", counted)
    every = evidence_so_far(str(tmp_path), "demo")
    assert len(opened) == 5 and len(every) == 4
    zs = [every[c].metrics["success_rate"].z for c in (first, second, third, fourth)]
    assert zs == [4.0, 4.0, 3.0, 2.0]  # each cell's from the newest night that has it
    opened.clear()
    found = evidence_so_far(str(tmp_path), "demo", [first, third])
    assert len(opened) == 2  # the newest night, then the one before it: all tonight needs
    assert found[first] == every[first] and found[third] == every[third]
    # Only the evidence was parsed: no night's whole head was built.
    assert all("head" not in vars(s.file) for s in opened)


def _state(z: float) -> EvidenceState:
    return EvidenceState(anchor="a1", nights=1, metrics={"success_rate": MetricEvidence(z=z)})


def test_the_report_and_summary_show_the_cumulative_z_since_the_baseline() -> None:
    [entry] = build_entries(nights=1, scenarios=1)
    history = history_from_entries([_with_evidence(entry, 2.1, "z", 2.9)])
    assert "z 2.1 of 2.9 over 6 nights, change as tested \u22120.07" in render_html(
        history, generated_at="x"
    )
    summary = render_markdown(history)
    # 2.1 >= 2.9 / sqrt(2): half the boundary's log likelihood ratio.
    building = summary.split("### Evidence building up since the baseline")[1]
    assert "success\\_rate: z 2.1 of 2.9 over 6 nights" in building
    quiet = render_markdown(history_from_entries([_with_evidence(entry, 2.0, "z", 2.9)]))
    assert "Evidence building up" not in quiet


def test_history_written_before_the_z_shows_its_e_value_as_one() -> None:
    [entry] = build_entries(nights=1, scenarios=1)
    history = history_from_entries([_with_evidence(entry, 40.0)])
    page = render_html(history, generated_at="x")
    assert "Since the baseline" in page
    assert "e 40 of 400 over 6 nights, change as tested \u22120.07 [\u22120.11, \u22120.03]" in page
    summary = render_markdown(history)
    # 40 >= sqrt(400): halfway to flagging, in log terms.
    assert "### Evidence building up since the baseline" in summary
    building = summary.split("### Evidence building up since the baseline")[1]
    assert "success\\_rate: e 40 of 400 over 6 nights" in building
    quiet = render_markdown(history_from_entries([_with_evidence(entry, 2.0)]))
    assert "Evidence building up" not in quiet
