"""What a comparison reports per metric: :class:`MetricResult` (history files store these)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrunner.stats._evidence_state import halfway
from evalrunner.suite._metrics import Direction, Kind

Verdict = Literal["regression", "improvement", "changed", "ok", "inconclusive"]
"""``regression``/``improvement``: a significant move beyond the margin in the harmful / good
direction; ``changed``: the same for a metric where no direction is harmful (two-sided);
``ok``: changes as large as the margin are ruled out; ``inconclusive``: neither (the note
says which changes are still possible and how many runs would settle it)."""
UNCONFIRMED = "changed but unconfirmed (every run moved)"
"""How a line names the results marked ``unconfirmed`` (the night's last line, JUnit)."""
FAILING: tuple[Verdict, ...] = ("regression", "changed")
"""Verdicts that fail the night when the metric is gating."""
VERDICT_ORDER: tuple[Verdict, ...] = ("regression", "changed", "improvement", "inconclusive", "ok")
"""Worst first: a scenario x model's verdict is the first of its gating metrics' here (a
detected change, good or bad, needs a human before "not enough runs to tell" does)."""
FLAGGED: tuple[Verdict, ...] = ("regression", "changed", "improvement")
"""Verdicts that flag a result: the report opens their sections, marks their charts and
lists them in its flag tables (each night's are also written apart in its history file)."""
FlagSource = Literal["tonight", "evidence"]

_FLOAT_FIELDS = (
    "baseline_estimate",
    "night_estimate",
    "effect",
    "mean_diff",
    "p",
    "p_improvement",
    "p_min",
    "q",
    "q_improvement",
    "mde",
    "night_share",
    "bar",
    "evidence",
    "evidence_threshold",
    "evidence_effect",
)
_CI_FIELDS = ("baseline_ci", "night_ci", "effect_ci", "mean_diff_ci", "evidence_ci")


class MetricResult(BaseModel):
    """One metric of one scenario x model tonight; every float is finite or ``None``.

    Files written before the fields after ``note`` existed load unchanged (they
    default); their ``direction: any`` reads as ``changed``.
    """

    model_config = ConfigDict(extra="forbid")

    scenario: str
    model: str
    metric: str
    kind: Kind
    gating: bool = Field(
        description="In the gating family (fails the night) rather than diagnostics."
    )
    direction: Direction = Field(
        description="Which way is harmful: lower, higher, or changed (no direction is; two-sided)."
    )
    baseline_estimate: float | None = None
    baseline_ci: tuple[float, float] | None = None
    baseline_n: int = Field(default=0, description="Baseline runs this metric used.")
    baseline_infra: int = Field(default=0, description="Baseline runs excluded as infra_error.")
    night_estimate: float | None = None
    night_ci: tuple[float, float] | None = None
    night_n: int = Field(default=0, description="Night runs this metric used.")
    night_attempted: int = Field(
        default=0, description="Night runs started, infra errors included."
    )
    night_infra: int = Field(default=0, description="Night runs excluded as infra_error.")
    effect: float | None = None
    effect_ci: tuple[float, float] | None = None
    effect_label: str = ""
    mean_diff: float | None = Field(
        default=None, description="Counts only: night mean - baseline mean."
    )
    mean_diff_ci: tuple[float, float] | None = Field(
        default=None, description="Counts only: interval of the mean difference."
    )
    ci_level: float = 0.9
    test: str = ""
    p: float | None = Field(
        default=None,
        description="Raw p against the baseline's nights: one-sided in the harmful direction, "
        "two-sided for 'changed'.",
    )
    p_improvement: float | None = Field(
        default=None, description="Raw one-sided p in the good direction."
    )
    p_min: float | None = Field(
        default=None,
        description="Smallest p the test could give with tonight's runs (exact tests only).",
    )
    q: float | None = Field(
        default=None, description="BH-adjusted p within the night's family (gating/diagnostic)."
    )
    q_improvement: float | None = None
    margin: float
    mde: float | None = Field(
        default=None,
        description="Change (effect units) flagged with probability 0.8 at this N, at the level "
        "the verdict uses (BH for a lone change, and the margin rule).",
    )
    runs_needed: int | None = Field(
        default=None,
        description="Night runs at which a change of the margin is flagged with probability 0.8 "
        "(None: not at any N against this baseline).",
    )
    verdict: Verdict = "inconclusive"
    note: str | None = None
    baseline_nights: int = Field(default=0, description="Nights in the baseline.")
    night_share: float | None = Field(
        default=None,
        description="Share of a run's variance shared by its night (intraclass correlation) "
        "the test assumed.",
    )
    bar: float | None = Field(
        default=None,
        description="Raw p a lone change must reach to be flagged tonight (fdr_q / family size).",
    )
    evidence: float | None = Field(
        default=None,
        description="Cumulative z of the nights since the baseline was anchored, in this "
        "season (harmful side positive; history before format 3 held an e-value here).",
    )
    evidence_threshold: float | None = Field(
        default=None,
        description="The z at which the evidence flags (gating only): its chance of any false "
        "alarm in a scenario-season is season_alpha.",
    )
    evidence_test: Literal["z", "e-value"] = Field(
        default="e-value",
        description="What ``evidence`` holds: the cumulative z since the anchor (format 3 "
        "evidence), or an e-value (history written before it).",
    )
    evidence_nights: int = Field(default=0, description="Nights the evidence accumulates over.")
    evidence_effect: float | None = Field(
        default=None,
        description="The change over those nights together (effect units), each night as its "
        "test's p puts it (exact for rates, the night effect included): less than the raw "
        "difference for a small night.",
    )
    evidence_ci: tuple[float, float] | None = None
    unconfirmed: bool = Field(
        default=False,
        description="Inconclusive, yet alone it would be flagged: its raw p reached the night's "
        "q level (fdr_q) but not its bar after the night's other tests, or the baseline is too "
        "young to gate. A change to look at, never a failure.",
    )
    flagged_by: FlagSource | None = Field(
        default=None, description="What flagged it: tonight's test or the accumulated evidence."
    )

    @field_validator("direction", mode="before")
    @classmethod
    def _any_is_changed(cls, value: object) -> object:
        return "changed" if value == "any" else value

    @field_validator(*_FLOAT_FIELDS, mode="before")
    @classmethod
    def _finite_or_none(cls, value: object) -> object:
        if value is None:
            return None
        number = float(value)  # type: ignore[arg-type]
        return number if math.isfinite(number) else None

    @field_validator(*_CI_FIELDS, mode="before")
    @classmethod
    def _finite_interval_or_none(cls, value: object) -> object:
        if value is None:
            return None
        low, high = (float(v) for v in value)  # type: ignore[attr-defined]
        return (low, high) if math.isfinite(low) and math.isfinite(high) else None

    @property
    def shown_pq(self) -> tuple[float | None, float | None]:
        """The p and q of the side the verdict is on: an improvement's are the good
        direction's (beside them the harmful side's read p 1, q 0)."""
        if self.verdict == "improvement":
            return self.p_improvement, self.q_improvement
        return self.p, self.q

    @property
    def fails_night(self) -> bool:
        """A gating metric whose verdict is a regression or a change."""
        return self.gating and self.verdict in FAILING

    @property
    def evidence_building(self) -> bool:
        """Gating evidence halfway to its boundary (an e-value: halfway in log terms)."""
        if not self.gating or self.evidence is None or self.evidence_threshold is None:
            return False
        if self.evidence_test == "e-value":
            return self.evidence >= math.sqrt(self.evidence_threshold)
        return halfway(self.evidence, self.evidence_threshold)
