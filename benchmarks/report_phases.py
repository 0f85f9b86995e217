"""CPU seconds of `evalrunner report`'s phases on a history: where a report's time goes.

Runs the report command in this process with a timer around each phase's function
(selecting the nights, gathering the charted numbers, drawing each cell's charts and
section, the flag tables, the skip-reason tables, the template), then prints each phase's
process CPU and the whole process's. The phases nest (the cells' sections hold their
charts; the HTML holds the rest), so they do not add up. docs/scaling.md quotes it for the
16x history that `benchmarks/bench_report.py` writes:

    PYTHONPATH=. .venv/bin/python benchmarks/report_phases.py HISTORY
"""

from __future__ import annotations

import collections
import functools
import resource
import sys
import tempfile
import time
from typing import Any

_SPENT: collections.Counter[str] = collections.Counter()


def _timed(owner: Any, name: str, label: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            _SPENT[label] += time.process_time() - start

    setattr(owner, name, timed)


def main(history: str) -> None:
    start = time.process_time()
    import jinja2

    import evalrunner.report._report as report
    import evalrunner.report._select as select
    import evalrunner.report._suite_view as suite_view
    from evalrunner.cli import main as cli

    _SPENT["start-up (imports)"] = time.process_time() - start
    for owner, name, label in (
        (report, "load_history", "loading the file list"),
        (report, "render_html", "the HTML page, all of it"),
        (report, "render_markdown", "the Markdown summary"),
        (report, "render_junit", "the JUnit file"),
        (select, "_select", "selecting the nights"),
        (suite_view, "gather", "reading the charted numbers"),
        (suite_view, "_detail", "the cells' sections (charts included)"),
        (suite_view, "_charts", "the cells' charts"),
        (suite_view, "_flags", "the flag tables"),
        (suite_view, "_reasons", "the skip-reason tables"),
        (jinja2.Template, "render", "the template"),
    ):
        _timed(owner, name, label)
    with tempfile.TemporaryDirectory() as out:
        cli(["report", "--history", history, "--out", out], standalone_mode=False)
    for label, seconds in _SPENT.most_common():
        print(f"{label:<40} {seconds:6.2f} s")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{'the whole process (user + system)':<40} {usage.ru_utime + usage.ru_stime:6.2f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report_phases.py HISTORY")
    main(sys.argv[1])
