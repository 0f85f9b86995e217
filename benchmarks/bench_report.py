"""How long the HTML report takes, and how big it gets, for a long history.

Default size: a year of nightly runs (365 nights) of a 50-scenario suite, one
model, 10 runs per scenario per night. The history is synthetic
(``tests/support/history_factory.py``, fast stand-in statistics) and is written with
``evalrunner.history._store.append`` to a temporary directory, then loaded back with
``load_history`` as ``evalrunner report`` would; ``--in-memory`` skips the files.

    python benchmarks/bench_report.py                   # the full year
    python benchmarks/bench_report.py --nights 30 --scenarios 10
    python benchmarks/bench_report.py --keep out.html   # keep the page to look at
    python benchmarks/bench_report.py --scale 1,4,16    # the growth curve (issue 57)

``--scale`` writes one history per size, night by night (never whole in memory), and
prints for each what a user pays: `evalrunner report` as its own process (CPU, peak
memory), the evidence a night reads before it starts (its own process too), and the
history's size on disk; then the curve, each size against the first. Size 1 is today's
benchmark (50 scenarios x 1 model); 4 is 100 x 2; 16 is 200 x 4, an organisation's
800 cells a night.

Each phase is timed separately (wall and CPU time): generating the entries,
writing them, loading them, rendering HTML, Markdown and JUnit.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from history_factory import build_entries, history_from_entries, iter_entries, write_history

from evalrunner._heap import arrow_on_malloc, heap_frozen
from evalrunner.history import load_history
from evalrunner.report import render_html, render_junit, render_markdown

# The child reports its own peak: its memory's high-water mark (VmHWM) as it exits. The
# kernel's ru_maxrss of a child also counts the parent's pages it had before exec, and
# this benchmark's process holds a whole year of entries by then.
_PEAK = """
import atexit, sys
def peak():
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
    sys.stderr.write(f"VmHWM {status}\\n")
atexit.register(peak)
"""
_REPORT = (
    _PEAK
    + """
from evalrunner.cli import main
main()
"""
)


# The evidence a night reads before its first run (`evalrunner run` and `plan` call this
# with their cells), and, beside it, every night's (no cells named: what both read before
# issue 57), timed inside the child so the interpreter's start is not counted.
_EVIDENCE = (
    _PEAK
    + """
import time
sys.path.insert(0, sys.argv[4])
from history_factory import model_name, scenario_name
from evalrunner.history._store import evidence_so_far
from evalrunner.suite._record import CellKey
cells = [CellKey(scenario_name(i), model_name(j))
         for i in range(int(sys.argv[2])) for j in range(int(sys.argv[3]))]
for wanted in (cells, None):
    wall, cpu = time.perf_counter(), time.process_time()
    found = evidence_so_far(sys.argv[1], "demo", wanted)
    sys.stderr.write(f"READ {time.perf_counter() - wall} {time.process_time() - cpu} {len(found)}\\n")
"""
)


def _child(code: str, *args: str) -> tuple[float, float, str]:
    """Run ``code`` as its own Python process: its CPU time (s), peak memory (MiB), stderr."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak_kib = int(done.stderr.rsplit("VmHWM ", 1)[1].split()[0])
    return cpu, peak_kib / 1024, done.stderr


def _whole_process(history: Path) -> tuple[float, float]:
    """`evalrunner report` on the history, as its own process: what a user waits for and
    the memory it takes (CPU s, peak MiB; issue 57's targets: 10 s, 500 MB at 16x)."""
    out = history.parent / "report"
    cpu, peak, _ = _child(_REPORT, "report", "--history", str(history), "--out", str(out))
    print(f"{'evalrunner report':<22} CPU {cpu:.2f} s, peak {peak:.0f} MiB (whole process)")
    return cpu, peak


def _evidence_read(history: Path, scenarios: int, models: int) -> tuple[float, float]:
    """The evidence read a night starts with, and every night's read whole (wall s each,
    inside the process)."""
    support = str(Path(__file__).resolve().parents[1] / "tests" / "support")
    _, peak, err = _child(_EVIDENCE, str(history), str(scenarios), str(models), support)
    reads = [line.split()[1:] for line in err.splitlines() if line.startswith("READ ")]
    (night, night_cpu, cells), (every, _, _) = reads
    print(
        f"{'evidence read':<22} {float(night):8.2f} s  (CPU {float(night_cpu):.2f} s, {cells} "
        f"cells; every night's, no cells named: {float(every):.2f} s; peak {peak:.0f} MiB)",
        flush=True,
    )
    return float(night), float(every)


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


