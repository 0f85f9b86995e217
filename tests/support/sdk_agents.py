"""Agents written the usual way, on the official provider SDKs, for the proxy tests.

Each takes the environment a proxied run gets (``ProxyServer.run_env``) the way
a subprocess agent would read it, and nothing from evalrunner. The tool is a
tiny capital-city lookup; :func:`content_responder` answers them from a fake
endpoint by content, so runs can interleave in any order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import anthropic
import openai
from fake_endpoint import Reply

MODEL = "gpt-4o-mini"
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Chad": "N'Djamena"}
SYSTEM = "You answer questions about capitals. Use the lookup tool."
LOOKUP = {
    "name": "lookup",
    "description": "The capital of a country.",
    "parameters": {
        "type": "object",
        "properties": {"country": {"type": "string"}},
        "required": ["country"],
    },
}
CHAT_TOOLS: list[Any] = [{"type": "function", "function": LOOKUP}]
RESPONSES_TOOLS: list[Any] = [{"type": "function", **LOOKUP}]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": "lookup", "description": LOOKUP["description"], "input_schema": LOOKUP["parameters"]}
]


def lookup(arguments: str | Mapping[str, Any]) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    return CAPITALS.get(str(args.get("country")), "unknown")


def _blocks(message: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]


def content_responder(body: dict[str, Any], n: int) -> Reply:
    """Answers by content: tool results -> an answer; a task with tools -> parallel lookups.

    Reads chat bodies and Anthropic Messages bodies (tool_result and text blocks) alike.
    """
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool" or _blocks(last, "tool_result"):
        results = [m["content"] for m in messages if m.get("role") == "tool"]
        results += [str(b["content"]) for m in messages for b in _blocks(m, "tool_result")]
        return Reply("Capitals: " + ", ".join(results) + ".")
    texts = _blocks(last, "text")
    text = "".join(b["text"] for b in texts) if texts else str(last.get("content"))
    if body.get("tools") and ":" in text:
        countries = [c.strip() for c in text.split(":", 1)[1].split(",")]
        calls = [("lookup", json.dumps({"country": c})) for c in countries]
        return Reply(None, tool_calls=calls)
    return Reply(f"echo: {text}")


# --- OpenAI Chat Completions ------------------------------------------------------------


def _client(env: Mapping[str, str]) -> openai.OpenAI:
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"])


def _aclient(env: Mapping[str, str]) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"])


def _merge_stream(chunks: list[Any]) -> dict[str, Any]:
    """A streamed answer reassembled the way agents do it by hand."""
    content = ""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.id or call["id"]
                call["name"] += (tc.function.name or "") if tc.function else ""
                call["arguments"] += (tc.function.arguments or "") if tc.function else ""
    tool_calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for _, c in sorted(calls.items())
    ]
    return {"role": "assistant", "content": content or None, "tool_calls": tool_calls}


def _message(completion: Any) -> dict[str, Any]:
    message = completion.choices[0].message
    calls = [c.model_dump() for c in message.tool_calls or []]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def _after(message: dict[str, Any], messages: list[Any]) -> bool:
    """Append the answer and its tool results; False when it was the final answer."""
    if not message["tool_calls"]:
        return False
    messages.append(message)
    for call in message["tool_calls"]:
        output = lookup(call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    return True


def _start(task: str, system: str = SYSTEM) -> list[Any]:
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def openai_agent(
    env: Mapping[str, str], task: str, *, stream: bool = False, system: str = SYSTEM
) -> str | None:
    """A tool loop on the sync OpenAI SDK, plain or streamed."""
    client = _client(env)
    messages = _start(task, system)
    for _ in range(4):
        if stream:
            chunks = client.chat.completions.create(
                model=MODEL,
                messages=messages,
                tools=CHAT_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            message = _merge_stream(list(chunks))
        else:
            completion = client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS
            )
            message = _message(completion)
        if not _after(message, messages):
            return _content(message)
    return None


async def openai_agent_async(
    env: Mapping[str, str], task: str, *, stream: bool = False
) -> str | None:
    """The same loop on the async OpenAI SDK (streams without usage)."""
    client = _aclient(env)
    messages = _start(task)
    for _ in range(4):
        if stream:
            chunks = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS, stream=True
            )
            message = _merge_stream([c async for c in chunks])
        else:
            completion = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS
            )
            message = _message(completion)
        if not _after(message, messages):
            return _content(message)
    return None


def _content(message: Mapping[str, Any]) -> str | None:
    content: str | None = message["content"]
    return content


async def fanout_agent(
    env: Mapping[str, str], topics: list[str], delays: Mapping[str, float] | None = None
) -> str | None:
    """A coordinator that fans out one concurrent sub-agent per topic, then summarises.

    ``delays`` holds each sub-agent back before its call, to vary arrival order.
    """
    client = _aclient(env)

    async def sub_agent(topic: str) -> str:
        await asyncio.sleep((delays or {}).get(topic, 0.0))
        completion = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You research one topic."},
                {"role": "user", "content": f"Research {topic}"},
            ],
        )
        return completion.choices[0].message.content or ""

    plan = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Plan research on " + ", ".join(topics)}],
    )
    notes = await asyncio.gather(*(sub_agent(t) for t in topics))
    final = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "user", "content": "Plan research on " + ", ".join(topics)},
            {"role": "assistant", "content": plan.choices[0].message.content},
            {"role": "user", "content": "Summarise: " + " | ".join(notes)},
        ],
    )
    return final.choices[0].message.content


# --- OpenAI Responses API ------------------------------------------------------------------


def responses_agent(env: Mapping[str, str], task: str, *, stream: bool = False) -> str | None:
    """A tool loop on the Responses API, continuing with previous_response_id."""
    client = _client(env)
    kwargs: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "instructions": SYSTEM,
        "tools": RESPONSES_TOOLS,
    }
    step: Any = task
    previous = None
    for _ in range(4):
        if previous is not None:
            kwargs["previous_response_id"] = previous
        if stream:
            with client.responses.stream(input=step, **kwargs) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(input=step, **kwargs)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        step = [
            {"type": "function_call_output", "call_id": c.call_id, "output": lookup(c.arguments)}
            for c in calls
        ]
        previous = response.id
    return None


# --- Anthropic Messages -------------------------------------------------------------------


def anthropic_agent(env: Mapping[str, str], task: str, *, stream: bool = False) -> str | None:
    """A tool loop on the Anthropic SDK, plain or streamed (tool_use / tool_result blocks)."""
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"]
    )
    messages: list[Any] = [{"role": "user", "content": task}]
    for _ in range(4):
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "system": SYSTEM,
            "tools": ANTHROPIC_TOOLS,
            "messages": messages,
        }
        if stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": b.id, "content": lookup(b.input)}
                    for b in uses
                ],
            }
        )
    return None
