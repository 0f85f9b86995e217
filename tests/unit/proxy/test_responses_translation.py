"""Responses API requests become chat requests (function_call items merge into one
assistant message, outputs become tool messages, previous_response_id continues a
conversation of this run), and records become response objects and events."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.proxy._request import ProxyHTTPError
from evalrunner.proxy._responses import parse_responses, response_events, response_object


def no_history(response_id: str) -> list[dict[str, Any]] | None:
    return None


def test_input_items_become_chat_messages() -> None:
    body = {
        "model": "gpt-x",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Capitals?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"c":"FR"}'},
            {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": '{"c":"JP"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "Paris"},
            {"type": "function_call_output", "call_id": "c2", "output": "Tokyo"},
        ],
        "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "lookup"},
        "max_output_tokens": 50,
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
        "store": True,
        "user": "u-9",
    }
    incoming = parse_responses(body, no_history)
    req = incoming.request
    assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert req.messages[1]["content"] == "Capitals?"
    assert [c["id"] for c in req.messages[2]["tool_calls"]] == ["c1", "c2"]
    assert req.messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "Paris"}
    assert req.tools == [
        {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    ]
    assert req.tool_choice == {"type": "function", "function": {"name": "lookup"}}
    assert req.params == {
        "max_tokens": 50,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "out", "schema": {"type": "object"}},
        },
    }
    assert incoming.history_from == 1  # the instructions are not carried to a continuation


def test_previous_response_id_continues_this_runs_conversation() -> None:
    earlier = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    history = {"resp_evalrunner_1": earlier}.get
    req = parse_responses(
        {"previous_response_id": "resp_evalrunner_1", "input": "more"}, history
    ).request
    assert req.messages == [*earlier, {"role": "user", "content": "more"}]
    with pytest.raises(ProxyHTTPError, match="unknown to this run"):
        parse_responses({"previous_response_id": "resp_other", "input": "x"}, no_history)


@pytest.mark.parametrize(
    "body",
    [
        {"input": 3},
        {"input": "x", "tools": [{"type": "web_search"}]},
        {"input": [{"type": "computer_call_output", "call_id": "c"}]},
        {"input": [{"role": "tool", "content": "x"}]},
    ],
)
def test_unsupported_features_are_a_400_naming_them(body: dict[str, Any]) -> None:
    with pytest.raises(ProxyHTTPError) as raised:
        parse_responses(body, no_history)
    assert raised.value.status == 400


RECORD = ResponseRecord(
    content="Checking.",
    tool_calls=[ToolCallRecord(id="call_1", name="lookup", arguments='{"c":"FR"}')],
    finish_reason="tool_calls",
    model="m-up",
)


def test_a_record_becomes_a_response_with_message_and_function_call_items() -> None:
    response = response_object(RECORD, 4, "gpt-x")
    assert response["id"] == "resp_evalrunner_4" and response["status"] == "completed"
    assert [i["type"] for i in response["output"]] == ["message", "function_call"]
    assert response["output"][1]["call_id"] == "call_1"
    truncated = response_object(RECORD.model_copy(update={"finish_reason": "length"}), 4, "m")
    assert truncated["status"] == "incomplete"


def test_the_events_are_numbered_and_end_with_the_completed_response() -> None:
    events = response_events(RECORD, 4, "gpt-x")
    assert [e.data["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0].name == "response.created" and events[-1].name == "response.completed"
    assert events[-1].data["response"] == response_object(RECORD, 4, "gpt-x") | {
        "created_at": events[-1].data["response"]["created_at"]
    }
    deltas = [e.data["delta"] for e in events if str(e.name).endswith(".delta")]
    assert deltas == ["Checking.", '{"c":"FR"}']