# Distinct nights a size's history cycles through: generating 365 nights of 800 cells
# takes the factory about half an hour; the reads measured here do not depend on which
# runs a night holds, only on how many.
_DISTINCT = 7


def _write_nights(history: Path, nights: int, scenarios: int, models: int, runs: int) -> None:
    """A history of ``nights`` files, as `evalrunner run` writes them, night by night.

    Each file is what :func:`evalrunner.history._store.append` writes for one of
    ``_DISTINCT`` generated nights (validated when generated), dated its own night; the
    redaction and validation `append` runs again per night are left out (a second each
    at 16x), as they do not change the bytes of synthetic data.
    """
    import secrets

    from history_factory import night_time

    from evalrunner.history._store import parquet_night

    made = iter_entries(
        nights=min(nights, _DISTINCT),
        scenarios=scenarios,
        models=models,
        runs=runs,
        regressed=(0, 1),
        regress_nights=1,
        evidence=True,
    )
    templates = [entry.model_dump(mode="json") for entry in made]
    (history / "demo").mkdir(parents=True)
    for night in range(nights):
        created = night_time("2025-01-01T02:00:00Z", night)
        data = dict(templates[night % len(templates)], created_at=created)
        data["manifest"] = dict(data["manifest"], started_at=created, ended_at=created)
        keys = {"suite": "demo", "created_at": created, "started_at": created, "outage": "false"}
        stamp = created.replace(":", "").replace("-", "")
        path = history / "demo" / f"{stamp}-{secrets.token_hex(4)}.parquet"
        path.write_bytes(parquet_night(data, keys))


def _one_size(k: int, nights: int, runs: int) -> tuple[int, int, float, float, float, float]:
    """One size of ``--scale``: (cells, records, MB on disk, report CPU s, report peak MiB,
    evidence read s)."""
    models = max(1, round(math.sqrt(k)))
    scenarios = round(50 * k / models)
    print(f"-- {k}x: {scenarios} scenarios x {models} model(s) x {nights} nights x {runs} runs")
    root = Path(tempfile.mkdtemp(prefix=f"bench-report-{k}x-"))
    try:
        history = root / "history"
        wall, cpu = time.perf_counter(), time.process_time()
        _write_nights(history, nights, scenarios, models, runs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{'generate and write':<22} {wall:8.2f} s  (CPU {cpu:.2f} s)")
        size = sum(p.stat().st_size for p in history.rglob("*") if p.is_file()) / 1e6
        print(f"{'history on disk':<22} {size:8.1f} MB")
        report_cpu, report_peak = _whole_process(history)
        read, _ = _evidence_read(history, scenarios, models)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cells = scenarios * models
    return cells, cells * nights * runs, size, report_cpu, report_peak, read


def _scale(scales: list[int], nights: int, runs: int) -> None:
    """The growth curve: each size's costs, and each against the first size's."""
    rows = [(k, *_one_size(k, nights, runs)) for k in scales]
    first = rows[0]
    print(
        f"\n{'size':>5} {'cells':>6} {'records':>10} {'disk MB':>8} {'report CPU s':>13} "
        f"{'peak MiB':>9} {'evidence s':>11}   growth vs {first[0]}x: records, CPU, peak"
    )
    for k, cells, records, size, cpu, peak, read in rows:
        print(
            f"{k:>4}x {cells:>6} {records:>10} {size:>8.1f} {cpu:>13.2f} {peak:>9.0f} {read:>11.3f}"
            f"   {records / first[2]:.1f}x, {cpu / first[4]:.1f}x, {peak / first[5]:.1f}x"
        )
    print("targets at 16x (issue 57): report <= 10 s CPU, <= 500 MB peak; evidence read <= 1 s")


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
        "--scale",
        help="comma-separated sizes (1 = 50 scenarios x 1 model): the growth curve instead",
    )
    parser.add_argument(
        "--compare-json",
        action="store_true",
        help="also write and load version 1 history (one gzipped JSON document per night), side by side",
    )
    args = parser.parse_args(argv)
    if args.scale:
        _scale([int(k) for k in args.scale.split(",")], args.nights, args.runs)
        return 0

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
