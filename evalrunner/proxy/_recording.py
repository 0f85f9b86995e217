"""Recordings: every model call of one proxied run, and strict replay of them.

One file per run, ``<run-id>.proxy.json`` (or a path the caller names): the
request the agent made (in chat form, redacted), and the canonical,
provider-independent :class:`ResponseRecord` it got, or the upstream error it
got; streamed chat answers keep their chunks as received, so replay re-emits
the same SSE. Infrastructure faults are never recorded: they say nothing
about the agent, and a replay must not re-enact them.

Replay serves, for each request, the first unused recorded call with the same
request key (so identical requests get their answers in recorded order, and
concurrent fan-out may arrive in any order); a request with none gets a
:class:`~evalrunner.errors.RequestMismatch` whose message names the fields that
differ from the nearest recorded request, word for word as in-process replay
says it (``core._mismatch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrunner._jsonio import load_model, write_json
from evalrunner._next import NextStep
from evalrunner.core._mismatch import Recorded, RequestBook, view_label
from evalrunner.core._request_key import (
    DEFAULT_FINGERPRINT,
    FingerprintConfig,
    matching_view,
    request_key,
)
from evalrunner.core._response import ResponseRecord, recorded_answer
from evalrunner.proxy._request import ModelRequest

RECORDING_FORMAT_VERSION = 2
"""2: responses hold their thinking blocks and prompt-cache writes (issue 53); 1 still read."""
RECORDING_FORMAT_VERSIONS = (1, 2)


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

    @model_validator(mode="before")
    @classmethod
    def _answered(cls, data: Any) -> Any:
        return recorded_answer(data)


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
            version=RECORDING_FORMAT_VERSIONS,
            fix=f"re-record it ({RECORD}, or pytest --golden-record)",
        )

    def save(self, path: Path) -> None:
        write_json(path, self.model_dump(mode="json", exclude_none=True))


def recording_path(directory: Path, run_id: str) -> Path:
    return directory / f"{run_id}.proxy.json"


RECORD = NextStep("proxy", options=("--record", "DIR"))
"""How to record again through the proxy."""
REDO = f"pytest --golden-record, or {RECORD}"


class ReplayBook:
    """The recorded calls of one run, served strictly by request key."""

    def __init__(
        self,
        recording: Recording,
        source: str,
        config: FingerprintConfig = DEFAULT_FINGERPRINT,
        missing: bool = False,
        redo: str | None = None,
    ) -> None:
        self.calls = recording.calls
        self.config = config
        recorded = []
        for c in self.calls:
            view = matching_view(c.request.replayed_as(), config)
            recorded.append(Recorded(view, request_key(view), view_label(c.call, view)))
        self.book = RequestBook(recorded, source, redo or REDO, missing=missing)

    def take(self, request: ModelRequest, n: int) -> RecordedCall:
        """The recorded call answering model call ``n``; raises
        :class:`~evalrunner.errors.RequestMismatch` naming what differs."""
        view = matching_view(request.replayed_as(), self.config)
        fp = request_key(view)
        with self.book.lock:
            found = self.book.take(fp)
            if found is None:
                raise self.book.miss(n, view, fp)
        return self.calls[found]

    def unused(self) -> list[str]:
        return [self.book.recorded[i].label for i in self.book.unused()]
