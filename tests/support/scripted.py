"""A Transport that answers from a list of responses: capture without litellm's network or frozen mode."""

from __future__ import annotations

from typing import Any

from evalrunner.core._faults import InfraLog
from evalrunner.core._response import ResponseRecord, response_from_record, stream_from_record
from evalrunner.core._transport import Answer, Request


class ScriptedTransport:
    """Answers call n with ``records[n-1]`` (as chunks when streamed); remembers what it saw."""

    def __init__(self, *records: ResponseRecord, notes: tuple[str, ...] = ()) -> None:
        self.records = list(records)
        self.notes = list(notes)
        self.requests: list[Request] = []
        self.finished: list[BaseException | None] = []
        self.infra = InfraLog(None)

    def complete(self, request: Request) -> Answer:
        self.requests.append(request)
        n = len(self.requests)
        record = self.records[n - 1]
        response: Any = (
            stream_from_record(record, n)
            if request.get("stream")
            else response_from_record(record, n)
        )
        return Answer(response, record, f"scripted-{n}")

    async def acomplete(self, request: Request) -> Answer:
        return self.complete(request)

    def finish(self, error: BaseException | None) -> list[str]:
        self.finished.append(error)
        return list(self.notes)
