"""Agents the tests run under capture, replay and record.

Kept out of conftest.py on purpose: whatever surrounds an agent can leak into
its prompt, so these live in a small module that changes only when an agent
does. Agents call litellm through the module attribute, as capture requires.
"""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

import litellm

from evalrunner.core._scope import capture, record_tool_result
from evalrunner.examples import fanout
from evalrunner.reference_agent import assistant_message
from evalrunner.suite._contract import RunContext

FAKE_KEY = "sk-fake-not-a-secret"


def _endpoint(api_base: str | None, api_key: str = FAKE_KEY, **extra: Any) -> dict[str, Any]:
    """The fake endpoint's keyword arguments, with the SDK's own retries off."""
    return {
        "model": "openai/fake",
        "api_base": api_base,
        "api_key": api_key,
        "num_retries": 0,
        "timeout": 10,
        **extra,
    }


def ask(
    api_base: str | None, question: str = "What is the capital of France?", **extra: Any
) -> str | None:
    """One model call, no tools."""
    response = litellm.completion(
        messages=[{"role": "user", "content": question}], **_endpoint(api_base, **extra)
    )
    content: str | None = response.choices[0].message.content
    return content


def stream_ask(
    api_base: str | None, question: str = "What is the capital of France?"
) -> dict[str, Any]:
    """One streamed model call, reassembled the way an agent would."""
    messages = [{"role": "user", "content": question}]
    stream = litellm.completion(messages=messages, **_endpoint(api_base, stream=True))
    return _assembled(list(stream), messages)


async def astream_ask(
    api_base: str | None, question: str = "What is the capital of France?"
) -> dict[str, Any]:
    messages = [{"role": "user", "content": question}]
    stream = await litellm.acompletion(messages=messages, **_endpoint(api_base, stream=True))
    return _assembled([chunk async for chunk in stream], messages)


def _assembled(chunks: list[Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    built = litellm.stream_chunk_builder(chunks, messages=messages)
    message = built.choices[0].message
    return {
        "content": message.content,
        "tool_calls": [(c.function.name, c.function.arguments) for c in message.tool_calls or []],
        "usage": (built.usage.prompt_tokens, built.usage.completion_tokens),
        "chunks": len(chunks),
    }


def lookup(country: str) -> str:
    return {"france": "Paris", "japan": "Tokyo"}.get(country.lower(), "unknown")


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look up the capital of a country.",
            "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
        },
    }
]


def tool_loop(
    api_base: str | None, question: str = "Capital of France?", *, tool_output: Any = None
) -> str | None:
    """Model call with a tool, run the tools, second model call: the usual agent loop.

    ``tool_output`` replaces what the tool returns (to test what reaches the files).
    """
    import json

    common = _endpoint(api_base)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer with the lookup tool."},
        {"role": "user", "content": question},
    ]
    first = litellm.completion(messages=messages, tools=TOOLS, **common).choices[0].message
    if not first.tool_calls:
        return first.content  # type: ignore[no-any-return]
    messages.append(assistant_message(first.content, first.tool_calls))
    for call in first.tool_calls:
        out = (
            tool_output
            if tool_output is not None
            else lookup(json.loads(call.function.arguments)["country"])
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": str(out)})
    second = litellm.completion(messages=messages, **common).choices[0].message
    return second.content  # type: ignore[no-any-return]


def with_subagent(api_base: str | None) -> str | None:
    """A tool call whose tool is a sub-agent (linked through the call id)."""
    common = _endpoint(api_base)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Delegate: capital of Japan?"}]
    first = litellm.completion(messages=messages, tools=TOOLS, **common).choices[0].message
    call = first.tool_calls[0]
    with capture("helper", call_id=call.id):
        answer = ask(api_base, "Sub-task: capital of Japan?")
    record_tool_result(call.id, answer)
    messages += [
        assistant_message("", [call]),
        {"role": "tool", "tool_call_id": call.id, "content": str(answer)},
    ]
    return litellm.completion(messages=messages, **common).choices[0].message.content  # type: ignore[no-any-return]


def crashing(api_base: str | None) -> None:
    """Calls the model, then fails the way agent code does."""
    ask(api_base)
    raise ValueError("tool exploded: division by zero in plan step 2")


def catches_everything(api_base: str | None, calls: int) -> list[str]:
    """Retries any exception, like many agent loops do (and so hides replay errors)."""
    out = []
    for _ in range(calls):
        try:
            out.append(ask(api_base) or "")
        except Exception as exc:  # the point of this agent
            out.append(f"swallowed {type(exc).__name__}")
    return out


def opens_socket(api_base: str | None) -> str | None:
    """Talks to the network on the side (a telemetry ping, a web tool) after the model call."""
    answer = ask(api_base)
    with socket.create_connection(("127.0.0.1", 9), timeout=1):
        pass
    return answer


async def jittered_fanout(
    task: str, ctx: RunContext, seed: int, max_delay: float = 0.004
) -> str | None:
    """The example fan-out agent, with a random pause before every model call.

    The pauses reorder which of the concurrent sub-agents finishes first (and
    interleave their calls), as real endpoint latency does.
    """
    rng = random.Random(seed)
    inner = litellm.acompletion

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(rng.random() * max_delay)
        return await inner(*args, **kwargs)

    litellm.acompletion = slow
    try:
        return await fanout(task, ctx)
    finally:
        litellm.acompletion = inner


def secretive(
    api_base: str | None, question: str, tool_output: str, api_key: str, bearer: str
) -> str | None:
    """The tool loop with secrets everywhere an agent puts them: key, headers, prompt, tool output."""
    common = _endpoint(
        api_base,
        api_key,
        extra_headers={"Authorization": f"Bearer {bearer}", "X-Trace": "plain"},
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    first = litellm.completion(messages=messages, tools=TOOLS, **common).choices[0].message
    call = first.tool_calls[0]
    messages.append(assistant_message("", [call]))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_output})
    return litellm.completion(messages=messages, **common).choices[0].message.content  # type: ignore[no-any-return]
