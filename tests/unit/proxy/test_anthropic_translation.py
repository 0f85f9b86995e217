"""Anthropic Messages requests become chat requests (tool_use -> tool_calls,
tool_result -> tool messages joined by id), and records become Anthropic messages
and the SSE events the SDK accumulates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.proxy._anthropic import anthropic_events, anthropic_message, parse_anthropic
from evalrunner.proxy._request import ProxyHTTPError

BODY: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 100,
    "system": [{"type": "text", "text": "Be brief."}],
    "metadata": {"user_id": "u-1"},
    "stop_sequences": ["END"],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    "tools": [{"name": "lookup", "description": "Find.", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Capital of France?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"c": "FR"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "Paris"}],
                },
                {"type": "text", "text": "And?"},
            ],
        },
    ],
}


def test_a_messages_request_becomes_a_chat_request() -> None:
    incoming = parse_anthropic(BODY)
    req = incoming.request
    assert req.api == "anthropic" and incoming.model == "claude-x" and incoming.include_usage
    assert req.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"c": "FR"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Paris"},
        {"role": "user", "content": "And?"},
    ]
    assert req.tools == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object"},
                "description": "Find.",
            },
        }
    ]
    assert req.tool_choice == "required"
    assert req.params == {"max_tokens": 100, "stop": ["END"], "parallel_tool_calls": False}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "lookup"}, {"type": "function", "function": {"name": "lookup"}}),
        (None, None),
    ],
)
def test_tool_choice_maps_onto_chat(choice: Any, expected: Any) -> None:
    body = {**BODY, "tool_choice": choice}
    assert parse_anthropic(body).request.tool_choice == expected


@pytest.mark.parametrize(
    "bad",
    [
        {"messages": "hi"},
        {"messages": [{"role": "system", "content": "x"}]},
        {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
        {"messages": [], "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
    ],
)
def test_what_the_proxy_cannot_carry_is_a_400_naming_it(bad: dict[str, Any]) -> None:
    with pytest.raises(ProxyHTTPError) as raised:
        parse_anthropic(bad)
    assert raised.value.status == 400


RECORD = ResponseRecord(
    content="Let me check.",
    tool_calls=[ToolCallRecord(id="call_9", name="lookup", arguments='{"c": "JP"}')],
    finish_reason="tool_calls",
    usage=Usage(prompt_tokens=30, completion_tokens=9, cached_tokens=4),
    model="upstream-model",
)


def test_a_record_becomes_an_anthropic_message() -> None:
    message = anthropic_message(RECORD, 3, "claude-x")
    assert message["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "call_9", "name": "lookup", "input": {"c": "JP"}},
    ]
    assert message["stop_reason"] == "tool_use" and message["model"] == "upstream-model"
    assert message["usage"] == {
        "input_tokens": 30,
        "output_tokens": 9,
        "cache_read_input_tokens": 4,
    }
    broken = RECORD.model_copy(
        update={"tool_calls": [ToolCallRecord(id="c", name="f", arguments="{oops")]}
    )
    assert anthropic_message(broken, 1, "m")["content"][1]["input"] == {}


def test_the_events_rebuild_the_same_message() -> None:
    events = anthropic_events(RECORD, 3, "claude-x")
    names = [e.name for e in events]
    assert names == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_stop"] * 2,
        "message_delta",
        "message_stop",
    ]
    assert all(e.data["type"] == e.name for e in events)
    text = events[2].data["delta"]["text"]
    args = json.loads(events[5].data["delta"]["partial_json"])
    assert (text, args) == ("Let me check.", {"c": "JP"})
    assert events[-2].data["delta"]["stop_reason"] == "tool_use"
