"""Runs as columns, and every metric as a per-run value.

A metric's value for one run depends on the baseline (the usual final answer, the
usual first tool, the usual tool path), so a :class:`Coding` is fixed from the
pooled baseline once and then applied to every night, baseline nights included.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import numpy as np

from evalrunner.errors import FileFormatError
from evalrunner.stats._formulas import FloatArray, normalize_answer
from evalrunner.suite._metrics import (
    JUDGE_AGREEMENT,
    SCORE,
    SUBAGENTS,
    TOOL_CALLS_OF,
    TOOL_ERROR_RATE,
    TOOL_USED,
)
from evalrunner.suite._record import Outcome, RunRecord

LOG_OFFSETS: dict[str, float] = {
    "prompt_tokens": 1.0,
    "completion_tokens": 1.0,
    "latency_s": 0.01,
    "cache_read_tokens": 1.0,
    "cache_write_tokens": 1.0,
    "cost_usd": 1e-6,
    "tool_latency_s": 0.001,
}
"""Continuous metrics are compared as log(x + offset): one token, ten milliseconds.

The offset keeps an occasional zero finite without moving realistic values
(hundreds of tokens, seconds of latency) by more than a fraction of a percent. A tool's
own latency offsets by a millisecond: a local function's microseconds are not behaviour.
"""

T = TypeVar("T")

_OUTCOME_OF = {
    "success_rate": Outcome.PASSED,
    "crash_rate": Outcome.CRASHED,
    "skip_rate": Outcome.SKIPPED,
}
_COUNTS = ("step_count", "llm_calls", "tool_calls", SUBAGENTS)
_CONTINUOUS = ("prompt_tokens", "completion_tokens", "latency_s")
REPORTED = ("cache_read_tokens", "cache_write_tokens", "cost_usd", "tool_latency_s")
"""Continuous values only some runs have (prompt caching where the endpoint reports it, cost
where the model is priced, tool latency where tool spans timed the executions): NaN in a run without one, left out of that metric; the metric
exists where some run on either side has one."""
_SINCE_RECORDED = ("tool_latency_s",)
""":data:`REPORTED` values that records hold only since they were recorded: a metric where
baseline runs have one (as ``tool_error_rate``), not a row in every cell of an older baseline."""
_RECORDED = ("tool_errors",)
"""Counts only some runs have (records written before the field existed): NaN in a run
without one, as :data:`REPORTED`."""


@dataclass(frozen=True)
class Runs:
    """The runs of one night (or a pool of nights), infra errors removed, as columns."""

    attempted: int
    infra: int
    outcome: tuple[str, ...]
    valid: tuple[int, ...]
    """Indices (into the other columns) of runs that passed or failed."""
    numbers: dict[str, FloatArray]
    tools: tuple[tuple[str, ...], ...]
    answers: tuple[str | None, ...]
    scores: tuple[Mapping[str, float], ...] = ()
    """Each run's code-check scores (empty when no run has any)."""
    rows: tuple[str | None, ...] = ()
    """Each run's dataset row (empty when no run has one)."""
    judge_agreed: tuple[bool | None, ...] = ()
    """Whether each run's judge grades agreed (empty when no run has two grades)."""
    alone: tuple[tuple[str, ...], ...] = ()
    """Each run's tools executed that no model call asked for (empty when no run has one)."""
    alone_recorded: bool = True
    """Every run recorded those (records written before they did hold none)."""

    @classmethod
    def of(cls, records: Iterable[RunRecord]) -> Runs:
        kept = [r for r in records if r.measured]
        attempted = infra = 0
        for r in records:
            attempted += 1
            infra += not r.measured
        return cls(
            attempted=attempted,
            infra=infra,
            outcome=tuple(r.outcome for r in kept),
            valid=tuple(i for i, r in enumerate(kept) if r.judged),
            numbers=_finite_numbers(kept),
            tools=tuple(tuple(r.tools) for r in kept),
            answers=tuple(normalize_answer(r.final_answer) for r in kept),
            **_optional_columns(kept),
        )

    @property
    def n(self) -> int:
        return len(self.outcome)

    def count(self, outcome: str) -> int:
        return sum(o == outcome for o in self.outcome)

    def valid_tools(self) -> list[tuple[str, ...]]:
        return [self.tools[i] for i in self.valid]

    def valid_executed(self, alone: bool) -> list[tuple[str, ...]]:
        """Each valid run's tools: those the model called, then (``alone``) those it ran
        without a call."""
        if not alone or not self.alone:
            return self.valid_tools()
        return [self.tools[i] + self.alone[i] for i in self.valid]

    def valid_numbers(self, column: str) -> FloatArray:
        values: FloatArray = self.numbers[column][list(self.valid)]
        return values

    def valid_scores(self, check: str) -> FloatArray:
        """The valid runs' scores from ``check`` (a run its check did not score is left out)."""
        if not self.scores:
            return np.zeros(0)
        found = [self.scores[i][check] for i in self.valid if check in self.scores[i]]
        return np.array(found, dtype=float)

    def score_names(self) -> set[str]:
        return {name for i in self.valid if self.scores for name in self.scores[i]}


