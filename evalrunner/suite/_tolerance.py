"""Tolerance: how strictly a scenario's runs are compared with its baseline.

One model for both of its uses. A suite file's ``tolerance:`` (suite level or
scenario level) is validated into a *partial* Tolerance: only what the file
sets counts (``model_fields_set``, and the margins it names). The statistics
use a *complete* one: :meth:`Tolerance.over` layers a partial tolerance over
a complete one (scenario over suite over ``Tolerance()``), margins metric by
metric, every other field replaced when set. Metric names are checked against
the registry (:mod:`evalrunner.suite._metrics`) when the file is validated,
so a misspelt metric fails ``evalrunner validate``, not the night's comparison.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from evalrunner.suite._metrics import (
    DEFAULT_GATING,
    DEFAULT_MARGINS,
    family_of,
    is_known,
    margin_problem,
    unknown_metric_message,
)

__all__ = ["Tolerance"]


def _known_metric(name: str) -> str:
    if not is_known(name):
        raise ValueError(unknown_metric_message(name))
    return name


MetricName = Annotated[str, AfterValidator(_known_metric)]
"""A metric of the registry (or one of a family's: ``tool_used:<tool>``); pydantic reports a wrong one at its own key."""


class Tolerance(BaseModel):
    """Practical margins, gating metrics and error rates for one scenario (or a suite).

    ``margins`` holds the margins that were set; every other metric keeps its
    registry default (:func:`margin_for`). A ``tool_used`` entry sets the margin
    of every ``tool_used:<name>`` metric; a ``tool_used:<name>`` entry overrides
    it for one tool (``tool_calls_of`` and ``score`` alike).
    """

    # Strict: suite files are YAML, which already yields real numbers; "0.1" is a mistake.
    model_config = ConfigDict(extra="forbid", strict=True)

    margins: dict[MetricName, float] = Field(
        default_factory=lambda: dict(DEFAULT_MARGINS),
        description="Metric -> smallest change that matters, in the units of the metric's effect; "
        "metrics not named keep their default margin.",
    )
    gating: list[MetricName] = Field(
        default_factory=lambda: list(DEFAULT_GATING),
        description="Metrics whose regression fails the night; the rest are diagnostics. "
        "Unset: success_rate, crash_rate, skip_rate, tool_sequence, step_count.",
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
        description="Chance that the evidence accumulated since the anchor raises any false "
        "alarm in one scenario (all its gating metrics together) over a season.",
    )
    season_nights: int = Field(
        default=90,
        ge=1,
        le=10_000,
        description="Nights in a season: the evidence since the anchor is tested against one "
        "boundary for this many nights, then starts over.",
    )

    @field_validator("margins")
    @classmethod
    def _margins_fit_their_metrics(cls, value: dict[str, float]) -> dict[str, float]:
        for name, margin in value.items():
            problem = margin_problem(name, margin)
            if problem is not None:
                raise ValueError(problem)
        return value

    def over(self, base: Tolerance) -> Tolerance:
        """This tolerance as set in a file, layered over ``base``.

        Margins merge metric by metric; every other field replaces the base's
        only where this one sets it.
        """
        update = {name: getattr(self, name) for name in self.model_fields_set}
        if "margins" in update:
            update["margins"] = {**base.margins, **self.margins}
        return base.model_copy(update=update)

    @property
    def ci_level(self) -> float:
        """Two-sided level of every interval, matching the one-sided alpha tests."""
        return 1.0 - 2.0 * self.alpha

    def margin_for(self, metric: str) -> float:
        """The margin of ``metric`` (``tool_used:<name>`` falls back to ``tool_used``)."""
        if metric in self.margins:
            return self.margins[metric]
        family = family_of(metric)
        return self.margins.get(family, DEFAULT_MARGINS[family])

    def is_gating(self, metric: str) -> bool:
        return metric in self.gating or family_of(metric) in self.gating
