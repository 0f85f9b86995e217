"""What a proxy on a shared runner meets that no agent sends by accident: bodies too big
or nested past what a parser can read, clients that open connections and dawdle, run
ids without end. Each gets an answer in the calling API's format (or its connection
closed), memory stays bounded, and the proxy goes on answering."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

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


def test_slow_clients_are_dropped_and_a_normal_request_is_still_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging
    import socket

    import evalrunner.proxy._app as app
    import evalrunner.proxy._server as server

    monkeypatch.setattr(server, "HEADER_TIMEOUT_S", 0.5)
    monkeypatch.setattr(app, "BODY_TIMEOUT_S", 0.5)
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    body = head + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    logged: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = logged.append  # type: ignore[method-assign,assignment]
    logging.getLogger("uvicorn.error").addHandler(handler)
    try:
        with ProxyServer("replay", tmp_path) as proxy:
            address = ("127.0.0.1", proxy.port)
            slow = [socket.create_connection(address) for _ in range(100)]
            for n, sock in enumerate(slow):
                sock.sendall(body if n % 2 else head)  # half a head, or half a body
            started = time.monotonic()
            normal = httpx.post(
                proxy.base_url + "/v1/chat/completions", json={"model": "m", "messages": []}
            )
            took = time.monotonic() - started
            time.sleep(1.5)
            dropped = 0
            for sock in slow:
                sock.settimeout(1)
                reply = sock.recv(4096)  # b"" once closed; a 408 for a dawdling body
                dropped += reply == b"" or reply.startswith(b"HTTP/1.1 408")
                sock.close()
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert normal.status_code != 503 and took < 5
    assert dropped == 100
    assert not [r for r in logged if r.exc_info]  # no traceback per disconnect


def test_idle_connections_past_the_limit_cannot_starve_a_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local process holding connections open without a request (no token is needed to
    connect): at the limit uvicorn answered every request 503, and a night's command runs
    crashed. The oldest idle connection now gives way to a new one."""
    import socket

    import evalrunner.proxy._server as server

    monkeypatch.setattr(server, "MAX_CONNECTIONS", 40)
    with ProxyServer("replay", tmp_path) as proxy:
        address = ("127.0.0.1", proxy.port)
        idle = [socket.create_connection(address) for _ in range(60)]
        try:
            time.sleep(0.2)
            replies = [
                httpx.post(
                    proxy.base_url + "/v1/chat/completions", json={"model": "m", "messages": []}
                )
                for _ in range(3)
            ]
        finally:
            for sock in idle:
                sock.close()
    assert all(r.status_code != 503 for r in replies), [r.text for r in replies]


def test_runs_opened_by_requests_alone_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalrunner.proxy._server as server

    monkeypatch.setattr(server, "MAX_IMPLICIT_RUNS", 5)
    evicted: list[str] = []
    proxy = ProxyServer("replay", tmp_path, on_evict=lambda r: evicted.append(r.run_id))
    with proxy, httpx.Client() as client:
        for n in range(12):
            client.post(
                f"{proxy.base_url}/runs/r{n}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
        assert len(proxy.open_runs()) == 5
        assert evicted == [f"r{n}" for n in range(7)]  # least recently used first
        late = client.post(
            f"{proxy.base_url}/runs/r0/v1/chat/completions", json={"model": "m", "messages": []}
        )
    assert late.status_code == 404 and "is finished" in late.json()["error"]["message"]
