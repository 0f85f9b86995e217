"""Replaying recorded model responses strictly, and recording live ones.

Replay never reaches the network and never invents a response: running out
of script raises :class:`ScriptExhausted`, because an agent making more calls
than when recorded is exactly the regression to catch. :class:`Replayer` and
:class:`Recorder` are what ``capture(replay=..., recorder=...)`` takes; each
makes the transport that answers a capture scope's calls
(:class:`ReplayTransport`, :class:`RecordingTransport`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from evalrunner._redact import redact, redact_text
from evalrunner.core._actions import settings_moved
from evalrunner.core._faults import InfraLog
from evalrunner.core._mismatch import Recorded, RequestBook, recorded_label
from evalrunner.core._request_key import masked_request_key
from evalrunner.core._response import ResponseRecord, response_from_record, stream_from_record
from evalrunner.core._transport import Answer, Request, Transport
from evalrunner.errors import ReplayError, RequestMismatch, ScriptExhausted
from evalrunner.frozen._script import (
    ErrorRecord,
    RequestHint,
    Script,
    ScriptEntry,
    format1_request_key,
    raise_recorded,
    request_hint,
)


def _model_moved(recorded: str | None, now: str | None, redo: str) -> str | None:
    """'replay: recorded against openai/gpt-4o, the scenario now runs openai/gpt-4o-mini;
    ...' (None: the same, or either unknown)."""
    if recorded is None or now is None or recorded == now:
        return None
    return (
        f"replay: recorded against {recorded}, the scenario now runs {now}; the recorded "
        f"answers do not show what {now} does. If the change is intended, re-record: {redo}"
    )


class Replayer:
    """Serves recorded responses: the first unused entry with the request's request key,
    else the next unused one in recorded order (counted as a mismatch, or under
    ``strict`` raised as :class:`RequestMismatch`).

    Matching by request key keeps fan-out correct: concurrent sub-agents may ask
    in a different order than when recorded. Matching and the mismatch message
    are the capture proxy's (``core._mismatch.RequestBook``).
    """

    def __init__(
        self,
        script: Script,
        *,
        strict: bool = False,
        source: str = "script",
        redo: str = "pytest --golden-record",
        masks: tuple[tuple[re.Pattern[str], str], ...] = (),
        model: str | None = None,
    ) -> None:
        self.script = script
        self.strict = strict
        self.model_moved = _model_moved(script.model, model, redo)
        """Said when the scenario now runs another model than it was recorded against."""
        self.source = source
        self.redo = redo
        """The command that records this test's calls afresh (named in a failure)."""
        self.masks = masks
        """The golden's masks: requests match with their volatile text replaced, on both sides."""
        self.book = RequestBook(
            [
                Recorded(
                    e.request.view,
                    self._request_key(e.request.view, e.request.fingerprint),
                    recorded_label(i + 1, e.request.message_count, e.request.last_user_message),
                )
                for i, e in enumerate(script.entries)
            ],
            source,
            redo,
        )
        self.mismatches: list[str] = (
            [f"{self.model_moved}\n(--golden-strict fails here)"] if self.model_moved else []
        )
        self.exhausted: ScriptExhausted | None = None
        self.calls = 0
        self.asked: dict[int, RequestHint] = {}
        """Entry index -> the request it answered, where the request keys matched."""

    @property
    def used(self) -> list[bool]:
        return self.book.used

    def _request_key(self, view: Mapping[str, Any] | None, recorded: str) -> str:
        """``recorded`` (a request's own request key), or with :attr:`masks`, that of its
        masked view. A hand-written entry ("": matched by order) stays as it is."""
        if not self.masks or view is None or not recorded:
            return recorded
        return masked_request_key(view, self.masks)

    def next(self, kwargs: Mapping[str, Any]) -> tuple[ResponseRecord, int]:
        """The recorded response for this request and its call number (taken under the lock)."""
        hint = request_hint(kwargs)
        fp = (
            self._request_key(hint.view, hint.fingerprint)
            if self.script.matches_by_view
            else format1_request_key(kwargs)
        )
        with self.book.lock:
            self.calls += 1
            if self.strict and self.model_moved:
                raise RequestMismatch(self.model_moved)
            return self._next(hint, fp), self.calls

    def _next(self, hint: RequestHint, fp: str) -> ResponseRecord:
        # The caller holds the lock.
        found = self.book.take(fp)
        if found is not None:
            self.asked[found] = hint
            entry = self.script.entries[found]
            self._same_settings(entry.request, hint)
            return self._serve(entry)
        for i, entry in enumerate(self.script.entries):
            if self.used[i]:
                continue
            if entry.request.fingerprint:
                miss = self.book.miss(self.calls, hint.view or {}, fp)
                if self.strict:
                    raise miss
                self.mismatches.append(
                    f"{miss}\n(served {self.book.recorded[i].label} in its place; "
                    "--golden-strict fails here)"
                )
                self.book.stand_ins[i] = self.calls
            self.used[i] = True  # hand-written entries (no request key) match by order
            return self._serve(entry)
        message = (
            f"{self.source}: the agent made model call {self.calls}, but only "
            f"{len(self.script.entries)} were recorded. The agent now calls the model more "
            f"often than when recorded; if that is intended, re-record with: {self.redo}"
        )
        if self.mismatches:
            # The first request that differed is usually the change that led here (a new tool,
            # another prompt); without it the failure named only its last consequence.
            message += (
                f"\nBefore it, {len(self.mismatches)} request(s) differed from the recording; "
                f"the first:\n{self.mismatches[0]}"
            )
        self.exhausted = ScriptExhausted(message)
        raise self.exhausted

    def _same_settings(self, recorded: RequestHint, now: RequestHint) -> None:
        """A request that matched but was sent with other sampling parameters (a PR that
        changed only the temperature): named, and under ``strict`` a failure. Before, the
        same answers replayed and every check said "no behavioural change"."""
        moved = settings_moved(recorded.settings, now.settings)
        if moved is None:
            return
        said = (
            f"replay: model call {self.calls} was recorded with other sampling settings "
            f"({moved}); its recorded answer does not show what the model does now. "
            f"If the change is intended, re-record: {self.redo}"
        )
        if self.strict:
            raise RequestMismatch(said)
        self.mismatches.append(f"{said}\n(--golden-strict fails here)")

    @staticmethod
    def _serve(entry: ScriptEntry) -> ResponseRecord:
        if entry.error is not None:
            raise_recorded(entry.error)
        return entry.response or ResponseRecord()

    def upgraded(self) -> Script | None:
        """A format 1 script rewritten in the current format, from the requests replay saw;
        None unless every entry answered a request with its request key."""
        entries = self.script.entries
        if self.script.matches_by_view or len(self.asked) != len(entries):
            return None
        return Script(
            entries=[e.model_copy(update={"request": self.asked[i]}) for i, e in enumerate(entries)]
        )

    @property
    def unused(self) -> int:
        return len(self.book.unused())

    def unused_entries(self) -> list[str]:
        """Each recorded call no request asked for: its place in the file and what it held."""
        return [
            _describe_entry(i, entry)
            for i, entry in enumerate(self.script.entries)
            if not self.used[i]
        ]

    def transport(self, live: Transport) -> ReplayTransport:
        """Answers from this script; the live transport is never used."""
        return ReplayTransport(self, live.infra)


