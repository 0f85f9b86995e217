"""What the capture proxy costs an agent: latency per call, and throughput at 32 runs.

Four processes (six with the Anthropic pair): a loopback FakeEndpoint (the upstream); two proxies in
passthrough-capture mode pointed at it, one as it starts by default (for an
``openai/`` model at an api_base: the direct transport) and one forced through
litellm (``--litellm``, what other providers take); two more for an
``anthropic/`` model at the same fake's ``/v1/messages``, by default (direct, in
Anthropic Messages) and through litellm (agents still call the proxy's chat
API, so the "no proxy" column is the fake's chat path; the proxy's CPU per
call is the figure to read there; ``--no-anthropic`` leaves them out);
and this one as the client (raw aiohttp, so the client's own cost stays small
and equal on every path). Every figure is measured side by side in the same
run, the paths alternating call by call (latency) or round by round
(throughput), so machine noise hits them alike.

- Latency: sequential chat-completions calls (one tool offered, a short answer)
  with no upstream latency, plain and streamed; p50/p99 of each path, and the
  added p50 (proxy minus direct). Goal: < 2 ms added at p50.
- Throughput: 32 concurrent runs, each a sequence of calls on its own
  ``/runs/<id>/v1`` URL, upstream answering after ``--latency`` seconds
  (default 0.2, like bench_runner.py); calls per second on each path, best of
  ``--rounds``. Goal: no more than 5% below direct.
- The proxy process's CPU time per call (Linux), which is what caps its
  throughput: one event loop serves every run.
- Start: ``evalrunner proxy --model M --api-base ...`` from launch until it
  says it is ready, CPU seconds, for an ``openai/`` and an ``anthropic/`` model
  (neither imports litellm: both are reached directly).

    python benchmarks/bench_proxy.py                  # defaults
    python benchmarks/bench_proxy.py --calls 100 --rounds 1   # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "support")]

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

prepare()

LATENCY_GOAL_MS = 2.0
THROUGHPUT_GOAL = 0.95
BODY: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You answer questions about capitals. Use the tools."},
        {"role": "user", "content": "What is the capital of France?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "The capital of a country.",
                "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
            },
        }
    ],
}


# -- the two servers, each in its own process -------------------------------------------------


def _upstream(conn: Any, latency: float) -> None:
    from fake_endpoint import FakeEndpoint, Reply

    with FakeEndpoint(default=Reply("Paris is the capital of France."), latency=latency) as ep:
        conn.send(ep.api_base)
        while True:
            message = conn.recv()
            if message == "stop":
                break
            ep.latency = message  # the parent switches between latency and throughput


def _proxy(conn: Any, args: tuple[str, bool | None, str]) -> None:
    from evalrunner.proxy import ProxyServer, Upstream

    api_base, direct, model = args
    if model.startswith("anthropic/"):
        api_base = api_base.removesuffix("/v1")  # Anthropic's api_base is the host
    upstream = Upstream(model, api_base=api_base, api_key="sk-bench-0123456789", direct=direct)
    with ProxyServer("passthrough", upstream=upstream) as proxy:
        default = "anthropic" if model.startswith("anthropic/") else "direct"
        assert upstream.transport == ("litellm" if direct is False else default)
        conn.send(proxy.base_url)
        conn.recv()


class Child:
    def __init__(self, target: Any, arg: Any) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=target, args=(child, arg), daemon=True)
        self.proc.start()
        self.address: str = self.conn.recv()

    def send(self, message: Any) -> None:
        self.conn.send(message)

    def close(self) -> None:
        self.conn.send("stop")
        self.proc.join(10)


# -- measurements ---------------------------------------------------------------------------


async def _call(client: Any, url: str, stream: bool) -> None:
    body = {**BODY, "stream": True} if stream else BODY
    async with client.post(url, json=body) as response:
        if stream:
            async for _ in response.content:
                pass
        else:
            await response.read()
        assert response.status == 200, await response.text()


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU of a process so far (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def latency(urls: dict[str, str], calls: int, stream: bool) -> dict[str, list[float]]:
    import aiohttp

    times: dict[str, list[float]] = {name: [] for name in urls}
    async with aiohttp.ClientSession() as client:
        for i in range(calls + 20):
            for name, url in urls.items():
                t0 = time.perf_counter()
                await _call(client, url, stream)
                if i >= 20:  # warm-up: connections, imports, litellm's first call
                    times[name].append(time.perf_counter() - t0)
    return times


async def throughput(urls: list[str], per_run: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=len(urls) * 2)) as client:

        async def run(url: str) -> None:
            for _ in range(per_run):
                await _call(client, url, False)

        await asyncio.gather(*(run(u) for u in urls[:2]))  # warm-up
        t0 = time.perf_counter()
        await asyncio.gather(*(run(u) for u in urls))
        return len(urls) * per_run / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="latency samples per path")
    parser.add_argument("--runs", type=int, default=32, help="concurrent runs for throughput")
    parser.add_argument("--per-run", type=int, default=10, help="calls per run for throughput")
    parser.add_argument("--latency", type=float, default=0.2, help="upstream latency (throughput)")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds (best counts)")
    parser.add_argument(
        "--anthropic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also an anthropic/ upstream (the fake's /v1/messages), direct and through litellm",
    )
    args = parser.parse_args()

    _start_lines()
    upstream = Child(_upstream, 0.0)
    proxies = {
        "via litellm (--litellm)": Child(_proxy, (upstream.address, False, "openai/fake")),
        "default (direct)": Child(_proxy, (upstream.address, None, "openai/fake")),
    }
    if args.anthropic:
        for name, direct in (("anthropic, --litellm", False), ("anthropic, default", None)):
            proxies[name] = Child(_proxy, (upstream.address, direct, "anthropic/claude-fake"))
    direct_url = f"{upstream.address}/chat/completions"
    try:
        print(f"cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}")
        _latency_lines(direct_url, proxies, args.calls)
        upstream.send(args.latency)
        _throughput_lines(direct_url, proxies, args)
    finally:
        for proxy in proxies.values():
            proxy.close()
        upstream.close()
    return 0


def _start_cpu(model: str) -> tuple[float, str]:
    """CPU (user + system) of ``evalrunner proxy --model MODEL`` from its start until it says
    it is ready, then Ctrl-C; and its first line. A user's environment: no provider keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
    env.update(PYTHONPATH=str(HERE.parent), BENCH_KEY="sk-bench-0123456789")
    argv = [sys.executable, "-c", "from evalrunner.cli import main; main()", "proxy"]
    argv += ["--model", model, "--api-base", "http://127.0.0.1:9", "--api-key-env", "BENCH_KEY"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        [*argv, "--port", "0"], env=env, cwd=HERE.parent, stdout=subprocess.PIPE, text=True
    )  # stderr: the proxy's own, shown if it fails
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if lines[-1] == "Ctrl-C to stop.":
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 0, f"evalrunner proxy exited {proc.returncode}"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, lines[0] if lines else "(no output)"


