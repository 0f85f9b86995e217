"""A small reference tool-calling agent loop over litellm; copy it as a template.

It is written to cope with weak models as well as hosted ones:

- ``tool_choice="auto"`` is sent explicitly: some OpenAI-compatible servers
  (llama-cpp-python's among them) render no tools without it.
- Assistant messages that carry tool calls get ``content: ""`` rather than
  ``None``: some chat templates fail on a missing content.
- After ``max_tool_rounds`` rounds of tool calls the follow-up is sent
  without tools, so a model that would call tools forever must answer, and
  it repeats the tool results in a user message: some chat templates
  (llama-cpp-python's ``chatml-function-calling``) never show ``tool``
  messages to the model.

Tool failures (bad JSON arguments, unknown tools, exceptions) are returned to
the model as error text and recorded with ``error=True``, never raised: what
the model does next is behaviour worth seeing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evalrunner.core._scope import record_tool_result
from evalrunner.suite._contract import RunContext

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the tools when they help. Answer briefly."


@dataclass(frozen=True)
class Tool:
    """A tool the agent can call: a Python function plus its JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any]

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


def tool(description: str, **params: str) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool from a function; ``params`` maps argument name to JSON type."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        props = {name: {"type": typ} for name, typ in params.items()}
        schema = {"type": "object", "properties": props, "required": list(params)}
        return Tool(fn.__name__, description, schema, fn)

    return wrap


@dataclass
class AgentResult:
    """The final answer (None when the model never gave one) and how many turns it took."""

    answer: str | None
    turns: int


def _execute(call: Any, tools: Mapping[str, Tool]) -> tuple[str, bool]:
    name = call.function.name
    if name not in tools:
        return f"error: unknown tool {name!r}; available: {', '.join(sorted(tools))}", True
    try:
        args = json.loads(call.function.arguments or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        return f"error: invalid arguments for {name}: {exc}", True
    try:
        return str(tools[name].fn(**args)), False
    except TypeError as exc:  # wrong or missing argument names from the model
        return f"error: {name}: {exc}", True


def assistant_message(content: str | None, tool_calls: Iterable[Any]) -> dict[str, Any]:
    """The assistant turn that made ``tool_calls``, as the next request repeats it."""
    return {
        "role": "assistant",
        "content": content or "",
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in tool_calls
        ],
    }


def _request(
    ctx: RunContext,
    messages: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    offer_tools: bool,
) -> dict[str, Any]:
    kwargs = ctx.litellm_kwargs()
    kwargs["messages"] = messages
    if schemas and offer_tools:
        kwargs["tools"] = schemas
        kwargs["tool_choice"] = "auto"
    elif any(m["role"] == "tool" for m in messages):
        recap = "\n".join(f"- {m['content']}" for m in messages if m["role"] == "tool")
        kwargs["messages"] = [
            *messages,
            {"role": "user", "content": f"Tool results:\n{recap}\nNow answer the question."},
        ]
    return kwargs


def _start(task: str, system_prompt: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": task}]


class _Loop:
    """One run of the loop. It yields the requests; the caller sends each to the
    model (sync or async, the only difference between the two entry points)
    and hands the response back with :meth:`answer`."""

    def __init__(
        self,
        task: str,
        ctx: RunContext,
        tools: Mapping[str, Tool] | None,
        system_prompt: str,
        max_tool_rounds: int,
    ) -> None:
        self.ctx = ctx
        self.tools = dict(tools or {})
        # Built once per run, not per request (a profile of 900 calls found 1.8 s in it).
        self.schemas = [t.schema() for t in self.tools.values()]
        self.max_tool_rounds = max_tool_rounds
        self.messages = _start(task, system_prompt)
        self.result = AgentResult(None, ctx.max_turns)  # until the model answers
        self.turn = 0
        self.done = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for turn in range(1, self.ctx.max_turns + 1):
            self.turn = turn
            yield _request(self.ctx, self.messages, self.schemas, turn - 1 < self.max_tool_rounds)
            if self.done:
                return

    def answer(self, response: Any) -> None:
        """Run the tool calls of the model's message, or keep it as the final answer."""
        message = response.choices[0].message
        if not message.tool_calls:
            self.result = AgentResult(message.content, self.turn)
            self.done = True
            return
        self.messages.append(assistant_message(message.content, message.tool_calls))
        for call in message.tool_calls:
            output, failed = _execute(call, self.tools)
            record_tool_result(call.id, output, error=failed)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})


def run_agent(
    task: str,
    ctx: RunContext,
    tools: Mapping[str, Tool] | None = None,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    max_tool_rounds: int = 1,
) -> AgentResult:
    """Run the loop synchronously (litellm.completion)."""
    import litellm

    loop = _Loop(task, ctx, tools, system_prompt, max_tool_rounds)
    for request in loop:
        loop.answer(litellm.completion(**request))
    return loop.result


async def arun_agent(
    task: str,
    ctx: RunContext,
    tools: Mapping[str, Tool] | None = None,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    max_tool_rounds: int = 1,
) -> AgentResult:
    """The same loop over litellm.acompletion, for agents that fan out with asyncio."""
    import litellm

    loop = _Loop(task, ctx, tools, system_prompt, max_tool_rounds)
    for request in loop:
        loop.answer(await litellm.acompletion(**request))
    return loop.result
