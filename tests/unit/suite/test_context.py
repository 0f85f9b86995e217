"""What an agent receives: RunContext built from a resolved scenario and an endpoint."""

from __future__ import annotations

from pathlib import Path

from suite_texts import write_full

from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.suite._contract import RunContext
from evalrunner.suite._loader import load_suite


def test_a_context_carries_the_scenarios_settings_and_the_endpoint(tmp_path: Path) -> None:
    chain = load_suite(write_full(tmp_path)).scenarios[1]
    endpoint = Endpoint(label="local", model="openai/smol", api_base="http://x/v1", api_key="k-1")
    ctx = RunContext.for_scenario(chain, endpoint)
    assert ctx == RunContext(
        model="openai/smol",
        api_base="http://x/v1",
        api_key="k-1",
        temperature=0.0,
        max_turns=8,
        tools=("lookup_capital", "city_population"),
    )
    assert "k-1" not in repr(ctx)
    kwargs = ctx.litellm_kwargs()
    assert (kwargs["model"], kwargs["temperature"], kwargs["max_tokens"]) == (
        "openai/smol",
        0.0,
        256,
    )
