"""How close the live runner gets to the endpoint's own latency.

200 runs x 3 model calls at concurrency 32 against a loopback FakeEndpoint
that answers every request after a fixed 200 ms (a tool call, another tool
call, then an answer). The ideal wall time is ceil(200/32) x 3 x 0.2 s = 4.2 s;
each line's wall time is reported as a ratio to it. Target for the runner:
<= 1.15.

Reference lines, measured in the same process against the same endpoint,
attribute the overhead:

- ``same agent alone``: the very agent the runner runs (the example suite's
  ``tool_chain``, sync, in 32 threads; or its asyncio twin), called directly,
  with no runner and no capture: agent + litellm, nothing of evalrunner;
- ``bare litellm.acompletion``: three plain calls per run, no tools, no agent:
  what litellm itself costs per call on this machine.

So runner / agent-alone is evalrunner's own overhead (capture, classification,
results files), and agent-alone / ideal is litellm's. With ``--peer-python`` an
interpreter that has inspect_ai installed runs the same task with ``epochs``
against the same endpoint (``peer_inspect.py``), so the lead is measured again
each time: its CPU per run beside ours. Rounds are interleaved
and each line's best wall time and median CPU count, which damps noise from other
processes; the CPU ratios pair the runner with the agent alone round by round.
The endpoint runs in a child process so its threads do not compete with the
runner for this process's GIL.

    python benchmarks/bench_runner.py               # 200 runs, 2 rounds
    python benchmarks/bench_runner.py --runs 64     # a quicker look
    python benchmarks/bench_runner.py --profile     # plus a cProfile of the runner's event loop
    python benchmarks/bench_runner.py --unfrozen    # plus the runner with the collector as before
    python benchmarks/bench_runner.py --peer-python /tmp/peer/bin/python   # with inspect_ai's line

Last, evalrunner's own CPU per run without litellm's noise: in a child process,
litellm's entry points answer at once from memory (the same three responses),
and the runner and the agent alone run there as above. Their difference is what
evalrunner itself costs a run; over the agent alone on the real endpoint it is
the runner's CPU ratio that a quiet machine would show.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import math
import multiprocessing as mp
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

HERE = Path(__file__).resolve().parent
sys.path[:0] = [
    str(HERE),
    str(HERE.parent / "tests" / "support"),
]  # this module (async agent), fake_endpoint

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

prepare()

TARGET = 1.15
CPU_TARGET = 1.1
"""Issue 24: the runner's CPU per run at most 1.1x the same agent's calls made with no evalrunner."""
LATENCY = 0.2
CALLS = 3
MODEL = "openai/fake"
KEY = "sk-fake-not-a-secret"
TASK = "What is the population of the capital of Japan?"
TOOLS = ("lookup_capital", "city_population")


# -- the endpoint, in a child process ---------------------------------------------------------


def respond(body: dict[str, Any], n: int) -> Any:
    """Tool call, tool call, answer: decided by how many tool results the request carries."""
    from fake_endpoint import Reply

    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    if done == 0:
        return Reply(None, tool_calls=[("lookup_capital", '{"country": "Japan"}')])
    if done == 1:
        return Reply(None, tool_calls=[("city_population", '{"city": "Tokyo"}')])
    return Reply("About 14 million people live in Tokyo.")


def _serve(conn: Any, latency: float) -> None:
    from fake_endpoint import FakeEndpoint

    with FakeEndpoint(responder=respond, latency=latency) as ep:
        conn.send(ep.api_base)
        conn.recv()  # until the parent says stop
        conn.send(len(ep.requests))


class Endpoint:
    def __init__(self, latency: float) -> None:
        ctx = mp.get_context("fork")  # before litellm is imported: nothing to inherit badly
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, latency), daemon=True)
        self.proc.start()
        self.api_base: str = self.conn.recv()

    def close(self) -> int:
        self.conn.send("stop")
        served: int = self.conn.recv()
        self.proc.join(5)
        return served


# -- the agents ------------------------------------------------------------------------------


async def athree_calls(task: str, ctx: Any) -> str | None:
    """The example tool_chain agent over litellm.acompletion (the async suite names it)."""
    from evalrunner.examples import TOOLS as TABLE
    from evalrunner.reference_agent import arun_agent

    tools = {name: TABLE[name] for name in ctx.tools}
    return (await arun_agent(task, ctx, tools, max_tool_rounds=2)).answer


def _context(api_base: str) -> Any:
    from evalrunner.suite._contract import RunContext

    return RunContext(MODEL, api_base, KEY, 0.8, 6, TOOLS)  # what the runner hands the agent


# -- the lines -------------------------------------------------------------------------------


def runner_line(
    api_base: str, agent: str, runs: int, concurrency: int, profile: bool = False
) -> float:
    import yaml
    from suite_runs import run_suite

    from evalrunner.endpoints._endpoints import Endpoint as Ep
    from evalrunner.endpoints._endpoints import EndpointPool
    from evalrunner.suite._loader import load_suite

    class Pool(EndpointPool):
        def resolve(self, model: str) -> Ep:
            return Ep(label=model, model=model, api_base=api_base, api_key=KEY)

    suite_doc = {
        "format_version": 1,
        "name": "bench",
        "models": [MODEL],
        "runs": runs,
        "concurrency": concurrency,
        "timeout_s": 60,
        "scenarios": [
            {
                "id": "tool_chain",
                "agent": agent,
                "input": TASK,
                "tools": list(TOOLS),
                "checks": {"tools_in_order": list(TOOLS), "answer_contains": ["14"]},
            }
        ],
    }
    # Removed at the end of the script, not here: deleting a night's files is not the
    # runner's CPU (a user keeps them), and this line's CPU is measured around the call.
    tmp = tempfile.mkdtemp(prefix="bench-runner-")
    LEFT.append(tmp)
    (Path(tmp) / "bench.yaml").write_text(yaml.safe_dump(suite_doc, sort_keys=False))
    suite = load_suite(Path(tmp) / "bench.yaml")
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler:
        profiler.enable()
    report = asyncio.run(
        run_suite(suite, out=Path(tmp) / "out", pool=Pool(), progress_stream=io.StringIO())
    )
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - t0
    outcomes = {r.outcome for r in report.records}
    calls = {r.llm_calls for r in report.records}
    assert len(report.records) == runs and outcomes == {"passed"} and calls == {CALLS}, (
        outcomes,
        calls,
    )
    if profiler:
        print("\n-- cProfile of the runner's event-loop thread (sync agent; by own time) --")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(20)
    return wall


LEFT: list[str] = []
"""The runner lines' results directories, removed when the script ends."""

