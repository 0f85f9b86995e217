"""Fault matrix: every path an agent can take, under injected endpoint faults, kind by kind.

Paths: ``in-process`` (the example suite's own agents, suites/example.yaml, calling
litellm in this process), ``command`` (subprocess agents on the official openai
and anthropic SDKs, plain and streamed, through the capture proxy a night starts)
and ``ray`` (the example suite on a local Ray, --executor ray). Each runs through
the real runner against a loopback FakeEndpoint standing in for the model.
Healthy, it answers every request the way a competent model would, so every run
passes. Each request then fails with probability 0 %, 10 % or 30 % with one kind
of fault: 429, 500/503, a connection reset, a hang (nothing ever sent), a 200
without a choice, a 200 whose body is an error object, a truncated answer,
malformed JSON, a drip (a byte every 0.1 s: never idle long enough for the
request timeout, so only the attempt's total deadline ends it).

Per path, kind and rate it prints:

- ``lost``: runs planned minus runs recorded (and written to disk); must be 0;
- ``as behaviour``: runs that ended failed, skipped or crashed; with a healthy
  model every such run is a fault taken for behaviour; must be 0;
- ``infra``: runs that ended infra_error (their calls ran out of retries);
- ``faults``: faults injected; ``retries``: retries the runs' InfraLogs made.

The retry policy is the suite's shape with short waits (3 attempts, backoff
10-50 ms, 0.5 s per request) so a hang costs half a second, not a minute.

Last, per path, an all-fault night (every request a 503) through the CLI itself
(``evalrunner run``): it must exit 3 with the outage line.

    python benchmarks/bench_faults.py                       # every path, 10 runs per scenario
    python benchmarks/bench_faults.py --paths command --runs 25
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # Ray workers import litellm too
HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "tests" / "support"
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "support")]

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

prepare()

from suite_runs import run_suite  # noqa: E402

import evalrunner.live._execute as execute  # noqa: E402
from evalrunner.endpoints._endpoints import Endpoint, EndpointPool  # noqa: E402
from evalrunner.live._results import ResultsDir  # noqa: E402
from evalrunner.suite._loader import load_suite  # noqa: E402
from evalrunner.suite._schema import RetryPolicy  # noqa: E402
from evalrunner.suite._settings import Suite  # noqa: E402

MODEL = "openai/fake"
KINDS = (
    "429",
    "500",
    "503",
    "reset",
    "hang",
    "empty_choices",
    "error_body",
    "truncated_stream",
    "malformed",
    "drip",
)
PATHS = ("in-process", "command", "ray")
RATES = (0.1, 0.3)
RETRY = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05, request_timeout_s=0.5)
CAPITALS = {"france": "Paris", "japan": "Tokyo", "peru": "Lima"}


def competent(body: dict[str, Any]) -> Any:
    """What a model that gets the example suite right answers to ``body``."""
    from fake_endpoint import Reply

    messages = body.get("messages", [])
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    tool_results = sum(1 for m in messages if m["role"] == "tool")
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    if messages and "Summarise the findings" in str(messages[0].get("content")):
        return Reply("The capitals are Paris, Tokyo and Lima.")
    if "hello" in user.lower():
        return Reply("Hello there!")
    if "story" in user.lower():
        return Reply("The lighthouse keeper lit the lamp, and every ship came home.")
    if "population" in user.lower():  # tool_chain: capital, then its population
        if tool_results == 0 and "lookup_capital" in offered:
            return Reply(None, tool_calls=[("lookup_capital", '{"country": "Japan"}')])
        if tool_results == 1 and "city_population" in offered:
            return Reply(None, tool_calls=[("city_population", '{"city": "Tokyo"}')])
        return Reply("About 14 million people live in Tokyo.")
    country = re.search(r"capital of (\w+)", user)
    name = country.group(1) if country else "France"
    if tool_results == 0 and "lookup_capital" in offered:
        return Reply(None, tool_calls=[("lookup_capital", f'{{"country": "{name}"}}')])
    return Reply(f"The capital of {name} is {CAPITALS.get(name.lower(), 'Paris')}.")


@dataclass
class Injector:
    """The endpoint's responder: ``rate`` of requests get ``kind``, the rest a competent answer."""

    kind: str
    rate: float
    answer: Callable[[dict[str, Any]], Any] = competent
    seed: int = 0
    injected: int = 0
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(f"{self.seed}:{self.kind}:{self.rate}")

    def __call__(self, body: dict[str, Any], n: int) -> Any:
        from fake_endpoint import Fault

        with self._lock:
            fail = self._rng.random() < self.rate
            self.injected += fail
        if fail:
            return Fault(
                self.kind,
                retry_after=0.01 if self.kind == "429" else None,
                seconds=0.1,  # "drip": a byte each 0.1 s, never idle for the 0.5 s timeout
            )
        return self.answer(body)


