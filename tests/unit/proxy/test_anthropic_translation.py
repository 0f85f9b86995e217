"""Anthropic Messages requests become chat requests (tool_use -> tool_calls,
tool_result -> tool messages joined by id), and records become Anthropic messages
and the SSE events the SDK accumulates. Upstream, chat requests become the
Anthropic bodies litellm's own translation makes (the reference, imported in the
tests only), and Anthropic answers become records."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalrunner.core._faults import NoUsableChoice
from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.proxy._anthropic import anthropic_events, anthropic_message, parse_anthropic
from evalrunner.proxy._anthropic_upstream import (
    default_max_tokens,
    messages_body,
    record_from_message,
    why_litellm,
)
from evalrunner.proxy._request import ModelRequest, ProxyHTTPError

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
            # Signed by the provider, sent back as given (issue 53, row 17).
            "thinking_blocks": [{"type": "thinking", "thinking": "hmm", "signature": "s"}],
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


def test_cache_breakpoints_thinking_and_top_k_are_carried_not_dropped() -> None:
    """Issue 53, row 17: they were dropped on the way upstream (live runs lost prompt
    caching) or refused (thinking), so such agents could not be recorded."""
    cache = {"type": "ephemeral"}
    assistant_turn: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
    ]
    body: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "top_k": 5,
        "system": [{"type": "text", "text": "Long rules.", "cache_control": cache}],
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": cache}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "A long document.", "cache_control": cache},
                    {"type": "text", "text": "Capital of Peru?"},
                ],
            },
            {"role": "assistant", "content": assistant_turn},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "Lima",
                        "cache_control": cache,
                    }
                ],
            },
        ],
    }
    request = parse_anthropic(body).request
    assert request.params == {
        "max_tokens": 4096,
        "top_k": 5,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    assert request.tools[0]["cache_control"] == cache
    system, user, assistant, tool = request.messages
    assert system["content"] == [{"type": "text", "text": "Long rules.", "cache_control": cache}]
    assert user["content"][0] == {
        "type": "text",
        "text": "A long document.",
        "cache_control": cache,
    }
    assert assistant["thinking_blocks"] == [assistant_turn[0]]
    assert tool == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": "Lima",
        "cache_control": cache,
    }
    # And back to Anthropic, as the agent sent it.
    sent = messages_body({**request.chat_kwargs()}, "claude-x")
    assert sent["system"] == body["system"] and sent["tools"] == body["tools"]
    assert sent["thinking"] == body["thinking"] and sent["top_k"] == 5
    assert [m["content"] for m in sent["messages"]] == [m["content"] for m in body["messages"]]


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
    # The record counts cache reads into the prompt (as litellm); Anthropic's input_tokens
    # are the rest, so an agent pricing its call reads what the provider said.
    assert message["usage"] == {
        "input_tokens": 26,
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


# --- upstream: chat requests sent to an Anthropic model, and its answers ------------------

CACHE = {"type": "ephemeral"}
LOOKUP_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "The capital of a country.",
        "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
    },
}
TOOL_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "Capitals of Peru and Chad?"},
    {
        "role": "assistant",
        "content": "Looking both up.",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": a}}
            for i, a in enumerate(['{"country": "Peru"}', '{"country": "Chad"}'])
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "Lima"},
    {"role": "tool", "tool_call_id": "c1", "content": "N'Djamena"},
]
CHAT_REQUESTS: dict[str, dict[str, Any]] = {
    "plain": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50},
    "systems, an image, a tool turn, a later user turn": {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Use tools."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
            *TOOL_TURN,
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [LOOKUP_TOOL],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": "END",
        "seed": 7,
    },
    "required, one at a time": {
        "messages": TOOL_TURN,
        "tools": [LOOKUP_TOOL],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "max_completion_tokens": 300,
    },
    "a named tool, stop list": {
        "messages": [{"role": "user", "content": "Peru?"}],
        "tools": [LOOKUP_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "stop": ["A", "B"],
    },
    "blank text beside tool calls, an empty tool result": {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "\n", "tool_calls": TOOL_TURN[1]["tool_calls"]},
            {"role": "tool", "tool_call_id": "c0", "content": ""},
            {"role": "tool", "tool_call_id": "c1", "content": "N'Djamena"},
        ],
        "tools": [LOOKUP_TOOL],
    },
    "blank and empty turns, a final assistant turn with a trailing blank": {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": " "}, {"type": "text", "text": "x"}],
            },
            {"role": "assistant", "content": "  "},
            {"role": "user", "content": ""},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "Sure "},
        ],
    },
    "a tool result of parts with an image": {
        "messages": [
            *TOOL_TURN[:2],
            {
                "role": "tool",
                "tool_call_id": "c0",
                "content": [
                    {"type": "text", "text": "line1"},
                    {"type": "text", "text": "line2"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "N'Djamena"},
        ],
        "tools": [LOOKUP_TOOL],
    },
    "a system prompt of parts, and one mid-conversation": {
        "messages": [
            {
                "role": "system",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "ok"},
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "more"},
        ],
    },
    "no tools wanted, one at a time": {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [LOOKUP_TOOL],
        "tool_choice": "none",
        "parallel_tool_calls": False,
    },
    # Issue 53, row 17: what an Anthropic agent asked for beyond a chat request reaches
    # Anthropic as litellm's translation sends it (cache breakpoints, thinking).
    "cache breakpoints on system, user, tool result and tool": {
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "Long rules.", "cache_control": CACHE},
                    {"type": "text", "text": "Short."},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "A long document.", "cache_control": CACHE},
                    {"type": "text", "text": "Capitals of Peru and Chad?"},
                ],
            },
            TOOL_TURN[1],
            {"role": "tool", "tool_call_id": "c0", "content": "Lima", "cache_control": CACHE},
            TOOL_TURN[3],
        ],
        "tools": [{**LOOKUP_TOOL, "cache_control": CACHE}],
    },
    "extended thinking, its signed blocks in the history": {
        "messages": [
            TOOL_TURN[0],
            {
                **TOOL_TURN[1],
                "thinking_blocks": [
                    {"type": "thinking", "thinking": "Peru first.", "signature": "c2lnbmVk"},
                    {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                ],
            },
            *TOOL_TURN[2:],
        ],
        "tools": [LOOKUP_TOOL],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "max_tokens": 4096,
    },
    "an image by URL": {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
            }
        ],
    },
}


def _litellm_body(kwargs: dict[str, Any], model: str) -> dict[str, Any]:
    """litellm's own translation of the same chat request (the reference)."""
    from evalrunner._litellm import import_litellm

    import_litellm()
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    config = AnthropicConfig()
    params = {k: v for k, v in kwargs.items() if k != "messages"}
    optional = config.map_openai_params(params, {}, model, drop_params=True)
    return dict(config.transform_request(model, kwargs["messages"], optional, {}, {}))


