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

from evalrunner.endpoints._endpoints import KEYLESS
from evalrunner.proxy import ProxyServer, Upstream

AGENT = REPO / "tests" / "support" / "sdk_agent_main.py"


def _agent_through(proxy: ProxyServer) -> subprocess.CompletedProcess[str]:
    """The SDK agent as a command, run "r" of ``proxy``, with nothing else in its environment."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(AGENT.parent), **proxy.run_env("r")}
    return subprocess.run(
        [sys.executable, str(AGENT), "openai", "Capitals of: France, Japan"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_command_agent_records_through_the_proxy_from_a_keyless_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base)  # and no key anywhere
        with ProxyServer("record", tmp_path, upstream) as proxy:
            done = _agent_through(proxy)
            result = proxy.finish_run("r")
    assert done.returncode == 0, done.stderr[-2000:]
    assert result.upstream_errors == [] and result.infra_error is None
    assert result.model_calls == 2 and len(ep.requests) == 2
    assert "Capitals: Paris, Tokyo." in done.stdout


@pytest.mark.parametrize("direct", [None, True, False], ids=["default", "direct", "litellm"])
@pytest.mark.parametrize("env_key", [None, "sk-from-env"], ids=["keyless", "env-key"])
def test_both_transports_send_the_key_litellm_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct: bool | None, env_key: str | None
) -> None:
    """The direct transport (the default for an openai/ model at an api_base) authenticates
    as litellm does: OPENAI_API_KEY from the proxy's environment, else the keyless
    placeholder; an agent's own key never goes upstream."""
    if env_key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", env_key)
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, direct=direct)
        assert upstream.transport == ("litellm" if direct is False else "direct")
        with ProxyServer("record", tmp_path, upstream) as proxy:
            done = _agent_through(proxy)
            proxy.finish_run("r")
    assert done.returncode == 0, done.stderr[-2000:]
    sent = {h.get("authorization") for h in ep.headers}
    assert sent == {f"Bearer {env_key or KEYLESS}"}


def test_the_transport_is_direct_only_where_the_upstreams_api_is_known_for_certain() -> None:
    assert Upstream("openai/m", api_base="http://127.0.0.1:9/v1").transport == "direct"
    assert Upstream("openai/gpt-4o-mini").transport == "litellm"  # OpenAI itself: its SDK path
    assert Upstream("anthropic/claude-x").transport == "anthropic"  # Anthropic Messages
    assert Upstream("anthropic/claude-x", direct=False).transport == "litellm"
    assert Upstream("gemini/gemini-2.5-flash").transport == "litellm"
    assert Upstream("openai/m", api_base="http://h/v1", direct=False).transport == "litellm"
    assert Upstream("hosted_vllm/m", api_base="http://h/v1", direct=True).transport == "direct"
