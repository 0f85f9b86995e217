"""One writer per results directory, and only into a directory that is its own (items 9, 12).

Two `evalrunner run` processes on one ``--out`` (started together, or a
``--resume`` while the first still runs) used to both write, overwriting runs
and duplicating history. An exclusive lock on ``<out>/.lock`` refuses the
second writer in one line; the kernel releases it when the holder dies, even
by SIGKILL, so a killed night can still be resumed. A directory that holds
files but no manifest is not written into at all.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from night_process import (
    error_line,
    evalrunner,
    interrupt_later,
    planned,
    respond,
    stop,
    suite_file,
)

from evalrunner.errors import ConfigError
from evalrunner.live._results import ResultsDir, claim


def test_a_second_writer_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        first, out = interrupt_later(ep, tmp_path)
        second = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out), "--resume")
        assert second.returncode == 2, second.stderr
        assert error_line(second.stderr) == (
            f"error: {out} is being written by another evalrunner (pid {first.pid}); wait for "
            "it to finish (then --resume if it was interrupted), or choose another --out"
        )
        assert first.poll() is None  # the first writer runs on, undisturbed
        # The lock dies with its holder, however it dies.
        stop(first, signal.SIGKILL)
        assert (out / ".lock").read_text().strip() == str(first.pid)
        resumed = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out), "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    results = ResultsDir(out)
    ids = [r.run_id for r in results.records()]
    assert len(ids) == len(set(ids)) and set(ids) == planned()


def test_two_writers_started_together_cannot_both_start(tmp_path: Path) -> None:
    # The first holds the directory before it has written anything at all.
    suite_file(tmp_path)
    out = tmp_path / "out"
    with FakeEndpoint(responder=respond) as ep, claim(out, resume=False):
        second = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out))
        assert second.returncode == 2, second.stderr
        assert error_line(second.stderr).startswith(
            f"error: {out} is being written by another evalrunner (pid {os.getpid()})"
        )
        assert ep.requests == []
    assert [p.name for p in out.iterdir()] == [".lock"]


def test_a_non_empty_directory_without_a_manifest_is_not_written_into(tmp_path: Path) -> None:
    suite_file(tmp_path)
    out = tmp_path / "out"
    stale = out / "runs" / "capital" / "openai_fake" / "0.json"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"left": "over"}')
    with FakeEndpoint(responder=respond) as ep:
        result = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out))
        assert ep.requests == []
    assert result.returncode == 2, result.stderr
    assert error_line(result.stderr) == (
        f"error: {out} is not empty (runs) but holds no manifest.json, so it is no results "
        "directory evalrunner can add to; choose an empty or new --out"
    )
    assert stale.read_text() == '{"left": "over"}'
    assert not (out / "manifest.json").exists()
    # --resume gives the same way out, not "run without --resume", which was refused above.
    with pytest.raises(ConfigError) as info, claim(out, resume=True):
        pass
    assert str(info.value) == (
        f"{out}: nothing to resume: it holds runs but no manifest.json, so no night evalrunner "
        "can finish; choose an empty or new --out, without --resume"
    )