class _Pool(EndpointPool):
    def __init__(self, api_base: str) -> None:
        super().__init__()
        self.api_base = api_base

    def resolve(self, model: str) -> Endpoint:
        return Endpoint(label=model, model=model, api_base=self.api_base, api_key="sk-fake")


_RETRY_YAML = {
    "max_attempts": RETRY.max_attempts,
    "backoff_s": RETRY.backoff_s,
    "max_backoff_s": RETRY.max_backoff_s,
    "request_timeout_s": RETRY.request_timeout_s,
}


def suite_file(path: str, work: Path) -> Path:
    """The path's suite as a file (the CLI's outage night reads it too), with short retries."""
    import yaml

    if path == "command":
        task = "Capitals of: France, Japan"
        doc: dict[str, Any] = {
            "format_version": 1,
            "name": "commands",
            "scenarios": [
                {
                    "id": kind,
                    "command": [sys.executable, str(SUPPORT / "sdk_agent_main.py"), kind, "{task}"],
                    "env": {"PYTHONPATH": str(SUPPORT)},
                    "input": task,
                    "tools": ["lookup"],
                    "checks": {"answer_contains": ["Paris", "Tokyo"], "tools_used": ["lookup"]},
                }
                for kind in ("openai", "openai-streamed", "anthropic", "anthropic-streamed")
            ],
        }
    else:
        doc = yaml.safe_load((HERE.parent / "suites" / "example.yaml").read_text())
        # Its dataset scenario came later: the healthy responder knows only the others'
        # answers (and the runs planned count one per scenario, not per row).
        doc["scenarios"] = [s for s in doc["scenarios"] if "dataset" not in s]
    doc.update(retry=_RETRY_YAML, timeout_s=60.0)
    out = work / f"{doc['name']}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def responder(path: str) -> Callable[[dict[str, Any]], Any]:
    if path == "command":
        from sdk_agents import content_responder

        return lambda body: content_responder(body, 0)
    return competent


@dataclass(frozen=True)
class Row:
    path: str
    kind: str
    rate: float
    planned: int
    recorded: int
    on_disk: int
    outcomes: Counter[str]
    injected: int
    retries: int
    seconds: float

    @property
    def lost(self) -> int:
        return self.planned - min(self.recorded, self.on_disk)

    @property
    def as_behaviour(self) -> int:
        return sum(self.outcomes[o] for o in ("failed", "skipped", "crashed"))


def night(
    path: str,
    suite: Suite,
    kind: str,
    rate: float,
    runs: int,
    concurrency: int,
    work: Path,
    executor: Any = None,
) -> Row:
    from fake_endpoint import FakeEndpoint

    retries: list[int] = []
    record = execute.run_record

    def counted(job: Any, res: Any, *rest: Any) -> Any:
        # Whatever else the runner hands run_record: only the run's infra log is read here
        # (the fixed signature broke when code checks' results joined it).
        retries.append(res.infra.retries if res.infra is not None else 0)
        return record(job, res, *rest)

    injector = Injector(kind, rate, responder(path))
    out = work / f"{path}-{kind}-{rate:g}"
    execute.run_record = counted  # type: ignore[assignment]
    started = time.monotonic()
    try:
        with FakeEndpoint(responder=injector) as ep:
            report = asyncio.run(
                run_suite(
                    suite,
                    out=out,
                    runs=runs,
                    models=[MODEL],
                    concurrency=concurrency,
                    pool=_Pool(ep.api_base),
                    progress_stream=io.StringIO(),
                    executor=executor,
                )
            )
    finally:
        execute.run_record = record  # type: ignore[assignment]
    return Row(
        path=path,
        kind=kind,
        rate=rate,
        planned=runs * len(suite.scenarios),
        recorded=len({r.run_id for r in report.records}),
        on_disk=len(ResultsDir(out).run_files()),
        outcomes=Counter(r.outcome for r in report.records),
        injected=injector.injected,
        retries=sum(retries),
        seconds=time.monotonic() - started,
    )


