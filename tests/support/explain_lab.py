"""The attribution lab: one scenario per cause of a change, injected one at a time.

A suite of five scenarios, each a reference-loop agent with one tool, ``lookup``
(country -> capital), against the fake endpoint, whose responder plays a model
that reacts to what it is sent:

- ``prompt``: a system prompt saying "from memory" makes it answer without the
  tool nine times in ten (cause (a): our request changed);
- ``schema``: a ``lookup`` schema that also takes a ``region`` makes it look up
  twice (cause (b));
- ``model``: drifted (``World.night(..., drifted=True)``), the model itself answers
  without the tool six times in ten, to the very same request (cause (c));
- ``tool``: when the tool's answer is not plain "Paris" it looks up again (cause
  (d): the tool answers otherwise for the same arguments);
- ``steady``: nothing changes (e).

In every scenario the model varies a little on its own: one run in ten it
writes the country in lower case (other arguments, same path). Draws come from
seeded generators, so a night's counts are the same on every run of the tests.
"""

from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_endpoint import Reply
from runner_agents import write_suite

from evalrunner.reference_agent import DEFAULT_SYSTEM_PROMPT, AgentResult, Tool, run_agent, tool
from evalrunner.suite._contract import RunContext

CAUSES = ("prompt", "schema", "model", "tool", "steady")
FROM_MEMORY = DEFAULT_SYSTEM_PROMPT + "\nAnswer from memory when you can."


@dataclass
class Agents:
    """What the agent side does tonight, per scenario (the test sets it between nights)."""

    system_prompt: dict[str, str] = field(default_factory=dict)
    region_schema: set[str] = field(default_factory=set)
    tool_answer: dict[str, str] = field(default_factory=dict)

    def reset(self) -> None:
        self.system_prompt.clear()
        self.region_schema.clear()
        self.tool_answer.clear()


AGENTS = Agents()


def _lookup(tag: str, region: bool) -> Tool:
    answer = AGENTS.tool_answer.get(tag, "Paris")

    def lookup(country: str, region: str = "") -> str:
        return answer if str(country).lower() == "france" else f"unknown country {country!r}"

    params = {"country": "string", "region": "string"} if region else {"country": "string"}
    made: Tool = tool("Look up the capital city of a country.", **params)(lookup)
    return made


def agent(task: str, ctx: RunContext) -> AgentResult:
    tag = re.match(r"\[(\w+)\]", task).group(1)  # type: ignore[union-attr]
    prompt = AGENTS.system_prompt.get(tag, DEFAULT_SYSTEM_PROMPT)
    lookup = _lookup(tag, tag in AGENTS.region_schema)
    return run_agent(task, ctx, {"lookup": lookup}, system_prompt=prompt, max_tool_rounds=3)


@dataclass
class World:
    """The fake endpoint's responder (see module doc)."""

    seed: int = 0
    answer_first: float = 0.0
    """How often the model answers the ``model`` scenario's first request without the tool."""
    parallel: bool = False
    """The model answers the ``model`` scenario's first request with two lookups at once."""
    _rngs: dict[str, random.Random] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def night(
        self,
        seed: int,
        *,
        drifted: bool = False,
        answer_first: float | None = None,
        parallel: bool = False,
    ) -> None:
        """Fresh draws from ``seed``; ``drifted``: the model answers the ``model`` scenario's
        first request without the tool six times in ten (or ``answer_first``); ``parallel``:
        it calls the tool twice at once there, the first call as before."""
        self.seed = seed
        self.parallel = parallel
        self.answer_first = answer_first if answer_first is not None else 0.6 * drifted
        self._rngs = {}

    def _draw(self, tag: str, kind: str) -> float:
        with self._lock:
            rng = self._rngs.setdefault(f"{tag}:{kind}", random.Random(f"{self.seed}:{tag}:{kind}"))
            return rng.random()

    def __call__(self, body: dict[str, Any], n: int) -> Reply:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        tag = re.match(r"\[(\w+)\]", user).group(1)  # type: ignore[union-attr]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        answers = [m["content"] for m in messages if m["role"] == "tool"]
        params = {
            t["function"]["name"]: t["function"]["parameters"]["properties"]
            for t in body.get("tools") or []
        }
        country = "france" if self._draw(tag, "case") < 0.1 else "France"
        call = Reply(None, tool_calls=[("lookup", json.dumps({"country": country}))])
        if not answers:
            if "from memory" in system and self._draw(tag, "memory") < 0.9:
                return Reply("The capital of France is Paris.")
            if tag == "model" and self._draw(tag, "drift") < self.answer_first:
                return Reply("The capital of France is Paris.")
            if tag == "model" and self.parallel:
                return Reply(None, tool_calls=[call.tool_calls[0], ("lookup", '{"country": "FR"}')])
            return call
        if len(answers) == 1 and "region" in params.get("lookup", {}):
            return Reply(
                None, tool_calls=[("lookup", json.dumps({"country": country, "region": "EU"}))]
            )
        if len(answers) == 1 and answers[0] != "Paris" and self._draw(tag, "again") < 0.8:
            return call
        return Reply("The capital of France is Paris.")


def scenario(tag: str) -> dict[str, Any]:
    return {
        "id": tag,
        "agent": "explain_lab:agent",
        "input": f"[{tag}] What is the capital of France?",
        "tools": ["lookup"],
        "checks": {"answer_contains": ["Paris"]},
    }


def write_lab_suite(root: Path, name: str, **tolerance: Any) -> Path:
    """The lab's suite file: a scenario per cause; latency (the loaded machine's, not the
    model's) given a wide margin, and a run timeout a loaded machine cannot hit."""
    scenarios = [scenario(c) for c in CAUSES]
    margins = {"margins": {"latency_s": 20.0}, **tolerance}
    path: Path = write_suite(
        root, name, scenarios, concurrency=8, max_turns=4, timeout_s=30, tolerance=margins
    )
    return path
