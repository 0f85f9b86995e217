"""Fault matrix: the example suite under injected endpoint faults, kind by kind.

The example suite's own agents (suites/example.yaml: direct_answer,
single_tool, tool_chain, fanout with three sub-agents) run through the real
runner against a loopback FakeEndpoint standing in for the model. Healthy, it
answers every request the way a competent model would, so every run passes.
Each request then fails with probability 0 %, 10 % or 30 % with one kind of
fault: 429, 500/503, a connection reset, a hang (nothing ever sent), a 200
without a choice, a truncated answer, malformed JSON.

Per kind and rate it prints:

- ``lost``: runs planned minus runs recorded (and written to disk); must be 0;
- ``as behaviour``: runs that ended failed, skipped or crashed; with a healthy
  model every such run is a fault taken for behaviour; must be 0;
- ``infra``: runs that ended infra_error (their calls ran out of retries);
- ``faults``: faults injected; ``retries``: retries the runs' InfraLogs made.

The retry policy is the suite's shape with short waits (3 attempts, backoff
10-50 ms, 0.5 s per request) so a hang costs half a second, not a minute.

    python benchmarks/bench_faults.py             # 10 runs per scenario, concurrency 8
    python benchmarks/bench_faults.py --runs 25   # more runs, tighter figures
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "support")]

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

prepare()

from suite_runs import run_suite  # noqa: E402

import evalrunner.live._runner as runner  # noqa: E402
from evalrunner.endpoints._endpoints import Endpoint, EndpointPool  # noqa: E402
from evalrunner.live._results import ResultsDir  # noqa: E402
from evalrunner.suite._loader import load_suite  # noqa: E402
from evalrunner.suite._schema import RetryPolicy  # noqa: E402
from evalrunner.suite._settings import Suite  # noqa: E402

MODEL = "openai/fake"
KINDS = ("429", "500", "503", "reset", "hang", "empty_choices", "truncated_stream", "malformed")
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
            return Fault(self.kind, retry_after=0.01 if self.kind == "429" else None)
        return competent(body)


class _Pool(EndpointPool):
    def __init__(self, api_base: str) -> None:
        super().__init__()
        self.api_base = api_base

    def resolve(self, model: str) -> Endpoint:
        return Endpoint(label=model, model=model, api_base=self.api_base, api_key="sk-fake")


def example_suite() -> Suite:
    """suites/example.yaml, with the benchmark's short retries."""
    suite = load_suite(HERE.parent / "suites" / "example.yaml")
    scenarios = tuple(
        s.model_copy(update={"retry": RETRY, "timeout_s": 30.0}) for s in suite.scenarios
    )
    return Suite(spec=suite.spec, scenarios=scenarios, path=suite.path)


@dataclass(frozen=True)
class Row:
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


def night(suite: Suite, kind: str, rate: float, runs: int, concurrency: int, work: Path) -> Row:
    from fake_endpoint import FakeEndpoint

    retries: list[int] = []
    record = runner._record

    def counted(job: Any, res: Any, started: str, latency: float) -> Any:
        retries.append(res.infra.retries if res.infra is not None else 0)
        return record(job, res, started, latency)

    injector = Injector(kind, rate)
    out = work / f"{kind}-{rate:g}"
    runner._record = counted  # type: ignore[assignment]
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
                )
            )
    finally:
        runner._record = record  # type: ignore[assignment]
    return Row(
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


def show(rows: list[Row]) -> None:
    head = f"{'fault':<17} {'rate':>4} {'runs':>4} {'lost':>4} {'as behaviour':>12} {'passed':>6} {'infra':>5} {'faults':>6} {'retries':>7} {'wall s':>6}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.kind:<17} {r.rate:>4.0%} {r.planned:>4} {r.lost:>4} {r.as_behaviour:>12} "
            f"{r.outcomes['passed']:>6} {r.outcomes['infra_error']:>5} {r.injected:>6} "
            f"{r.retries:>7} {r.seconds:>6.1f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per scenario and cell")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    suite = example_suite()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [night(suite, "none", 0.0, args.runs, args.concurrency, work)]
        for kind in KINDS:
            for rate in RATES:
                rows.append(night(suite, kind, rate, args.runs, args.concurrency, work))
    show(rows)
    lost = sum(r.lost for r in rows)
    wrong = sum(r.as_behaviour for r in rows)
    print(f"\nruns lost: {lost} (must be 0); faults taken for behaviour: {wrong} (must be 0)")
    return 0 if lost == wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
