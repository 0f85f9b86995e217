"""Agents, model behaviours and CLI helpers for the baseline and comparison tests.

A suite here names ``baseline_agents:lookup_agent``: the reference loop with one
tool, ``lookup`` (country -> capital). What the *model* does is decided by a
:class:`World`, the fake endpoint's responder: per scenario (the ``[tag]`` that
starts the user message) a :class:`Behaviour` says how many lookups the model
makes, how often its tool arguments are malformed JSON (-> the run is skipped)
and how often its final answer is wrong (-> the run fails its checks).

Behaviours are random but controlled: each run draws once from a seeded
``random.Random`` at its first request (malformed or not) and once at its last
(wrong or not). Runs overlap, so which run gets which draw varies, but a night
of N runs always uses the first N draws of each generator: the outcome counts,
and so every verdict on them, are the same every time the tests run.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from fake_endpoint import FakeEndpoint, Reply
from runner_agents import FAKE_KEY, write_suite

from evalrunner.cli._main import main
from evalrunner.reference_agent import AgentResult, run_agent, tool
from evalrunner.suite._contract import RunContext

_CAPITALS = {"france": "Paris", "japan": "Tokyo"}


@tool("Look up the capital city of a country.", country="string")
def lookup(country: str) -> str:
    return _CAPITALS.get(str(country).strip().lower(), f"unknown country {country!r}")


def lookup_agent(task: str, ctx: RunContext) -> AgentResult:
    """The reference loop with the ``lookup`` tool, tools offered on every turn."""
    return run_agent(task, ctx, {"lookup": lookup}, max_tool_rounds=ctx.max_turns)


# -- model behaviours ------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """What the model does in one scenario."""

    lookups: int = 1  # lookup calls before answering
    p_wrong: float = 0.0  # chance the final answer is wrong (the run fails its checks)
    p_malformed: float = 0.0  # chance the first lookup's arguments are broken JSON (skipped)


GOOD = Behaviour(lookups=1, p_wrong=0.05)
PERFECT = Behaviour(lookups=1)
DOUBLE_LOOKUP_WRONG = Behaviour(lookups=2, p_wrong=0.6)
MALFORMED = Behaviour(lookups=1, p_wrong=0.05, p_malformed=0.5)
HOPELESS = Behaviour(lookups=1, p_wrong=1.0)  # never passes: its success rate cannot drop


@dataclass
class World:
    """The fake endpoint's responder: scenario tag -> behaviour, with seeded draws."""

    behaviours: dict[str, Behaviour]
    seed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.reseed(self.seed)

    def reseed(self, seed: int) -> None:
        """Fresh generators: one per tag and kind of draw, so scenarios do not share draws."""
        self.seed = seed
        self._rngs: dict[tuple[str, str], random.Random] = {}

    def set(self, seed: int, **behaviours: Behaviour) -> None:
        """Tonight's behaviours (tags not named keep theirs) and a fresh seed."""
        self.behaviours = {**self.behaviours, **behaviours}
        self.reseed(seed)

    def _draw(self, tag: str, kind: str) -> float:
        with self._lock:
            key = (tag, kind)
            if key not in self._rngs:
                self._rngs[key] = random.Random(f"{self.seed}:{tag}:{kind}")
            return self._rngs[key].random()

    def __call__(self, body: dict[str, Any], n: int) -> Reply:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        tag = re.match(r"\[(\w+)\]", user).group(1)  # type: ignore[union-attr]
        behaviour = self.behaviours[tag]
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < behaviour.lookups:
            args = '{"country": "France"}'
            if done == 0 and self._draw(tag, "malformed") < behaviour.p_malformed:
                args = '{"country": France'
            return Reply(None, tool_calls=[("lookup", args)])
        if self._draw(tag, "wrong") < behaviour.p_wrong:
            return Reply("The capital of France is Lyon.")
        return Reply("The capital of France is Paris.")


def scenario(tag: str) -> dict[str, Any]:
    return {
        "id": tag,
        "agent": "baseline_agents:lookup_agent",
        "input": f"[{tag}] What is the capital of France?",
        "tools": ["lookup"],
        "checks": {"answer_contains": ["Paris"], "tools_used": ["lookup"]},
    }


def make_suite(directory: Path, name: str, tags: Sequence[str], **settings: Any) -> Path:
    """A suite of one scenario per tag, fast settings, 8 runs at a time."""
    return write_suite(directory, name, [scenario(t) for t in tags], concurrency=8, **settings)  # type: ignore[no-any-return]


# -- the CLI against the fake endpoint ------------------------------------------------


def evalrunner(ep: FakeEndpoint, *args: str) -> Result:
    """``evalrunner ARGS`` in-process, every model string sent to ``ep``."""
    env = {"EVALRUNNER_API_BASE": ep.api_base, "OPENAI_API_KEY": FAKE_KEY, "EVALRUNNER_MODEL": None}
    if args and args[0] == "run":
        # Every row of the verdict table, as these tests read it: without --verbose `run`
        # lists the rows that need attention (test_cli_tables.py guards that).
        args = (*args, "--verbose")
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def outage_night(suites_dir: Path, suite: str, out: Path, runs: int) -> Result:
    """A night of ``suite`` whose endpoint answers every request 503: an outage (exit 3)."""
    from fake_endpoint import Fault

    with FakeEndpoint(default=Fault("503")) as down:
        night = evalrunner(
            down,
            *("run", "--suite", suite, "--suites-dir", str(suites_dir), "--out", str(out)),
            *("--runs", str(runs), "--no-history", "--no-compare"),
        )
    assert night.exit_code == 3, night.output
    return night


def verdict_table(stdout: str) -> list[dict[str, str]]:
    """The verdict table `run` ("Compared with baselines:") or `compare` prints, as rows.

    Cells are cut at the header's column starts, so cells with spaces survive.
    """
    lines = stdout.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("scenario") and " metric " in line
    )
    header, rule = lines[start], lines[start + 1]
    assert set(rule) <= {"-", " "}
    bounds = list(pairwise([m.start() for m in re.finditer(r"-+", rule)] + [10**6]))
    names = [header[a:b].strip() for a, b in bounds]
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        rows.append({n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)})
    return rows


def flagged(rows: list[dict[str, str]]) -> set[tuple[str, str]]:
    """(scenario, metric) of every row that fails the night (REGRESSION, or CHANGED for a
    two-sided metric such as step_count)."""
    failing = ("REGRESSION", "CHANGED")
    return {(r["scenario"], r["metric"]) for r in rows if r["verdict"] in failing}
