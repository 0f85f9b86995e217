"""The night's run-file writer: a failed write stops the night and nothing after it is written."""

from __future__ import annotations

import errno
import threading
from pathlib import Path
from typing import Any

import pytest

from evalrunner.live._results import ResultsDir, RunWriter
from evalrunner.suite._record import RunRecord


def record(index: int) -> RunRecord:
    return RunRecord(
        run_id=f"s/m/{index}", suite="x", scenario="s", model="m", index=index, outcome="passed"
    )


def test_a_failed_write_is_raised_on_the_next_hand_over_and_nothing_after_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = ResultsDir(tmp_path)
    real = ResultsDir.write_run
    release = threading.Event()

    def write_run(self: ResultsDir, rec: RunRecord, *args: Any) -> None:
        if rec.index == 1:
            release.wait(5)  # until run 2 is queued behind this write
            raise OSError(errno.ENOSPC, "No space left on device", str(self.run_path(rec.run_id)))
        real(self, rec, *args)

    monkeypatch.setattr(ResultsDir, "write_run", write_run)
    writer = RunWriter(results)
    for i in range(3):
        writer.write(record(i), {})
    release.set()
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    with pytest.raises(OSError, match="No space left"):
        writer.write(record(3), {})
    assert [p.name for p in (tmp_path / "runs").rglob("*.json")] == ["0.json"]


def test_a_failed_write_is_told_as_it_fails_not_only_at_the_next_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The night's last runs may be minutes from ending: it stops on this call, not theirs.
    def write_run(self: ResultsDir, rec: RunRecord, *args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.run_path(rec.run_id)))

    monkeypatch.setattr(ResultsDir, "write_run", write_run)
    told = threading.Event()
    writer = RunWriter(ResultsDir(tmp_path), on_failure=told.set)
    writer.write(record(0), {})
    assert told.wait(10)
    with pytest.raises(OSError, match="No space left"):
        writer.raise_failure()
    with pytest.raises(OSError, match="No space left"):
        writer.close()


def test_close_returns_once_every_run_handed_over_is_on_disk(tmp_path: Path) -> None:
    writer = RunWriter(ResultsDir(tmp_path))
    for i in range(20):
        writer.write(record(i), {"steps": []})
    writer.close()
    assert len(list((tmp_path / "runs").rglob("*.json"))) == 20
    writer.close()  # a second close is harmless


def test_a_run_file_is_one_line_of_sorted_json_that_reads_back(tmp_path: Path) -> None:
    # A night writes one file per run and nobody reviews them, so they are not indented:
    # the standard library indents in Python, which cost a run six times the CPU.
    results = ResultsDir(tmp_path)
    trajectory = {"steps": [{"source": "user", "message": "hi\nthere"}], "agent": {"name": "a"}}
    results.write_run(record(0), trajectory, {"messages": [{"role": "user", "content": "hi"}]})
    path = results.run_path("s/m/0")
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.count("\n") == 1
    assert text.index('"format_version"') < text.index('"record"') < text.index('"trajectory"')
    back, traj, first = results.read_run_file(path)
    assert back == record(0) and traj == trajectory
    assert first == {"messages": [{"role": "user", "content": "hi"}]}


def test_run_files_reach_the_disk_together_when_the_writer_closes_not_one_fsync_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An fsync per run file cost about a sixth of evalrunner's own CPU a run; one sync
    # when the night ends (before the manifest says so) keeps a power cut from losing them.
    import os

    calls: list[tuple[str, int]] = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(("fsync", fd)))
    runs = tmp_path / "runs"
    monkeypatch.setattr(os, "sync", lambda: calls.append(("sync", len(list(runs.rglob("*.json"))))))
    writer = RunWriter(ResultsDir(tmp_path))
    for i in range(5):
        writer.write(record(i), {"steps": []})
    writer.close()
    assert calls == [("sync", 5)]  # once, with every file written
    writer.close()
    assert calls == [("sync", 5)]
