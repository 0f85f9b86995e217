"""One proxied run: its calls, answered live or from a recording, and what it produced.

Runs are separate by URL (``/runs/<run-id>/v1``), so concurrent runs never
share calls, retries, recordings or conversations. A run's state is touched
from the server's event loop (calls) and from the caller's thread (opening,
finishing), hence the lock; it is never held across an ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalrunner.core._actions import sendable, settings_moved
from evalrunner.core._faults import InfraLog, RetrySettings, is_infra_error
from evalrunner.core._response import ResponseRecord, message_dict
from evalrunner.core._spans import ToolExecution, with_tool_executions
from evalrunner.errors import ConfigError, RequestMismatch
from evalrunner.proxy._recording import (
    RecordedCall,
    RecordedError,
    Recording,
    ReplayBook,
)
from evalrunner.proxy._request import Incoming, ModelRequest, ProxyHTTPError
from evalrunner.proxy._trajectory import CapturedCall, build_trajectory, conversations
from evalrunner.proxy._upstream import Upstream, forward, upstream_failure

if TYPE_CHECKING:
    import aiohttp

    from evalrunner.core._transport import Gate

Mode = Literal["record", "replay", "passthrough"]

DEFAULT_RUN = "default"
# Run ids become URL path segments and recording file names: letters, digits,
# '.', '_', '-', in '/'-separated segments (the live runner's ids look like
# 'scenario/model/3'); no empty, '.' or '..' segments.
_RUN_ID = re.compile(r"^(?!.*(?:^|/)\.{1,2}(?:/|$))[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*$")

log = logging.getLogger("evalrunner.proxy")


def check_run_id(run_id: str) -> str:
    if len(run_id) > 200 or not _RUN_ID.match(run_id):
        raise ConfigError(
            f"proxy run id {run_id!r}: use letters, digits, '.', '_' and '-' in "
            "'/'-separated segments (at most 200 characters)"
        )
    return run_id


@dataclass
class CallLog:
    """One request of the run and what became of it."""

    n: int  # arrival number, from 1
    incoming: Incoming
    record: ResponseRecord | None = None
    chunks: list[dict[str, Any]] | None = None
    error: RecordedError | None = None
    infra: bool = False
    recorded_as: int | None = None  # replay: the arrival number of the recorded call it got


@dataclass
class Answer:
    """What to send back: the record, plus upstream's own chunks or body when there are."""

    n: int
    record: ResponseRecord
    chunks: list[dict[str, Any]] | None = None
    body: dict[str, Any] | None = None


@dataclass
class ProxyRunResult:
    """What one proxied run produced (:meth:`ProxyServer.finish_run`).

    ``trajectory`` is the ATIF trajectory (sub-agents embedded);
    ``model_calls`` counts every request that reached the proxy, answered or not:
    0 means the agent never reached the model through the proxy (a wrong base
    URL, or an SDK that ignores the environment), which callers report as such.
    ``infra.final_error`` is set when an upstream fault survived the retries
    (classify the run ``infra_error``); ``replay_errors`` are requests replay
    could not answer (the run failed: the agent changed); ``upstream_errors``
    are errors the upstream model returned for a request (e.g. the context
    window), which the agent saw as HTTP errors; ``refusals`` are requests the
    proxy itself refused before any model saw them (a field or tool type it does
    not carry), as ``"400: <message>"``.
    """

    run_id: str
    trajectory: dict[str, Any]
    model_calls: int
    infra: InfraLog
    replay_errors: list[str] = field(default_factory=list)
    settings_moved: list[str] = field(default_factory=list)
    """Replayed calls whose request matched but was sent with other sampling settings
    ("model call 2 was recorded with other sampling settings (temperature 0.2 -> 0.8)")."""
    upstream_errors: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    """Those of ``refusals`` that asked for what the proxy does not carry (extended
    thinking, a built-in tool): evalrunner's limit, so the run measured nothing."""
    unused_recorded: list[str] = field(default_factory=list)
    recording: Recording | None = None
    recording_path: Path | None = None
    first_request: dict[str, Any] | None = None
    """The agent's first request in chat form (content and sampling parameters)."""

    @property
    def no_model_calls(self) -> bool:
        return self.model_calls == 0

    @property
    def infra_error(self) -> BaseException | None:
        return self.infra.final_error

    @property
    def ok(self) -> bool:
        """No replay miss, no infrastructure fault, and at least one model call."""
        return not (self.replay_errors or self.infra_error or self.no_model_calls)


