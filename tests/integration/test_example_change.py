"""The README's regression demo: `EVALRUNNER_EXAMPLE_CHANGE=verify` changes the example's
`single_tool` agent on purpose (a second round of its own), and a night of it against the
committed baselines flags the change (measured on the embedded model: docs in README.md).
Here, against the loopback fake endpoint: the switch changes what the agent does, and only
when set."""

from __future__ import annotations

from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.core import run_captured, shape
from evalrunner.core._normalize import normalize
from evalrunner.examples import CHANGE, single_tool
from evalrunner.suite._contract import RunContext


def _model(body: dict[str, Any], n: int) -> Reply:
    asked = any(m["role"] == "tool" for m in body["messages"])
    if body.get("tools") and not asked:
        return Reply(None, tool_calls=[("lookup_capital", '{"country": "France"}')])
    return Reply("Paris.")


@pytest.mark.parametrize(("switch", "tools"), [(None, 1), ("verify", 2)])
def test_the_demo_switch_adds_a_round_of_tool_calls(
    monkeypatch: pytest.MonkeyPatch, switch: str | None, tools: int
) -> None:
    if switch is None:
        monkeypatch.delenv(CHANGE, raising=False)
    else:
        monkeypatch.setenv(CHANGE, switch)
    with FakeEndpoint(responder=_model) as ep:
        ctx = RunContext(
            "openai/fake", api_base=ep.api_base, api_key="sk-x", tools=("lookup_capital",)
        )
        result = run_captured(single_tool, "What is the capital of France?", ctx)
    assert result.error is None and result.output == "Paris."
    assert shape(normalize(result.trajectory)).tools == ("lookup_capital",) * tools
