"""write_report: the three files, written atomically, the same text the renderers return."""

from __future__ import annotations

from pathlib import Path

from evalrunner.history._store import History
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import render_markdown
from evalrunner.report._report import write_report


def test_write_report_writes_three_files(tmp_path: Path, history: History) -> None:
    paths = write_report(history, tmp_path / "out", title="nightly")
    assert set(paths) == {"html", "markdown", "junit"}
    assert [p.name for p in paths.values()] == ["report.html", "summary.md", "junit.xml"]
    assert "<title>nightly</title>" in paths["html"].read_text(encoding="utf-8")
    assert paths["markdown"].read_text(encoding="utf-8") == render_markdown(
        history, title="nightly"
    )
    assert paths["junit"].read_text(encoding="utf-8") == render_junit(history)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "junit.xml",
        "report.html",
        "summary.md",
    ]


def test_nothing_to_report_is_an_error_and_writes_nothing(tmp_path: Path, history: History) -> None:
    # Before: from Python (the CLI refused already) a mistyped history location or model
    # wrote a "No runs yet." report (a review).
    import pytest

    from evalrunner.errors import ConfigError
    from evalrunner.history import load_history

    typo = str(tmp_path / "histroy")
    with pytest.raises(ConfigError, match=f"history location '{typo}': holds no history files"):
        write_report(load_history(typo), tmp_path / "out")
    with pytest.raises(ConfigError, match="history: no history of model 'openai/zzz'"):
        write_report(history, tmp_path / "out", models=["openai/zzz"])
    assert not (tmp_path / "out").exists()
