"""The per-run record: one row per live run, the unit of every statistic.

A run's shape (see :mod:`evalrunner.core._shape`) plus who ran it, how it ended and
how long it took. Results directories, baselines and the run history all store
these raw records, so every statistic can be recomputed later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)

from evalrunner._redact import register_names


class Outcome(StrEnum):
    """How one run ended: exactly one per run (``live/_classify.py`` decides which).

    The values are the strings every record, file and message holds; what each one
    means to the code that reads records is its row in :data:`OUTCOME_TRAITS`.
    """

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    INFRA_ERROR = "infra_error"
    CRASHED = "crashed"

    @property
    def traits(self) -> OutcomeTraits:
        return OUTCOME_TRAITS[self]


@dataclass(frozen=True)
class OutcomeTraits:
    """What one outcome means wherever records are counted, compared or shown."""

    fault: bool
    """The infrastructure's (the endpoint's), never the agent's behaviour: such a run is
    left out of every statistic, explanation, trace and typical trajectory, and counts
    towards an outage instead."""
    judged: bool
    """The run's checks decided it (it reached an answer they could grade): the runs
    that the valid success rate and the tool sequences count."""
    fails_command: bool
    """One such run makes ``evalrunner run`` exit 1, whatever the statistics say (the
    agent has a bug to fix)."""
    label: str
    """Its name in the summary table's column and the progress line."""

    @property
    def behaviour(self) -> bool:
        """The run measured the agent, so it counts for statistics: every outcome that is
        no fault."""
        return not self.fault


# One row per outcome: adding an outcome is one row here plus its rule in
# live/_classify.py (and their tests); the code that reads records asks these traits.
OUTCOME_TRAITS: dict[Outcome, OutcomeTraits] = {
    Outcome.PASSED: OutcomeTraits(fault=False, judged=True, fails_command=False, label="passed"),
    Outcome.FAILED: OutcomeTraits(fault=False, judged=True, fails_command=False, label="failed"),
    Outcome.SKIPPED: OutcomeTraits(fault=False, judged=False, fails_command=False, label="skipped"),
    Outcome.INFRA_ERROR: OutcomeTraits(
        fault=True, judged=False, fails_command=False, label="infra"
    ),
    Outcome.CRASHED: OutcomeTraits(fault=False, judged=False, fails_command=True, label="crashed"),
}
OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)
"""Every outcome, in the order tables and lines list them."""


@dataclass(frozen=True, order=True)
class CellKey:
    """One scenario x model: the unit every comparison, baseline and report row is about."""

    scenario: str
    model: str

    def token(self) -> str:
        """'scenario|model': how JSON files (history entries) key a cell."""
        return f"{self.scenario}|{self.model}"

    @classmethod
    def from_token(cls, token: str) -> CellKey:
        scenario, _, model = token.partition("|")
        return cls(scenario, model)

    def __str__(self) -> str:
        return f"{self.scenario} [{self.model}]"


@dataclass(frozen=True, order=True)
class RunKey:
    """One run: a cell plus its 0-based repetition index."""

    scenario: str
    model: str
    index: int

    @property
    def cell(self) -> CellKey:
        return CellKey(self.scenario, self.model)