UNFROZEN = "runner, async agent, heap not frozen"


def unfrozen_line(api_base: str, runs: int, concurrency: int) -> float:
    """The async runner line as it was before the night froze what it started with."""
    import contextlib

    from evalrunner.live import _driver

    frozen = _driver.heap_frozen
    _driver.heap_frozen = contextlib.nullcontext  # type: ignore[assignment]
    try:
        return runner_line(api_base, "bench_runner:athree_calls", runs, concurrency)
    finally:
        _driver.heap_frozen = frozen


def agent_threads_line(api_base: str, runs: int, concurrency: int) -> float:
    from evalrunner.examples import tool_chain

    ctx = _context(api_base)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        answers = list(pool.map(lambda _: tool_chain(TASK, ctx), range(runs)))
    wall = time.perf_counter() - t0
    assert all(a and "14" in a for a in answers)
    return wall


def agent_async_line(api_base: str, runs: int, concurrency: int) -> float:
    ctx = _context(api_base)

    async def main() -> list[str | None]:
        sem = asyncio.Semaphore(concurrency)

        async def one() -> str | None:
            async with sem:
                return await athree_calls(TASK, ctx)

        return list(await asyncio.gather(*(one() for _ in range(runs))))

    t0 = time.perf_counter()
    answers = asyncio.run(main())
    wall = time.perf_counter() - t0
    assert all(a and "14" in a for a in answers)
    return wall


def _bare_kwargs(api_base: str) -> dict[str, Any]:
    return {
        "model": MODEL,
        "api_base": api_base,
        "api_key": KEY,
        "num_retries": 0,
        "max_retries": 0,
        "timeout": 60,
    }


def bare_async_line(
    api_base: str, runs: int, concurrency: int, timeout: Callable[[], float] | None = None
) -> float:
    """Three plain calls per run; ``timeout`` gives each call's timeout (default: one, 60 s)."""
    import litellm

    async def main() -> None:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                messages: list[dict[str, Any]] = [{"role": "user", "content": f"{TASK} ({i})"}]
                for _ in range(CALLS):
                    kwargs = _bare_kwargs(api_base)
                    if timeout is not None:
                        kwargs["timeout"] = timeout()
                    r = await litellm.acompletion(messages=messages, **kwargs)
                    messages = [
                        *messages,
                        {"role": "assistant", "content": r.choices[0].message.content or "..."},
                    ]

        await asyncio.gather(*(one(i) for i in range(runs)))

    t0 = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0


# -- evalrunner's own CPU, litellm answering from memory ---------------------------------------


