"""Tolerance: practical margins, gating metrics and error rates (suite files set them).

The statistics themselves live in the modules named in ``evalrunner/stats/__init__.py``;
this module keeps :class:`Tolerance` until it moves to ``_tolerance.py``, and thin
bridges (:func:`compare_scenario`, :func:`finalize`, :func:`adaptive_plan`,
:func:`summarize`) for callers outside the package that still pass DataFrames.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrunner.errors import ConfigError
from evalrunner.stats._metrics import (
    DEFAULT_GATING,
    DEFAULT_MARGINS,
    REGISTRY,
    TOOL_USED,
    is_known,
    margin_problem,
    unknown_metric_message,
)


class Tolerance(BaseModel):
    """Practical margins, gating metrics and error rates for one scenario (or a suite).

    ``margins`` given by a user are merged over :data:`DEFAULT_MARGINS`, so
    ``{"margins": {"prompt_tokens": 1.5}}`` changes one margin and keeps the rest.
    A ``tool_used`` entry sets the margin of every ``tool_used:<name>`` metric; a
    ``tool_used:<name>`` entry overrides it for one tool.
    """

    model_config = ConfigDict(extra="forbid")

    margins: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_MARGINS),
        description="Metric -> smallest change that matters, in the units of the metric's effect.",
    )
    gating: list[str] = Field(
        default_factory=lambda: list(DEFAULT_GATING),
        description="Metrics whose regression fails the night; the rest are diagnostics.",
    )
    alpha: float = Field(
        default=0.05,
        gt=0,
        lt=0.5,
        description="One-sided test level behind intervals (1 - 2 alpha) and MDE.",
    )
    fdr_q: float = Field(
        default=0.05, gt=0, lt=1, description="Benjamini-Hochberg false discovery rate per family."
    )
    min_baseline_nights: int = Field(
        default=3,
        ge=1,
        description="Baseline nights needed before a scenario gates; younger baselines are "
        "compared and reported but cannot fail the night.",
    )
    escalate_to: float = Field(
        default=3.0,
        ge=1,
        description="Most runs a suspicious scenario may get tonight, as a multiple of its "
        "runs (1 turns escalation off).",
    )
    season_alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="Chance that accumulated evidence raises any false alarm in the suite over "
        "the whole life of its anchored baselines.",
    )

    @field_validator("margins", mode="before")
    @classmethod
    def _merge_default_margins(cls, value: object) -> object:
        if value is None:
            return dict(DEFAULT_MARGINS)
        if isinstance(value, Mapping):
            return {**DEFAULT_MARGINS, **value}
        return value

    @field_validator("margins")
    @classmethod
    def _check_margins(cls, value: dict[str, float]) -> dict[str, float]:
        for name, margin in value.items():
            if not is_known(name):
                raise ValueError(unknown_metric_message(name))
            problem = margin_problem(name, margin)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("gating")
    @classmethod
    def _check_gating(cls, value: list[str]) -> list[str]:
        unknown = [m for m in value if not is_known(m)]
        if unknown:
            raise ValueError(
                f"unknown gating metric(s) {', '.join(map(repr, unknown))}; known: {', '.join(m.name for m in REGISTRY)}"
            )
        return value

    @property
    def ci_level(self) -> float:
        """Two-sided level of every interval, matching the one-sided alpha tests."""
        return 1.0 - 2.0 * self.alpha

    def margin_for(self, metric: str) -> float:
        """The margin of ``metric`` (``tool_used:<name>`` falls back to ``tool_used``)."""
        if metric in self.margins:
            return self.margins[metric]
        if metric.startswith(TOOL_USED + ":"):
            return self.margins.get(TOOL_USED, DEFAULT_MARGINS[TOOL_USED])
        return DEFAULT_MARGINS[metric]

    def is_gating(self, metric: str) -> bool:
        return metric in self.gating or (
            metric.startswith(TOOL_USED + ":") and TOOL_USED in self.gating
        )

    def merged(self, overrides: Mapping[str, Any] | None) -> Tolerance:
        """This tolerance with ``overrides`` on top (margins merge key by key)."""
        if not overrides:
            return self
        data: dict[str, Any] = {**self.model_dump(), **overrides}
        data["margins"] = {**self.margins, **(overrides.get("margins") or {})}
        return Tolerance.model_validate(data)

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, *, where: str = "tolerance") -> Tolerance:
        """Build from a suite file's mapping; bad values raise :class:`ConfigError` naming ``where``."""
        try:
            return cls.model_validate(dict(data or {}))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(part) for part in first["loc"])
            raise ConfigError(
                f"{where}{'.' + loc if loc else ''}: {first['msg']} (fix the value in the suite file)"
            ) from None


# ---------------------------------------------------------------------------
# Bridges for callers outside the package that still pass DataFrames (the live
# runner, baseline comparison, tests/support/history_factory.py). They run the new
# engine with the baseline frame as ONE night and no minimum of nights (those
# callers have no nights), so they keep gating as before. Delete them once the
# callers use compare_night / decide / summarize(records).

