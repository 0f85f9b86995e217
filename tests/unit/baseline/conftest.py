"""Small baselines built in memory for the explanation and sentinel tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evalrunner.baseline._file import AcceptedNight, Baseline
from evalrunner.baseline._traces import RunTrace, Traces
from evalrunner.suite._record import RunRecord


def record(i: int, **fields: Any) -> RunRecord:
    """Run ``i`` of scenario ``s`` on model ``m`` (suite ``t``), with ``fields``."""
    return RunRecord(run_id=f"s/m/{i}", suite="t", scenario="s", model="m", index=i, **fields)


def passed_records(
    rows: Sequence[str | None], answers: Sequence[str] | None = None
) -> list[RunRecord]:
    """One passed run per entry of ``rows``, run ``i`` on ``rows[i]`` (None: no dataset),
    answering ``answers[i]``."""
    return [
        record(i, row=row, outcome="passed", final_answer=None if answers is None else answers[i])
        for i, row in enumerate(rows)
    ]


def dataset_baseline(
    rows: Sequence[str], looks_up: Callable[[str], bool], **traced: object
) -> Baseline:
    """One accepted night of passed runs, run ``i`` on ``rows[i]``; a run of a row for which
    ``looks_up`` holds calls ``lookup`` first, the others answer at once. ``traced``: more
    fields of the night's traces (``sent``, ``sent_row``)."""
    records = passed_records(rows)
    runs = [
        RunTrace(run_id=r.run_id, actions=[("lookup", "x", "y")] if looks_up(str(r.row)) else [])
        for r in records
    ]
    return baseline_of(records, runs, **traced)


def baseline_of(
    records: Sequence[RunRecord], runs: Sequence[RunTrace], **traced: object
) -> Baseline:
    """One accepted night of ``records`` whose traces are ``runs`` (and ``traced``)."""
    traces = Traces(runs=list(runs), **traced)  # type: ignore[arg-type]
    night = AcceptedNight(started_at="t", source="n1", records=list(records), traces=traces)
    return Baseline(
        suite="t",
        scenario="s",
        model="m",
        fingerprint="f",
        created_at="t",
        evalrunner_version="0",
        nights=[night],
    )
