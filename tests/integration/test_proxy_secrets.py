"""Keys stay where they belong: the agent's key (Authorization / x-api-key) goes
nowhere, the provider key stays inside the proxy, and secrets in request bodies
are redacted before a recording is written (and still replay)."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.proxy import ProxyServer, Upstream

AGENT_OPENAI_KEY = "sk-proj-agentsecret0123456789abcdefXYZ"
AGENT_ANTHROPIC_KEY = "sk-ant-agentsecret0123456789abcdefXYZ"
PROVIDER_KEY = "provider-key-7f3a9c1e5b"
PROMPT_SECRET = "sk-live0123456789abcdefghijKLMN"


def _calls(env: dict[str, str]) -> None:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=AGENT_OPENAI_KEY)
    client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": f"my key is {PROMPT_SECRET}, keep it"}],
        user="user-1234",
        metadata={"session_token": "tok_0123456789abcdef"},
        extra_body={"api_key": "sk-proj-bodykey0123456789abcdef", "api_base": "http://elsewhere"},
        extra_headers={"x-api-key": "sk-proj-headerkey0123456789abcdef"},
    )
    claude = anthropic.Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key=AGENT_ANTHROPIC_KEY)
    claude.messages.create(
        model="claude", max_tokens=20, messages=[{"role": "user", "content": "hello"}]
    )


def test_agent_keys_and_body_secrets_never_reach_upstream_or_a_recording(tmp_path: Path) -> None:
    with FakeEndpoint(default=Reply("noted")) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key=PROVIDER_KEY)
        with ProxyServer("record", tmp_path, upstream) as proxy:
            _calls(proxy.run_env("secret"))
            result = proxy.finish_run("secret")
        sent_headers, sent_bodies = ep.headers, ep.requests

    # Upstream gets the provider key and only allowlisted fields.
    assert [h["authorization"] for h in sent_headers] == [f"Bearer {PROVIDER_KEY}"] * 2
    assert all("x-api-key" not in h for h in sent_headers)
    assert {"api_key", "api_base", "user", "metadata"}.isdisjoint(sent_bodies[0])
    assert sent_bodies[0]["model"] == "fake"  # the agent's model name stays here too

    assert result.recording_path is not None
    written = result.recording_path.read_text()
    for secret in (AGENT_OPENAI_KEY, AGENT_ANTHROPIC_KEY, PROVIDER_KEY, PROMPT_SECRET):
        assert secret not in written
    assert "headerkey" not in written and "bodykey" not in written and "tok_0123" not in written
    assert "[REDACTED]" in written
    for secret in (AGENT_OPENAI_KEY, AGENT_ANTHROPIC_KEY, PROVIDER_KEY):
        assert secret not in json.dumps(result.trajectory)

    # The prompt's secret is redacted in the file, yet the live request still matches it.
    with ProxyServer("replay", tmp_path) as proxy:
        _calls(proxy.run_env("secret"))
        assert proxy.finish_run("secret").ok