class RunState:
    """The live state of one run inside the proxy."""

    def __init__(
        self,
        run_id: str,
        *,
        mode: Mode,
        upstream: Upstream | None,
        retry: RetrySettings | None,
        book: ReplayBook | None,
        recording_path: Path | None,
        name: str,
        gate: Gate | None = None,
    ) -> None:
        self.run_id = run_id
        self.gate = gate
        self.mode = mode
        self.upstream = upstream
        self.book = book
        self.recording_path = recording_path
        self.name = name
        self.infra = InfraLog(retry)
        self.calls: list[CallLog] = []
        self.replay_errors: list[str] = []
        self.settings_moved: list[str] = []
        self.refusals: list[str] = []
        self.unsupported: list[str] = []
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.tool_executions: list[ToolExecution] = []
        """From the agent's own spans, sent to the proxy's OTLP/HTTP route."""
        self._lock = threading.Lock()

    def spans_received(self, executions: list[ToolExecution]) -> None:
        with self._lock:
            self.tool_executions += executions

    def refused(self, status: int, message: str, unsupported: bool = False) -> None:
        """A request of this run the proxy turned away before any model saw it
        (``unsupported``: for a feature the proxy does not carry)."""
        with self._lock:
            self.refusals.append(f"{status}: {message}")
            if unsupported:
                self.unsupported.append(message)

    def _arrive(self, incoming: Incoming) -> CallLog:
        with self._lock:
            entry = CallLog(len(self.calls) + 1, incoming)
            self.calls.append(entry)
            return entry

    async def call(
        self, incoming: Incoming, session: aiohttp.ClientSession | None = None
    ) -> Answer:
        """Answer one request (replayed or forwarded), or raise the HTTP error the agent gets.

        ``session`` is the server's connection pool (for the direct transport).
        """
        entry = self._arrive(incoming)
        if self.book is not None:
            answer = self._replay(entry)
        else:
            # Cancelled when the run is finished (its agent timed out), not left waiting on
            # the upstream until the server stops.
            self.infra.track(asyncio.current_task())
            answer = await self._forward(entry, session)
        if incoming.request.api == "responses":
            # Kept for a later request's previous_response_id (Responses API).
            message = message_dict(answer.record)
            message.pop("reasoning_content", None)
            with self._lock:
                self.history[f"resp_evalrunner_{entry.n}"] = [
                    *incoming.request.messages[incoming.history_from :],
                    message,
                ]
        return answer

    def _replay(self, entry: CallLog) -> Answer:
        assert self.book is not None
        try:
            recorded = self.book.take(entry.incoming.request, entry.n)
        except RequestMismatch as miss:
            with self._lock:
                self.replay_errors.append(str(miss))
            entry.error = RecordedError(status=400, type="replay_mismatch", message=str(miss))
            raise ProxyHTTPError(400, "replay_mismatch", str(miss)) from None
        if recorded.error is not None:
            entry.error = recorded.error
            raise ProxyHTTPError(recorded.error.status, recorded.error.type, recorded.error.message)
        entry.record = recorded.response or ResponseRecord()
        entry.recorded_as = recorded.call
        self._same_settings(recorded.request, entry)
        same_stream = recorded.stream and recorded.request.api == "chat"
        return Answer(entry.n, entry.record, chunks=recorded.chunks if same_stream else None)

    def _same_settings(self, recorded: ModelRequest, entry: CallLog) -> None:
        """A request that matched its recording but was sent with other sampling settings
        (a thinking budget, a temperature): its recorded answer does not show what the model
        does now. Said for the run (``ProxyRunResult.settings_moved``), as in process."""
        moved = settings_moved(sendable(recorded.params), sendable(entry.incoming.request.params))
        if moved is not None:
            with self._lock:
                self.settings_moved.append(
                    f"model call {entry.n} was recorded with other sampling settings ({moved})"
                )

    async def _forward(self, entry: CallLog, session: aiohttp.ClientSession | None) -> Answer:
        if self.upstream is None:
            raise ProxyHTTPError(
                500, "proxy_error", "evalrunner proxy: no upstream model configured"
            )
        try:
            request, stream = entry.incoming.request, entry.incoming.stream
            got = await forward(self.upstream, request, stream, self.infra, session, self.gate)
        except ProxyHTTPError as exc:  # the proxy's own refusal of the request, not upstream's
            entry.error = RecordedError(status=exc.status, type=exc.kind, message=exc.message)
            if exc.unsupported:  # evalrunner's limit: the run is infrastructure, not behaviour
                self.refused(exc.status, exc.message, unsupported=True)
            raise
        except Exception as exc:
            error, infra = upstream_failure(exc, self.infra)
            if not is_infra_error(exc) and not isinstance(getattr(exc, "status_code", None), int):
                # Neither an endpoint fault nor an HTTP answer: likely our own bug.
                log.exception("evalrunner proxy: unexpected error forwarding a call")
            entry.error = RecordedError(status=error.status, type=error.kind, message=error.message)
            entry.infra = infra
            raise error from None
        entry.record, entry.chunks = got.record, got.chunks
        return Answer(entry.n, got.record, chunks=got.chunks, body=got.body)

    # -- the result ------------------------------------------------------------------

    def recording(self) -> Recording:
        calls = [
            RecordedCall(
                call=c.n,
                request=c.incoming.request,
                stream=c.incoming.stream,
                response=c.record,
                error=c.error,
                chunks=c.chunks,
            )
            for c in self.calls
            if not c.infra and (c.record is not None or c.error is not None)
        ]
        label = self.upstream.name if self.upstream else None
        return Recording(run_id=self.run_id, upstream=label, calls=calls)

    def trajectory(self) -> dict[str, Any]:
        done = [c for c in self.calls if c.record is not None]
        # A replay is read in the recorded run's order, not in the order requests came
        # now: calls in flight together (asyncio.gather, threads) reach the proxy in any
        # order, and the first conversation to arrive is the agent, the others its
        # sub-agents. Each request got the recorded call with its own fingerprint, so
        # this is the order those requests had when recorded, and a replay gives the
        # recorded trajectory every time. (Calls served nothing recorded failed the run.)
        done.sort(key=lambda c: (c.recorded_as is None, c.recorded_as or 0, c.n))
        answered = [(c.incoming.request, c.record) for c in done if c.record is not None]
        numbers = conversations([(request.messages, record) for request, record in answered])
        return build_trajectory(
            self.name,
            [
                CapturedCall(number, request.chat_kwargs(), record)
                for number, (request, record) in zip(numbers, answered, strict=True)
            ],
        )

    def result(self) -> ProxyRunResult:
        with self._lock:
            result = ProxyRunResult(
                run_id=self.run_id,
                trajectory=with_tool_executions(self.trajectory(), self.tool_executions),
                model_calls=len(self.calls),
                infra=self.infra,
                replay_errors=list(self.replay_errors),
                settings_moved=list(self.settings_moved),
                upstream_errors=[
                    c.error.message
                    for c in self.calls
                    if c.error is not None and not c.infra and c.error.type != "replay_mismatch"
                ],
                refusals=list(self.refusals),
                unsupported=list(self.unsupported),
                unused_recorded=self.book.unused() if self.book is not None else [],
                first_request=sendable(self.calls[0].incoming.request.chat_kwargs())
                if self.calls
                else None,
            )
        if self.mode == "record":
            result.recording = self.recording()
        return result
