"""Recordings: every model call of one proxied run, and strict replay of them.

One file per run, ``<run-id>.proxy.json`` (or a path the caller names): the
request the agent made (in chat form, redacted), and the canonical,
provider-independent :class:`ResponseRecord` it got, or the upstream error it
got; streamed chat answers keep their chunks as received, so replay re-emits
the same SSE. Infrastructure faults are never recorded: they say nothing
about the agent, and a replay must not re-enact them.

Replay serves, for each request, the first unused recorded call with the same
fingerprint (so identical requests get their answers in recorded order, and
concurrent fan-out may arrive in any order); a request with none gets a
:class:`ReplayMiss` whose message names the fields that differ from the
nearest recorded request.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner._jsonio import load_model, write_json
from evalrunner.core._response import ResponseRecord
from evalrunner.proxy._fingerprint import (
    DEFAULT_FINGERPRINT,
    FingerprintConfig,
    fingerprint,
    request_view,
)
from evalrunner.proxy._mismatch import differences, nearest
from evalrunner.proxy._request import ModelRequest

RECORDING_FORMAT_VERSION = 1


class RecordedError(BaseModel):
    """An error the agent got instead of an answer (never an infrastructure fault)."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(description="HTTP status the agent got, e.g. 400.")
    type: str = Field(description="Error class, e.g. 'ContextWindowExceededError'.")
    message: str = Field(description="Error message (redacted).")


class RecordedCall(BaseModel):
    """One model call of the recorded run."""

    model_config = ConfigDict(extra="forbid")

    call: int = Field(description="Arrival number of the call in the recorded run, from 1.")
    request: ModelRequest = Field(description="What the agent asked, in chat form (redacted).")
    stream: bool = Field(default=False, description="Whether the agent asked for a stream.")
    response: ResponseRecord | None = Field(
        default=None, description="The answer, unless the call got an error."
    )
    error: RecordedError | None = Field(default=None, description="The error, when it got one.")
    chunks: list[dict[str, Any]] | None = Field(
        default=None,
        description="Chat-completions stream chunks as received (streamed chat calls only).",
    )


class Recording(BaseModel):
    """The ``<run-id>.proxy.json`` file."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=RECORDING_FORMAT_VERSION, description="Recording file format version."
    )
    run_id: str = Field(description="The proxy run id the calls were made under.")
    upstream: str | None = Field(default=None, description="Upstream model the calls went to.")
    calls: list[RecordedCall] = Field(
        default_factory=list, description="Calls in the order they arrived."
    )

    @classmethod
    def load(cls, path: Path) -> Recording:
        return load_model(
            path,
            cls,
            what="proxy recording",
            version=RECORDING_FORMAT_VERSION,
            fix="re-record it (evalrunner proxy --record DIR, or pytest --golden-record)",
        )

    def save(self, path: Path) -> None:
        write_json(path, self.model_dump(mode="json", exclude_none=True))


def recording_path(directory: Path, run_id: str) -> Path:
    return directory / f"{run_id}.proxy.json"


class ReplayMiss(Exception):
    """No recorded call answers this request; the message says why, for the agent's error."""


def _describe(call: RecordedCall) -> str:
    last_user = next((m for m in reversed(call.request.messages) if m.get("role") == "user"), None)
    text = str((last_user or {}).get("content") or "")
    preview = text if len(text) <= 60 else text[:59] + "…"
    return (
        f"recorded call {call.call} ({len(call.request.messages)} messages, "
        f"last user message {preview!r})"
    )


class ReplayBook:
    """The recorded calls of one run, served strictly by fingerprint."""

    def __init__(
        self,
        recording: Recording,
        source: str,
        config: FingerprintConfig = DEFAULT_FINGERPRINT,
        missing: bool = False,
    ) -> None:
        self.calls = recording.calls
        self.source = source
        self.missing = missing
        self.views = [request_view(c.request, config) for c in self.calls]
        self.prints = [fingerprint(v) for v in self.views]
        self.used = [False] * len(self.calls)
        self.config = config
        self._lock = threading.Lock()

    def take(self, request: ModelRequest, n: int) -> RecordedCall:
        """The recorded call answering model call ``n``; raises :class:`ReplayMiss`."""
        view = request_view(request, self.config)
        fp = fingerprint(view)
        with self._lock:
            for i, recorded in enumerate(self.prints):
                if recorded == fp and not self.used[i]:
                    self.used[i] = True
                    return self.calls[i]
            raise ReplayMiss(self._explain(n, view, fp))

    def _explain(self, n: int, view: dict[str, Any], fp: str) -> str:
        head = f"evalrunner proxy replay: model call {n} has no recorded response in {self.source}"
        redo = (
            "If the agent changed on purpose, re-record "
            "(pytest --golden-record, or evalrunner proxy --record DIR)."
        )
        if self.missing:
            return f"{head}: the file does not exist. Record the run first. {redo}"
        if not self.calls:
            return f"{head}: nothing was recorded for this run. {redo}"
        same = [i for i, p in enumerate(self.prints) if p == fp]
        if same:
            return (
                f"{head}: it repeats {_describe(self.calls[same[0]])}, whose {len(same)} "
                "recorded answer(s) are all used: the agent now makes this request more often "
                f"than when recorded. {redo}"
            )
        best = nearest(view, self.views, self.used)
        state = "already used" if self.used[best] else "unused"
        lines = [f"{head}. Nearest: {_describe(self.calls[best])}, {state}; it differs in:"]
        lines += [f"  - {d}" for d in differences(self.views[best], view)]
        lines.append(redo)
        return "\n".join(lines)

    def unused(self) -> list[str]:
        with self._lock:
            return [_describe(c) for c, used in zip(self.calls, self.used, strict=True) if not used]
