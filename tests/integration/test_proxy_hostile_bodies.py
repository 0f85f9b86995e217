"""Bodies no agent sends by accident: too big, or nested past what a parser can read.
Each gets an error in the calling API's format, and the proxy goes on answering."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from evalrunner.proxy import ProxyServer


def test_a_body_over_the_limit_is_413_in_the_api_s_format_and_never_read_whole(
    tmp_path: Path,
) -> None:
    limit = 1024 * 1024
    big = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (8 * limit)
    with ProxyServer("replay", tmp_path, max_body_bytes=limit) as proxy:
        url = proxy.base_url + "/v1/chat/completions"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the proxy must count as it reads
            for start in range(0, len(big), 64 * 1024):
                yield big[start : start + 64 * 1024]

        with httpx.Client() as client, ThreadPoolExecutor(4) as pool:
            declared = list(pool.map(lambda _: client.post(url, content=big), range(4)))
            streamed = client.post(url, content=chunks())
            anthropic = client.post(proxy.base_url + "/v1/messages", content=big)
            # Still answering: a small request gets the usual replay error, not a hang.
            small = client.post(url, json={"model": "m", "messages": []})
    for reply in [*declared, streamed]:
        assert reply.status_code == 413
        error = reply.json()["error"]
        assert error["type"] == "request_too_large" and "1048576 bytes" in error["message"]
    assert anthropic.status_code == 413 and anthropic.json()["type"] == "error"
    assert small.status_code != 413 and "error" in small.json()


def test_json_nested_100000_deep_is_a_400_not_a_traceback(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with ProxyServer("replay", tmp_path) as proxy, httpx.Client() as client:
        reply = client.post(proxy.base_url + "/v1/chat/completions", content=deep)
        after = client.post(
            proxy.base_url + "/v1/chat/completions", json={"model": "m", "messages": []}
        )
    assert reply.status_code == 400
    assert "nested too deeply" in reply.json()["error"]["message"]
    assert after.status_code != 500
