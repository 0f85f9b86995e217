"""Ctrl-C or SIGTERM offers ``--resume`` only when there is something to resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.cli import _exit

HINT = "Resume with:\n  evalrunner run --suite s --out OUT --resume"


def _interrupted(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped, _exit.on_interrupt(HINT, out):
        raise KeyboardInterrupt
    return int(stopped.value.code or 0), capsys.readouterr().err


def test_an_interrupt_before_the_manifest_exists_says_nothing_was_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = _interrupted(tmp_path / "out", capsys)
    assert code == 130
    assert "nothing was run" in said and "--resume" not in said


def test_an_interrupt_after_runs_began_says_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "manifest.json").write_text("{}", encoding="utf-8")
    code, said = _interrupted(tmp_path / "out", capsys)
    assert code == 130
    assert "finished runs are saved. " + HINT in said