def outage_night(path: str, suite: Path, work: Path) -> tuple[int, bool]:
    """An all-503 night through ``evalrunner run`` itself: its exit code, and whether it
    printed the outage line."""
    from fake_endpoint import FakeEndpoint

    evalrunner = str(Path(sys.executable).with_name("evalrunner"))
    argv = [evalrunner, "run", "--suite", str(suite), "--model", MODEL, "--runs", "2"]
    argv += ["--no-compare", "--no-history", "--out", str(work / f"outage-{path}")]
    argv += ["--executor", "ray", "--ray-workers", "2"] if path == "ray" else []
    with FakeEndpoint(responder=Injector("503", 1.0)) as ep:
        env = {**os.environ, "EVALRUNNER_API_BASE": ep.api_base, "OPENAI_API_KEY": "sk-fake"}
        env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(SUPPORT)])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, "outage" in done.stderr


def show(rows: list[Row]) -> None:
    head = f"{'path':<10} {'fault':<17} {'rate':>4} {'runs':>4} {'lost':>4} {'as behaviour':>12} {'passed':>6} {'infra':>5} {'faults':>6} {'retries':>7} {'wall s':>6}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(_line(r))


def _line(r: Row) -> str:
    return (
        f"{r.path:<10} {r.kind:<17} {r.rate:>4.0%} {r.planned:>4} {r.lost:>4} "
        f"{r.as_behaviour:>12} {r.outcomes['passed']:>6} {r.outcomes['infra_error']:>5} "
        f"{r.injected:>6} {r.retries:>7} {r.seconds:>6.1f}"
    )


def _ray_executor() -> Any:
    import ray

    from evalrunner.live._ray import RayExecutor

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return RayExecutor(workers=2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per scenario and cell")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    rows: list[Row] = []
    outages: list[tuple[str, int, bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for path in args.paths:
            file = suite_file(path, work)
            suite = load_suite(file)
            executor = _ray_executor() if path == "ray" else None
            try:
                cells = [("none", 0.0)] + [(k, r) for k in args.kinds for r in RATES]
                for kind, rate in cells:
                    rows.append(
                        night(path, suite, kind, rate, args.runs, args.concurrency, work, executor)
                    )
                    # Each row as it ends, to stderr: a long run shows its progress (and a
                    # run cut short by a timeout keeps the rows it made).
                    print(_line(rows[-1]), file=sys.stderr, flush=True)
            finally:
                if executor is not None:
                    import ray

                    executor.close()
                    ray.shutdown()
            outages.append((path, *outage_night(path, file, work)))
    show(rows)
    for path, code, said in outages:
        print(
            f"all-fault night, {path}: exit {code}, outage line {'printed' if said else 'MISSING'}"
        )
    lost = sum(r.lost for r in rows)
    wrong = sum(r.as_behaviour for r in rows)
    outage_ok = all(code == 3 and said for _, code, said in outages)
    print(
        f"\nruns lost: {lost} (must be 0); faults taken for behaviour: {wrong} (must be 0); "
        f"all-fault nights exit 3 with the outage line: {'yes' if outage_ok else 'NO'}"
    )
    return 0 if lost == wrong == 0 and outage_ok else 1


if __name__ == "__main__":
    sys.exit(main())
