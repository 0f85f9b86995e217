"""The direct transports: POST a chat completion, or an Anthropic message, ourselves.

The default for upstreams that speak OpenAI Chat Completions (an ``openai/``
model at an ``api_base``: the embedded model, llama.cpp, vLLM, most gateways;
``Upstream.transport``), and ``--direct`` for others that do; and for Anthropic
models (``anthropic/...``), whose Messages API is posted to as is, the chat request
translated by ``proxy._anthropic``. Litellm's per-call bookkeeping (logging objects, cost calculation, response
wrapping) costs several milliseconds of CPU per call, which is most of what
the proxy adds (docs/proxy.md has the figures). Same retries and
classification as the litellm path: failures are raised as exceptions that
``core._faults.is_infra_error`` reads the same way (HTTP status, connection
errors, timeouts, malformed JSON).

aiohttp (a litellm dependency) rather than httpx: httpx's connection pool
scans every pooled connection for each request, which at 32 concurrent runs
cost more CPU than the rest of the proxy together.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import aiohttp

from evalrunner.core._faults import says_context_window
from evalrunner.proxy._anthropic_upstream import ANTHROPIC_VERSION


class UpstreamHTTPError(Exception):
    """The upstream answered with an HTTP error (``status_code``, ``headers`` as litellm's)."""

    def __init__(self, status_code: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"upstream HTTP {status_code}: {message}")
        self.status_code = status_code
        self.headers = headers


class ContextWindowExceededError(UpstreamHTTPError):
    """The upstream refused the request as longer than the model's context window; named as
    litellm names it, so recordings and classification read the same on both transports."""


class AuthenticationError(UpstreamHTTPError):
    """401: the upstream refused the key. Named as litellm names it: a refusal that means no
    model is reachable is the proxy's configuration, never the agent's behaviour."""


class PermissionDeniedError(UpstreamHTTPError):
    """403, named as litellm names it (see :class:`AuthenticationError`)."""


class NotFoundError(UpstreamHTTPError):
    """404 (no such model or route), named as litellm names it (see :class:`AuthenticationError`)."""


_NAMED = {401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError}


class UpstreamConnectionError(ConnectionError):
    """The connection failed, dropped or reset (an infrastructure fault)."""


class UpstreamTimeout(TimeoutError):
    """The upstream did not answer in time (an infrastructure fault)."""


def _error(status: int, text: str, headers: Mapping[str, str]) -> UpstreamHTTPError:
    try:
        body = json.loads(text)
        message = str((body.get("error") or {}).get("message") or body)
    except (ValueError, AttributeError):
        message = text[:300]
    if status == 400 and says_context_window(message):
        return ContextWindowExceededError(status, message, headers)
    return _NAMED.get(status, UpstreamHTTPError)(status, message, headers)


def _events(lines: list[str]) -> list[dict[str, Any]]:
    data = [line[5:].strip() for line in lines if line.startswith("data:")]
    return [json.loads(d) for d in data if d and d != "[DONE]"]


def new_session() -> aiohttp.ClientSession:
    """The connection pool one proxy server uses for every direct call (create on its loop).

    ``HTTP(S)_PROXY`` from the environment is not used (with ``trust_env`` aiohttp
    looks it up in a worker thread on every call): the direct transport is for
    endpoints reached without one, the embedded model's loopback server first.
    """
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=512), trust_env=False)


async def post_chat(
    session: aiohttp.ClientSession,
    api_base: str,
    api_key: str | None,
    body: dict[str, Any],
    stream: bool,
    timeout: float = 600.0,
) -> dict[str, Any] | list[dict[str, Any]]:
    """The chat completion as received, or its stream's chunks when ``stream``."""
    url = api_base.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    got: dict[str, Any] | list[dict[str, Any]] = await _post(
        session, url, headers, body, stream, timeout
    )
    return got


def messages_url(api_base: str | None) -> str:
    """Where an Anthropic model's ``/v1/messages`` is, as litellm finds it: ``api_base``, else
    ``ANTHROPIC_API_BASE``, else ``ANTHROPIC_BASE_URL``, else Anthropic's; a host, or the full
    URL (so one ``--api-base`` means the same on both transports)."""
    base = (
        api_base
        or os.environ.get("ANTHROPIC_API_BASE")
        or os.environ.get("ANTHROPIC_BASE_URL")
        or "https://api.anthropic.com"
    ).rstrip("/")
    return base if base.endswith("/v1/messages") else base + "/v1/messages"


def anthropic_auth(api_key: str | None) -> dict[str, str]:
    """The credential header litellm would send: the key (``x-api-key``; else
    ``ANTHROPIC_API_KEY``), else ``ANTHROPIC_AUTH_TOKEN`` as a bearer token; blank ones unset."""
    key = (api_key or "").strip() or os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if key:
        return {"x-api-key": key}
    token = os.environ.get("ANTHROPIC_AUTH_TOKEN", "").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def _env_proxy(url: str) -> str | None:
    """The forward proxy ``HTTPS_PROXY`` / ``HTTP_PROXY`` name for ``url`` (``NO_PROXY``
    honoured), read per call: the session itself ignores them (see :func:`new_session`), and an
    Anthropic upstream is usually across the network, where a company's proxy may be the way."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


async def post_messages(
    session: aiohttp.ClientSession,
    url: str,
    auth: Mapping[str, str],
    body: dict[str, Any],
    timeout: float = 600.0,
) -> dict[str, Any]:
    """The Anthropic message as received (asked whole: the proxy holds an answer until
    it is complete anyway, and renders a stream from the record when the agent asked)."""
    headers = {"anthropic-version": ANTHROPIC_VERSION, **auth}
    got = await _post(session, url, headers, body, False, timeout, _env_proxy(url))
    assert isinstance(got, dict)
    return got


async def _post(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    stream: bool,
    timeout: float,
    proxy: str | None = None,
) -> Any:
    # Silence bounds an attempt (connecting, then each read), as httpx's timeout does in
    # process: a long stream that keeps coming is not cut; the retry policy's attempt
    # deadline bounds the whole (InfraLog.acall).
    limit = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
    try:
        async with session.post(
            url, json=body, headers=headers, timeout=limit, proxy=proxy
        ) as resp:
            if resp.status >= 400:
                raise _error(resp.status, await resp.text(), resp.headers)
            if stream:
                lines = [raw.decode().rstrip("\r\n") async for raw in resp.content]
                return _events(lines)
            return json.loads(await resp.read())
    except TimeoutError as exc:
        raise UpstreamTimeout(f"no answer within {timeout:g} s") from exc
    except aiohttp.ClientError as exc:
        raise UpstreamConnectionError(str(exc) or type(exc).__name__) from exc
