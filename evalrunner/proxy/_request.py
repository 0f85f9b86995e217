"""The one request shape every wire format is translated into: an OpenAI chat request.

OpenAI Chat Completions, the Responses API and Anthropic Messages all arrive
as a :class:`ModelRequest` (messages, tools, tool_choice and an allowlist of
sampling parameters), which is what is forwarded upstream through litellm,
fingerprinted for replay, recorded, and fed to the ATIF step builder. Only
allowlisted fields ever reach litellm: a body key such as ``api_base`` or
``api_key`` from the agent is dropped, never forwarded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Api = Literal["chat", "responses", "anthropic"]

# Chat-completions parameters forwarded upstream (and recorded); everything
# else in a body (ids, `user`, `metadata`, `store`, keys, endpoints) stays here.
FORWARDED_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "response_format",
    "parallel_tool_calls",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "reasoning_effort",
)


class ModelRequest(BaseModel):
    """A model call as the agent asked for it, in OpenAI chat form, whatever API it spoke."""

    model_config = ConfigDict(extra="forbid")

    api: Api = Field(description="The API the agent called: chat, responses or anthropic.")
    messages: list[dict[str, Any]] = Field(description="Chat messages, system first.")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="Function tools in chat-completions form."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="tool_choice in chat-completions form, as sent."
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Allowlisted sampling parameters (temperature, ...)."
    )

    def chat_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for litellm / the ATIF step builder (no model, no endpoint)."""
        kwargs: dict[str, Any] = {"messages": self.messages, **self.params}
        if self.tools:
            kwargs["tools"] = self.tools
        if self.tool_choice is not None:
            kwargs["tool_choice"] = self.tool_choice
        return kwargs

    def replayed_as(self) -> dict[str, Any]:
        """What replay fingerprints (``core._request_key.matching_view``): the chat
        keyword arguments and the API the agent spoke."""
        return {"api": self.api, **self.chat_kwargs()}


@dataclass(frozen=True)
class Incoming:
    """A parsed request: what to ask the model, plus how the agent wants the answer."""

    request: ModelRequest
    stream: bool
    include_usage: bool  # OpenAI: stream_options.include_usage; others always get usage
    model: str  # the model name the agent sent; answered back, never forwarded
    history_from: int = (
        0  # messages before this index are not conversation (Responses instructions)
    )


class ProxyHTTPError(Exception):
    """Turned into an HTTP error response in the calling API's own error format.

    ``unsupported``: the request is well formed but asks for what the proxy does not carry
    (extended thinking, a built-in tool): evalrunner's limit, not the agent's behaviour."""

    def __init__(self, status: int, kind: str, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.unsupported = unsupported


def bad_request(message: str) -> ProxyHTTPError:
    return ProxyHTTPError(400, "invalid_request_error", message)


def unsupported(message: str) -> ProxyHTTPError:
    """A 400 for a feature the proxy does not carry (the run is then an infra_error)."""
    return ProxyHTTPError(400, "invalid_request_error", message, unsupported=True)


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return body


def require_list(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list):
        raise bad_request(f"'{key}' must be a list")
    return value


def forwarded_params(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in FORWARDED_PARAMS if body.get(k) is not None}