def _finite_numbers(kept: Sequence[RunRecord]) -> dict[str, FloatArray]:
    """The count and continuous columns of the runs kept, every value finite.

    A record refuses NaN and infinity when it is made, but one that skipped validation
    (``model_construct``, a history file's columns, which are read without validating
    again) can still hold one. Such a value is refused here, naming the run and field,
    rather than left out: a run dropped from one metric moves that metric's test without
    anyone knowing (a timeout written as an infinite latency is the slow run the test is
    for), and NaN taken in silently made a count's rank test and a mean meaningless.
    """
    numbers = {
        name: np.array([_number(getattr(r, name)) for r in kept], dtype=float)
        for name in (*_COUNTS, *_CONTINUOUS, *REPORTED, *_RECORDED)
    }
    for name, column in numbers.items():
        bad = [int(i) for i in np.flatnonzero(~np.isfinite(column))]
        # A reported metric's None is a run whose endpoint did not report it; NaN is not.
        bad = [i for i in bad if getattr(kept[i], name) is not None]
        if bad:
            _refuse(kept[bad[0]], name, float(column[bad[0]]))
    _finite_scores(kept)
    return numbers


def _finite_scores(kept: Sequence[RunRecord]) -> None:
    for r in kept:
        for check, score in r.scores.items():
            if not math.isfinite(score):
                _refuse(r, f"scores[{check!r}]", score)


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _refuse(record: RunRecord, field: str, value: float) -> NoReturn:
    raise FileFormatError(
        f"run {record.run_id}: {field} is {value}, which no statistic can use (a run's "
        "numbers must be finite); the record was not validated when it was read or made"
    )


def _optional_columns(kept: Sequence[RunRecord]) -> dict[str, Any]:
    """The columns most suites leave empty: scores, dataset rows, judge agreement."""
    return {
        "scores": _unless_empty([r.scores for r in kept], {}),
        "rows": _unless_empty([r.row for r in kept], None),
        "judge_agreed": _unless_empty([r.judge_agreed for r in kept], None),
        "alone": _unless_empty([tuple(r.tools_alone or ()) for r in kept], ()),
        "alone_recorded": all(r.tools_alone is not None for r in kept),
    }


def modal(values: Iterable[Hashable]) -> Hashable:
    """Most common value; ties broken by the value's repr so the choice is deterministic."""
    counts = Counter(values)
    if not counts:
        return None
    return min(counts.items(), key=lambda item: (-item[1], repr(item[0])))[0]


