"""Upstream failures become the HTTP error the agent gets, marked infrastructure or
not; the embedded llama.cpp server's quirks are smoothed before a request leaves."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalrunner.core._faults import InfraLog, is_infra_error, retry_after
from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.errors import ConfigError
from evalrunner.proxy._upstream import (
    TruncatedStream,
    Upstream,
    record_from_chunks,
    smooth_for_llama_cpp,
    upstream_failure,
)


class StatusError(Exception):
    def __init__(self, name: str, status: int | None) -> None:
        super().__init__(f"{name} happened")
        self.status_code = status


def named(name: str, status: int | None) -> Exception:
    cls: type[StatusError] = type(name, (StatusError,), {})
    return cls(name, status)


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (named("RateLimitError", 429), 429),
        (named("ServiceUnavailableError", 503), 503),
        (named("InternalServerError", 500), 502),
        (named("Timeout", 408), 504),
        (TruncatedStream("cut"), 502),
        (named("AuthenticationError", 401), 502),  # no model behind the proxy
    ],
)
def test_infrastructure_failures_are_marked_and_logged(exc: Exception, status: int) -> None:
    infra = InfraLog(None)
    http, is_infra = upstream_failure(exc, infra)
    assert is_infra and http.status == status and http.kind == "upstream_infra_error"
    assert "not agent behaviour" in http.message
    assert infra.final_error is exc


def test_a_refusal_of_the_request_itself_is_passed_on() -> None:
    infra = InfraLog(None)
    http, is_infra = upstream_failure(named("ContextWindowExceededError", 400), infra)
    assert not is_infra and http.status == 400 and http.kind == "ContextWindowExceededError"
    assert infra.final_error is None


def test_llama_cpp_quirks_are_smoothed_without_touching_the_original() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    kwargs: dict[str, Any] = {
        "messages": [{"role": "assistant", "content": None, "tool_calls": [call]}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    smoothed = smooth_for_llama_cpp(kwargs)
    assert smoothed["messages"][0]["content"] == "" and smoothed["tool_choice"] == "auto"
    assert kwargs["messages"][0]["content"] is None and "tool_choice" not in kwargs
    assert smooth_for_llama_cpp({**kwargs, "tool_choice": "required"})["tool_choice"] == "auto"
    assert smooth_for_llama_cpp({**kwargs, "tool_choice": "none"})["tool_choice"] == "none"
    assert "tool_choice" not in smooth_for_llama_cpp({"messages": []})


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "model": "m-up",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def test_a_streamed_answer_is_rebuilt_from_its_chunks() -> None:
    chunks = [
        _chunk({"role": "assistant", "content": "Let "}),
        _chunk({"content": "me."}),
        _chunk(
            {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "b", "arguments": ""}}]}
        ),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "a", "arguments": '{"x"'}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        _chunk({}, "tool_calls"),
        {"model": "m-up", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
    ]
    record = record_from_chunks(chunks)
    assert record.content == "Let me." and record.model == "m-up"
    assert [(c.id, c.name, c.arguments) for c in record.tool_calls] == [
        ("c1", "a", '{"x": 1}'),
        ("c2", "b", ""),
    ]
    assert record.finish_reason == "tool_calls"
    assert (record.usage.prompt_tokens, record.usage.completion_tokens) == (7, 3)


def test_a_stream_without_a_finish_reason_is_truncated() -> None:
    with pytest.raises(TruncatedStream, match="without a finish reason"):
        record_from_chunks([_chunk({"content": "cut off mid"})])
    # What litellm makes of a stream that failed after its 200: a finish, nothing else.
    with pytest.raises(TruncatedStream, match="carried no answer"):
        record_from_chunks([_chunk({}, "stop"), {"choices": []}])
    assert is_infra_error(TruncatedStream("x"))


def test_direct_transport_errors_classify_like_litellms() -> None:
    from multidict import CIMultiDict

    from evalrunner.proxy._direct import UpstreamConnectionError, UpstreamHTTPError, UpstreamTimeout

    limited = UpstreamHTTPError(429, "slow down", CIMultiDict({"Retry-After": "3"}))
    assert is_infra_error(limited) and retry_after(limited) == 3.0
    assert is_infra_error(UpstreamHTTPError(502, "bad gateway", {}))
    assert not is_infra_error(UpstreamHTTPError(400, "context window", {}))
    assert is_infra_error(UpstreamConnectionError("reset")) and is_infra_error(UpstreamTimeout("t"))
    http, infra = upstream_failure(UpstreamTimeout("t"), InfraLog(None))
    assert infra and http.status == 504


def test_the_direct_transport_needs_an_endpoint() -> None:
    with pytest.raises(ConfigError, match="needs an OpenAI-compatible endpoint"):
        Upstream("openai/gpt-4o", direct=True)
    assert Upstream("local", direct=True).direct  # resolved to the embedded server later


def test_a_live_endpoint_becomes_an_upstream() -> None:
    local = Upstream.from_endpoint(
        Endpoint("local", "openai/smollm2", "http://127.0.0.1:1/v1", "k")
    )
    assert local.llama_cpp and local.name == "local" and local.api_key == "k"
    hosted = Upstream.from_endpoint(Endpoint("openai/gpt-4o", "openai/gpt-4o"))
    assert not hosted.llama_cpp and hosted.name == "openai/gpt-4o"


@pytest.mark.parametrize(
    "message",
    [
        "Requested tokens (12045) exceed context window of 4096",  # llama-cpp-python
        "the request exceeds the available context size, try increasing it",  # llama.cpp
        "This model's maximum context length is 8192 tokens.",  # OpenAI
        "prompt is too long: 210000 tokens > 200000 maximum",  # Anthropic
    ],
)
def test_a_context_window_refusal_on_the_direct_transport_is_named_as_litellm_names_it(
    message: str,
) -> None:
    """Recordings keep the error's class name: the same on both transports, and the run is
    classified as the model overrunning its window (skipped), not as the agent failing."""
    from evalrunner.core._faults import context_window_exceeded
    from evalrunner.proxy._direct import _error

    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    exc = _error(400, body, {})
    assert type(exc).__name__ == "ContextWindowExceededError"
    assert context_window_exceeded(exc) is exc
    assert type(_error(400, '{"error": {"message": "bad tool schema"}}', {})).__name__ == (
        "UpstreamHTTPError"
    )
