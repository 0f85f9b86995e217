"""The proxy listens on loopback unless told otherwise, and with a token it answers
only requests that carry it (as the bearer token or x-api-key the SDKs send)."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from click.testing import CliRunner
from fake_endpoint import FakeEndpoint
from sdk_agents import anthropic_agent, content_responder, openai_agent

from evalrunner.cli._main import main
from evalrunner.errors import ConfigError
from evalrunner.proxy import ProxyServer, Upstream

TOKEN = "proxy-token-5a1c9e"


def test_requests_without_the_bearer_token_get_401() -> None:
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key="k-0123456789")
        with ProxyServer("passthrough", upstream=upstream, token=TOKEN) as proxy:
            env = proxy.run_env("r")
            assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == TOKEN
            assert openai_agent(env, "hello") == "echo: hello"
            assert anthropic_agent(env, "hello") == "echo: hello"
            wrong = {**env, "OPENAI_API_KEY": "guess", "ANTHROPIC_API_KEY": "guess"}
            with pytest.raises(openai.AuthenticationError):
                openai_agent(wrong, "hello")
            with pytest.raises(anthropic.AuthenticationError):
                anthropic_agent(wrong, "hello")
            bare = httpx.get(f"{proxy.base_url}/v1/models")
            assert bare.status_code == 401 and bare.headers["x-should-retry"] == "false"
            result = proxy.finish_run("r")
    assert result.model_calls == 2 and len(ep.requests) == 2  # refused calls went nowhere


def test_binding_beyond_loopback_needs_the_flag_and_a_token() -> None:
    upstream = Upstream("openai/fake")
    with pytest.raises(ConfigError, match="allow-remote"):
        ProxyServer("passthrough", upstream=upstream, host="0.0.0.0", token=TOKEN)
    with pytest.raises(ConfigError, match="needs a --token"):
        ProxyServer("passthrough", upstream=upstream, host="0.0.0.0", allow_remote=True)
    # Loopback needs neither; an explicit remote setup is accepted (not started here).
    ProxyServer("passthrough", upstream=upstream, host="::1")
    ProxyServer("passthrough", upstream=upstream, host="0.0.0.0", allow_remote=True, token=TOKEN)


def test_an_empty_or_short_token_is_refused_not_served_without_auth(tmp_path: Path) -> None:
    """``--token ''`` served every request unauthenticated, and a 1-character token was
    accepted even with --allow-remote (issue 53, row 11)."""
    upstream = Upstream("openai/fake")
    for short in ("", "x", "a" * 15):
        with pytest.raises(ConfigError, match="at least 16"):
            ProxyServer("passthrough", upstream=upstream, token=short)
        with pytest.raises(ConfigError, match="at least 16"):
            ProxyServer(
                "passthrough", upstream=upstream, host="0.0.0.0", allow_remote=True, token=short
            )
    result = CliRunner().invoke(
        main, ["proxy", "--replay", str(tmp_path), "--token", ""], catch_exceptions=False
    )
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: proxy --token (EVALRUNNER_PROXY_TOKEN) has 0")


def test_a_number_too_long_to_read_is_a_400_not_a_500() -> None:
    """Python refuses to convert integers of more than 4,300 digits (a ValueError, not a
    JSONDecodeError): the proxy answered 500 with a traceback."""
    with FakeEndpoint(responder=content_responder) as ep:
        upstream = Upstream("openai/fake", api_base=ep.api_base, api_key="k-0123456789")
        with ProxyServer("passthrough", upstream=upstream, token=TOKEN) as proxy:
            body = b'{"model": "x", "messages": [], "n": ' + b"9" * 5000 + b"}"
            got = httpx.post(
                f"{proxy.base_url}/v1/chat/completions",
                content=body,
                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            )
            assert got.status_code == 400, got.text
            assert "body is not JSON" in got.text
    assert ep.requests == []
