"""Replay matches what decides the answer and ignores what varies between two
identical runs; both are configurable."""

from __future__ import annotations

from typing import Any

from evalrunner.core._request_key import DEFAULT_FINGERPRINT, matching_view, request_key
from evalrunner.proxy._chat import parse_chat

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def body(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_AAA",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"c": "FR"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_AAA", "content": "Paris"},
        ],
        "tools": TOOLS,
    }
    return {**base, **over}


def fp(b: dict[str, Any], config: Any = DEFAULT_FINGERPRINT) -> str:
    return request_key(matching_view(parse_chat(b).request.replayed_as(), config))


def test_ids_user_metadata_streaming_and_sampling_do_not_count() -> None:
    messages = body()["messages"]
    renamed = [dict(m) for m in messages]
    renamed[2] = {
        **messages[2],
        "content": "",
        "tool_calls": [
            {
                "id": "call_ZZZ",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"c":"FR"}'},
            }
        ],
    }
    renamed[3] = {**messages[3], "tool_call_id": "call_ZZZ"}
    variant = body(
        model="other-model",
        messages=renamed,
        user="u-2",
        metadata={"run": "7"},
        stream=True,
        stream_options={"include_usage": True},
        temperature=0.2,
        seed=4,
        max_tokens=12,
    )
    assert fp(variant) == fp(body())


def test_prompt_caching_hints_do_not_count() -> None:
    """Issue 53, row 17: the proxy now carries ``cache_control``; a recording made before it
    did (or with a breakpoint elsewhere) still answers the same request."""
    from evalrunner.proxy._anthropic import parse_anthropic

    def anthropic_fp(cache: dict[str, Any] | None) -> str:
        hint = {"cache_control": cache} if cache else {}
        request = parse_anthropic(
            {
                "model": "claude-x",
                "max_tokens": 64,
                "system": [{"type": "text", "text": "Long rules.", **hint}],
                "tools": [{"name": "lookup", "input_schema": {"type": "object"}, **hint}],
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "A document.", **hint},
                            {"type": "image", "source": {"type": "url", "url": "u"}, **hint},
                        ],
                    }
                ],
            }
        ).request
        return request_key(matching_view(request.replayed_as()))

    assert anthropic_fp({"type": "ephemeral"}) == anthropic_fp(None)


def test_content_tools_and_tool_choice_count() -> None:
    base = fp(body())
    assert fp(body(tool_choice="required")) != base
    assert fp(body(tools=[])) != base
    changed = body()
    changed["messages"][3] = {**changed["messages"][3], "content": "Lyon"}
    assert fp(changed) != base


def test_the_fields_are_configurable() -> None:
    with_temperature = DEFAULT_FINGERPRINT.extended(include=["temperature"])
    assert fp(body(temperature=0.1), with_temperature) != fp(
        body(temperature=0.9), with_temperature
    )
    without_tools = DEFAULT_FINGERPRINT.extended(ignore=["tools"])
    assert fp(body(tools=[]), without_tools) == fp(body(), without_tools)
    dated = DEFAULT_FINGERPRINT.extended(masks=[(r"\d{4}-\d{2}-\d{2}", "<date>")])
    today = body(messages=[{"role": "system", "content": "Today is 2025-01-02."}])
    tomorrow = body(messages=[{"role": "system", "content": "Today is 2025-01-03."}])
    assert fp(today, dated) == fp(tomorrow, dated) and fp(today) != fp(tomorrow)


def test_a_secret_in_the_prompt_matches_its_redacted_recording() -> None:
    secret = body(messages=[{"role": "user", "content": "key sk-abcdefghijklmnop0123456789"}])
    redacted = body(messages=[{"role": "user", "content": "key [REDACTED]"}])
    assert fp(secret) == fp(redacted)
