"""OpenInference's flattened attributes read as GenAI's: orders, parts and kinds beyond
what one instrumentor's spans show (tests/integration/test_openinference.py has those)."""

from __future__ import annotations

import json

from evalrunner.core._openinference import KIND, as_genai


def test_messages_and_tools_keep_their_order_past_ten() -> None:
    attrs: dict[str, object] = {KIND: "LLM", "llm.model_name": "m"}
    for i in range(12):
        attrs[f"llm.input_messages.{i}.message.role"] = "user"
        attrs[f"llm.input_messages.{i}.message.content"] = f"q{i}"
        attrs[f"llm.tools.{i}.tool.json_schema"] = json.dumps({"name": f"t{i}"})
    read = as_genai(attrs, "ChatCompletion")
    sent = json.loads(str(read["gen_ai.input.messages"]))
    assert [m["parts"][0]["content"] for m in sent] == [f"q{i}" for i in range(12)]
    assert [t["name"] for t in json.loads(str(read["gen_ai.tool.definitions"]))] == [
        f"t{i}" for i in range(12)
    ]
    assert read["gen_ai.operation.name"] == "chat" and read["gen_ai.request.model"] == "m"
    assert not any(k.startswith("llm.input_messages") for k in read)


def test_a_message_of_content_parts_keeps_its_texts_and_tool_calls() -> None:
    prefix = "llm.output_messages.0.message"
    attrs = {
        KIND: "LLM",
        f"{prefix}.role": "assistant",
        f"{prefix}.contents.0.message_content.type": "text",
        f"{prefix}.contents.0.message_content.text": "Looking ",
        f"{prefix}.contents.1.message_content.type": "image",
        f"{prefix}.contents.1.message_content.text": "(not text)",
        f"{prefix}.contents.2.message_content.text": "it up.",
        f"{prefix}.tool_calls.0.tool_call.id": "c1",
        f"{prefix}.tool_calls.0.tool_call.function.name": "lookup",
        f"{prefix}.tool_calls.0.tool_call.function.arguments": '{"country": "France"}',
    }
    [message] = json.loads(str(as_genai(attrs, "llm")["gen_ai.output.messages"]))
    assert message["parts"] == [
        {"type": "text", "content": "Looking it up."},
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": '{"country": "France"}'},
    ]


def test_only_openinference_s_model_tool_and_agent_spans_are_read() -> None:
    chain = {KIND: "CHAIN", "input.value": "x"}
    assert as_genai(chain, "step") is chain
    genai = {KIND: "LLM", "gen_ai.operation.name": "chat", "llm.model_name": "m"}
    assert as_genai(genai, "chat") is genai  # says its GenAI operation itself
    plain = {"http.method": "GET"}
    assert as_genai(plain, "GET") is plain
    tool = as_genai({KIND: "tool", "input.value": "{}", "output.value": "ok"}, "lookup")
    assert tool == {
        KIND: "tool",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": "ok",
    }
    agent = as_genai({KIND: "AGENT", "agent.name": "planner"}, "run")
    assert agent["gen_ai.agent.name"] == "planner"


def test_what_is_not_read_stays_for_extra() -> None:
    attrs = {
        KIND: "LLM",
        "llm.input_messages.0.message.role": "tool",
        "llm.input_messages.0.message.content": "Paris",
        "llm.input_messages.0.message.tool_call_id": "c1",
        "llm.input_messages.0.message.name": "lookup",
        "llm.token_count.prompt": 10,
        "llm.token_count.total": 12,
        "llm.tools.0.tool.json_schema": "{}",
        "llm.tools.0.tool.description": "finds capitals",
    }
    read = as_genai(attrs, "ChatCompletion")
    assert {k for k in read if not k.startswith("gen_ai.")} == {
        KIND,
        "llm.input_messages.0.message.name",
        "llm.token_count.total",
        "llm.tools.0.tool.description",
    }
    [sent] = json.loads(str(read["gen_ai.input.messages"]))
    assert sent["parts"] == [{"type": "tool_call_response", "id": "c1", "response": "Paris"}]
