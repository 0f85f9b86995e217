"""Why an attempt's timeout is given in whole seconds: litellm keeps one client per timeout.

N runs x 3 ``litellm.acompletion`` calls at concurrency 32 against a loopback
endpoint (child process) that answers after 200 ms, twice each way, interleaved:
every call with the same ``timeout``, and every call with a slightly different
one (what a timeout cut to a run's exact remaining time gives). litellm caches
its HTTP clients by their settings, the timeout included, so the second way
builds a client (and opens a connection) per call.

    python benchmarks/bench_timeout_clients.py              # 300 runs
    python benchmarks/bench_timeout_clients.py --runs 100
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "support")]

from bench_runner import CALLS, bare_async_line, warm_up  # noqa: E402 - after the path setup
from bench_scale import Endpoint  # noqa: E402


def run() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    endpoint = Endpoint(0.2)
    try:
        warm_up(endpoint.api_base)
        walls: dict[str, list[float]] = {"one timeout": [], "a timeout per call": []}
        for _ in range(2):
            walls["one timeout"].append(bare_async_line(endpoint.api_base, args.runs, 32))
            walls["a timeout per call"].append(
                bare_async_line(endpoint.api_base, args.runs, 32, lambda: 60 - random.random())
            )
    finally:
        endpoint.close()
    print(f"\n{args.runs} runs x {CALLS} calls, concurrency 32, 200 ms endpoint")
    for name, values in walls.items():
        print(f"{name:<20} {', '.join(f'{v:.2f} s' for v in values)}")
    ratio = min(walls["a timeout per call"]) / min(walls["one timeout"])
    print(f"a timeout per call / one timeout = {ratio:.2f} (best rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(run())
