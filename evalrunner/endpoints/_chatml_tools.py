"""OpenAI chat requests, tools included, as constrained completions of a ChatML model.

The embedded SmolLM2 model has no tool format of its own (its template renders no tools),
and a prebuilt llama.cpp server ignores a request's ``tools``. What gets calls out of it
is the scheme llama-cpp-python's ``chatml-function-calling`` format uses, which the example
suite's baselines were recorded with: the tools are listed in the system turn as
``functions.<name>:`` followed by their JSON schema; the model first chooses, under a
grammar, between ``message:`` and ``functions.<name>:`` (greedily, so the choice is the
model's best guess, not a coin); a call's arguments are then decoded under the tool's
JSON schema. One call per answer: the format offers more (a grammar after each call to
name another or stop), but llama-cpp-python never made a second (its follow-up kept the
``:`` in the name it looked up), and when we let it, the 135M model named another call
every time, greedily or sampled, to any cap (16 of 16).

Everything here is pure: a request in, completions asked of a :class:`Complete`, and the
chat completion out, so the scheme is tested without a model. Two of that format's faults
are not kept (docs/local-model.md): a tool's result is rendered into the prompt (it was
dropped, so a model never saw what a tool returned), and a message after ``message:`` is
free text (it was held to the tool-name grammar, so it could only be empty or a tool's
name written as text). ``tool_choice="required"`` is honoured (the message branch is not
offered) and ``max_tokens`` bounds a message wherever one is written.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["Complete", "Completion", "RequestError", "chat", "stream_chunks"]

END = "<|im_end|>"

# The prompt is the format's own, word for word: the model's tool use was measured on it.
# Autoescaped as llama-cpp-python renders it (``select_autoescape`` escapes strings), so a
# message's quotes reach the model as the baselines' did.
_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.role == 'system' %}{{ message.content }}"
    "{% if tools %}"
    "\n\nYou have access to the following functions:\n"
    "{% for tool in tools %}"
    "\nfunctions.{{ tool.function.name }}:\n{{ tool.function.parameters | tojson }}\n"
    "{% endfor %}"
    "\n\nYou can respond to users messages with either a single message or one or more "
    "function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following "
    "format:\n\nmessage:\n<message>"
    "\n\nTo respond with one or more function calls begin the message with "
    "'functions.<function_name>:', use the following format:"
    '\n\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
    '\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
    "{% endif %}<|im_end|>\n"
    "{% elif message.role == 'assistant' %}"
    "{% if message.content %}{% if tools %}message:\n{% endif %}"
    "{{ message.content }}<|im_end|>\n{% endif %}"
    "{% if message.tool_calls %}{% for call in message.tool_calls %}"
    "functions.{{ call.function.name }}:\n{{ call.function.arguments }}"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% else %}{{ message.content }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "<|im_start|>assistant\n"
)
_SAMPLING = ("top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "seed")
"""Sampling settings a request may carry, handed to every completion it makes."""
_RENDER = ImmutableSandboxedEnvironment(
    autoescape=jinja2.select_autoescape(["html", "xml"]),
    undefined=jinja2.ChainableUndefined,
    keep_trailing_newline=True,  # the prompt ends "<|im_start|>assistant\n"
).from_string(_TEMPLATE)


class RequestError(ValueError):
    """A request this server cannot answer (the client's mistake): an HTTP 400."""


@dataclass(frozen=True)
class Completion:
    """One raw completion of the model."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"


class Complete(Protocol):
    """Completes ``prompt`` under a grammar (GBNF) or a JSON schema, or freely."""

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
    ) -> Completion: ...


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: str


def chat(request: Mapping[str, Any], complete: Complete, model: str) -> dict[str, Any]:
    """The ``chat.completion`` object answering ``request`` (an OpenAI chat request)."""
    messages = _messages(request)
    tools = _tools(request)
    choice = request.get("tool_choice", "auto" if tools else "none")
    asked = _Ask.of(request, complete)
    if not tools or choice == "none":
        schema = _response_schema(request.get("response_format"))
        done = asked.message(_RENDER.render(messages=messages, tools=[]), schema)
        return _answer(model, done, text=done[-1].text)
    prompt = _RENDER.render(messages=messages, tools=tools)
    return _with_tools(model, asked, prompt, {t["function"]["name"]: t for t in tools}, choice)


def _with_tools(
    model: str, asked: _Ask, prompt: str, by_name: Mapping[str, Mapping[str, Any]], choice: Any
) -> dict[str, Any]:
    """An answer with tools offered: the named tool's call, or the model's choice of a
    message or one call."""
    if isinstance(choice, Mapping):
        name = str(choice.get("function", {}).get("name", ""))
        if name not in by_name:
            raise RequestError(f"tool_choice names {name!r}, which is not among the tools")
        done, call = asked.arguments(prompt, by_name[name])
        return _answer(model, done, calls=[call])
    if choice not in ("auto", "required"):
        raise RequestError(f"tool_choice {choice!r}: expected auto, required, none or a tool")
    first = asked.route(prompt, by_name, offer_message=choice == "auto")
    name = first.text.removeprefix("functions.")
    if name not in by_name:
        done = asked.message(prompt + "message:\n", None)
        return _answer(model, [first, *done], text=done[-1].text)
    done, call = asked.arguments(prompt, by_name[name])
    return _answer(model, [first, *done], calls=[call])


@dataclass(frozen=True)
class _Ask:
    """The completions one request makes, with its sampling settings."""

    complete: Complete
    temperature: float
    stop: list[str]
    max_tokens: int | None
    sampling: Mapping[str, float]

    @classmethod
    def of(cls, request: Mapping[str, Any], complete: Complete) -> _Ask:
        """The request's sampling settings, for every completion it makes."""
        stop = [*_stops(request.get("stop")), END]
        max_tokens = request.get("max_tokens") or request.get("max_completion_tokens")
        sampling = {k: float(request[k]) for k in _SAMPLING if request.get(k) is not None}
        return cls(complete, float(request.get("temperature", 0.8)), stop, max_tokens, sampling)

    def route(self, prompt: str, by_name: Mapping[str, Any], *, offer_message: bool) -> Completion:
        """A message or which tool to call, chosen greedily (``message:`` or a tool's name)."""
        names = " | ".join(json.dumps(f"functions.{name}:") for name in by_name)
        options = ["functions"] + (['"message:"'] if offer_message else [])
        grammar = f"root ::= {' | '.join(options)}\nfunctions ::= {names}\n"
        # The stop strings are cut from the text: "functions.lookup" or "message".
        return self.complete(
            prompt,
            temperature=0.0,
            stop=[":", END],
            grammar=grammar,
            sampling=self.sampling,
        )

    def arguments(self, prompt: str, tool: Mapping[str, Any]) -> tuple[list[Completion], _Call]:
        """A call of ``tool``: its arguments decoded under its parameters' schema."""
        name = tool["function"]["name"]
        schema = _closed(tool["function"].get("parameters") or {"type": "object"})
        done = self.complete(
            f"{prompt}functions.{name}:\n",
            temperature=self.temperature,
            stop=self.stop,
            json_schema=schema,
            sampling=self.sampling,
        )
        return [done], _Call(name, done.text.strip())

    def message(self, prompt: str, schema: Mapping[str, Any] | None) -> list[Completion]:
        """A message, free or under the response format's schema."""
        done = self.complete(
            prompt,
            temperature=self.temperature,
            stop=self.stop,
            max_tokens=self.max_tokens,
            json_schema=schema,
            sampling=self.sampling,
        )
        return [done]


def _answer(
    model: str,
    done: Sequence[Completion],
    *,
    text: str | None = None,
    calls: Sequence[_Call] = (),
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{secrets.token_hex(12)}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    reason = "tool_calls" if calls else done[-1].finish_reason
    prompt = done[0].prompt_tokens
    completion = sum(d.completion_tokens for d in done)
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def stream_chunks(answer: Mapping[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """``answer`` as the ``chat.completion.chunk`` objects a streamed request gets."""
    base = {k: answer[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = answer["choices"][0]
    message = choice["message"]
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    if message.get("content"):
        yield {**base, "choices": [{"index": 0, "delta": {"content": message["content"]}}]}
    for i, call in enumerate(message.get("tool_calls") or []):
        delta = {"tool_calls": [{"index": i, **call}]}
        yield {**base, "choices": [{"index": 0, "delta": delta}]}
    end = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    yield {**base, "choices": [end]}
    if include_usage:
        yield {**base, "choices": [], "usage": answer["usage"]}


def _messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: expected a non-empty list of chat messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise RequestError(f"messages[{i}]: expected an object with a role")
        out.append({**m, "content": _text(m.get("content"))})
    return out


def _text(content: Any) -> str:
    """A message's content as text (a list of parts: its text parts, joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    raise RequestError("a message's content must be text or a list of text parts")


def _tools(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = request.get("tools") or []
    if not isinstance(tools, list):
        raise RequestError("tools: expected a list")
    out = []
    for i, t in enumerate(tools):
        function = t.get("function") if isinstance(t, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise RequestError(f"tools[{i}]: expected a function with a name")
        out.append(dict(t))
    return out


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's parameters with no properties beyond those it names, unless it says
    otherwise: llama.cpp's grammar allows any by default, and the model filled them with
    the schema's own words (``"type": "object"``) as arguments."""
    out = dict(schema)
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _stops(stop: Any) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [str(s) for s in stop]


def _response_schema(response_format: Any) -> Mapping[str, Any] | None:
    """The JSON schema a ``response_format`` holds an answer to (None: free text)."""
    if not isinstance(response_format, Mapping):
        return None
    kind = response_format.get("type")
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        found = response_format.get("json_schema", {})
        schema = found.get("schema") if isinstance(found, Mapping) else None
        return schema if isinstance(schema, Mapping) else {"type": "object"}
    return None
