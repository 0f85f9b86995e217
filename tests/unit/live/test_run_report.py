"""What a night's :class:`RunReport` says about itself."""

from __future__ import annotations

from pathlib import Path

from evalrunner.live._driver import RunReport
from evalrunner.suite._record import RunRecord


def test_a_nights_report_reprs_in_one_short_line_whatever_its_size() -> None:
    # Python 3.11's asyncio.run formats the finished night's task, its result included,
    # twice: a repr of every record cost the night 0.06 ms of CPU a run.
    records = [
        RunRecord(run_id=f"s/m/{i}", suite="t", scenario="s", model="m", index=i, outcome="passed")
        for i in range(500)
    ]
    report = RunReport(out=Path("/tmp/night"), records=records, crashes=[("s/m/3", "Traceback")])
    assert repr(report) == "RunReport(out='/tmp/night', 500 records, 1 crashes)"
