"""A run file that could not be written stops the night's runs: none starts after it."""

from __future__ import annotations

import asyncio
import errno
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalrunner.live._driver import _Driver
from evalrunner.live._progress import Progress
from evalrunner.live._results import ResultsDir
from evalrunner.suite._record import RunRecord


class Recording:
    """An executor that records the jobs it is given (none should be)."""

    def __init__(self) -> None:
        self.started: list[Any] = []

    async def execute(self, job: Any) -> Any:
        self.started.append(job)
        raise AssertionError("a run started after a write had failed")


def test_a_batch_after_a_failed_write_starts_none_of_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Escalation's and --adaptive's batches come one after another: a write that failed
    # between two (as the scheduler chose the next) let the next start every worker's first
    # run, model calls paid, before the failure stopped them.
    def write_run(self: ResultsDir, rec: RunRecord, *args: Any) -> None:
        raise OSError(errno.EIO, "Input/output error", str(self.run_path(rec.run_id)))

    monkeypatch.setattr(ResultsDir, "write_run", write_run)
    executor = Recording()
    endpoint = SimpleNamespace(label="m", max_concurrency=None)
    jobs: list[Any] = [SimpleNamespace(endpoint=endpoint, run_id=f"s/m/{i}") for i in range(4)]
    record = RunRecord(
        run_id="s/m/9", suite="x", scenario="s", model="m", index=9, outcome="passed"
    )

    async def night() -> None:
        driver = _Driver(ResultsDir(tmp_path), Progress(0, io.StringIO()), 2, executor)  # type: ignore[arg-type]
        driver.writer.write(record, {})  # the last batch's run, whose file fails
        for _ in range(200):
            if driver._write_failed.done():
                break
            await asyncio.sleep(0.01)
        with pytest.raises(OSError, match="Input/output error"):
            await driver.run_all(jobs, lambda rec, tb: None)
        with pytest.raises(OSError):
            driver.close()

    asyncio.run(night())
    assert executor.started == []