def _describe_entry(index: int, entry: ScriptEntry) -> str:
    request = entry.request
    if entry.error is not None:
        answer = f"raised {entry.error.type}"
    elif entry.response is not None and entry.response.tool_calls:
        answer = "called " + ", ".join(c.name for c in entry.response.tool_calls)
    else:
        content = (entry.response.content if entry.response is not None else None) or ""
        answer = f"answered {content[:60]!r}"
    return (
        f"entries[{index}] (recorded after {request.message_count} messages, last user message "
        f"{request.last_user_message!r}; {answer})"
    )


class Recorder:
    """Collects responses of a live run into a :class:`Script`."""

    def __init__(self) -> None:
        self.script = Script(entries=[])
        self._lock = threading.Lock()

    def add(self, kwargs: Mapping[str, Any], record: ResponseRecord) -> None:
        entry = ScriptEntry(
            request=request_hint(kwargs),
            response=ResponseRecord.model_validate(redact(record.model_dump())),
        )
        with self._lock:
            self.script.entries.append(entry)

    def add_error(self, kwargs: Mapping[str, Any], exc: BaseException) -> None:
        error = ErrorRecord(type=type(exc).__name__, message=redact_text(str(exc)))
        with self._lock:
            self.script.entries.append(ScriptEntry(request=request_hint(kwargs), error=error))

    def transport(self, live: Transport) -> RecordingTransport:
        """Live answers (and errors) from ``live``, each recorded here."""
        return RecordingTransport(live, self)


class ReplayTransport:
    """Answers each call with the recorded response (as chunks when streamed)."""

    def __init__(self, replayer: Replayer, infra: InfraLog | None = None) -> None:
        self.replayer = replayer
        # Nothing live happens; the log stays empty but callers read it all the same.
        self.infra = infra if infra is not None else InfraLog(None)

    def complete(self, request: Request) -> Answer:
        record, n = self.replayer.next(request)
        if request.get("stream"):
            return Answer(stream_from_record(record, n), record)
        return Answer(response_from_record(record, n), record)

    async def acomplete(self, request: Request) -> Answer:
        return self.complete(request)

    def finish(self, error: BaseException | None) -> list[str]:
        exhausted = self.replayer.exhausted
        # Agent code may catch and wrap the replay error (retry loops do);
        # surface it anyway: running out of script is the regression to catch.
        if exhausted is not None and not isinstance(error, ScriptExhausted):
            raise exhausted
        if isinstance(error, ReplayError):
            raise error
        return list(self.replayer.mismatches)


class RecordingTransport:
    """Sends each call on to ``inner`` (live) and records its answer or its error."""

    def __init__(self, inner: Transport, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    @property
    def infra(self) -> InfraLog:
        return self.inner.infra

    def complete(self, request: Request) -> Answer:
        with self._errors_recorded(request):
            answer = self.inner.complete(request)
        return self._recorded(request, answer)

    async def acomplete(self, request: Request) -> Answer:
        with self._errors_recorded(request):
            answer = await self.inner.acomplete(request)
        return self._recorded(request, answer)

    def finish(self, error: BaseException | None) -> list[str]:
        return self.inner.finish(error)

    @contextmanager
    def _errors_recorded(self, request: Request) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            self.recorder.add_error(request, exc)
            raise

    def _recorded(self, request: Request, answer: Answer) -> Answer:
        if answer.record is not None:
            self.recorder.add(request, answer.record)
        return answer
