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
import asyncio
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "support")]

from bench_runner import CALLS, TASK, _bare_kwargs, warm_up  # noqa: E402 - after the path setup
from bench_scale import Endpoint  # noqa: E402


def line(api_base: str, runs: int, varying: bool, concurrency: int = 32) -> float:
    import litellm

    async def main() -> None:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                messages: list[dict[str, Any]] = [{"role": "user", "content": f"{TASK} ({i})"}]
                for _ in range(CALLS):
                    kwargs = _bare_kwargs(api_base)
                    if varying:
                        kwargs["timeout"] = 60 - random.random()
                    r = await litellm.acompletion(messages=messages, **kwargs)
                    reply = r.choices[0].message.content or "..."
                    messages = [*messages, {"role": "assistant", "content": reply}]

        await asyncio.gather(*(one(i) for i in range(runs)))

    t0 = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0


def run() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    endpoint = Endpoint(0.2)
    try:
        warm_up(endpoint.api_base)
        walls: dict[str, list[float]] = {"one timeout": [], "a timeout per call": []}
        for _ in range(2):
            walls["one timeout"].append(line(endpoint.api_base, args.runs, False))
            walls["a timeout per call"].append(line(endpoint.api_base, args.runs, True))
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
