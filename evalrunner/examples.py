"""The example suite's agents and tools (suites/example.yaml).

Deterministic apart from the model: tools read fixed tables, nothing reads a
clock or the filesystem, and the environment only for the demo switch (``CHANGE``). Kept in their own small module
because whatever surrounds an agent can leak into its prompt.
"""

from __future__ import annotations

import asyncio
import os

from evalrunner.core._scope import capture
from evalrunner.reference_agent import Tool, arun_agent, run_agent, tool
from evalrunner.suite._contract import RunContext

_CAPITALS = {
    "france": "Paris",
    "japan": "Tokyo",
    "italy": "Rome",
    "kenya": "Nairobi",
    "peru": "Lima",
}
_POPULATION_M = {"paris": 2.1, "tokyo": 14.0, "rome": 2.8, "nairobi": 4.4, "lima": 10.0}


@tool("Look up the capital city of a country.", country="string")
def lookup_capital(country: str) -> str:
    return _CAPITALS.get(str(country).strip().lower(), f"unknown country {country!r}")


@tool("Look up the population of a city, in millions.", city="string")
def city_population(city: str) -> str:
    value = _POPULATION_M.get(str(city).strip().lower())
    return f"{value} million" if value is not None else f"unknown city {city!r}"


TOOLS: dict[str, Tool] = {t.name: t for t in (lookup_capital, city_population)}


def _tools(ctx: RunContext) -> dict[str, Tool]:
    return {name: TOOLS[name] for name in ctx.tools}


def direct_answer(task: str, ctx: RunContext) -> str | None:
    """No tools: one model call."""
    return run_agent(task, ctx).answer


CHANGE = "EVALRUNNER_EXAMPLE_CHANGE"
"""Set to ``verify`` to change ``single_tool``'s behaviour on purpose, for the README's
regression demo: the one switch this module reads from its environment."""


def single_tool(task: str, ctx: RunContext) -> str | None:
    """One round of tool calls, then an answer. With ``EVALRUNNER_EXAMPLE_CHANGE=verify``
    it checks its answer with a second round of its own: the kind of change an edit to an
    agent's code or prompt brings, which a night against the baselines flags."""
    answer = run_agent(task, ctx, _tools(ctx), max_tool_rounds=1).answer
    if os.environ.get(CHANGE) != "verify":
        return answer
    check = f"{task}\nA first answer was: {answer}\nCheck it with the tool, then answer."
    return run_agent(check, ctx, _tools(ctx), max_tool_rounds=1).answer or answer


def tool_chain(task: str, ctx: RunContext) -> str | None:
    """Up to two rounds of tool calls (capital, then its population), then an answer."""
    return run_agent(task, ctx, _tools(ctx), max_tool_rounds=2).answer


async def fanout(task: str, ctx: RunContext) -> str | None:
    """One sub-agent per country under asyncio.gather, then a summarising call."""
    import litellm

    countries = [c.strip() for c in task.split(":", 1)[-1].split(",") if c.strip()]

    async def worker(country: str) -> str:
        async with capture(f"capital-of-{country.lower()}"):
            result = await arun_agent(
                f"What is the capital of {country}?", ctx, _tools(ctx), max_tool_rounds=1
            )
            # Bounded so three rambling answers still fit the summariser's context.
            return f"{country}: {(result.answer or 'no answer')[:300]}"

    findings = await asyncio.gather(*(worker(c) for c in countries))
    kwargs = ctx.litellm_kwargs()
    kwargs["messages"] = [
        {"role": "system", "content": "Summarise the findings in one sentence."},
        {"role": "user", "content": "\n".join(findings)},
    ]
    response = await litellm.acompletion(**kwargs)
    content: str | None = response.choices[0].message.content
    return content
