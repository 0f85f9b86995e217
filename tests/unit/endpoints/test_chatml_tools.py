"""The prebuilt engine's chat format: tool calls out of a ChatML model by constrained steps.

A scripted model stands in for the engine here (the scheme is pure: prompts and grammars
in, text out); tests/integration/test_local_model.py drives the real one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from evalrunner.endpoints._chatml_tools import (
    Completion,
    RequestError,
    chat,
    stream_chunks,
)

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_capital",
        "parameters": {
            "type": "object",
            "properties": {"country": {"type": "string"}},
            "required": ["country"],
        },
    },
}
ASK = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "Capital of France?"},
]


@dataclass
class Scripted:
    """Answers each completion with the next scripted text; keeps what it was asked."""

    texts: list[str]
    asked: list[dict[str, Any]] = field(default_factory=list)

    def __call__(
        self,
        prompt: str,
        *,
        temperature: float,
        stop: Sequence[str],
        max_tokens: int | None = None,
        grammar: str | None = None,
        json_schema: Mapping[str, Any] | None = None,
        sampling: Mapping[str, float] | None = None,
    ) -> Completion:
        self.asked.append(
            {
                "prompt": prompt,
                "temperature": temperature,
                "stop": list(stop),
                "max_tokens": max_tokens,
                "grammar": grammar,
                "json_schema": json_schema,
                "sampling": dict(sampling or {}),
            }
        )
        return Completion(self.texts.pop(0), prompt_tokens=100, completion_tokens=5)


def test_a_tool_call_is_chosen_greedily_then_its_arguments_decoded_under_its_schema() -> None:
    model = Scripted(["functions.lookup_capital", '{"country": "France"}'])
    request = {"messages": ASK, "tools": [LOOKUP], "temperature": 0.8, "top_p": 0.9}
    answer = chat(request, model, "smollm2")
    route, arguments = model.asked
    # The choice: greedy, between a message and the offered tools.
    assert route["temperature"] == 0.0
    assert '"message:"' in route["grammar"] and '"functions.lookup_capital:"' in route["grammar"]
    assert "functions.lookup_capital:\n" in route["prompt"]  # the tool listed in the system turn
    # The arguments: at the request's temperature, under the schema, closed to its properties.
    assert arguments["prompt"].endswith("functions.lookup_capital:\n")
    assert arguments["temperature"] == 0.8 and arguments["sampling"] == {"top_p": 0.9}
    assert arguments["json_schema"]["additionalProperties"] is False
    assert arguments["json_schema"]["properties"] == {"country": {"type": "string"}}
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [call] = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "lookup_capital", "arguments": '{"country": "France"}'}
    assert call["id"].startswith("call_")
    assert answer["usage"] == {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def test_a_message_is_free_text_bounded_by_max_tokens() -> None:
    # llama-cpp-python held the message to the tool-name grammar: it could only be empty or
    # a tool's name written as text.
    model = Scripted(["message", "Paris."])
    request = {"messages": ASK, "tools": [LOOKUP], "max_tokens": 32}
    answer = chat(request, model, "smollm2")
    _, message = model.asked
    assert message["prompt"].endswith("<|im_start|>assistant\nmessage:\n")
    assert message["grammar"] is None and message["json_schema"] is None
    assert message["max_tokens"] == 32
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Paris."}
    assert answer["choices"][0]["finish_reason"] == "stop"


def test_a_tool_s_result_reaches_the_prompt() -> None:
    # llama-cpp-python's template rendered a tool message's role and dropped its content:
    # the model never saw what its tool returned.
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup_capital", "arguments": '{"country": "France"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris"},
    ]
    model = Scripted(["message", "It is Paris."])
    chat({"messages": history, "tools": [LOOKUP]}, model, "smollm2")
    prompt = model.asked[0]["prompt"]
    assert "functions.lookup_capital:\n{&#34;country&#34;: &#34;France&#34;}<|im_end|>" in prompt
    assert "<|im_start|>tool\nParis<|im_end|>\n<|im_start|>assistant\n" in prompt


def test_without_tools_the_prompt_is_plain_chatml() -> None:
    model = Scripted(["Hello."])
    answer = chat({"messages": [{"role": "user", "content": "Hi"}]}, model, "m")
    assert model.asked[0]["prompt"] == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert answer["choices"][0]["message"]["content"] == "Hello."


def test_required_offers_no_message_and_a_named_tool_is_called_directly() -> None:
    model = Scripted(["functions.lookup_capital", "{}"])
    chat({"messages": ASK, "tools": [LOOKUP], "tool_choice": "required"}, model, "m")
    assert '"message:"' not in model.asked[0]["grammar"]
    model = Scripted(['{"country": "Peru"}'])
    named = {"type": "function", "function": {"name": "lookup_capital"}}
    answer = chat({"messages": ASK, "tools": [LOOKUP], "tool_choice": named}, model, "m")
    assert len(model.asked) == 1  # no routing: the arguments straight away
    assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup_capital"


def test_one_call_per_answer_as_the_recorded_format_made() -> None:
    model = Scripted(["functions.lookup_capital", "{}"])
    answer = chat({"messages": ASK, "tools": [LOOKUP]}, model, "m")
    assert len(model.asked) == 2  # no third completion asking for another call
    assert len(answer["choices"][0]["message"]["tool_calls"]) == 1


def test_a_response_format_s_schema_holds_the_answer() -> None:
    model = Scripted(['{"city": "Paris"}'])
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}
    chat({"messages": ASK, "response_format": response_format}, model, "m")
    assert model.asked[0]["json_schema"] == schema


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        ({"messages": []}, "messages: expected a non-empty list"),
        ({"messages": [{"content": "x"}]}, r"messages\[0\]: expected an object with a role"),
        ({"messages": ASK, "tools": [{"type": "function"}]}, r"tools\[0\]: expected a function"),
        (
            {
                "messages": ASK,
                "tools": [LOOKUP],
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            "tool_choice names 'nope', which is not among the tools",
        ),
        ({"messages": ASK, "tools": [LOOKUP], "tool_choice": "any"}, "tool_choice 'any'"),
    ],
)
def test_a_request_it_cannot_answer_is_the_client_s_error(
    request_: dict[str, Any], says: str
) -> None:
    with pytest.raises(RequestError, match=says):
        chat(request_, Scripted([]), "m")


def test_a_streamed_answer_holds_what_the_plain_one_does() -> None:
    import litellm

    model = Scripted(["functions.lookup_capital", '{"country": "France"}'])
    answer = chat({"messages": ASK, "tools": [LOOKUP]}, model, "m")
    chunks = list(stream_chunks(answer, include_usage=True))
    assert chunks[-1]["usage"] == answer["usage"] and chunks[-1]["choices"] == []
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    built = litellm.stream_chunk_builder([litellm.ModelResponseStream(**c) for c in chunks])
    assert built is not None
    [call] = built.choices[0].message.tool_calls  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"country": "France"}


def test_the_prompt_is_the_one_the_baselines_were_recorded_with() -> None:
    # llama-cpp-python's chatml-function-calling, asked through a stand-in model that keeps
    # the prompt it is given: the same characters, tools listed or not, escaping included.
    chat_format = pytest.importorskip("llama_cpp.llama_chat_format")

    class Keeps:
        verbose = False

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def create_completion(self, prompt: str, **_: Any) -> dict[str, Any]:
            self.prompts.append(prompt)
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            choice = {"text": "message", "index": 0, "logprobs": None, "finish_reason": "stop"}
            return {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                    "choices": [choice], "usage": usage}  # fmt: skip

    history = [
        {"role": "system", "content": 'Be "brief" & <kind>.'},
        {"role": "user", "content": "What's the capital of France?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "lookup_capital", "arguments": '{"country": "France"}'},
                }
            ],
        },
    ]
    for tools in ([LOOKUP], None):
        theirs = Keeps()
        chat_format.chatml_function_calling(
            theirs, messages=history[:2] if tools is None else history, tools=tools,
            tool_choice="auto" if tools else None,
        )  # fmt: skip
        ours = Scripted(["message", "Paris."] if tools else ["Paris."])
        chat({"messages": history[:2] if tools is None else history, "tools": tools}, ours, "m")
        assert ours.asked[0]["prompt"] == theirs.prompts[0]