from evalrunner.stats._formulas import (  # noqa: E402
    FloatArray,
    cliffs_delta,
    newcombe_diff,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from evalrunner.stats._metrics import Direction, Kind, sequence_label  # noqa: E402
from evalrunner.stats._observe import LOG_OFFSETS  # noqa: E402
from evalrunner.stats._results import MetricResult  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd

    from evalrunner.live._record import RunRecord

__all__ = [
    "LOG_OFFSETS",
    "AdaptivePlan",
    "MetricResult",
    "Tolerance",
    "adaptive_plan",
    "cliffs_delta",
    "compare_scenario",
    "finalize",
    "js_distance",
    "newcombe_diff",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
    "wilson",
]

_sequence_label = sequence_label


def _metric_info(name: str) -> tuple[Kind, Direction]:
    from evalrunner.stats._metrics import metric

    found = metric(name)
    return found.kind, found.direction


def _records(frame: pd.DataFrame | None) -> list[RunRecord]:
    import math

    from evalrunner.errors import FileFormatError
    from evalrunner.live._record import RunRecord

    if frame is None or not len(frame):
        return []
    if "outcome" not in frame.columns:
        raise FileFormatError("records have no 'outcome' column; each row must be a RunRecord")
    out = []
    for i, row in enumerate(frame.to_dict("records")):
        data = {
            k: v
            for k, v in row.items()
            if k in RunRecord.model_fields and not (isinstance(v, float) and math.isnan(v))
        }
        data.setdefault("run_id", f"row/{i}")
        data.setdefault("index", i)
        for key in ("suite", "scenario", "model"):
            data.setdefault(key, "")
        try:
            out.append(RunRecord.model_validate(data))
        except ValidationError as exc:
            raise FileFormatError(f"record {i}: {exc.errors()[0]['msg']}") from None
    return out


def _one_night(tolerance: Tolerance | None) -> Tolerance:
    return (tolerance or Tolerance()).model_copy(update={"min_baseline_nights": 1})


def compare_scenario(
    baseline: pd.DataFrame,
    night: pd.DataFrame,
    *,
    tolerance: Tolerance | None = None,
    scenario: str = "",
    model: str = "",
    seed: int = 0,
    metrics: Collection[str] | None = None,
    n_resamples: int = 0,
) -> list[MetricResult]:
    """Bridge: one cell, the baseline frame as one night (``seed`` and ``n_resamples`` are
    unused: nothing is resampled)."""
    from evalrunner.live._record import CellKey
    from evalrunner.stats._night import CellNight, compare_night
    from evalrunner.stats._reference import CellBaseline

    del seed, n_resamples
    key = CellKey(scenario, model)
    cell = CellBaseline(key, _one_night(tolerance), [_records(baseline)], "bridge")
    results = compare_night([CellNight(cell, _records(night))]).results
    if metrics is None:
        return results
    return [
        r
        for r in results
        if r.metric in metrics or (r.metric.startswith(TOOL_USED + ":") and TOOL_USED in metrics)
    ]


def finalize(
    results: Sequence[MetricResult], tolerance_by_scenario: Mapping[str, Tolerance] | None = None
) -> list[MetricResult]:
    """Bridge to :func:`evalrunner.stats._verdict.finalize`."""
    from evalrunner.stats._verdict import finalize as decide_all

    return decide_all(results, tolerance_by_scenario)


def summarize(df: pd.DataFrame) -> dict[str, Any]:
    """Bridge: the summary of a frame's runs as the baseline file stores it."""
    from evalrunner.stats._summary import summarize as summary

    return summary(_records(df)).model_dump(mode="json", exclude_none=True)


def js_distance(
    p_counts: Sequence[float] | FloatArray, q_counts: Sequence[float] | FloatArray
) -> float:
    """Jensen-Shannon distance (base 2) of two count vectors (tests/support's stand-in uses it)."""
    from scipy.spatial.distance import jensenshannon

    return float(jensenshannon(p_counts, q_counts, base=2))


class AdaptivePlan(BaseModel):
    """Bridge result for the runner's ``--adaptive`` loop."""

    model_config = ConfigDict(extra="forbid")

    settled: bool
    runs_done: int
    max_n: int
    next_batch: int
    reason: str


def adaptive_plan(
    baseline: pd.DataFrame,
    night: pd.DataFrame,
    *,
    tolerance: Tolerance | None = None,
    max_n: int = 20,
    batch: int = 5,
    min_n: int = 5,
    method: str = "predictive",
) -> AdaptivePlan:
    """Bridge to :func:`evalrunner.stats._sequential.decide` (adaptive, no escalation)."""
    from evalrunner.live._record import CellKey
    from evalrunner.stats._reference import CellBaseline, fit_references
    from evalrunner.stats._sequential import Budget, decide

    del method
    key = CellKey("", "")
    cell = CellBaseline(key, _one_night(tolerance), [_records(baseline)], "bridge")
    done = _records(night)
    budget = Budget(runs=max_n, max_runs=max_n, batch=batch, adaptive=True)
    step = decide(fit_references([cell])[key], done, budget)
    settled = step.action == "stop" and len(done) >= min(min_n, max_n)
    return AdaptivePlan(
        settled=settled,
        runs_done=len(done),
        max_n=max_n,
        next_batch=0 if settled else max(0, min(batch, max_n - len(done))),
        reason=step.reason,
    )