@dataclass(frozen=True)
class Coding:
    """How one metric turns runs into per-run values (fixed from the pooled baseline)."""

    metric: str
    usual: Hashable = None
    """The baseline's usual answer / first tool / tool path where the metric needs one."""
    known: frozenset[tuple[str, ...]] = frozenset()
    """Tool paths the baseline took (tool_sequence)."""
    by_row: tuple[tuple[str, Hashable], ...] = ()
    """A dataset scenario's usual answer of each row (final_answer_match): each row asks its
    own question, and one usual answer across rows counted every row but the commonest as
    a miss (a baseline of right answers read 0.5)."""
    alone: bool = False
    """A tool's metric (``tool_used``, ``tool_calls_of``) counts the tools run with no model
    call asking too: where every run on both sides recorded them."""

    def values(self, runs: Runs) -> FloatArray:
        """One value per run the metric covers (non-infra runs for outcome rates, else valid runs)."""
        name = self.metric
        if name in _OUTCOME_OF:
            return np.array([o == _OUTCOME_OF[name] for o in runs.outcome], dtype=float)
        if name in _COUNTS:
            return runs.valid_numbers(name)
        if name in _CONTINUOUS or name in REPORTED:
            raw = runs.valid_numbers(name)
            raw = np.clip(raw[~np.isnan(raw)], 0, None)
            logs: FloatArray = np.log(raw + LOG_OFFSETS[name])
            return logs
        if name.startswith(SCORE + ":"):
            return runs.valid_scores(name.partition(":")[2])
        if name == JUDGE_AGREEMENT:
            return _agreed(runs)
        if name == TOOL_ERROR_RATE:
            return _tool_failed(runs)
        return np.array(self._per_valid_run(runs), dtype=float)

    def rows(self, runs: Runs) -> tuple[str | None, ...] | None:
        """Each value's dataset row, aligned with :meth:`values`; None when the runs have no
        rows or the metric is not paired by row (continuous, scores)."""
        name = self.metric
        if (
            not runs.rows
            or name in _CONTINUOUS
            or name in REPORTED
            or name in (JUDGE_AGREEMENT, TOOL_ERROR_RATE)
            or name.startswith(SCORE + ":")
        ):
            return None
        if name in _OUTCOME_OF:
            return runs.rows
        return tuple(runs.rows[i] for i in runs.valid)

    def _per_valid_run(self, runs: Runs) -> list[float]:
        name = self.metric
        if name == "success_rate_valid":
            return [runs.outcome[i] == Outcome.PASSED for i in runs.valid]
        if name == "final_answer_match":
            return self._usual_answers(runs)
        if name == "first_tool":
            return [(t[0] if t else None) == self.usual for t in runs.valid_tools()]
        if name == "tool_sequence":
            return self._atypicality(runs)
        return self._tool_values(runs)

    def _tool_values(self, runs: Runs) -> list[float]:
        """``tool_used:<tool>`` (used or not) or ``tool_calls_of:<tool>`` (how many times)
        per valid run."""
        family, _, tool = self.metric.partition(":")
        executed = runs.valid_executed(self.alone)
        if family == TOOL_CALLS_OF:
            return [float(t.count(tool)) for t in executed]
        return [float(tool in t) for t in executed]

    def _atypicality(self, runs: Runs) -> list[float]:
        """tool_sequence per valid run: 0 the usual path, 1 another known one, 2 a new one."""
        return [
            0.0 if t == self.usual else 1.0 if t in self.known else 2.0 for t in runs.valid_tools()
        ]

    def _usual_answers(self, runs: Runs) -> list[float]:
        """final_answer_match per valid run: its row's usual answer in a dataset scenario."""
        if not self.by_row:
            return [runs.answers[i] == self.usual for i in runs.valid]
        usual = dict(self.by_row)
        rows = runs.rows or (None,) * runs.n
        return [
            (u := usual.get(rows[i] or "")) is not None and runs.answers[i] == u for i in runs.valid
        ]


def _agreed(runs: Runs) -> FloatArray:
    """judge_agreement per valid run its judge graded twice."""
    graded = [runs.judge_agreed[i] for i in runs.valid] if runs.judge_agreed else []
    return np.array([a for a in graded if a is not None], dtype=float)


def _tool_failed(runs: Runs) -> FloatArray:
    """tool_error_rate per non-infra run that recorded its tool errors: 1 where one failed."""
    recorded = runs.numbers["tool_errors"]
    failed: FloatArray = (recorded[~np.isnan(recorded)] > 0).astype(float)
    return failed


def codings(pooled: Runs, tonight: Runs | None = None) -> list[Coding]:
    """Every metric a cell has, coded from the pooled baseline.

    ``tool_used:<name>`` appears for every tool seen on either side (so a tool that
    is new tonight is a metric too); ``final_answer_match`` only when the agent
    gives final answers.
    """
    tools_b = pooled.valid_tools()
    out = [Coding(m) for m in ("success_rate", "crash_rate", "skip_rate")]
    out.append(Coding("tool_sequence", modal(tools_b), frozenset(tools_b)))
    out += [Coding(m) for m in ("step_count", "success_rate_valid")]
    answered = [i for i in pooled.valid if pooled.answers[i] is not None]
    if answered:
        out.append(_answer_coding(pooled, answered))
    out.append(Coding("first_tool", modal(t[0] if t else None for t in tools_b)))
    out += [Coding(m) for m in ("llm_calls", "tool_calls")]
    out += _handoff_codings(pooled, tonight)
    out += [Coding(m) for m in _CONTINUOUS]
    out += _reported_codings(pooled, tonight)
    out += _tool_codings(pooled, tonight)
    return out + _check_codings(pooled, tonight)


def _reported_codings(pooled: Runs, tonight: Runs | None) -> list[Coding]:
    """The :data:`REPORTED` metrics some valid run on either side has a value of, and
    ``tool_error_rate`` where baseline runs recorded their tool errors: a baseline made
    before records held them has nothing to compare tonight's with, and a row saying so
    in every cell of every night until it is rebuilt would drown the rest."""
    sides = [pooled] if tonight is None else [pooled, tonight]
    out = [
        Coding(name)
        for name in REPORTED
        if name not in _SINCE_RECORDED
        and any(bool(np.isfinite(side.valid_numbers(name)).any()) for side in sides)
    ]
    out += [Coding(name) for name in _SINCE_RECORDED if np.isfinite(pooled.numbers[name]).any()]
    if np.isfinite(pooled.numbers["tool_errors"]).any():
        out.append(Coding(TOOL_ERROR_RATE))
    return out


