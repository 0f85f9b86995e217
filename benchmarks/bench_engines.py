"""The embedded model on both engines, side by side, on the example suite's tool scenarios.

Issue 54 asked for the embedded model without a compiler. ``prebuilt`` (xllamacpp's
manylinux wheel behind evalrunner's own server, ``evalrunner[local]``, the default) against
``llama-cpp-python`` (compiled on install, ``evalrunner[local-compiled]``): each runs the same
scenarios through ``evalrunner run`` (the user's path: the CLI, a temp project holding a
copy of ``suites/``, a scrubbed environment), N runs each, one engine after the other.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_engines.py            # 20 runs, ~8 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_engines.py --runs 5 --scenario single_tool

Printed per engine and scenario: runs passed / failed / skipped (a skip is the model
failing to cope, not the agent), mean tool calls and model calls per run, and mean wall
seconds per run; per engine the server's start time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("llama-cpp-python", "prebuilt")
TOOL_SCENARIOS = ("single_tool", "tool_chain", "fanout")


def night(engine: str, scenarios: list[str], runs: int) -> tuple[list[dict[str, Any]], float, str]:
    """One engine's night in a fresh temp project: its run records, seconds, server start."""
    with tempfile.TemporaryDirectory(prefix=f"bench-engines-{engine}-") as tmp:
        project = Path(tmp)
        shutil.copytree(ROOT / "suites", project / "suites")
        env = {"PATH": os.environ["PATH"], "HOME": str(project), "EVALRUNNER_LOCAL_ENGINE": engine}
        cli = Path(sys.executable).with_name("evalrunner")
        argv = [str(cli), "run", "--suite", "example", "--runs", str(runs)]
        for scenario in scenarios:
            argv += ["--scenario", scenario]
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
        took = time.perf_counter() - start
        if done.returncode not in (0, 1):
            sys.exit(f"{engine}: evalrunner run exited {done.returncode}\n{done.stderr[-3000:]}")
        ready = next((ln for ln in done.stderr.splitlines() if "local model ready" in ln), "")
        records = [
            json.loads(path.read_text())["record"]
            for path in sorted(project.glob("results/*/runs/*/*/*.json"))
        ]
        return records, took, ready.split("after")[-1].strip()


def table(engine: str, records: list[dict[str, Any]], took: float, ready: str) -> None:
    print(f"\n{engine}: {len(records)} runs in {took:.0f} s, server ready after {ready}")
    print(f"{'scenario':<14}{'passed':>8}{'failed':>8}{'skipped':>9}{'tools/run':>11}"
          f"{'calls/run':>11}{'s/run':>8}")  # fmt: skip
    for scenario in sorted({r["scenario"] for r in records}):
        mine = [r for r in records if r["scenario"] == scenario]
        outcomes = Counter(r["outcome"] for r in mine)
        print(
            f"{scenario:<14}{outcomes['passed']:>5}/{len(mine):<2}{outcomes['failed']:>8}"
            f"{outcomes['skipped']:>9}{mean(r['tool_calls'] for r in mine):>11.2f}"
            f"{mean(r['llm_calls'] for r in mine):>11.2f}{mean(r['latency_s'] for r in mine):>8.2f}"
        )
        reasons = Counter(r["reason"] for r in mine if r["outcome"] != "passed")
        if reasons:
            print(f"{'':14}why not: " + ", ".join(f"{k} x{n}" for k, n in reasons.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scenario", action="append", help="default: the tool scenarios")
    parser.add_argument("--engine", action="append", choices=ENGINES, help="default: both")
    args = parser.parse_args()
    scenarios = args.scenario or list(TOOL_SCENARIOS)
    for engine in args.engine or ENGINES:
        table(engine, *night(engine, scenarios, args.runs))


if __name__ == "__main__":
    main()
