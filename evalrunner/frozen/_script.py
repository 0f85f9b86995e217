"""The script file (``<name>.llm.json``) and the request key that matches its entries.

One canonical, provider-independent record per model response
(:class:`ResponseRecord`) serves both the script file and the trajectory step
built from it, so a replay is byte-identical to its own recording. Each entry
carries the request it answered, as the view and request key the capture proxy
uses too (``core._request_key``: what decides the model's answer, nothing that
varies between machines), so a mismatch names the field that differs.

Why not the proxy's ``.proxy.json``: an in-process call re-raises a Python
exception and hands back litellm objects, while the proxy re-sends HTTP
statuses and stream chunks as received; each file keeps what its replay
re-enacts. Format 1 scripts (a hash of messages, tool names and tool_choice,
no request view) still replay, matched by that hash; ``pytest --golden-update``
rewrites them as format 2.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrunner._jsonio import canonical, load_model, write_json
from evalrunner._redact import redact, redact_text
from evalrunner.core._actions import PARAMETERS, sendable
from evalrunner.core._normalize import ADDRESS_MASK
from evalrunner.core._request_key import matching_view, request_key
from evalrunner.core._response import ResponseRecord, field_of, recorded_answer

SCRIPT_FORMAT_VERSION = 4
SCRIPT_FORMAT_VERSIONS = (1, 2, 3, 4)
# Format 4: a response's thinking blocks (with their signatures, handed back on replay),
# the prompt-cache tokens it wrote, and a suite scenario's model label (issue 53).
# A recording keeps each request's sampling and output parameters (format 3; the
# sentinel's :data:`~evalrunner.core._actions.PARAMETERS`): they change what the model
# answers, so replay names a change of them. The model string is not among them: replay
# resolves a suite's model label without the endpoint a recording resolved it to.


class RequestHint(BaseModel):
    """What the request looked like when recorded: matched by its request key, shown on mismatch."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: str = Field(
        description="Hash of the request view (format 1: of messages, tool names, tool_choice)."
    )
    message_count: int = Field(description="Messages in the request.")
    last_user_message: str | None = Field(
        default=None, description="First 200 characters, redacted."
    )
    view: dict[str, Any] | None = Field(
        default=None,
        description="What replay matches on, normalised and redacted (format 2; the capture "
        "proxy's request view).",
    )
    settings: dict[str, Any] | None = Field(
        default=None,
        description="The sampling parameters it was sent with (format 3: temperature, "
        "max_tokens, ...; absent before): replay names a change of them.",
    )


class ErrorRecord(BaseModel):
    """A model call that raised instead of answering; replay raises it again."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(description="Exception class name, e.g. 'ContextWindowExceededError'.")
    message: str = Field(description="Exception message (redacted).")


class ScriptEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request: RequestHint = Field(description="The request this response answered.")
    response: ResponseRecord | None = Field(
        default=None, description="The response, unless the call raised."
    )
    error: ErrorRecord | None = Field(
        default=None, description="The exception, when the call raised."
    )

    @model_validator(mode="before")
    @classmethod
    def _answered(cls, data: Any) -> Any:
        return recorded_answer(data)


class RecordedModelError(Exception):
    """Base of the exceptions replay re-raises for calls that raised when recorded."""


_error_classes: dict[str, type[RecordedModelError]] = {}


def raise_recorded(error: ErrorRecord) -> None:
    # Same class name as when recorded, so the replayed trajectory's
    # `extra.exception.type` matches the recording's.
    cls = _error_classes.setdefault(error.type, type(error.type, (RecordedModelError,), {}))
    raise cls(error.message)


class Script(BaseModel):
    """The `<name>.llm.json` file: every model response of one recorded run, in call order."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=SCRIPT_FORMAT_VERSION, description="Script file format version."
    )
    # Required: a file without it is malformed, not a recording of a run that
    # made no model calls (which has "entries": []).
    entries: list[ScriptEntry] = Field(description="Responses in the order they were made.")
    model: str | None = Field(
        default=None,
        description="The suite's model label the run was recorded against (a suite "
        "scenario's; absent otherwise): replay names a scenario that now runs another.",
    )

    @classmethod
    def load(cls, path: Path, record_cmd: str = "pytest --golden-record") -> Script:
        return load_model(
            path,
            cls,
            what="model script",
            version=SCRIPT_FORMAT_VERSIONS,
            fix=f"malformed recording; re-record it with: {record_cmd}",
            version_optional=True,
        )

    def save(self, path: Path) -> None:
        write_json(path, self.with_stable_ids().model_dump(mode="json", exclude_none=True))

    def with_stable_ids(self) -> Script:
        """The provider's tool-call ids (``call__0_lookup_capital_cmpl-3782ba8e-...``) as
        ``call_1``, ``call_2``... in call order: a re-record of the same behaviour writes
        the same file, where each one churned every id in review. Replay reads what the
        agent is handed back, and requests match by a view whose ids are ordinals already
        (:func:`~evalrunner.core._request_key.matching_view`), so nothing else moves."""
        number = itertools.count(1)
        entries = []
        for entry in self.entries:
            answer = entry.response
            if answer is not None and answer.tool_calls:
                calls = [
                    c.model_copy(update={"id": f"call_{next(number)}"}) for c in answer.tool_calls
                ]
                entry = entry.model_copy(
                    update={"response": answer.model_copy(update={"tool_calls": calls})}
                )
            entries.append(entry)
        return self.model_copy(update={"entries": entries})

    @property
    def matches_by_view(self) -> bool:
        """Format 2 and later: entries match by the shared matching view's request key."""
        return self.format_version >= 2


