"""The canonical model response: one provider-independent record per model call.

The same record is stored in recordings, served on replay and turned into the
trajectory's agent step, so a replay is byte-identical to its own recording
(lesson 2 of docs: one response object, never the provider's raw one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner._litellm import import_litellm

FinishReason = Literal["stop", "tool_calls", "length", "error"]


class ToolCallRecord(BaseModel):
    """One tool call as the model emitted it (arguments kept as the raw string)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="Provider tool-call id, replayed as is so the agent's join survives."
    )
    name: str = Field(description="Tool (function) name.")
    arguments: str = Field(description="Arguments exactly as the model wrote them (usually JSON).")


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(default=0, description="Input tokens, cached included.")
    completion_tokens: int = Field(default=0, description="Generated tokens.")
    cached_tokens: int | None = Field(
        default=None, description="Subset of prompt_tokens served from cache."
    )
    cache_write_tokens: int | None = Field(
        default=None,
        description="Subset of prompt_tokens written to the provider's prompt cache "
        "(Anthropic's cache_creation_input_tokens); None when not reported.",
    )


class ResponseRecord(BaseModel):
    """A model response, independent of the provider that produced it."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(default=None, description="Assistant text.")
    reasoning: str | None = Field(
        default=None, description="Reasoning text, when the provider returns it."
    )
    tool_calls: list[ToolCallRecord] = Field(
        default_factory=list, description="Ordered tool calls."
    )
    finish_reason: FinishReason = Field(default="stop", description="Normalised finish reason.")
    usage: Usage = Field(default_factory=Usage, description="Token usage.")
    model: str | None = Field(
        default=None, description="Model name the provider reported; carried into replays."
    )
    thinking_blocks: list[dict[str, Any]] | None = Field(
        default=None,
        description="The provider's thinking blocks exactly as sent (Anthropic: 'thinking' "
        "with its signature, 'redacted_thinking'), handed back unchanged: a tool loop with "
        "extended thinking must send them back with its next request. None: none sent.",
    )


def recorded_answer(data: Any) -> Any:
    """Check one recorded call as read from a file: its response or its error, never neither.

    For a ``model_validator(mode="before")`` of the recording formats. A call whose
    answer is missing (``"response": null``) or empty (``{}``: every answer we write
    has its finish_reason) would replay as an empty answer, and the run would look
    like a change of behaviour that ``--golden-update`` then writes into the golden.
    """
    if not isinstance(data, Mapping):
        return data
    response, error = data.get("response"), data.get("error")
    if response is None and error is None:
        raise ValueError("has neither its response nor its error: the recording was cut or edited")
    if response is not None and error is not None:
        raise ValueError("has both a response and an error: the recording was edited")
    if isinstance(response, Mapping) and "finish_reason" not in response:
        raise ValueError(
            "response has no finish_reason, which every recorded answer has: "
            "the recording was cut or edited"
        )
    return data


# --- conversions between litellm objects and records -----------------------------------


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def normalize_finish_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    if has_tool_calls:
        return "tool_calls"
    if raw in ("length", "max_tokens"):
        return "length"
    if raw in ("tool_calls", "function_call"):
        return "tool_calls"
    if raw in ("error", "content_filter"):
        return "error"
    return "stop"


def record_from_response(response: Any) -> ResponseRecord:
    """Build the canonical record from a litellm ModelResponse (or a dict of one)."""
    choice = (field_of(response, "choices") or [None])[0]
    message = field_of(choice, "message") or {}
    calls = [
        _tool_call_record(tc, i)
        for i, tc in enumerate(field_of(message, "tool_calls") or [], start=1)
    ]
    return ResponseRecord(
        content=field_of(message, "content"),
        reasoning=field_of(message, "reasoning_content") or None,
        tool_calls=calls,
        finish_reason=normalize_finish_reason(field_of(choice, "finish_reason"), bool(calls)),
        usage=_usage(field_of(response, "usage") or {}),
        model=field_of(response, "model"),
        thinking_blocks=_thinking_blocks(field_of(message, "thinking_blocks")),
    )


def _thinking_blocks(blocks: Any) -> list[dict[str, Any]] | None:
    """litellm's ``thinking_blocks`` of an Anthropic answer, as plain dicts (None: none)."""
    found = [dict(b) for b in blocks or [] if isinstance(b, Mapping)]
    return found or None


def _tool_call_record(call: Any, i: int) -> ToolCallRecord:
    """One tool call of a response (the ``i``-th, from 1), missing parts empty."""
    function = field_of(call, "function")
    return ToolCallRecord(
        id=str(field_of(call, "id") or f"call_{i}"),
        name=str(field_of(function, "name") or ""),
        arguments=str(field_of(function, "arguments") or ""),
    )


def _usage(usage: Any) -> Usage:
    """A response's token counts, missing ones 0 (cached ones None)."""
    details = field_of(usage, "prompt_tokens_details")
    cached = field_of(details, "cached_tokens") if details else None
    # litellm reports an Anthropic answer's cache writes beside the chat fields.
    written = field_of(usage, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=int(field_of(usage, "prompt_tokens") or 0),
        completion_tokens=int(field_of(usage, "completion_tokens") or 0),
        cached_tokens=int(cached) if cached else None,
        cache_write_tokens=int(written) if written else None,
    )


def message_dict(rec: ResponseRecord) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": rec.content}
    if rec.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in rec.tool_calls
        ]
    if rec.reasoning:
        msg["reasoning_content"] = rec.reasoning
    if rec.thinking_blocks:
        # As litellm hands them to a chat caller, which sends them back in its history.
        msg["thinking_blocks"] = rec.thinking_blocks
    return msg


def usage_dict(rec: ResponseRecord) -> dict[str, Any]:
    u = rec.usage
    out: dict[str, Any] = {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }
    if u.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": u.cached_tokens}
    if u.cache_write_tokens is not None:
        out["cache_creation_input_tokens"] = u.cache_write_tokens
    return out


def response_from_record(rec: ResponseRecord, n: int) -> Any:
    """A litellm ModelResponse carrying exactly the recorded response."""
    ModelResponse = import_litellm().ModelResponse

    return ModelResponse(
        id=f"replay-{n}",
        model=rec.model,
        choices=[{"index": 0, "finish_reason": rec.finish_reason, "message": message_dict(rec)}],
        usage=usage_dict(rec),
    )


def stream_from_record(rec: ResponseRecord, n: int) -> list[Any]:
    """The recorded response as streaming chunks (text first, then calls, finish and usage)."""
    import_litellm()  # its settings first: the first import of litellm may be this one
    from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices

    first = ModelResponseStream(
        id=f"replay-{n}",
        model=rec.model,
        choices=[
            StreamingChoices(index=0, delta=Delta(role="assistant", content=rec.content or ""))
        ],
    )
    calls = [
        {
            "index": i,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(rec.tool_calls)
    ]
    last = ModelResponseStream(
        id=f"replay-{n}",
        model=rec.model,
        choices=[
            StreamingChoices(
                index=0,
                delta=Delta(
                    content=None, tool_calls=calls or None, reasoning_content=rec.reasoning
                ),
                finish_reason=rec.finish_reason,
            )
        ],
        usage=usage_dict(rec),
    )
    return [first, last]
