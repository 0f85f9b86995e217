"""One history entry's model: everything one ``evalrunner run`` produced, as it was that night.

Typed all the way down: run records, metric results, the results directory's manifest,
and cells keyed by :class:`~evalrunner.suite._record.CellKey` (written to JSON as its
``'scenario|model'`` token), so readers never pick through dicts. Stored and read by
``_store``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from evalrunner.live._results import Manifest
from evalrunner.stats._evidence_state import EvidenceState
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._record import CellKey, RunRecord

HISTORY_FORMAT_VERSION = 1
"""The format of an entry as one JSON document (Parquet files carry their own number:
``_columnar.COLUMNAR_FORMAT_VERSION``)."""


def _cell_key(value: object) -> object:
    if isinstance(value, str):
        if "|" not in value:
            raise ValueError(f"{value!r} is not a 'scenario|model' key")
        return CellKey.from_token(value)
    return value


Cell = Annotated[
    CellKey, BeforeValidator(_cell_key), PlainSerializer(CellKey.token, return_type=str)
]
"""A scenario x model as a dict key: a CellKey in Python, its 'scenario|model' token in JSON."""

Trajectory = dict[str, Any]
"""A normalised ATIF trajectory: a JSON document, as the core diffs and shapes it."""


class BaselineSummary(BaseModel):
    """The summary of the baseline a night was compared with, as the statistics wrote it.

    Only ``tool_sequences`` is read back (the report's sequence bars); every other
    field of the summary is kept as written, so the file keeps what that night used.
    """

    model_config = ConfigDict(extra="allow")

    tool_sequences: dict[str, float] = Field(
        default_factory=dict,
        description="Top tool sequences ('a > b', '(no tools)') -> share of the baseline's valid runs.",
    )


class Why(BaseModel):
    """Why a cell that failed its night changed, as ``evalrunner explain`` said it."""

    model_config = ConfigDict(extra="forbid")

    cause: str = Field(description="The verdict line: 'cause: ...'.")
    divergence: str | None = Field(
        default=None, description="Where tonight's runs left the baseline's path, if they did."
    )
    request_diff: list[str] = Field(
        default_factory=list, description="Unified diff of the first request's text, if it changed."
    )
    sentinel: str | None = Field(
        default=None, description="What the sentinel saw, when it ran for the cell."
    )
    rows: list[str] = Field(
        default_factory=list,
        description="A dataset scenario's rows that moved most: 'id: passed 3/3 -> 0/3, ...'.",
    )
    row_runs: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Row id -> the normalised trajectory of a typical run of that row tonight, "
        "for each row in rows (the report opens them).",
    )


class HistoryEntry(BaseModel):
    """Everything one run produced, as it was that night."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=HISTORY_FORMAT_VERSION, description="History file format version."
    )
    suite: str = Field(description="Suite name.")
    created_at: str = Field(description="ISO 8601 UTC time the entry was written.")
    manifest: Manifest = Field(description="The results directory's manifest.")
    records: list[RunRecord] = Field(description="Every run's record.")
    verdicts: list[MetricResult] = Field(
        default_factory=list, description="Per-metric comparisons with the baselines."
    )
    baselines: dict[Cell, BaselineSummary] = Field(
        default_factory=dict,
        description="'scenario|model' -> baseline summary used for the verdicts.",
    )
    typical: dict[Cell, Trajectory] = Field(
        default_factory=dict,
        description="'scenario|model' -> normalised trajectory of a typical run (the modal tool sequence), for diffs.",
    )
    baseline_typical: dict[Cell, Trajectory] = Field(
        default_factory=dict,
        description="'scenario|model' -> the baseline's typical normalised trajectory.",
    )
    outage: bool = Field(
        default=False,
        description="The night was an outage (too many infra_error runs): no verdicts were "
        "computed, and its rates describe the endpoints, not the agent. Written only when true.",
    )
    evidence: dict[Cell, EvidenceState] = Field(
        default_factory=dict,
        description="'scenario|model' -> the evidence accumulated against the cell's accepted "
        "baseline, after this night; the next night continues from it (a new anchor restarts "
        "it). Written only when there is some.",
    )
    causes: dict[Cell, Why] = Field(
        default_factory=dict,
        description="'scenario|model' -> why a cell that failed the night changed (see "
        "docs/explain.md). Written only when there is some.",
    )

    broken_checks: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="scenario -> check (a code check's function, or 'judge') -> runs of this "
        "night on which the check failed itself (raised, or returned what a check cannot): "
        "those runs were judged without it. Written only when there is some.",
    )

    not_compared: dict[Cell, str] = Field(
        default_factory=dict,
        description="'scenario|model' -> why a cell the night ran was not compared: no "
        "baseline yet, or one for another model or configuration (then what its runs sent "
        "otherwise, 'temperature 0.0 -> 0.8'), with the command that fixes it. Written only "
        "when there is some.",
    )

    @model_serializer(mode="wrap")
    def _omit_defaults_older_entries_lack(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        # Older entries never had these fields: without them an entry is written as they were.
        data: dict[str, Any] = handler(self)
        for name in ("outage", "evidence", "causes", "broken_checks", "not_compared"):
            if not data.get(name):
                data.pop(name, None)
        return data