class RunRecord(BaseModel):
    """One live run of one scenario against one model."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(
        description="Stable id: '<scenario>/<model-slug>/<index>'; resume relies on it."
    )
    suite: str = Field(description="Suite name.")
    scenario: str = Field(description="Scenario id within the suite.")
    model: str = Field(description="litellm model string the run used.")
    index: int = Field(ge=0, description="0-based repetition number of this scenario x model.")
    row: str | None = Field(
        default=None,
        description="The dataset row the run used (its id); absent outside dataset scenarios.",
    )
    outcome: Outcome = Field(description="Exactly one outcome per run.")
    reason: str | None = Field(
        default=None, description="Why: skip rule, failed check, infra fault or exception."
    )
    step_count: int = Field(default=0, description="Number of steps in the top-level trajectory.")
    llm_calls: int = Field(default=0, description="Model calls, sub-agents included.")
    tool_calls: int = Field(default=0, description="Tool calls, sub-agents included.")
    tools: list[str] = Field(
        default_factory=list,
        description="Ordered tool-call names: the top-level agent's, then each sub-agent's in normalised order.",
    )
    tools_alone: list[str] | None = Field(
        default=None,
        description="Tools the run executed that no model call asked for (its tool spans), by "
        "name; with ``tools``, the per-tool call counts ('tool_calls_of:<tool>'). Absent in "
        "records written before this field existed, which are then left out of those counts.",
    )
    subagent_count: int = Field(default=0, description="Embedded sub-agent trajectories.")
    crashed: bool = Field(default=False, description="The agent raised inside the capture scope.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens, sub-agents included.")
    completion_tokens: int = Field(default=0, description="Completion tokens, sub-agents included.")
    cache_read_tokens: int | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens the provider served from its cache (metric "
        "'cache_read_tokens'); written only when the endpoint reported them.",
    )
    cache_write_tokens: int | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens written to the provider's cache (metric "
        "'cache_write_tokens'); written only when the endpoint reported them.",
    )
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="What the run's model calls cost, USD, from the usage its endpoint "
        "reported at its model's price (metric 'cost_usd'); written only when priced.",
    )
    judge_cost_usd: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="What the judge's calls grading this run cost, USD, priced apart from "
        "the agent's; written only when the judge's model is priced.",
    )
    tool_errors: int | None = Field(
        default=None,
        ge=0,
        description="Tool executions the run said failed: results its tool spans or "
        "record_tool_result(error=True) marked (metric 'tool_error_rate'). An agent that "
        "reports neither reads 0; absent in records written before this field existed.",
    )
    tool_latency_s: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Seconds per tool execution, on average, where the run's tool spans "
        "timed them (metric 'tool_latency_s'); written only when some execution was timed.",
    )
    final_answer: str | None = Field(default=None, description="Message of the last agent step.")
    content_hash: str | None = Field(default=None, description="Hash of the normalised trajectory.")
    # NaN or infinity is refused here, where the record is made: JSON cannot hold it (it
    # would be written as null and fail to load back), and one NaN would poison the metric.
    latency_s: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="Wall time of the run in seconds."
    )
    attempts: int = Field(
        default=1, description="Endpoint attempts used (retries + 1) by the run's worst call."
    )
    started_at: str | None = Field(default=None, description="ISO 8601 UTC start time.")
    checks: dict[str, bool] = Field(default_factory=dict, description="Check name -> held.")
    scores: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = Field(
        default_factory=dict,
        description="Code check name -> the score in [0, 1] it gave the run (metric "
        "'score:<name>'). Written only when there is one.",
    )

    judge_grades: list[Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = Field(
        default_factory=list,
        description="The judge's grades of the answer (checks: judge:); written only when "
        "the scenario has a judge and the run was graded.",
    )
    judge_agreed: bool | None = Field(
        default=None,
        description="Whether the judge's grades fell on the same side of its pass_score "
        "(metric 'judge_agreement'); absent with fewer than two grades.",
    )

    @model_validator(mode="after")
    def _names_are_ours(self) -> RunRecord:
        # Its scenario, check, score and tool names key our own files (a check's result,
        # a tool's metric): named like a secret, they are still not one (issue 53).
        register_names(
            [self.scenario, *self.checks, *self.scores, *self.tools, *(self.tools_alone or [])]
        )
        return self

    @field_serializer("outcome")
    def _outcome_text(self, outcome: Outcome) -> str:
        # The plain string in every mode (model_dump too), as before Outcome was an enum.
        return str(outcome)

    @model_serializer(mode="wrap")
    def _omit_no_scores(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Records from before these fields existed, and runs without them, are written as
        # before.
        data: dict[str, Any] = handler(self)
        for name in ("scores", "judge_grades"):
            if not data.get(name):
                data.pop(name, None)
        for name in (
            "row",
            "judge_agreed",
            "cache_read_tokens",
            "cache_write_tokens",
            "cost_usd",
            "judge_cost_usd",
            "tool_errors",
            "tool_latency_s",
            "tools_alone",
        ):
            if data.get(name) is None:
                data.pop(name, None)
        return data

    @property
    def cell(self) -> CellKey:
        return CellKey(self.scenario, self.model)

    @property
    def measured(self) -> bool:
        """The run measured the agent: its outcome is behaviour, no fault (see
        :class:`OutcomeTraits`). A record's outcome may be a plain string (``model_copy``
        does not validate), so the table is asked, not the value."""
        return OUTCOME_TRAITS[self.outcome].behaviour

    @property
    def judged(self) -> bool:
        """The run's checks decided it (see :class:`OutcomeTraits`)."""
        return OUTCOME_TRAITS[self.outcome].judged

    @property
    def key(self) -> RunKey:
        return RunKey(self.scenario, self.model, self.index)


def model_slug(model: str) -> str:
    """The model's name in file names (run files, baselines, goldens)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", model).strip("_") or "model"


def same_files(models: Iterable[str]) -> str | None:
    """Why two of ``models`` cannot be run together: their files would have one name, and
    one model's runs and baselines would overwrite the other's. None if they can."""
    seen: dict[str, str] = {}
    for model in models:
        other = seen.setdefault(model_slug(model), model)
        if other != model:
            return (
                f"models {other!r} and {model!r} would share their results and baseline files "
                f"(both are named {model_slug(model)!r} there); run one of them in another suite"
            )
    return None


def rows_of(records: Iterable[RunRecord]) -> frozenset[str] | None:
    """The dataset rows ``records`` ran (None: no dataset): a baseline is compared with a
    night, and explained against it, on these rows only."""
    return frozenset(r.row for r in records if r.row is not None) or None


def unmeasured_rows(records: Sequence[RunRecord]) -> dict[str, int]:
    """The dataset rows every run of which ended infra_error, with their runs, in row order.

    Empty when no row was measured: a cell the endpoint failed throughout is said once,
    for the cell, not once per row."""
    infra: dict[str, list[bool]] = {}
    for r in records:
        if r.row is not None:
            infra.setdefault(r.row, []).append(not r.measured)
    unmeasured = {row: len(runs) for row, runs in sorted(infra.items()) if all(runs)}
    return {} if len(unmeasured) == len(infra) else unmeasured


def measured_rows(records: Sequence[RunRecord]) -> frozenset[str] | None:
    """The dataset rows ``records`` measured, which a baseline is compared on (None: no
    dataset). A row whose every run ended infra_error is left out on both sides: kept in
    the baseline alone, its difficulty would pass for a change of the agent."""
    rows = rows_of(records)
    if rows is None:
        return None
    return rows - unmeasured_rows(records).keys()


def group_records(records: Sequence[RunRecord]) -> dict[CellKey, list[RunRecord]]:
    """Records by scenario x model, the unit every comparison works on, in sorted key order."""
    groups: dict[CellKey, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(record.cell, []).append(record)
    return dict(sorted(groups.items()))
