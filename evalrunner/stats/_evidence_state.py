"""What accumulated evidence keeps between nights (the history stores it).

Plain pydantic models, apart from the statistics that update them
(:mod:`evalrunner.stats._evidence`), so the history can load them without numpy
or scipy.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["EVIDENCE_FORMAT_VERSION", "EvidenceState", "MetricEvidence", "halfway"]

EVIDENCE_FORMAT_VERSION = 4
"""2 added the night-to-night spread (``last_mean`` ... ``pair_noise``); a version-1 state
reads as one with no pairs yet. 3 replaced the e-value by the cumulative z and its
boundary, and added seasons; an older state's e-value is dropped (its sums are kept, so
the z comes back after its next night). 4 added ``last_failed``; an older state reads as
one whose last night did not fail."""


def halfway(z: float, limit: float) -> bool:
    """Evidence halfway to flagging (half the boundary's z^2/2, the log likelihood ratio at
    it): worth more runs tonight, and a line under "building" in the summary."""
    return z >= limit / math.sqrt(2.0)


class MetricEvidence(BaseModel):
    """What one metric's evidence keeps between nights."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_the_e_value(cls, data: Any) -> Any:
        """Format 2 kept an e-value; its test is gone, its sums still hold."""
        if isinstance(data, dict) and "e_value" in data:
            data = {k: v for k, v in data.items() if k != "e_value"}
        return data

    nights: int = Field(default=0, description="Nights accumulated.")
    weight: float = Field(
        default=0.0, description="Sum of the nights' weights (1 / variance of a night's mean)."
    )
    weighted_sum: float = Field(
        default=0.0, description="Sum of weight x night mean, on the metric's test scale."
    )
    z: float = Field(
        default=0.0,
        description="Cumulative z since the anchor after the last night (harmful side positive).",
    )
    boundary: float | None = Field(
        default=None, description="The z at which the evidence flags (None: no night yet)."
    )
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
    last_failed: bool = Field(
        default=False,
        description="The last night failed this metric: a change point, so the pair from "
        "the night before it is not in the spread.",
    )


class EvidenceState(BaseModel):
    """One cell's accumulated evidence since its baseline was anchored (history stores it)."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=EVIDENCE_FORMAT_VERSION, description="Evidence state format version."
    )
    anchor: str = Field(description="The baseline this evidence is measured against.")
    nights: int = Field(
        default=0, description="Nights accumulated since the anchor, in this season."
    )
    season: int = Field(
        default=1, ge=1, description="The anchor's season (a new one every season_nights nights)."
    )
    metrics: dict[str, MetricEvidence] = Field(
        default_factory=dict, description="Per metric (test-scale sums)."
    )

    def z(self, metric: str) -> tuple[float, float | None]:
        """A metric's cumulative z and boundary after the last night ((0, None): none yet)."""
        found = self.metrics.get(metric)
        return (0.0, None) if found is None else (found.z, found.boundary)
