"""The executors side by side, and the shared rate limiter under a provider that enforces rpm.

Part 1: N runs x 3 model calls (the async tool-chain agent of bench_runner.py)
at the same concurrency against a loopback endpoint (child process) that
answers after 200 ms: with the local executor, with ``--executor ray`` (a local
Ray, 4 worker processes), the same agent called directly (its litellm calls,
tools included, and nothing of evalrunner: litellm's floor for these requests),
and bare ``litellm.acompletion`` x 3 with plain messages (litellm's floor for
the simplest request). Ideal: ceil(N / concurrency) x 3 x 0.2 s. Targets: Ray
<= 1.25 x ideal; local <= 1.15 x the same agent alone. All lines, Ray's too, run in
interleaved rounds (``--rounds``), each line's best round counting.

Part 2: a suite with ``rate_limits: {openai/fake: {rpm: R}}`` on Ray with 4
workers, against an endpoint that answers 429 (with Retry-After) to any
request over R in any minute (``--rpm-window`` counts over another window,
scaled). Prints the accepted request rate as a share of R
(target: within 5 %) and the 429s (target: none).

    python benchmarks/bench_scale.py                          # 1,000 runs, concurrency 32
    python benchmarks/bench_scale.py --runs 200 --rpm-runs 100 # a quicker look
    python benchmarks/bench_scale.py --skip-ray               # part 1, local lines only
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "tests" / "support"
sys.path[:0] = [str(HERE), str(SUPPORT)]

from bench_runner import (  # noqa: E402 - after the path setup
    CALLS,
    KEY,
    MODEL,
    TASK,
    TOOLS,
    agent_async_line,
    bare_async_line,
    respond,
    warm_up,
)

LATENCY = 0.2
BARE = "bare litellm.acompletion x3"
ALONE = "same agent alone (no evalrunner)"
LOCAL = "local executor"
RAY = "ray executor, 4 workers"
RAY_TARGET, LOCAL_TARGET, RATE_TOLERANCE = 1.25, 1.15, 0.05


def _serve(conn: Any, latency: float, rpm: int | None, window: float) -> None:
    from fake_endpoint import FakeEndpoint

    with FakeEndpoint(responder=respond, latency=latency, rpm=rpm, rpm_window_s=window) as ep:
        conn.send(ep.api_base)
        conn.recv()  # until the parent says stop
        conn.send((len(ep.requests), list(ep.accepted_at), ep.rate_limited))


class Endpoint:
    """The fake endpoint in a child process (its threads do not compete for our GIL)."""

    def __init__(self, latency: float, rpm: int | None = None, window: float = 60.0) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, latency, rpm, window), daemon=True)
        self.proc.start()
        self.api_base: str = self.conn.recv()

    def close(self) -> tuple[int, list[float], int]:
        self.conn.send("stop")
        served: tuple[int, list[float], int] = self.conn.recv()
        self.proc.join(5)
        return served


def night(
    api_base: str, runs: int, concurrency: int, executor: Any, rpm: int | None = None
) -> float:
    """One night of the async tool-chain suite; its wall time (every run must pass)."""
    import yaml
    from suite_runs import run_suite

    from evalrunner.endpoints._endpoints import Endpoint as Ep
    from evalrunner.endpoints._endpoints import EndpointPool
    from evalrunner.suite._loader import load_suite

    class Pool(EndpointPool):
        def resolve(self, model: str) -> Ep:
            return Ep(label=model, model=model, api_base=api_base, api_key=KEY)

    doc: dict[str, Any] = {
        "format_version": 1,
        "name": "bench",
        "models": [MODEL],
        "runs": runs,
        "concurrency": concurrency,
        "timeout_s": 600,
        "retry": {"max_attempts": 8},
        "scenarios": [
            {
                "id": "tool_chain",
                "agent": "bench_runner:athree_calls",
                "input": TASK,
                "tools": list(TOOLS),
                "checks": {"tools_in_order": list(TOOLS), "answer_contains": ["14"]},
            }
        ],
    }
    if rpm is not None:
        doc["rate_limits"] = {MODEL: {"rpm": rpm}}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        (Path(tmp) / "bench.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        suite = load_suite(Path(tmp) / "bench.yaml")
        t0 = time.perf_counter()
        report = asyncio.run(
            run_suite(
                suite,
                out=Path(tmp) / "out",
                pool=Pool(),
                progress_stream=io.StringIO(),
                executor=executor,
            )
        )
        wall = time.perf_counter() - t0
    outcomes = {r.outcome for r in report.records}
    assert len(report.records) == runs and outcomes == {"passed"}, outcomes
    return wall


def _cpu_seconds(pid: int) -> float:
    """A process's CPU seconds so far (Linux /proc; 0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ray_cpu(workers: list[int]) -> dict[str, float]:
    """Where a Ray night's CPU goes: this driver, the worker processes, the rest of Ray
    (raylet, GCS, its agents: every other process with "ray" in its command line)."""
    others = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in (os.getpid(), *workers):
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"ray" in cmdline:
                others.append(int(entry.name))
    return {
        "driver": time.process_time(),
        "4 workers": sum(_cpu_seconds(pid) for pid in workers),
        "rest of Ray": sum(_cpu_seconds(pid) for pid in others),
    }


