"""`evalrunner report` end to end: history on disk -> the three files, and bad options -> exit 2."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from history_factory import build_entries, write_history

from evalrunner.cli._main import main
from evalrunner.history import _store


def test_report_command_writes_html_markdown_and_junit(tmp_path: Path) -> None:
    root = tmp_path / "history"
    write_history(str(root), build_entries(nights=3, scenarios=2))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", "--history", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "<svg" in html and "<script" not in html
    assert (out / "summary.md").read_text().startswith("#")
    assert ET.parse(out / "junit.xml").getroot().iter("testcase")


def test_report_command_rejects_a_bad_time_window(tmp_path: Path) -> None:
    # A real history: since issue 10 an empty one is refused before the window is read.
    write_history(str(tmp_path / "history"), build_entries(nights=1, scenarios=1))
    result = CliRunner().invoke(
        main,
        [
            "report",
            "--history",
            str(tmp_path / "history"),
            "--out",
            str(tmp_path / "o"),
            "--since",
            "yesterday-ish",
        ],
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "error:" in result.output


def test_report_says_what_it_did_not_find_instead_of_writing_an_empty_report(
    tmp_path: Path,
) -> None:
    """Issue 10, item 7: a mistyped history path, an empty one, an unknown suite or model."""
    root = tmp_path / "history"
    write_history(str(root), build_entries(nights=1, scenarios=1, suite="demo"))
    (tmp_path / "empty").mkdir()
    cases = {
        ("--history", str(tmp_path / "histroy")): (
            f"error: history location '{tmp_path / 'histroy'}' does not exist; pass --history "
            "with the location 'evalrunner run' wrote to (default reports/history)"
        ),
        ("--history", str(tmp_path / "empty")): (
            f"error: history location '{tmp_path / 'empty'}': holds no history files "
            "(<suite>/*.parquet, written by 'evalrunner run')"
        ),
        ("--history", str(root), "--suite", "demoo"): (
            f"error: history location '{root}': no history of suite 'demoo'; did you mean "
            "'demo'? suites there: demo"
        ),
        ("--history", str(root), "--model", "openai/gpt-5"): (
            f"error: history location '{root}': no history of model 'openai/gpt-5'; "
        ),
        # A mistyped year: before, an empty report and exit 0.
        ("--history", str(root), "--since", "2099-01-01"): (
            f"error: history location '{root}': no night in the window --since 2099-01-01: "
            "its 1 night(s) ran from "
        ),
    }
    for args, expected in cases.items():
        out = tmp_path / "out"
        result = CliRunner().invoke(main, ["report", *args, "--out", str(out)])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(expected), lines
        assert not out.exists()  # no empty report


def test_an_unreadable_history_file_is_left_out_with_a_warning_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    root = tmp_path / "history"
    paths = write_history(str(root), build_entries(nights=3, scenarios=1))
    bad = Path(paths[1])
    bad.write_bytes(b"not parquet at all")
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--history", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and str(bad) in warned[0] and "(left out)" in warned[0]
    assert "Traceback" not in result.output
    summary = (out / "summary.md").read_text(encoding="utf-8").replace("\\_", "_")
    assert f"Left out, unreadable: {bad}" in summary  # (Markdown escapes the underscores)
    assert "Left out, unreadable:" in (out / "report.html").read_text(encoding="utf-8")
    assert bad.exists()


def test_a_history_whose_every_file_is_unreadable_is_not_said_to_hold_none(
    tmp_path: Path,
) -> None:
    # Before: each file's warning, then "holds no history files", though they were there.
    root = tmp_path / "history"
    (path,) = write_history(str(root), build_entries(nights=1, scenarios=1))
    Path(path).write_bytes(b"not parquet at all")
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--history", str(root), "--out", str(out)])
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error == (
        f"error: history location '{root}': holds no readable history file: 1 could not be "
        "read (each named above); move them aside and run the report again"
    )
    assert Path(path).exists() and not out.exists()


def test_a_report_of_one_suite_and_a_window_opens_only_their_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An organisation's history holds many suites and a year of nights: a report of one
    # suite's last days must not open the rest (issue 57, item 3).
    root = tmp_path / "history"
    write_history(str(root), build_entries(nights=10, scenarios=1, suite="billing"))
    write_history(str(root), build_entries(nights=10, scenarios=1, suite="search"))
    opened: list[str] = []
    real_open = _store._open

    def counted(fs: object, path: str) -> _store.Source:
        opened.append(path.rsplit("/", 2)[-2])
        return real_open(fs, path)

    monkeypatch.setattr(_store, "_open", counted)
    # The factory's nights are 2025-01-01 to 2025-01-10 at 02:00 UTC; from 01-08 02:00 in
    # UTC+2 (01-08 00:00 UTC) the window holds 3 nights, and the files of a day before it.
    args = ["--suite", "search", "--since", "2025-01-08T02:00:00+02:00"]
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", "--history", str(root), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    assert opened == ["search"] * 4
    assert "over 3 nights" in (out / "report.html").read_text()
    # Asked for a suite that is not there, the error still names those that are.
    opened.clear()
    result = CliRunner().invoke(
        main, ["report", "--history", str(root), "--out", str(out), "--suite", "serch"]
    )
    assert result.exit_code == 2 and "did you mean 'search'" in result.output