def _without_tool_types(body: dict[str, Any]) -> dict[str, Any]:
    # litellm marks client tools "type": "custom", Anthropic's default when left out.
    tools = [{k: v for k, v in t.items() if k != "type"} for t in body.get("tools", [])]
    return {**body, **({"tools": tools} if tools else {})}


@pytest.mark.parametrize("name", list(CHAT_REQUESTS))
@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-unknown-to-litellm"])
def test_a_chat_request_reaches_anthropic_as_litellm_would_send_it(name: str, model: str) -> None:
    kwargs = CHAT_REQUESTS[name]
    ours = messages_body(kwargs, model)
    theirs = _without_tool_types(_litellm_body(kwargs, model))
    assert ours == theirs


def test_the_default_token_cap_is_the_models_own_as_in_litellm() -> None:
    assert default_max_tokens("claude-sonnet-4-5") == 64_000
    assert default_max_tokens("claude-unknown-to-litellm") == 128_000


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"params": {"response_format": {"type": "json_object"}}}, "response_format"),
        ({"params": {"reasoning_effort": "low", "seed": 1}}, "reasoning_effort"),
        (
            {"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]},
            "file content",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "input_audio content",
        ),
        ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools other than functions"),
    ],
)
def test_what_only_litellm_translates_is_named(change: dict[str, Any], why: str) -> None:
    plain = ModelRequest(api="chat", messages=[{"role": "user", "content": "hi"}])
    assert why_litellm(plain) is None
    assert why_litellm(plain.model_copy(update=change)) == why


def test_an_anthropic_answer_becomes_the_record_litellm_would_make() -> None:
    message: dict[str, Any] = {
        "type": "message",
        "model": "claude-x-1",
        "content": [
            {"type": "thinking", "thinking": "Peru first.", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"country": "Peru"}},
        ],
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 5,
            "cache_read_input_tokens": 20,
            "output_tokens": 7,
        },
    }
    record = record_from_message(message)
    assert record == ResponseRecord(
        content="Looking.",
        reasoning="Peru first.",
        tool_calls=[ToolCallRecord(id="toolu_1", name="lookup", arguments='{"country": "Peru"}')],
        finish_reason="tool_calls",
        # litellm counts cache writes and reads into the prompt, reads as cached; the
        # writes are kept too (issue 53, row 17: they were dropped).
        usage=Usage(prompt_tokens=35, completion_tokens=7, cached_tokens=20, cache_write_tokens=5),
        model="claude-x-1",
        thinking_blocks=[{"type": "thinking", "thinking": "Peru first.", "signature": "sig"}],
    )
    # Handed back to an Anthropic agent as the provider said it, signature and cache included.
    again = anthropic_message(record, 1, "claude-x")
    assert again["content"] == message["content"]
    assert again["usage"] == message["usage"]
    capped = record_from_message({**message, "content": [], "stop_reason": "max_tokens"})
    assert (capped.content, capped.finish_reason) == (None, "length")
    text_only = {**message, "content": message["content"][:2]}
    for stop in ("pause_turn", "model_context_window_exceeded"):  # as litellm maps them
        assert record_from_message({**text_only, "stop_reason": stop}).finish_reason == "length"
    no_cache = {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0}
    assert record_from_message({**message, "usage": no_cache}).usage.cached_tokens is None
    odd = {"type": "tool_use", "input": {"a": 1}}  # a gateway that lost the id and name
    assert record_from_message({**message, "content": [odd]}).tool_calls[0].id == ""


@pytest.mark.parametrize(
    "body", [{"type": "error", "error": {"message": "overloaded"}}, {"content": "x"}, [], None]
)
def test_an_answer_that_is_no_anthropic_message_is_an_endpoint_fault(body: Any) -> None:
    with pytest.raises(NoUsableChoice):
        record_from_message(body)
