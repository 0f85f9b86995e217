"""On paper: a night of S scenarios x M models x N runs against rate-limited providers.

Not a test and not a measurement of a cluster: a projection from stated
assumptions, to see where a night stops being bound by workers and starts
being bound by the providers' limits. Per run: ``calls`` model calls, each
taking a lognormal latency (median, p95) plus ``tool`` seconds; ``prompt`` and
``completion`` tokens per call. Per model: ``rpm`` and ``tpm`` (the suite's
``rate_limits``; each model is a separate provider quota). Each worker runs
``--per-worker`` runs at a time (runs wait on endpoints, not CPU).

    wall = max(worker bound, rpm bound, tpm bound) + the longest run
    worker bound = runs x mean run time / (workers x per-worker)
    rpm bound    = max over models of requests / (rpm x HEADROOM)
    tpm bound    = max over models of tokens / (tpm x HEADROOM)

The mean run time and the longest run come from sampling the latency
distribution (seeded). History size per year is measured, not assumed: one
night of a smaller suite is written as a Parquet history file with the same
synthetic generator ``benchmarks/bench_report.py`` uses, and scaled per run
and per cell.

    python benchmarks/simulate_scale.py
    python benchmarks/simulate_scale.py --rpm 30000 --tpm 30000000   # a higher tier
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from evalrunner.live._limits import HEADROOM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))


def run_times(calls: int, median: float, p95: float, tool: float, n: int, seed: int) -> np.ndarray:
    """Sampled seconds per run: ``calls`` lognormal latencies plus tool time each."""
    sigma = math.log(p95 / median) / 1.6449
    rng = np.random.default_rng(seed)
    latencies = rng.lognormal(math.log(median), sigma, size=(n, calls))
    return np.asarray(latencies.sum(axis=1) + calls * tool)


def history_bytes(runs: int, cells: int) -> tuple[float, float]:
    """(bytes per run, bytes per scenario x model) of a Parquet history entry, measured."""
    from history_factory import build_entries

    from evalrunner.history._store import append

    sizes = []
    with tempfile.TemporaryDirectory(prefix="simulate-scale-") as tmp:
        for scenarios, n in ((40, 5), (40, 20)):
            [entry] = build_entries(nights=1, scenarios=scenarios, models=1, runs=n)
            path = Path(append(entry, tmp))
            sizes.append((scenarios, scenarios * n, path.stat().st_size))
    (c1, r1, b1), (_, r2, b2) = sizes
    per_run = (b2 - b1) / (r2 - r1)
    per_cell = (b1 - per_run * r1) / c1
    return per_run, per_cell


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="N per scenario x model")
    parser.add_argument("--calls", type=int, default=4, help="model calls per run")
    parser.add_argument("--median", type=float, default=1.5, help="median call latency, s")
    parser.add_argument("--p95", type=float, default=6.0, help="p95 call latency, s")
    parser.add_argument("--tool", type=float, default=0.2, help="tool time per call, s")
    parser.add_argument("--prompt", type=int, default=1500, help="prompt tokens per call")
    parser.add_argument("--completion", type=int, default=200, help="completion tokens per call")
    parser.add_argument("--rpm", type=int, default=10_000, help="per model")
    parser.add_argument("--tpm", type=int, default=10_000_000, help="per model")
    parser.add_argument("--per-worker", type=int, default=64, help="runs at a time per worker")
    parser.add_argument("--nights", type=int, default=365)
    args = parser.parse_args()

    runs = args.scenarios * args.models * args.runs
    per_model_runs = args.scenarios * args.runs
    times = run_times(args.calls, args.median, args.p95, args.tool, 200_000, seed=1)
    mean, longest = float(times.mean()), float(np.quantile(times, 1 - 1 / max(runs, 2)))
    requests = per_model_runs * args.calls
    tokens = requests * (args.prompt + args.completion)
    rpm_bound = requests / (args.rpm * HEADROOM) * 60
    tpm_bound = tokens / (args.tpm * HEADROOM) * 60

    print(
        f"{args.scenarios:,} scenarios x {args.models} models x N={args.runs} = {runs:,} runs a night; "
        f"{args.calls} calls a run (latency median {args.median:g} s, p95 {args.p95:g} s, "
        f"+{args.tool:g} s tool), {args.prompt}+{args.completion} tokens a call"
    )
    print(
        f"per model: {requests:,} requests, {tokens / 1e6:,.0f} M tokens; limits rpm {args.rpm:,}, "
        f"tpm {args.tpm:,} -> at least {rpm_bound / 3600:.1f} h (rpm), {tpm_bound / 3600:.1f} h (tpm)"
    )
    print(f"mean run {mean:.1f} s; longest of {runs:,} runs ~{longest:.0f} s\n")
    print("| workers | runs at a time | wall time | bound by |")
    print("|---:|---:|---:|:---|")
    for workers in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        slots = workers * args.per_worker
        worker_bound = runs * mean / slots
        bounds = {"workers": worker_bound, "rpm": rpm_bound, "tpm": tpm_bound}
        which = max(bounds, key=lambda k: bounds[k])
        wall = bounds[which] + longest
        print(f"| {workers} | {slots:,} | {wall / 3600:.1f} h | {which} |")
    # Past this many workers the providers' limits, not the cluster, set the night's length.
    enough = math.ceil(runs * mean / max(rpm_bound, tpm_bound) / args.per_worker)
    print(f"\nmore than ~{enough} workers cannot shorten the night: the rate limits bind\n")

    per_run, per_cell = history_bytes(runs, args.scenarios * args.models)
    night = runs * per_run + args.scenarios * args.models * per_cell
    print(
        f"history (Parquet, measured on a synthetic night): {per_run:.0f} B a run + "
        f"{per_cell / 1e3:.1f} kB a scenario x model (verdicts, typical trajectories) = "
        f"{night / 1e6:,.0f} MB a night, {night * args.nights / 1e9:,.1f} GB for {args.nights} nights"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
