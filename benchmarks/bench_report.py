"""How long the HTML report takes, and how big it gets, for a long history.

Default size: a year of nightly runs (365 nights) of a 50-scenario suite, one
model, 10 runs per scenario per night. The history is synthetic
(``tests/support/history_factory.py``, fast stand-in statistics) and is written with
``evalrunner.history._store.append`` to a temporary directory, then loaded back with
``load_history`` as ``evalrunner report`` would; ``--in-memory`` skips the files.

    python benchmarks/bench_report.py                   # the full year
    python benchmarks/bench_report.py --nights 30 --scenarios 10
    python benchmarks/bench_report.py --keep out.html   # keep the page to look at

Each phase is timed separately (wall and CPU time): generating the entries,
writing them, loading them, rendering HTML, Markdown and JUnit.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from history_factory import build_entries, history_from_entries, write_history

from evalrunner._heap import arrow_on_malloc, heap_frozen
from evalrunner.history import load_history
from evalrunner.report import render_html, render_junit, render_markdown

# The child reports its own peak: its memory's high-water mark (VmHWM) as it exits. The
# kernel's ru_maxrss of a child also counts the parent's pages it had before exec, and
# this benchmark's process holds a whole year of entries by then.
_REPORT = """
import atexit, sys
def peak():
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
    sys.stderr.write(f"VmHWM {status}\\n")
atexit.register(peak)
from evalrunner.cli import main
main()
"""


def _whole_process(history: Path) -> None:
    """`evalrunner report` on the history, as its own process: what a user waits for and
    the memory it takes (the issue's targets: 5 s CPU, 300 MB peak)."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = history.parent / "report"
    done = subprocess.run(
        [sys.executable, "-c", _REPORT, "report", "--history", str(history), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak_kib = int(done.stderr.rsplit("VmHWM ", 1)[1].split()[0])
    print(
        f"{'evalrunner report':<22} CPU {cpu:.2f} s, peak {peak_kib / 1024:.0f} MiB "
        "(whole process; targets: 5 s, 300 MB)",
        flush=True,
    )


def _render(
    history: Any, took: dict[str, tuple[float, float]], timed: Any, keep: Path | None
) -> None:
    html = timed("render_html", render_html, history)
    # Counted from the columns the report read: `history.entries` would build every record.
    runs = sum(len(s.column("records", "run_id")) for s in history.sources)
    results = sum(len(s.column("verdicts", "metric")) for s in history.sources)
    print(f"{'runs / metric results':<22} {runs} / {results}")
    if "load_history" in took:
        wall, cpu = (took["load_history"][i] + took["render_html"][i] for i in (0, 1))
        print(f"{'load + render_html':<22} {wall:8.2f} s  (CPU {cpu:.2f} s; target: under 5 s)")
    print(f"{'HTML size':<22} {len(html.encode()) / 1e6:8.2f} MB")
    markdown = timed("render_markdown", render_markdown, history)
    print(f"{'Markdown size':<22} {len(markdown.encode()) / 1e3:8.1f} kB")
    junit = timed("render_junit", render_junit, history)
    print(f"{'JUnit size':<22} {len(junit.encode()) / 1e3:8.1f} kB")
    if keep:
        keep.write_text(html, encoding="utf-8")
        print(f"wrote {keep}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--scenarios", type=int, default=50)
    parser.add_argument("--models", type=int, default=1)
    parser.add_argument("--runs", type=int, default=10, help="runs per scenario x model per night")
    parser.add_argument(
        "--in-memory", action="store_true", help="skip writing and loading history files"
    )
    parser.add_argument("--keep", type=Path, help="write the HTML report here")
    parser.add_argument(
        "--compare-json",
        action="store_true",
        help="also write and load version 1 history (one gzipped JSON document per night), side by side",
    )
    args = parser.parse_args(argv)

    took: dict[str, tuple[float, float]] = {}

    def timed(label: str, fn, *a, **kw):  # type: ignore[no-untyped-def]
        # CPU time as well as wall time: on a shared machine the wall clock mostly measures the neighbours.
        wall, cpu = time.perf_counter(), time.process_time()
        value = fn(*a, **kw)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{label:<22} {wall:8.2f} s  (CPU {cpu:.2f} s)", flush=True)
        took[label] = wall, cpu
        return value

    print(
        f"{args.nights} nights x {args.scenarios} scenarios x {args.models} model(s) x {args.runs} runs "
        f"= {args.nights * args.scenarios * args.models * args.runs} run records"
    )
    entries = timed(
        "generate entries",
        build_entries,
        nights=args.nights,
        scenarios=args.scenarios,
        models=args.models,
        runs=args.runs,
        regressed=(0, 1),
        regress_nights=max(1, args.nights // 20),
    )
    root = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:  # the files stay until the end: a local history is read in the parts asked for
        if args.in_memory:
            history = timed("build History", history_from_entries, entries)
        else:
            if args.compare_json:
                timed(
                    "write JSON history", write_history, str(root / "json"), entries, parquet=False
                )
            timed("write history files", write_history, str(root / "parquet"), entries)
            for kind in ("parquet", "json") if args.compare_json else ("parquet",):
                size = sum(p.stat().st_size for p in (root / kind).rglob("*") if p.is_file())
                print(
                    f"{'history on disk':<22} {size / 1e6:8.1f} MB in {len(entries)} {kind} files"
                )
            del entries
            _whole_process(root / "parquet")
            if args.compare_json:
                old = timed("load_history (JSON)", load_history, str(root / "json"))
                del old
            history = timed("load_history", load_history, str(root / "parquet"))
        with heap_frozen(), arrow_on_malloc():  # as `evalrunner report` renders (cli/_report.py)
            _render(history, took, timed, args.keep)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
