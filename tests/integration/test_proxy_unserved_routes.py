"""A route the proxy does not serve answers in the calling API's error format, never plain text."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from evalrunner.proxy import ProxyServer


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/completions"),
        ("GET", "/v1/responses/resp_123"),
        ("GET", "/v1/chat/completions"),
    ],
)
def test_openai_routes_it_does_not_serve_get_an_openai_error(
    method: str, path: str, tmp_path: Path
) -> None:
    with ProxyServer("replay", tmp_path) as proxy:
        reply = httpx.request(method, proxy.base_url + path, json={"model": "m", "input": "x"})
    assert reply.status_code in (404, 405)
    error = reply.json()["error"]
    assert error["type"] in ("not_found_error", "invalid_request_error")
    assert f"{method} {path} is not served" in error["message"]


def test_an_sdk_calling_an_unserved_route_gets_a_typed_error(tmp_path: Path) -> None:
    with ProxyServer("replay", tmp_path) as proxy:
        env = proxy.run_env("r")
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"])
        with pytest.raises(openai.NotFoundError, match="embeddings is not served"):
            client.embeddings.create(model="m", input="hello")
        claude = anthropic.Anthropic(
            base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"]
        )
        with pytest.raises(anthropic.NotFoundError, match="count_tokens is not served"):
            claude.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hello"}])
        proxy.finish_run("r")


def test_settings_that_change_the_answer_but_cannot_be_carried_are_refused(
    tmp_path: Path,
) -> None:
    with ProxyServer("replay", tmp_path) as proxy:
        background = httpx.post(
            proxy.base_url + "/v1/responses",
            json={"model": "m", "input": "hi", "background": True},
        )
    assert background.status_code == 400
    assert "'background' is not supported" in background.json()["error"]["message"]
