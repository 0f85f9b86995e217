"""Calibrate the paired statistics of dataset scenarios: what pairing rows buys, at what cost.

A dataset scenario runs the same rows every night, so tonight's runs can be compared
with the baseline's row by row (the engine's ``within_share``: the variance between
rows cancels, only the spread within a row is noise). This script measures, on the
engine's own path (``fit_references`` -> ``drive`` with the CLI's escalation budget ->
``compare_night``), the same simulated runs judged twice:

* **paired**: the records carry their row (what ``evalrunner run`` writes);
* **unpaired**: the same records with the row removed, i.e. runs treated as
  exchangeable, as every scenario without a dataset is.

Each suite has 5 dataset scenarios of R = 30 rows; a night runs each row N = 3 times
(90 runs a scenario), a baseline is 3 accepted nights. Rows differ as real datasets
do: 60 % are easy (pass 0.97), 25 % medium (0.75), 15 % hard (0.25); a row's steps
are 3-7 (its own mean, negative binomial around it); its tool path is fixed. Endpoints are quiet, or drift:
every night shifts each scenario's pass rates by a logit-normal amount (sd 0.3) and
its step means by exp(N(0, 0.1)).

Changes planted in scenario 0 tonight:

* ``success, 5 rows``: five easy rows stop passing (0.97 -> 0; the rate falls ~0.16);
* ``success, every row``: every row's pass logit falls by 1 (the rate falls ~0.13);
* ``steps, half the rows``: 15 rows take 3 more steps;
* ``steps, every row``: every row's step mean x 1.3.

(Margins are the defaults: 0.10 on the success rate, 0.33 Cliff's delta on steps; a
change smaller than its margin is not flagged by design, so the changes are beyond them.)

Printed: the share of nights the changed scenario fails (power) and the share of nights
any of the 4 unchanged scenarios fails (A/A per night, so per scenario it is about a
quarter of that), paired and unpaired, at a fixed N (equal runs) and with escalation
(the CLI's default: up to 3 N on a suspicious look; the runs made are shown).

    .venv/bin/python benchmarks/calibrate_datasets.py --trials 200 --jobs 2   # ~20 min
    .venv/bin/python benchmarks/calibrate_datasets.py --trials 20             # a smoke run
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from calibrate_stats import _record  # fast trusted records, every field's default kept

from evalrunner.stats import Budget, CellBaseline, CellNight, compare_night, drive, fit_references
from evalrunner.stats._formulas import wilson
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord

ROWS, N, NIGHTS, SCENARIOS = 30, 3, 3, 5
EASY, MEDIUM, HARD = 0.97, 0.75, 0.25
STEPS_SIZE = 10.0
PATHS = (("search",), ("search", "read"))
"""A row's tool path (fixed: this calibration is about rates and steps)."""
ESCALATE = Tolerance()
FIXED = Tolerance(escalate_to=1.0)
CHANGES = (
    "none",
    "success, 5 rows",
    "success, every row",
    "steps, half the rows",
    "steps, every row",
)


