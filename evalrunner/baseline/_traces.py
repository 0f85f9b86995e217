"""What a baseline keeps of its runs' trajectories so a flagged change can be attributed.

Per run: its actions (tool, argument digest, answer digest), a few dozen bytes
each. Per distinct first request: the system prompt, the first user message and
the tool definitions, once, with the runs that sent it. Text is redacted when
the baseline is written, like every file evalrunner writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from evalrunner._jsonio import canonical
from evalrunner.core._actions import Action, actions, first_request, first_response_calls, move
from evalrunner.live._results import ResultsDir
from evalrunner.suite._record import RunRecord

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig

__all__ = ["FirstRequest", "RunTrace", "Traces", "first_moves", "run_trace", "traces_of"]


class FirstRequest(BaseModel):
    """One distinct first request the baseline's runs sent, as the trajectory keeps it."""

    model_config = ConfigDict(extra="forbid")

    system: str = Field(description="The system prompt (system steps before the first answer).")
    user: str = Field(description="The first user message.")
    tools: dict[str, str] = Field(description="Tool name -> its definition (canonical JSON).")
    runs: int = Field(ge=1, description="How many of the baseline's runs sent exactly this.")

    def view(self) -> dict[str, Any]:
        return {"system": self.system, "user": self.user, "tools": self.tools}


class RunTrace(BaseModel):
    """One run's actions: [tool, argument digest, answer digest or null] per tool call."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The run's id, as in the baseline's records.")
    actions: list[tuple[str, str, str | None]] = Field(
        description="The top-level agent's tool calls in order: tool, argument digest, answer digest."
    )
    first_response: int | None = Field(
        default=None,
        ge=0,
        description="How many of those calls the run's first model response made at once "
        "(0: it answered); absent in baselines written before format 3.",
    )

    def as_actions(self) -> list[Action]:
        return [Action(*a) for a in self.actions]

    def first_move(self) -> str | None:
        """The first model response's action (:func:`~evalrunner.core._actions.move`);
        None when the baseline predates keeping it."""
        if self.first_response is None:
            return None
        return move([a[0] for a in self.actions[: self.first_response]])


class Traces(BaseModel):
    """One accepted night's runs' actions and first requests (see module doc)."""

    model_config = ConfigDict(extra="forbid")

    requests: list[FirstRequest] = Field(
        default_factory=list, description="Distinct first requests, most sent first."
    )
    runs: list[RunTrace] = Field(default_factory=list, description="Each run's actions.")
    sent: dict[str, Any] | None = Field(
        default=None,
        description="The most sent first request in full (messages, tools, sampling "
        "parameters), for the sentinel to send again; absent when the runs did not keep it.",
    )
    sent_row: str | None = Field(
        default=None,
        description="A dataset scenario's row whose run sent 'sent' (the sentinel compares "
        "with that row's runs); absent outside datasets.",
    )

    @field_validator("sent")
    @classmethod
    def _sendable(cls, sent: dict[str, Any] | None) -> dict[str, Any] | None:
        """The sentinel sends it as it is: a request no endpoint could read would fail every
        call, and read as an outage of the provider instead of a damaged file."""
        problem = None if sent is None else _unsendable(sent)
        if problem is not None:
            raise ValueError(problem)
        return sent

    @model_serializer(mode="wrap")
    def _omit_no_row(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)  # baselines without datasets read as before
        if data.get("sent_row") is None:
            data.pop("sent_row", None)
        return data


def _unsendable(sent: dict[str, Any]) -> str | None:
    """What keeps a kept first request from being sent again, if anything."""
    messages = sent.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list (the request the runs sent)"
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        return "every one of 'messages' must be an object with a 'role'"
    tools = sent.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return "'tools' must be a list of tool objects"
    return None


def first_moves(runs: Sequence[RunTrace]) -> list[str] | None:
    """Each run's first model response (:meth:`RunTrace.first_move`); None when any run's
    traces predate keeping them (baseline format 3)."""
    moves = [r.first_move() for r in runs]
    known = [m for m in moves if m is not None]
    return known if len(known) == len(moves) else None


def run_trace(run_id: str, normalized: Mapping[str, Any]) -> RunTrace:
    return RunTrace(
        run_id=run_id,
        actions=[(a.tool, a.args, a.observation) for a in actions(normalized)],
        first_response=first_response_calls(normalized),
    )


def traces_of(
    results: ResultsDir, records: Sequence[RunRecord], config: NormalizeConfig | None = None
) -> Traces:
    """The traces of ``records`` read from their run files (a run without a file is left out)."""
    from evalrunner.core._normalize import DEFAULT_CONFIG, normalize

    first = _FirstRequests()
    runs: list[RunTrace] = []
    for record in records:
        path = results.run_path(record.run_id)
        if not record.measured or not path.exists():
            continue
        _, trajectory, request = results.read_run_file(path)
        normalized = normalize(trajectory, config or DEFAULT_CONFIG)
        runs.append(run_trace(record.run_id, normalized))
        first.add(normalized, request, record.row)
    return first.traces(runs)


@dataclass
class _FirstRequests:
    """The first requests of the runs read so far, counted by their view."""

    views: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The first request in full of a view, where some run's file kept it."""
    rows: dict[str, str | None] = field(default_factory=dict)
    """The dataset row of the run whose request is in :attr:`sent`."""
    counts: Counter[str] = field(default_factory=Counter)

    def add(
        self, normalized: Mapping[str, Any], request: dict[str, Any] | None, row: str | None
    ) -> None:
        view = first_request(normalized)
        key = canonical(view)
        self.counts[key] += 1
        self.views[key] = view
        if key not in self.sent and request is not None:
            self.sent[key] = request
            self.rows[key] = row

    def traces(self, runs: list[RunTrace]) -> Traces:
        """The traces of ``runs``, with the requests counted, most sent first."""
        requests = [FirstRequest(**self.views[k], runs=n) for k, n in self.counts.most_common()]
        modal = self.counts.most_common(1)[0][0] if self.counts else None
        return Traces(
            requests=requests,
            runs=runs,
            sent=self.sent.get(modal) if modal else None,
            sent_row=self.rows.get(modal) if modal else None,
        )
