"""What accumulated evidence keeps between nights (the history stores it).

Plain pydantic models, apart from the statistics that update them
(:mod:`evalrunner.stats._evidence`), so the history can load them without numpy
or scipy.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EVIDENCE_FORMAT_VERSION", "EvidenceState", "MetricEvidence"]

EVIDENCE_FORMAT_VERSION = 2
"""2 added the night-to-night spread (``last_mean`` ... ``pair_noise``); a version-1 state
reads as one with no pairs yet."""


class MetricEvidence(BaseModel):
    """What one metric's evidence keeps between nights."""

    model_config = ConfigDict(extra="forbid")

    nights: int = Field(default=0, description="Nights accumulated.")
    weight: float = Field(
        default=0.0, description="Sum of the nights' weights (1 / variance of a night's mean)."
    )
    weighted_sum: float = Field(
        default=0.0, description="Sum of weight x night mean, on the metric's test scale."
    )
    e_value: float = Field(default=1.0, description="The e-value after the last night.")
    last_mean: float | None = Field(
        default=None, description="The last night's mean on the test scale (None: no night yet)."
    )
    last_var: float = Field(
        default=0.0,
        description="Sampling variance of the last night's mean around its own night's truth.",
    )
    pairs: int = Field(default=0, description="Consecutive pairs of nights in ``pair_excess``.")
    pair_excess: float = Field(
        default=0.0,
        description=(
            "Sum over consecutive nights of (difference of means^2 - both sampling variances) / 2: "
            "pairs x an unbiased estimate of the between-night variance tau^2."
        ),
    )
    pair_noise: float = Field(
        default=0.0,
        description="Sum over consecutive nights of the mean of both sampling variances.",
    )


class EvidenceState(BaseModel):
    """One cell's accumulated evidence since its baseline was anchored (history stores it)."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=EVIDENCE_FORMAT_VERSION, description="Evidence state format version."
    )
    anchor: str = Field(description="The baseline this evidence is measured against.")
    nights: int = Field(default=0, description="Nights accumulated since the anchor.")
    metrics: dict[str, MetricEvidence] = Field(
        default_factory=dict, description="Per metric (test-scale sums)."
    )

    def e_value(self, metric: str) -> float:
        found = self.metrics.get(metric)
        return 1.0 if found is None else found.e_value