def _instant(messages: list[Any]) -> Any:
    """What the endpoint answers (see ``respond``), as litellm's response object, at once."""
    from litellm import ModelResponse

    done = sum(1 for m in messages if (m.get("role") if isinstance(m, dict) else m.role) == "tool")
    calls = {
        0: ("lookup_capital", '{"country": "Japan"}'),
        1: ("city_population", '{"city": "Tokyo"}'),
    }
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "About 14 million people live in Tokyo.",
    }
    if done in calls:
        name, arguments = calls[done]
        call = {"id": f"call_{time.perf_counter_ns()}", "type": "function"}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**call, "function": {"name": name, "arguments": arguments}}],
        }
    return ModelResponse(
        id=f"chatcmpl-{time.perf_counter_ns()}",
        model="fake",
        choices=[
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if done in calls else "stop",
            }
        ],
        usage={"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    )


def _own_child(conn: Any, runs: int, concurrency: int, rounds: int) -> None:
    import litellm

    def completion(*args: Any, **kwargs: Any) -> Any:
        return _instant(kwargs["messages"])

    async def acompletion(*args: Any, **kwargs: Any) -> Any:
        return _instant(kwargs["messages"])

    # Before the runner wraps them: its transport then calls these as litellm's own.
    litellm.completion, litellm.acompletion = completion, acompletion
    nowhere = "http://127.0.0.1:9/v1"  # never reached
    lines = {
        "sync runner": lambda: runner_line(
            nowhere, "evalrunner.examples:tool_chain", runs, concurrency
        ),
        "sync alone": lambda: agent_threads_line(nowhere, runs, concurrency),
        "async runner": lambda: runner_line(
            nowhere, "bench_runner:athree_calls", runs, concurrency
        ),
        "async alone": lambda: agent_async_line(nowhere, runs, concurrency),
    }
    for fn in lines.values():  # first use: imports, the suite loader, litellm's types
        fn()
    cpu: dict[str, list[float]] = {name: [] for name in lines}
    for _ in range(rounds):
        for name, fn in lines.items():
            started = time.process_time()
            fn()
            cpu[name].append((time.process_time() - started) / runs * 1000)
    for tmp in LEFT:
        shutil.rmtree(tmp, ignore_errors=True)
    conn.send({name: statistics.median(values) for name, values in cpu.items()})


def own_cpu(runs: int, concurrency: int, rounds: int) -> dict[str, float]:
    """ms of CPU per run of each line in ``_own_child``, in a fresh interpreter."""
    ctx = mp.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_own_child, args=(child, runs, concurrency, rounds))
    proc.start()
    got: dict[str, float] = conn.recv()
    proc.join(30)
    return got