# --- request keys ---------------------------------------------------------------------


def _last_user_message(messages: Sequence[Any]) -> str | None:
    last_user = next(
        (field_of(m, "content") for m in reversed(messages) if field_of(m, "role") == "user"),
        None,
    )
    if last_user is not None and not isinstance(last_user, str):
        last_user = canonical(last_user)
    return redact_text(last_user[:200]) if last_user else None


def request_hint(kwargs: Mapping[str, Any]) -> RequestHint:
    """The recorded form of a request: its view and request key (``core._request_key``).

    Keys, api_base, headers, timeouts, retries and sampling parameters are left
    out (they change between machines or draws, not behaviour); tool-call ids
    are renumbered and object addresses masked.
    """
    messages = list(kwargs.get("messages") or [])
    view = matching_view(kwargs)
    return RequestHint(
        fingerprint=request_key(view),
        message_count=len(messages),
        last_user_message=_last_user_message(messages),
        view=view,
        settings=sendable({k: kwargs[k] for k in PARAMETERS if k in kwargs}),
    )


def _content_text(content: Any) -> Any:
    if isinstance(content, str):
        return ADDRESS_MASK[0].sub(ADDRESS_MASK[1], content)
    if isinstance(content, list):
        return [_content_text(c) for c in content]
    if isinstance(content, dict):
        return {k: _content_text(v) for k, v in content.items()}
    return content


def format1_request_key(kwargs: Mapping[str, Any]) -> str:
    """The hash format 1 scripts matched on: read them, never written."""
    norm_msgs = []
    for m in list(kwargs.get("messages") or []):
        m = dict(m) if isinstance(m, Mapping) else {"content": str(m)}
        entry = {"role": m.get("role"), "content": _content_text(m.get("content"))}
        if m.get("tool_calls"):
            entry["tool_calls"] = [
                [
                    field_of(field_of(tc, "function"), "name"),
                    field_of(field_of(tc, "function"), "arguments"),
                ]
                for tc in m["tool_calls"]
            ]
        if m.get("tool_call_id"):
            entry["tool_call_id"] = m["tool_call_id"]
        norm_msgs.append(entry)
    tools = [field_of(field_of(t, "function"), "name") for t in kwargs.get("tools") or []]
    payload = {"messages": norm_msgs, "tools": tools, "tool_choice": kwargs.get("tool_choice")}
    return hashlib.sha256(canonical(redact(payload)).encode()).hexdigest()[:16]


def responses_from(entries: Sequence[ResponseRecord]) -> Script:
    """A script from hand-written responses (tests, hand-made fixtures); requests match by order."""
    return Script(
        entries=[
            ScriptEntry(request=RequestHint(fingerprint="", message_count=0), response=r)
            for r in entries
        ]
    )