@dataclass(frozen=True)
class Rows:
    """One scenario's rows: pass rate and mean steps of each."""

    rate: np.ndarray
    steps: np.ndarray

    @classmethod
    def draw(cls, rng: np.random.Generator) -> Rows:
        kind = rng.choice(3, ROWS, p=[0.6, 0.25, 0.15])
        rate = np.array([EASY, MEDIUM, HARD])[kind]
        steps = rng.integers(3, 8, ROWS).astype(float)
        return cls(rate, steps)

    def changed(self, change: str) -> Rows:
        rate, steps = self.rate.copy(), self.steps.copy()
        easy = np.flatnonzero(self.rate == EASY)[:5]
        if change == "success, 5 rows":
            rate[easy] = 0.0
        elif change == "success, every row":
            rate = _shift(rate, -1.0)
        elif change == "steps, half the rows":
            steps[: ROWS // 2] += 3
        elif change == "steps, every row":
            steps = steps * 1.3
        return Rows(rate, steps)


def _shift(rate: np.ndarray, logit: float) -> np.ndarray:
    clipped = np.clip(rate, 1e-6, 1 - 1e-6)
    return np.asarray(1 / (1 + np.exp(-(np.log(clipped / (1 - clipped)) + logit))))


def night_runs(
    rows: Rows, key: CellKey, rng: np.random.Generator, drift: bool, n: int, night: int
) -> list[RunRecord]:
    """``n`` runs of one night, run i on row i % ROWS (as the runner assigns them)."""
    rate, steps = rows.rate, rows.steps
    if drift:
        rate = _shift(rate, rng.normal(0, 0.3))
        steps = steps * math.exp(rng.normal(0, 0.1))
    out = []
    for i in range(n):
        r = i % ROWS
        passed = rng.random() < rate[r]
        mean = max(steps[r], 1e-6)
        count = max(1, int(rng.negative_binomial(STEPS_SIZE, STEPS_SIZE / (STEPS_SIZE + mean))))
        out.append(
            _record(
                {
                    "run_id": f"{key.scenario}/{night}/{i}",
                    "suite": "datasets",
                    "scenario": key.scenario,
                    "model": key.model,
                    "index": i,
                    "row": f"r{r:02d}",
                    "outcome": "passed" if passed else "failed",
                    "step_count": count,
                    "llm_calls": count,
                    "tool_calls": len(PATHS[r % 2]),
                    "tools": list(PATHS[r % 2]),
                    "prompt_tokens": 1000,
                    "completion_tokens": 200,
                    "final_answer": "yes" if passed else "no",
                    "latency_s": 1.0,
                }
            )
        )
    return out


def _unpaired(records: Sequence[RunRecord]) -> list[RunRecord]:
    return [_record({**r.__dict__, "row": None}) for r in records]


@dataclass(frozen=True)
class Task:
    seed: int
    change: str
    drift: bool


@dataclass(frozen=True)
class Outcome:
    """One night, per procedure: (changed scenario failed, an unchanged one failed, runs)."""

    results: dict[str, tuple[bool, bool, int]]


def one_night(task: Task) -> Outcome:
    rng = np.random.default_rng(task.seed)
    keys = [CellKey(f"s{i}", "m") for i in range(SCENARIOS)]
    rows = {k: Rows.draw(rng) for k in keys}
    per_night = ROWS * N
    baselines = {
        k: [night_runs(rows[k], k, rng, task.drift, per_night, j) for j in range(NIGHTS)]
        for k in keys
    }
    tonight_rows = {
        k: rows[k].changed(task.change) if i == 0 else rows[k] for i, k in enumerate(keys)
    }
    pools = {k: night_runs(tonight_rows[k], k, rng, task.drift, 3 * per_night, 9) for k in keys}
    results = {}
    for paired in (True, False):
        for tol, label in ((FIXED, "fixed N"), (ESCALATE, "escalation")):
            name = f"{'paired' if paired else 'unpaired'}, {label}"
            results[name] = _judge(keys, baselines, pools, tol, paired)
    return Outcome(results)


def _judge(
    keys: list[CellKey],
    baselines: dict[CellKey, list[list[RunRecord]]],
    pools: dict[CellKey, list[RunRecord]],
    tol: Tolerance,
    paired: bool,
) -> tuple[bool, bool, int]:
    fix = (lambda rs: list(rs)) if paired else _unpaired
    row_ids = frozenset(f"r{r:02d}" for r in range(ROWS)) if paired else None
    cells = [CellBaseline(k, tol, [fix(n) for n in baselines[k]], "anchor", row_ids) for k in keys]
    refs = fit_references(cells)
    tonight = {}
    for k in keys:
        budget = Budget.of(tol, ROWS * N, cells=len(keys))
        pool = fix(pools[k])
        used = [0]

        def more(
            count: int, pool: list[RunRecord] = pool, used: list[int] = used
        ) -> list[RunRecord]:
            start = used[0]
            used[0] += count
            return pool[start : start + count]

        tonight[k] = drive(refs[k], budget, more).records
    night = compare_night([CellNight(c, tonight[c.key]) for c in cells], refs)
    by_cell = {c.key: c for c in night.cells}
    changed = any(r.fails_night for r in by_cell[keys[0]].results)
    null = any(r.fails_night for k in keys[1:] for r in by_cell[k].results)
    return changed, null, len(tonight[keys[0]])


def pct(hits: int, n: int) -> str:
    low, high = wilson(hits, n, 0.95)
    return f"{100 * hits / n:5.1f} % [{100 * low:.1f}, {100 * high:.1f}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="Nights per row of the table.")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.monotonic()
    print(
        f"# {SCENARIOS} dataset scenarios x {ROWS} rows, N = {N} a row ({ROWS * N} runs), "
        f"baseline {NIGHTS} nights; {args.trials} nights per row; seed {args.seed}\n"
    )
    print(
        "| endpoint | change | procedure | changed scenario fails | A/A: an unchanged one fails | runs (changed) |"
    )
    print("|---|---|---|---|---|---|")
    for drift in (False, True):
        for c, change in enumerate(CHANGES):
            tasks = [
                Task(args.seed * 1_000_003 + c * 10_007 + t + 500_000 * drift, change, drift)
                for t in range(args.trials)
            ]
            if args.jobs > 1:
                with ProcessPoolExecutor(args.jobs) as pool:
                    outcomes = list(pool.map(one_night, tasks, chunksize=4))
            else:
                outcomes = [one_night(t) for t in tasks]
            for name in outcomes[0].results:
                got = [o.results[name] for o in outcomes]
                fails = sum(g[0] for g in got)
                null = sum(g[1] for g in got)
                runs = float(np.mean([g[2] for g in got]))
                shown = "(A/A)" if change == "none" else pct(fails, len(got))
                print(
                    f"| {'drift' if drift else 'quiet'} | {change} | {name} | {shown} | "
                    f"{pct(null, len(got))} | {runs:.0f} |"
                )
            sys.stdout.flush()
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
