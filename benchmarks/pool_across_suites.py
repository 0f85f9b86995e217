"""What pooling the night variance across suites would buy (issue 52, item 2, not built).

The engine pools each metric's night variance (tau^2) over the cells of the suite being
run: a 5 x 1 suite's five cells with five anchor nights each. Issue 52 also asks for the
suites beside it on the same endpoint and model. This benchmark measures that before it
is built: the calibration's 5 x 1 night (``benchmarks/calibrate_stats.py``: the same
generator, escalation, ``compare_night``), with the pool fed ``--extra`` more cells, the
anchors of another suite's scenarios on the same endpoint (the same drift law, five
nights of 20 runs each, scenarios drawn as the calibration's unchanged ones). Only the
pool reads them: they are not compared, and tonight's bar is the 5 x 1 suite's.

Printed per row: the first night's success 0.9 -> 0.6 flagged (the headline of issue 52),
and A/A nights (nothing changed) with a gating failure, quiet and under the logit law.

    PYTHONPATH=. .venv/bin/python benchmarks/pool_across_suites.py --nights 400 --jobs 2

The pool assumes the other suite's nights follow the same law; in the benchmark they do
by construction. Where it is built, a baseline would need to say which endpoint it was
measured on (a baseline holds the suite's model alias, which another suite may give to
another model).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import calibrate_stats as cs

from evalrunner.stats import (
    CellBaseline,
)
from evalrunner.suite._record import CellKey


@dataclass(frozen=True)
class Task:
    seed: int
    drift: cs.Endpoint
    change: cs.Change
    extra: int


def one_night(task: Task) -> tuple[bool, bool]:
    """(the change's metric flagged, an unchanged cell failed the night)."""
    rng = np.random.default_rng(task.seed)
    keys = cs.Suite(5, 1).cells()
    profiles = {
        k: (task.change.base if i == 0 else cs.null_profile(rng)) for i, k in enumerate(keys)
    }
    anchors = {
        k: [cs.draw(profiles[k].night(rng, task.drift), k, rng, cs.N, j * cs.N) for j in range(5)]
        for k in keys
    }
    pools = {
        k: cs.Batch.draw(
            (task.change.apply(1) if i == 0 else profiles[k]).night(rng, task.drift),
            k,
            rng,
            3 * cs.N,
        )
        for i, k in enumerate(keys)
    }
    # The other suite from a stream of its own: every --extra sees the same 5 x 1 nights.
    other = np.random.default_rng([task.seed, 1])
    others = [CellKey(f"other{i:02d}", "m0") for i in range(task.extra)]
    for k in others:
        profile = cs.null_profile(other)
        anchors[k] = [
            cs.draw(profile.night(other, task.drift), k, other, cs.N, j * cs.N) for j in range(5)
        ]
    beside = [CellBaseline(k, cs.TOL, anchors[k], "other suite") for k in others]
    night = cs._procedure(cs.ESCALATE, keys, anchors, pools, {}, beside)
    flagged = bool(task.change.metric) and task.change.metric in night.changed_metrics
    return flagged, night.null_failed


def row(drift: cs.Endpoint, change: cs.Change, extra: int, nights: int, jobs: int) -> str:
    label = f"pool-across|{cs.ENDPOINTS[drift]}|{change.name}"  # the same nights for every --extra
    tasks = [Task(s, drift, change, extra) for s in cs.seeds(0, label, nights)]
    got = cs.run_all(one_night, tasks, jobs)
    share = cs.pct(sum(f for f, _ in got), nights) if change.metric else "-"
    return (
        f"| {change.name} | {cs.ENDPOINTS[drift]} | {extra} | {share} "
        f"| {cs.pct(sum(a for _, a in got), nights)} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=200)
    parser.add_argument("--extra", default="0,5,20", help="cells of other suites in the pool")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    extras = [int(x) for x in args.extra.split(",")]
    start = time.time()
    print(
        "| change | endpoint | other suites' cells in the pool | changed metric flagged "
        "| unchanged cells failed the night |"
    )
    print("|---|---|---|---|---|")
    for change in (cs.CHANGES[0], cs.NONE):
        for drift in (cs.QUIET, cs.LOGIT):
            for extra in extras:
                print(row(drift, change, extra, args.nights, args.jobs), flush=True)
    print(f"\n_{time.time() - start:.0f} s on {args.jobs} processes._")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
