"""A keyless OpenAI-compatible server upstream (llama.cpp, vLLM, a gateway on loopback) needs
no OPENAI_API_KEY anywhere: the proxy records and forwards to it as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from paths import REPO
from sdk_agents import content_responder

from evalrunner.proxy import ProxyServer, Upstream

AGENT = REPO / "tests" / "support" / "sdk_agent_main.py"


def test_a_command_agent_records_through_the_proxy_from_a_keyless_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base)  # and no key anywhere
        with ProxyServer("record", tmp_path, upstream) as proxy:
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(AGENT.parent), **proxy.run_env("r")}
            done = subprocess.run(
                [sys.executable, str(AGENT), "openai", "Capitals of: France, Japan"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            result = proxy.finish_run("r")
    assert done.returncode == 0, done.stderr[-2000:]
    assert result.upstream_errors == [] and result.infra_error is None
    assert result.model_calls == 2 and len(ep.requests) == 2
    assert "Capitals: Paris, Tokyo." in done.stdout