def _handoff_codings(pooled: Runs, tonight: Runs | None) -> list[Coding]:
    """``subagent_count`` where some valid run on either side ran a sub-agent: a cell whose
    agent never hands off would read 0 against 0 in every night's table."""
    sides = [pooled] if tonight is None else [pooled, tonight]
    handed_off = any(bool((side.valid_numbers(SUBAGENTS) > 0).any()) for side in sides)
    return [Coding(SUBAGENTS)] if handed_off else []


def _tool_codings(pooled: Runs, tonight: Runs | None) -> list[Coding]:
    """``tool_used:<name>`` for every tool seen on either side, and ``tool_calls_of:<name>``
    for every tool some run on either side called twice or more: where no run did, its
    count is its ``tool_used`` share, and a second row would only repeat it."""
    sides = [pooled] if tonight is None else [pooled, tonight]
    # Tools run alone count where every run recorded them: a baseline of records from
    # before they did would read each such tool as new tonight.
    alone = all(side.alone_recorded for side in sides)
    seen, repeated = _tools_called(sides, alone)
    return [Coding(f"{TOOL_USED}:{tool}", alone=alone) for tool in seen] + [
        Coding(f"{TOOL_CALLS_OF}:{tool}", alone=alone) for tool in repeated
    ]


def _tools_called(sides: Sequence[Runs], alone: bool) -> tuple[list[str], list[str]]:
    """Every tool some valid run on ``sides`` called, and those some run called twice or more."""
    counts = [Counter(t) for side in sides for t in side.valid_executed(alone)]
    seen = sorted({tool for count in counts for tool in count})
    repeated = sorted({tool for count in counts for tool, n in count.items() if n > 1})
    return seen, repeated


def _answer_coding(pooled: Runs, answered: Sequence[int]) -> Coding:
    """final_answer_match: the baseline's usual answer, per row for a dataset scenario."""
    usual = modal(pooled.answers[i] for i in answered)
    if not pooled.rows:
        return Coding("final_answer_match", usual)
    by_row: dict[str, list[Hashable]] = {}
    for i in answered:
        by_row.setdefault(pooled.rows[i] or "", []).append(pooled.answers[i])
    return Coding(
        "final_answer_match",
        usual,
        by_row=tuple(sorted((row, modal(found)) for row, found in by_row.items())),
    )


def _check_codings(pooled: Runs, tonight: Runs | None) -> list[Coding]:
    """``score:<check>`` for every code check that scored a run on either side, and
    ``judge_agreement`` where a judge graded runs twice."""
    sides = [pooled] if tonight is None else [pooled, tonight]
    scored = set().union(*(side.score_names() for side in sides))
    out = [Coding(f"{SCORE}:{name}") for name in sorted(scored)]
    if any(side.judge_agreed for side in sides):
        out.append(Coding(JUDGE_AGREEMENT))
    return out


def concat(parts: Sequence[Runs]) -> Runs:
    """Several nights pooled into one."""
    return Runs(
        attempted=sum(p.attempted for p in parts),
        infra=sum(p.infra for p in parts),
        outcome=tuple(o for p in parts for o in p.outcome),
        valid=_valid(parts),
        numbers=_pooled_numbers(parts),
        tools=tuple(t for p in parts for t in p.tools),
        answers=tuple(a for p in parts for a in p.answers),
        scores=_pooled(parts, "scores", {}),
        rows=_pooled(parts, "rows", None),
        judge_agreed=_pooled(parts, "judge_agreed", None),
        alone=_pooled(parts, "alone", ()),
        alone_recorded=all(p.alone_recorded for p in parts),
    )


def _pooled_numbers(parts: Sequence[Runs]) -> dict[str, FloatArray]:
    return {
        name: np.concatenate([p.numbers[name] for p in parts]) if parts else np.zeros(0)
        for name in (*_COUNTS, *_CONTINUOUS, *REPORTED, *_RECORDED)
    }


def _valid(parts: Sequence[Runs]) -> tuple[int, ...]:
    """The parts' valid runs as indices into the parts pooled."""
    valid: list[int] = []
    offset = 0
    for part in parts:
        valid += [offset + i for i in part.valid]
        offset += part.n
    return tuple(valid)


def _unless_empty(values: list[T], empty: T) -> tuple[T, ...]:
    """A per-run column, or ``()`` when every run has nothing in it (most suites)."""
    return tuple(values) if any(v != empty for v in values) else ()


def _pooled(parts: Sequence[Runs], column: str, empty: Any) -> tuple[Any, ...]:
    """The parts' per-run ``column`` in order, a part without it filled with ``empty``
    (``()`` when no part has it)."""
    found = [getattr(p, column) for p in parts]
    if not any(found):
        return ()
    return tuple(
        v for p, values in zip(parts, found, strict=True) for v in (values or (empty,) * p.n)
    )
