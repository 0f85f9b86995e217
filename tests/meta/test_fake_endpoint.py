"""The fake endpoint speaks enough OpenAI for real litellm calls, and its faults map
onto the litellm exceptions the live runner has to classify."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import litellm
import pytest
from fake_endpoint import FakeEndpoint, Fault, Reply, most_in_flight

litellm.suppress_debug_info = True

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a country up.",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
        },
    }
]


def complete(ep: FakeEndpoint, **kwargs: Any) -> Any:
    kwargs.setdefault("messages", MESSAGES)
    kwargs.setdefault("num_retries", 0)
    kwargs.setdefault("timeout", 5)
    return litellm.completion(model="openai/fake", api_base=ep.api_base, api_key="x", **kwargs)


def test_plain_reply_with_usage_and_ids() -> None:
    with FakeEndpoint([Reply("Paris.", prompt_tokens=10, completion_tokens=5)]) as ep:
        response = complete(ep)
    assert response.choices[0].message.content == "Paris."
    assert response.choices[0].finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (10, 5)
    assert response.id.startswith("chatcmpl-")
    assert ep.requests[0]["model"] == "fake"
    assert ep.requests[0]["messages"] == MESSAGES
    assert ep.hits["POST /v1/chat/completions"] == 1


def test_tool_call_reply_is_parsed_by_litellm() -> None:
    with FakeEndpoint(
        [Reply(None, tool_calls=[("lookup", '{"x": 1}'), ("lookup", '{"x": 2}')])]
    ) as ep:
        response = complete(ep, tools=TOOLS, tool_choice="auto")
    message = response.choices[0].message
    assert response.choices[0].finish_reason == "tool_calls"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("lookup", {"x": 1}),
        ("lookup", {"x": 2}),
    ]
    ids = [c.id for c in message.tool_calls]
    assert all(i.startswith("call_") and len(i) == 29 for i in ids) and len(set(ids)) == 2
    assert ep.requests[0]["tools"] == TOOLS and ep.requests[0]["tool_choice"] == "auto"


def test_stream_is_reassembled() -> None:
    text = "Paris is the capital of France, and this sentence spans many chunks."
    script = [
        Reply(text, prompt_tokens=7, completion_tokens=13),
        Reply(None, tool_calls=[("lookup", '{"x": 1, "note": "arguments split over chunks"}')]),
    ]
    with FakeEndpoint(script) as ep:
        chunks = list(complete(ep, stream=True, stream_options={"include_usage": True}))
        tool_chunks = list(complete(ep, stream=True, tools=TOOLS, tool_choice="auto"))
    assert len(chunks) > 3
    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    assert built.choices[0].message.content == text
    assert (built.usage.prompt_tokens, built.usage.completion_tokens) == (7, 13)
    call = (
        litellm.stream_chunk_builder(tool_chunks, messages=MESSAGES)
        .choices[0]
        .message.tool_calls[0]
    )
    assert call.function.name == "lookup"
    assert json.loads(call.function.arguments) == {"x": 1, "note": "arguments split over chunks"}


def test_script_then_responder_then_default() -> None:
    def echo_last(request: dict[str, Any], n: int) -> Reply | Fault:
        return Reply(f"{n}: {request['messages'][-1]['content']}")

    with FakeEndpoint([Reply("scripted")], responder=echo_last) as ep:
        answers = [complete(ep, messages=[{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    assert [a.choices[0].message.content for a in answers] == ["scripted", "1: q1", "2: q2"]

    with FakeEndpoint(default=Reply("fallback")) as ep:
        assert complete(ep).choices[0].message.content == "fallback"
        ep.enqueue(Reply("queued later"))
        assert complete(ep).choices[0].message.content == "queued later"
        assert ep.remaining == 0


def test_models_listing_and_hit_counts() -> None:
    with FakeEndpoint(models=("a", "b")) as ep:
        with urllib.request.urlopen(f"{ep.api_base}/models", timeout=5) as response:
            listing = json.load(response)
        assert [m["id"] for m in listing["data"]] == ["a", "b"]
        assert ep.hits == {"GET /v1/models": 1}
        assert ep.requests == []


# What the live runner sees from litellm (1.110) for each fault, streaming or not.
FAULTS = [
    (Fault("429", retry_after=1), False, litellm.RateLimitError),
    (Fault("429", retry_after=1), True, litellm.RateLimitError),
    (Fault("500"), False, litellm.InternalServerError),
    (Fault("500"), True, litellm.InternalServerError),
    (Fault("503"), False, litellm.ServiceUnavailableError),
    (Fault("503"), True, litellm.ServiceUnavailableError),
    (Fault("400"), False, litellm.BadRequestError),
    (Fault("401"), False, litellm.AuthenticationError),
    (Fault("slow", seconds=5), False, litellm.Timeout),
    (Fault("slow", seconds=5), True, litellm.Timeout),
    # A dropped connection surfaces as InternalServerError("Connection error."),
    # not as litellm.APIConnectionError.
    (Fault("reset"), False, litellm.InternalServerError),
    (Fault("reset"), True, litellm.InternalServerError),
    (Fault("malformed"), False, litellm.InternalServerError),
    # Mid-stream failures raise while iterating; MidStreamFallbackError subclasses
    # ServiceUnavailableError.
    (Fault("malformed"), True, litellm.exceptions.MidStreamFallbackError),
    (Fault("truncated_stream"), False, litellm.InternalServerError),
    (Fault("truncated_stream"), True, litellm.exceptions.MidStreamFallbackError),
    # Nothing is ever sent: only a client timeout ends these.
    (Fault("hang"), False, litellm.Timeout),
    (Fault("hang"), True, litellm.Timeout),
    (Fault("stall_stream"), False, litellm.Timeout),
    (Fault("stall_stream"), True, litellm.Timeout),
    (Fault("stream_error"), False, litellm.InternalServerError),
    (Fault("stream_error"), True, litellm.exceptions.MidStreamFallbackError),
    # A stream without a single choice breaks in litellm; a plain response without one
    # does not (test_empty_choices_reach_the_agent_without_an_exception).
    (Fault("empty_choices"), True, litellm.exceptions.MidStreamFallbackError),
]


@pytest.mark.parametrize(
    ("fault", "stream", "expected"),
    FAULTS,
    ids=[f"{f.kind}-{'stream' if s else 'plain'}" for f, s, _ in FAULTS],
)
def test_fault_raises_litellm_exception(
    fault: Fault, stream: bool, expected: type[Exception]
) -> None:
    with FakeEndpoint([fault]) as ep:
        started = time.monotonic()
        with pytest.raises(expected):
            response = complete(ep, stream=stream, timeout=0.5)
            if stream:
                list(response)
        elapsed = time.monotonic() - started
    assert len(ep.requests) == 1  # num_retries=0 also stops the openai SDK's own retries
    assert elapsed < 3


def test_empty_choices_reach_the_agent_without_an_exception() -> None:
    # What makes it an endpoint fault only our transport can catch: litellm hands it over.
    with FakeEndpoint([Fault("empty_choices")]) as ep:
        response = complete(ep)
    assert response.choices == []


def test_a_hung_request_notes_when_the_client_gave_up() -> None:
    with FakeEndpoint([Fault("hang")]) as ep:
        with pytest.raises(litellm.Timeout):
            complete(ep, timeout=0.3)
        deadline = time.monotonic() + 5
        while not ep.abandoned and time.monotonic() < deadline:
            time.sleep(0.01)
    assert ep.abandoned == 1 and 0.2 < ep.abandoned_after[0] < 3


def test_retry_after_header_is_sent() -> None:
    with FakeEndpoint([Fault("429", retry_after=2)]) as ep:
        request = urllib.request.Request(
            f"{ep.api_base}/chat/completions",
            data=b'{"model": "fake", "messages": []}',
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 429
    assert info.value.headers["Retry-After"] == "2"
    assert json.load(info.value)["error"]["type"] == "rate_limit_error"


def test_litellm_retries_past_a_transient_fault() -> None:
    with FakeEndpoint([Fault("503"), Reply("recovered")]) as ep:
        response = complete(ep, num_retries=1)
    assert response.choices[0].message.content == "recovered"
    assert len(ep.requests) == 2


def test_concurrent_requests_overlap() -> None:
    """32 requests at 200 ms latency finish together, not one after another."""
    results: list[int] = []

    def post(url: str) -> None:
        body = json.dumps({"model": "fake", "messages": MESSAGES}).encode()
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            results.append(response.status)

    with FakeEndpoint(latency=0.2) as ep:
        url = f"{ep.api_base}/chat/completions"
        threads = [threading.Thread(target=post, args=(url,)) for _ in range(32)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    assert results == [200] * 32
    assert len(ep.requests) == 32
    assert elapsed < 1.5, f"32 requests took {elapsed:.2f}s; the server serialises them"


def test_unknown_fault_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("timeout")


ASK: Any = MESSAGES  # the Anthropic SDK's message type


def _claude(ep: FakeEndpoint, **kwargs: Any) -> Any:
    import anthropic

    client = anthropic.Anthropic(base_url=ep.api_base.removesuffix("/v1"), api_key="x")
    return client.with_options(max_retries=0).messages.create(
        model="claude-fake", max_tokens=50, messages=ASK, **kwargs
    )


def test_anthropic_messages_are_served_to_the_anthropic_sdk() -> None:
    import anthropic

    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    script: list[Reply | Fault] = [
        Reply("Paris."),
        Reply(None, tool_calls=[("lookup", '{"x": 1}')]),
        Fault("529"),
    ]
    with FakeEndpoint(script) as ep:
        text = _claude(ep)
        call = _claude(ep, tools=tools)
        with pytest.raises(anthropic.APIStatusError) as raised:
            _claude(ep)
    assert [b.text for b in text.content] == ["Paris."] and text.stop_reason == "end_turn"
    assert [(b.name, b.input) for b in call.content] == [("lookup", {"x": 1})]
    assert call.stop_reason == "tool_use" and call.usage.output_tokens > 0
    body: Any = raised.value.body
    assert raised.value.status_code == 529 and body["error"]["type"] == "api_error"
    assert ep.hits == {"POST /v1/messages": 3}


def test_an_anthropic_stream_is_accumulated_by_the_sdk() -> None:
    import anthropic

    tool = ("lookup", '{"country": "a long country name"}')
    with FakeEndpoint([Reply("A long answer, in pieces.", tool_calls=[tool])]) as ep:
        client = anthropic.Anthropic(base_url=ep.api_base.removesuffix("/v1"), api_key="x")
        with client.messages.stream(model="m", max_tokens=50, messages=ASK) as events:
            message = events.get_final_message()
    assert message.content[0].text == "A long answer, in pieces."  # type: ignore[union-attr]
    assert message.content[1].input == {"country": "a long country name"}  # type: ignore[union-attr]


def test_requests_in_flight_count_one_instant_not_every_overlap() -> None:
    # CI's data from a two-slot stand-in: c and e ran one after the other, each beside d.
    # Counting d's overlaps said 3 and failed the slots test; two were ever in flight.
    c, d, e = (0.775, 0.875), (0.784, 0.884), (0.880, 0.984)
    assert most_in_flight([c, d, e]) == 2
    assert most_in_flight([(0.0, 1.0), (0.1, 1.1), (0.2, 1.2)]) == 3
    assert most_in_flight([(0.0, 1.0), (1.0, 2.0)]) == 1