def _start_lines(rounds: int = 3) -> None:
    print("start: `evalrunner proxy --model M --api-base ...` until ready, CPU s (median of 3)")
    for model in ("openai/fake", "anthropic/claude-fake"):
        runs = [_start_cpu(model) for _ in range(rounds)]
        cpu = statistics.median(c for c, _ in runs)
        print(f"    {model:22s} {cpu:5.2f}  ({runs[0][1].split('upstream ', 1)[-1]})")


def _latency_lines(direct_url: str, proxies: dict[str, Child], calls: int) -> None:
    # Each proxy is paired with the no-proxy path on its own: litellm leaves work
    # behind after each call (logging threads) that would otherwise slow down
    # whichever server is measured next on a small machine.
    print(f"latency: {calls} sequential calls per path, upstream answers at once (ms)")
    for stream in (False, True):
        print(f"  {'streamed' if stream else 'plain'}:")
        for name, proxy in proxies.items():
            urls = {
                "no proxy": direct_url,
                name: f"{proxy.address}/runs/latency/v1/chat/completions",
            }
            asyncio.run(latency({name: urls[name]}, 0, stream))  # imports, first calls
            cpu0 = _cpu_seconds(proxy.proc.pid)
            times = asyncio.run(latency(urls, calls, stream))
            cpu = (_cpu_seconds(proxy.proc.pid) - cpu0) / (calls + 20) * 1000
            base, p50 = _pct(times["no proxy"], 0.5), _pct(times[name], 0.5)
            added = p50 - base
            verdict = "meets" if added < LATENCY_GOAL_MS else "MISSES"
            print(
                f"    {name:20s} p50 {p50:6.2f}  p99 {_pct(times[name], 0.99):6.2f} | no proxy "
                f"p50 {base:5.2f}  p99 {_pct(times['no proxy'], 0.99):5.2f} | added p50 "
                f"{added:5.2f} ({verdict} < {LATENCY_GOAL_MS:g}) | proxy CPU/call {cpu:5.2f}"
            )


def _throughput_lines(direct_url: str, proxies: dict[str, Child], args: Any) -> None:
    urls = {"no proxy": [direct_url] * args.runs}
    for name, proxy in proxies.items():
        urls[name] = [f"{proxy.address}/runs/t{i}/v1/chat/completions" for i in range(args.runs)]
    best = dict.fromkeys(urls, 0.0)
    print(
        f"throughput: {args.runs} concurrent runs x {args.per_run} calls, upstream latency "
        f"{args.latency:g} s, best of {args.rounds} (ideal {args.runs / args.latency:.1f} calls/s)"
    )
    for _ in range(args.rounds):
        for name, group in urls.items():
            best[name] = max(best[name], asyncio.run(throughput(group, args.per_run)))
            time.sleep(1)  # let litellm's leftover logging work finish before the next path
    for name, rate in best.items():
        line = f"    {name:20s} {rate:6.1f} calls/s"
        if name != "no proxy":
            ratio = rate / best["no proxy"]
            verdict = "meets" if ratio >= THROUGHPUT_GOAL else "MISSES"
            line += f"  {ratio:.3f} of no proxy ({verdict} >= {THROUGHPUT_GOAL:g})"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