def warm_up(api_base: str) -> None:
    """Import litellm and make a call each way, so no line pays for first use."""
    import litellm

    litellm.suppress_debug_info = True
    messages = [{"role": "user", "content": "hi"}]
    litellm.completion(messages=messages, **_bare_kwargs(api_base))
    asyncio.run(litellm.acompletion(messages=messages, **_bare_kwargs(api_base)))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--latency", type=float, default=LATENCY, help="endpoint latency per request, seconds"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds; each line's best counts"
    )
    parser.add_argument("--profile", action="store_true", help="also cProfile one runner round")
    parser.add_argument(
        "--unfrozen",
        action="store_true",
        help="adds the async runner with its heap left to the collector (evalrunner/_heap.py)",
    )
    parser.add_argument(
        "--peer-python",
        help="an interpreter with inspect_ai installed: adds its line (peer_inspect.py)",
    )
    args = parser.parse_args()

    ideal = math.ceil(args.runs / args.concurrency) * CALLS * args.latency
    endpoint = Endpoint(args.latency)
    n, c = args.runs, args.concurrency
    lines: list[tuple[str, Callable[[], float | tuple[float, float]]]] = [
        (
            "runner, sync agent (examples:tool_chain)",
            lambda: runner_line(endpoint.api_base, "evalrunner.examples:tool_chain", n, c),
        ),
        ("  same agent alone, 32 threads", lambda: agent_threads_line(endpoint.api_base, n, c)),
        (
            "runner, async agent (arun_agent)",
            lambda: runner_line(endpoint.api_base, "bench_runner:athree_calls", n, c),
        ),
        ("  same agent alone, asyncio", lambda: agent_async_line(endpoint.api_base, n, c)),
        ("bare litellm.acompletion x3, no tools", lambda: bare_async_line(endpoint.api_base, n, c)),
    ]
    if args.unfrozen:
        lines.append((UNFROZEN, lambda: unfrozen_line(endpoint.api_base, n, c)))
    if args.peer_python:
        lines.append(
            (
                "peer: inspect_ai, epochs, same tools",
                lambda: peer_line(args.peer_python, endpoint.api_base, n, c),
            )
        )
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in lines}
    try:
        warm_up(endpoint.api_base)
        for _ in range(args.rounds):
            for name, fn in lines:
                cpu0 = time.process_time()
                measured = fn()
                cpu = time.process_time() - cpu0
                if isinstance(measured, tuple):  # measured in another process
                    measured, cpu = measured
                rounds[name].append((measured, cpu))
        if args.profile:
            runner_line(endpoint.api_base, "evalrunner.examples:tool_chain", n, c, profile=True)
    finally:
        served = endpoint.close()
        for tmp in LEFT:
            shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"\n{n} runs x {CALLS} calls, concurrency {c}, endpoint latency {args.latency * 1000:.0f} ms, "
        f"{os.cpu_count()} CPUs, {args.rounds} rounds (wall: the best; CPU: the median); "
        f"requests served: {served}"
    )
    print(f"ideal: ceil({n}/{c}) x {CALLS} x {args.latency:g} s = {ideal:.2f} s\n")
    print(f"{'line':<42} {'wall s':>7} {'/ideal':>7} {'CPU s':>7} {'ms/run':>7}")
    wall_of = {name: min(w for w, _ in rounds[name]) for name, _ in lines}
    cpu_of = {name: statistics.median(c for _, c in rounds[name]) for name, _ in lines}
    for name, _ in lines:
        wall, cpu = wall_of[name], cpu_of[name]
        print(f"{name:<42} {wall:7.2f} {wall / ideal:7.2f} {cpu:7.2f} {cpu / n * 1000:7.1f}")
    runner, alone = wall_of[lines[0][0]], wall_of[lines[1][0]]
    ratio = runner / ideal
    print(
        f"\nrunner / ideal = {ratio:.2f} (target <= {TARGET}); runner / same agent alone = {runner / alone:.2f} "
        f"(evalrunner's share); agent alone / ideal = {alone / ideal:.2f} (litellm's share)"
    )
    for runner_name, alone_name in ((lines[0][0], lines[1][0]), (lines[2][0], lines[3][0])):
        # Paired within each round (the two lines run one after the other), then the median:
        # a round the machine was busier for weighs on both sides of its ratio.
        paired = [r[1] / a[1] for r, a in zip(rounds[runner_name], rounds[alone_name], strict=True)]
        print(
            f"CPU, {runner_name.split(', ')[1]}: runner / same agent alone = "
            f"{statistics.median(paired):.2f} (target <= {CPU_TARGET}; rounds "
            f"{min(paired):.2f}-{max(paired):.2f})"
        )
    if args.unfrozen:
        paired = [f[1] / r[1] for f, r in zip(rounds[UNFROZEN], rounds[lines[2][0]], strict=True)]
        print(
            f"CPU, async agent: heap not frozen / frozen = {statistics.median(paired):.2f} "
            f"(rounds {min(paired):.2f}-{max(paired):.2f})"
        )
    own = own_cpu(n, c, max(args.rounds, 3))
    for kind, alone_name in (("sync", lines[1][0]), ("async", lines[3][0])):
        extra = own[f"{kind} runner"] - own[f"{kind} alone"]
        alone_ms = cpu_of[alone_name] / n * 1000
        print(
            f"evalrunner's own CPU, {kind} agent (litellm answering from memory): "
            f"{extra:.2f} ms a run ({own[f'{kind} runner']:.2f} runner, {own[f'{kind} alone']:.2f} "
            f"alone); over the agent alone on the endpoint ({alone_ms:.1f} ms): "
            f"{1 + extra / alone_ms:.3f}"
        )
    if args.peer_python:
        peer = cpu_of[lines[-1][0]]
        print(
            f"CPU per run, inspect_ai / our runner (async agent) = {peer / cpu_of[lines[2][0]]:.2f}"
        )
    return 0 if ratio <= TARGET else 1


def peer_line(python: str, api_base: str, runs: int, concurrency: int) -> tuple[float, float]:
    """inspect_ai making the same runs in its own interpreter: its (wall, CPU) seconds."""
    import json
    import subprocess

    argv = [python, str(HERE / "peer_inspect.py"), "--api-base", api_base]
    argv += ["--runs", str(runs), "--concurrency", str(concurrency), "--task", TASK]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        sys.exit(f"the peer line failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["status"] != "success" or out["samples"] != runs:
        sys.exit(f"the peer line did not complete its runs: {out}")
    return float(out["wall_s"]), float(out["cpu_s"])


if __name__ == "__main__":
    sys.exit(main())