def ray_workers(rpm: int | None = None) -> Any:
    """4 Ray workers, started and with litellm imported (what a night pays once, not timed)."""
    from evalrunner.live._ray import RayExecutor
    from evalrunner.suite._schema import RateLimit

    limits = {MODEL: RateLimit(rpm=rpm)} if rpm else {}
    executor = RayExecutor(limits, workers=4)
    t0 = time.perf_counter()
    executor.worker_pids()
    print(f"4 Ray workers ready in {time.perf_counter() - t0:.1f} s (not counted)")
    return executor


def start_ray() -> float:
    """A local Ray whose workers import this directory's agents; seconds it took."""
    import ray

    paths = [str(HERE.parent), str(HERE), str(SUPPORT), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False)
    return time.perf_counter() - t0


def part1(runs: int, concurrency: int, skip_ray: bool, rounds: int) -> None:
    ideal = math.ceil(runs / concurrency) * CALLS * LATENCY
    endpoint = Endpoint(LATENCY)
    lines: dict[str, float] = {}
    worst: dict[str, float] = {}  # each line's slowest round, printed beside its best
    split: list[dict[str, float]] = []  # each Ray round's CPU seconds, by process
    executor = None
    try:
        warm_up(endpoint.api_base)
        from evalrunner.live._execute import LocalExecutor

        measured: dict[str, Callable[[], float]] = {
            BARE: lambda: bare_async_line(endpoint.api_base, runs, concurrency),
            ALONE: lambda: agent_async_line(endpoint.api_base, runs, concurrency),
            LOCAL: lambda: night(endpoint.api_base, runs, concurrency, LocalExecutor()),
        }
        if not skip_ray:
            took = start_ray()
            print(f"ray.init: {took:.1f} s (not counted)")
            ray_executor = executor = ray_workers()
            night(endpoint.api_base, concurrency, concurrency, executor)  # first use
            workers = ray_executor.worker_pids()

            def ray_line() -> float:
                before = _ray_cpu(workers)
                wall = night(endpoint.api_base, runs, concurrency, ray_executor)
                after = _ray_cpu(workers)
                split.append({k: after[k] - before[k] for k in after})
                return wall

            measured[RAY] = ray_line
        # Rounds interleaved (Ray's too), each line's best counts: damps what other
        # processes do to one line more than another.
        for _ in range(rounds):
            for name, line in measured.items():
                wall = line()
                lines[name] = min(wall, lines.get(name, wall))
                worst[name] = max(wall, worst.get(name, wall))
    finally:
        if executor is not None:
            executor.close()
        served = endpoint.close()[0]
    print(
        f"\n{runs} runs x {CALLS} calls, concurrency {concurrency}, endpoint latency "
        f"{LATENCY * 1000:.0f} ms, {os.cpu_count()} CPUs; requests served: {served}"
    )
    print(f"ideal: ceil({runs}/{concurrency}) x {CALLS} x {LATENCY:g} s = {ideal:.2f} s\n")
    print(f"{'line':<38} {'wall s':>7} {'/ideal':>7} {'worst round':>12}")
    for name, wall in lines.items():
        print(f"{name:<38} {wall:7.2f} {wall / ideal:7.2f} {worst[name] / ideal:12.2f}")
    print(
        f"\nlocal / same agent alone = {lines[LOCAL] / lines[ALONE]:.2f} (target <= {LOCAL_TARGET}:"
        " evalrunner's own cost over what the agent costs without it)"
    )
    print(f"local / bare litellm = {lines[LOCAL] / lines[BARE]:.2f}")
    if RAY in lines:
        ray_ratio = lines[RAY] / ideal
        print(f"ray / ideal = {ray_ratio:.2f} (target <= {RAY_TARGET})")
        for n, cpu in enumerate(split, start=1):
            parts = ", ".join(
                f"{k} {v:.1f} s ({v / runs * 1000:.1f} ms/run)" for k, v in cpu.items()
            )
            print(f"Ray round {n}, CPU by process: {parts}")


def part2(runs: int, rpm: int, window: float) -> None:
    import ray

    if not ray.is_initialized():
        start_ray()
    executor = ray_workers(rpm)
    endpoint = Endpoint(LATENCY, rpm=rpm, window=window)
    try:
        wall = night(endpoint.api_base, runs, 32, executor, rpm=rpm)
    finally:
        served, accepted, refused = endpoint.close()
        executor.close()
    # The rate over the night's steady part: from the first accepted request to the last.
    span = accepted[-1] - accepted[0]
    rate = (len(accepted) - 1) / span * 60.0
    print(
        f"\nrpm {rpm} (endpoint counts it over {window:g} s windows), {runs} runs x {CALLS} calls "
        f"on Ray, 4 workers, concurrency 32: {wall:.1f} s"
    )
    print(
        f"requests accepted: {len(accepted)} of {served}; 429s: {refused} (target 0); "
        f"rate {rate:.1f}/min = {rate / rpm:.3f} of the limit (target within {RATE_TOLERANCE:.0%})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds of every line, Ray's included"
    )
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument(
        "--rpm-window", type=float, default=60.0, help="seconds the endpoint counts over"
    )
    parser.add_argument("--rpm-runs", type=int, default=300, help="0: skip part 2")
    args = parser.parse_args()
    part1(args.runs, args.concurrency, args.skip_ray, args.rounds)
    if args.rpm_runs and not args.skip_ray:
        part2(args.rpm_runs, args.rpm, args.rpm_window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
