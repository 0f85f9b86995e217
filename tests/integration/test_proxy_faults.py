"""Faults injected upstream of the proxy (429, 5xx, resets, malformed answers,
truncated streams, timeouts) end as retries inside the proxy or as an upstream
infrastructure error the run is classified by: never as agent behaviour, and
never multiplied by the SDK's own retries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from fake_endpoint import FakeEndpoint, Fault, Reply
from sdk_agents import anthropic_agent, openai_agent

from evalrunner.proxy import ProxyServer, Upstream
from evalrunner.suite._schema import RetryPolicy

FAST = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05)
KEY = "upstream-key-for-tests"


@pytest.fixture
def upstream() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(default=Reply("fine")) as ep:
        yield ep


@pytest.fixture(params=[False, True], ids=["litellm", "direct"])
def direct(request: pytest.FixtureRequest) -> bool:
    """Both transports: through litellm (the default) and straight to the endpoint."""
    return bool(request.param)


def _proxy(ep: FakeEndpoint, tmp_path: Path, direct: bool, timeout: float = 10) -> ProxyServer:
    upstream = Upstream(
        "openai/fake", api_base=ep.api_base, api_key=KEY, timeout_s=timeout, direct=direct
    )
    return ProxyServer("record", tmp_path, upstream, retry=FAST)


@pytest.mark.parametrize(
    "fault",
    [
        Fault("429", retry_after=0.01),
        Fault("500"),
        Fault("503"),
        Fault("reset"),
        Fault("malformed"),
        Fault("empty_choices"),
        Fault("error_body"),
    ],
    ids=lambda f: f.kind,
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_passing_fault_is_retried_inside_the_proxy(
    upstream: FakeEndpoint, tmp_path: Path, direct: bool, fault: Fault, stream: bool
) -> None:
    upstream.enqueue(fault, Reply("fine"))
    with _proxy(upstream, tmp_path, direct) as proxy:
        assert openai_agent(proxy.run_env("r"), "hi", stream=stream) == "fine"
        result = proxy.finish_run("r")
    assert len(upstream.requests) == 2
    assert result.ok and result.infra_error is None and len(result.infra.faults) == 1
    assert result.infra.max_attempts_used == 2
    assert result.recording is not None and len(result.recording.calls) == 1


def test_a_truncated_stream_is_retried_before_the_agent_sees_a_byte(
    upstream: FakeEndpoint, tmp_path: Path, direct: bool
) -> None:
    upstream.enqueue(Fault("truncated_stream"), Reply("the whole answer"))
    with _proxy(upstream, tmp_path, direct) as proxy:
        assert openai_agent(proxy.run_env("r"), "hi", stream=True) == "the whole answer"
        result = proxy.finish_run("r")
    assert result.ok and len(result.infra.faults) == 1
    assert result.trajectory["steps"][-1]["message"] == "the whole answer"


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("429", 429),
        ("500", 502),
        ("503", 503),
        ("reset", 502),
        ("empty_choices", 502),
        ("error_body", (502, 503)),  # litellm reads the body's code 503; direct: no choice
    ],
)
def test_a_fault_that_outlives_the_retries_is_an_upstream_infra_error(
    upstream: FakeEndpoint, tmp_path: Path, direct: bool, kind: str, status: int | tuple[int, ...]
) -> None:
    upstream.enqueue(*[Fault(kind, retry_after=0.01)] * 3)
    with _proxy(upstream, tmp_path, direct) as proxy:
        with pytest.raises(openai.APIStatusError) as raised:
            openai_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert raised.value.status_code in (status if isinstance(status, tuple) else (status,))
    assert "upstream infrastructure fault, not agent behaviour" in raised.value.message
    assert "gave up after 3 attempts" in raised.value.message
    # The SDK (max_retries=2 by default) was told not to retry on top: 3 attempts, not 9.
    assert len(upstream.requests) == 3
    assert result.infra_error is not None and not result.ok
    assert result.model_calls == 1
    assert [s for s in result.trajectory["steps"] if s["source"] == "agent"] == []
    # Nothing is recorded for a run that met an infrastructure fault.
    assert result.recording_path is None and not list(tmp_path.rglob("*.json"))


def test_an_upstream_timeout_is_a_504(upstream: FakeEndpoint, tmp_path: Path, direct: bool) -> None:
    upstream.enqueue(*[Fault("slow", seconds=2)] * 3)
    with _proxy(upstream, tmp_path, direct, timeout=0.3) as proxy:
        with pytest.raises(openai.APIStatusError) as raised:
            openai_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert raised.value.status_code == 504
    assert result.infra_error is not None


def test_an_anthropic_agent_gets_the_infra_error_in_anthropic_form(
    upstream: FakeEndpoint, tmp_path: Path, direct: bool
) -> None:
    upstream.enqueue(*[Fault("500")] * 3)
    with _proxy(upstream, tmp_path, direct) as proxy:
        with pytest.raises(anthropic.InternalServerError) as raised:
            anthropic_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert raised.value.status_code == 502
    body: Any = raised.value.body
    assert body["type"] == "error" and "upstream infrastructure fault" in body["error"]["message"]
    assert len(upstream.requests) == 3 and result.infra_error is not None


def test_a_refused_request_is_passed_on_recorded_and_replayed(
    upstream: FakeEndpoint, tmp_path: Path, direct: bool
) -> None:
    # A 400 (here: the context window) is the model's answer to this request,
    # not infrastructure: the agent sees it, and so does every replay.
    upstream.enqueue(Fault("400", message="This model's maximum context length is 8 tokens"))
    with _proxy(upstream, tmp_path, direct) as proxy:
        with pytest.raises(openai.BadRequestError, match="maximum context length"):
            openai_agent(proxy.run_env("r"), "hi")
        recorded = proxy.finish_run("r")
    assert len(upstream.requests) == 1
    assert recorded.infra_error is None and recorded.upstream_errors
    assert recorded.recording_path is not None
    with ProxyServer("replay", tmp_path) as proxy:
        with pytest.raises(openai.BadRequestError, match="maximum context length"):
            openai_agent(proxy.run_env("r"), "hi")
        replayed = proxy.finish_run("r")
    assert replayed.ok and replayed.upstream_errors == recorded.upstream_errors
