"""Agent-side faults: what the user's own code does to a night, on the in-process and the
``command:`` path (issue 53; endpoint faults are ``bench_faults.py``'s).

Each path runs one night through the real runner against a loopback FakeEndpoint that
answers like a competent model. Beside healthy agents, each fault is a scenario of its
own:

- in-process: an agent that raises ``KeyboardInterrupt``, ``CancelledError`` or a
  ``BaseException`` of its own (sync and async), calls ``sys.exit()``, blocks the shared
  event loop past its timeout (a synchronous sleep in an async agent), or moves the
  process into another directory (``os.chdir``) and stays there;
- ``command:``: a script killed by a signal, one that exits 2, and one that holds 1,100
  idle connections to the capture proxy while the healthy commands run.

Printed per path and fault: runs planned, lost (planned minus recorded and on disk),
and the outcomes; then the healthy scenarios' runs that did not pass (a fault of
another run taken for their behaviour) and the faulty ones that did not end as their
fault says (``crashed`` for the agent's own stop; the chdir agent, which still answers,
``passed``; the connection holder, which never calls the model, ``infra_error``). Both
must be 0, and nothing may be written outside the night's directory.

    PYTHONPATH=. python benchmarks/bench_agent_faults.py            # 4 runs a scenario
    PYTHONPATH=. python benchmarks/bench_agent_faults.py --runs 10
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "tests" / "support"
sys.path[:0] = [str(HERE.parent), str(SUPPORT)]

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

prepare()

from fake_endpoint import FakeEndpoint, Reply  # noqa: E402
from runner_agents import fake_pool  # noqa: E402
from suite_runs import run_suite  # noqa: E402

from evalrunner import _signals  # noqa: E402
from evalrunner.live._results import ResultsDir  # noqa: E402
from evalrunner.suite._loader import load_suite  # noqa: E402

MODEL = "openai/fake"
IN_PROCESS: dict[str, tuple[str, str]] = {
    # scenario -> (agent in tests/support/runner_agents.py, the outcome its runs must have)
    "healthy": ("tool_agent", "passed"),
    "ahealthy": ("atool_agent", "passed"),
    "patient": ("patient_agent", "passed"),
    "interrupt": ("interrupting_agent", "crashed"),
    "ainterrupt": ("ainterrupting_agent", "crashed"),
    "cancel": ("cancelling_agent", "crashed"),
    "abort": ("aborting_agent", "crashed"),
    "exit": ("exiting_agent", "crashed"),
    "aexit": ("aexiting_agent", "crashed"),
    "block": ("blocking_agent", "crashed"),
    "chdir": ("wandering_agent", "passed"),
}
HOLD = (
    "import os, socket, sys, time\n"
    "host, port = os.environ['OPENAI_BASE_URL'].split('//')[1].split('/')[0].rsplit(':', 1)\n"
    "held = [socket.create_connection((host, int(port))) for _ in range(1100)]\n"
    "time.sleep(4)\n"
    "print('held', len(held))\n"
)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "healthy": ([str(SUPPORT / "sdk_agent_main.py"), "openai", "{task}"], "passed"),
    "astreamed": ([str(SUPPORT / "sdk_agent_main.py"), "anthropic-streamed", "{task}"], "passed"),
    "killed": (
        ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "{task}"],
        "crashed",
    ),
    "exit2": (["-c", "import sys; sys.exit(2)", "{task}"], "crashed"),
    "hold": (["-c", HOLD, "{task}"], "infra_error"),
}
HEALTHY = ("healthy", "ahealthy", "patient", "astreamed")


def in_process_responder(body: dict[str, Any], n: int) -> Reply:
    """A competent model for runner_agents: look the capital up, then answer."""
    messages = body["messages"]
    if any(m["role"] == "tool" for m in messages):
        return Reply("The capital of France is Paris.")
    user = next(m["content"] for m in messages if m["role"] == "user")
    tag = re.match(r"\[(\w+)\]", user)
    if tag and tag.group(1) in ("healthy", "ahealthy", "patient", "chdir"):
        return Reply(None, tool_calls=[("lookup_capital", '{"country": "France"}')])
    return Reply("Paris.")


def suite_doc(path: str) -> dict[str, Any]:
    common = {"format_version": 1, "models": [MODEL], "concurrency": 8, "timeout_s": 3.0}
    common["retry"] = {"max_attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.05}
    if path == "in-process":
        scenarios = [
            {
                "id": sid,
                "agent": f"runner_agents:{agent}",
                "input": f"[{sid}] What is the capital of France?",
                "tools": ["lookup_capital"],
                "checks": {"answer_contains": ["Paris"]},
            }
            for sid, (agent, _) in IN_PROCESS.items()
        ]
        return {**common, "name": "agent_faults", "scenarios": scenarios}
    scenarios = [
        {
            "id": sid,
            "command": [sys.executable, *argv],
            "env": {"PYTHONPATH": str(SUPPORT)},
            "input": "Capitals of: France, Japan",
            "checks": {"answer_contains": ["Paris"]},
        }
        for sid, (argv, _) in COMMANDS.items()
    ]
    return {**common, "name": "command_faults", "timeout_s": 20.0, "scenarios": scenarios}


def night(
    path: str, runs: int, work: Path
) -> tuple[int, int, dict[str, Counter[str]], dict[str, str], bool]:
    """Planned, lost, each scenario's outcomes and a reason of each, and whether anything
    landed outside the night's directory."""
    import yaml
    from sdk_agents import content_responder

    doc = suite_doc(path)
    file = work / f"{doc['name']}.yaml"
    file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    suite = load_suite(file)
    out = work / f"out-{path}"
    os.environ["WANDER_TO"] = str(work / "wandered")
    here = Path.cwd()
    before = set(here.iterdir())
    respond = in_process_responder if path == "in-process" else content_responder
    try:
        # As the CLI runs a night: a real Ctrl-C is noted, an agent's own is its crash.
        with FakeEndpoint(responder=respond) as ep, _signals.watched():
            report = asyncio.run(
                run_suite(
                    suite,
                    out=out,
                    runs=runs,
                    models=[MODEL],
                    pool=fake_pool(ep.api_base),
                    progress_stream=io.StringIO(),
                )
            )
    finally:
        os.chdir(here)  # the chdir agent's move, undone for the next night
    planned = runs * len(suite.scenarios)
    recorded = len({r.run_id for r in report.records})
    lost = planned - min(recorded, len(ResultsDir(out).run_files()))
    outcomes: dict[str, Counter[str]] = {}
    reasons: dict[str, str] = {}
    for r in report.records:
        outcomes.setdefault(r.scenario, Counter())[r.outcome] += 1
        reasons.setdefault(r.scenario, r.reason or "")
    return planned, lost, outcomes, reasons, set(here.iterdir()) != before


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per scenario")
    args = parser.parse_args()
    expected = {
        **{k: v for k, (_, v) in IN_PROCESS.items()},
        **{k: v for k, (_, v) in COMMANDS.items()},
    }
    bad_total = lost_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in ("in-process", "command"):
            started = time.monotonic()
            planned, lost, outcomes, reasons, strayed = night(path, args.runs, Path(tmp))
            lost_total += lost + int(strayed)
            print(
                f"\n{path}: {planned} runs, lost {lost}, files outside the night: {'YES' if strayed else 'none'} ({time.monotonic() - started:.0f} s)"
            )
            for sid, seen in sorted(outcomes.items()):
                wrong = sum(n for outcome, n in seen.items() if outcome != expected[sid])
                bad_total += wrong
                kind = "healthy" if sid in HEALTHY else "fault"
                shown = ", ".join(f"{o} {n}" for o, n in sorted(seen.items()))
                why = f"  ({reasons[sid][:80]})" if reasons[sid] else ""
                print(
                    f"  {sid:<11} {kind:<8} expected {expected[sid]:<12} got {shown:<20} "
                    f"wrong {wrong}{why}"
                )
    print(
        f"\nruns lost or files astray: {lost_total} (must be 0); runs not ending as they should: {bad_total} (must be 0)"
    )
    return 0 if lost_total == bad_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
