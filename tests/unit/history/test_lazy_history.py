"""A loaded history is read lazily: the reports over it are the ones its entries, built, give.

``load_history`` opens the files and reads a few columns of each night; the report
builds full records and results only for what it shows in full. These tests render
the same history built in memory (every record a model) and loaded from files
(Parquet, Parquet written before the metadata carried the head's keys, JSON) and
compare the three reports byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from history_factory import build_entries, history_from_entries, write_history

from evalrunner.history import load_history
from evalrunner.history._columnar import to_parquet
from evalrunner.history._entry import HistoryEntry
from evalrunner.history._store import History
from evalrunner.report import render_html, render_junit, render_markdown

SELECTIONS: list[dict[str, list[str] | str]] = [
    {},
    {"models": ["openai/gpt-4o-mini"]},
    {"since": "2025-01-04"},
    {"suites": ["demo"], "until": "2025-01-06"},
]


@pytest.fixture(scope="module")
def entries() -> list[HistoryEntry]:
    return build_entries(nights=8, scenarios=3, models=2, runs=5, regressed=(0,), regress_nights=3)


def _reports(history: History, selection: dict[str, list[str] | str]) -> tuple[str, str, str]:
    return (
        render_html(history, generated_at="test", **selection),  # type: ignore[arg-type]
        render_markdown(history, **selection),  # type: ignore[arg-type]
        render_junit(history, **selection),  # type: ignore[arg-type]
    )


def _write_without_keys(root: Path, entries: list[HistoryEntry]) -> None:
    """Parquet files as written before the metadata carried the suite and the night."""
    for n, entry in enumerate(entries):
        path = (
            root / entry.suite / f"{entry.created_at[:10].replace('-', '')}T000000-{n:08x}.parquet"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(to_parquet(HistoryEntry, entry.model_dump(mode="json")))


@pytest.mark.parametrize("kind", ["parquet", "parquet without keys", "json", "mixed"])
def test_reports_over_loaded_files_equal_reports_over_built_entries(
    tmp_path: Path, entries: list[HistoryEntry], kind: str
) -> None:
    if kind == "parquet without keys":
        _write_without_keys(tmp_path, entries)
    elif kind == "mixed":
        write_history(str(tmp_path), entries[:4], parquet=False)
        write_history(str(tmp_path), entries[4:])
    else:
        write_history(str(tmp_path), entries, parquet=kind == "parquet")
    built, loaded = history_from_entries(entries), load_history(str(tmp_path))
    for selection in SELECTIONS:
        assert _reports(loaded, selection) == _reports(built, selection), selection


def test_a_resumed_nights_repeated_runs_count_once_in_loaded_files(
    tmp_path: Path, entries: list[HistoryEntry]
) -> None:
    # A resumed results directory written twice by an older evalrunner: same manifest, same run ids.
    repeated = entries[-1].model_copy(update={"created_at": entries[-1].created_at[:-1] + ".5Z"})
    write_history(str(tmp_path), [*entries, repeated])
    built = history_from_entries([*entries, repeated])
    loaded = load_history(str(tmp_path))
    assert _reports(loaded, {}) == _reports(built, {})
    assert len(loaded.runs) == sum(len(e.records) for e in entries)


def test_the_report_builds_full_records_only_for_the_nights_it_shows(
    tmp_path: Path, entries: list[HistoryEntry]
) -> None:
    write_history(str(tmp_path), entries)
    loaded = load_history(str(tmp_path))
    render_html(loaded, generated_at="test")
    assert "entries" not in loaded.__dict__  # no entry was built whole
    assert loaded.entries == entries  # and building them gives what was written
