"""Verdicts: Benjamini-Hochberg across the night, the margin rule, and accumulated evidence.

A metric is flagged tonight when its BH-adjusted p is <= fdr_q *and* its interval
still reaches the margin on that side (a change that matters is not ruled out):
``regression`` in the harmful direction, ``changed`` for metrics where no direction
is harmful, ``improvement`` in the good one. A gating metric is also flagged when its
accumulated evidence since the anchor reaches its threshold and the accumulated
change's interval reaches the margin (``flagged_by = "evidence"``). ``ok`` means the
interval rules out a change of the margin on the harmful side(s); otherwise the
verdict is ``inconclusive``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalrunner.stats._formulas import bh
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._metric_result import FlagSource, MetricResult, Verdict
from evalrunner.suite._metrics import Direction, Kind
from evalrunner.suite._tolerance import Tolerance


def finalize(
    results: Sequence[MetricResult], tolerance_by_scenario: Mapping[str, Tolerance] | None = None
) -> list[MetricResult]:
    """Adjust p values across the whole night and decide every verdict.

    Benjamini-Hochberg runs over all gating results of the night (every scenario
    and model) as one family and over all diagnostics as another, separately for the
    harmful direction (two-sided for ``changed`` metrics) and the good one.
    ``tolerance_by_scenario`` supplies each scenario's ``fdr_q`` (default
    :class:`Tolerance`). Idempotent: q values are recomputed from the raw p values.
    """
    tolerances = tolerance_by_scenario or {}
    default = Tolerance()
    q: list[float | None] = [None] * len(results)
    q_good: list[float | None] = [None] * len(results)
    for gating in (True, False):
        for attr, target in (("p", q), ("p_improvement", q_good)):
            members = [
                i
                for i, r in enumerate(results)
                if r.gating is gating and getattr(r, attr) is not None
            ]
            adjusted = bh([getattr(results[i], attr) for i in members])
            for i, value in zip(members, adjusted, strict=True):
                target[i] = value
    final = []
    for i, result in enumerate(results):
        updated = result.model_copy(update={"q": q[i], "q_improvement": q_good[i]})
        verdict, source = judge(updated, tolerances.get(result.scenario, default).fdr_q)
        final.append(updated.model_copy(update={"verdict": verdict, "flagged_by": source}))
    return final


def judge(result: MetricResult, fdr_q: float) -> tuple[Verdict, FlagSource | None]:
    """One metric's verdict from its q values, interval, margin and evidence."""
    if result.effect is None or result.p is None:
        return "inconclusive", None
    flag: Verdict = "changed" if result.direction == "changed" else "regression"
    if _at_most(result.q, fdr_q) and reaches(result, result.effect_ci, harmful=True):
        return flag, "tonight"
    if _alarmed(result):
        return flag, "evidence"
    if _at_most(result.q_improvement, fdr_q) and reaches(result, result.effect_ci, harmful=False):
        return "improvement", "tonight"
    if rules_out(result):
        return "ok", None
    return "inconclusive", None


def _alarmed(result: MetricResult) -> bool:
    """The evidence since the anchor reached its threshold, its change the margin."""
    alarm = result.evidence_threshold is not None and _at_least(
        result.evidence, result.evidence_threshold
    )
    return alarm and reaches(
        result, result.evidence_ci, harmful=True, effect=result.evidence_effect
    )


def _at_most(value: float | None, limit: float) -> bool:
    return value is not None and value <= limit


def _at_least(value: float | None, limit: float) -> bool:
    return value is not None and value >= limit


def reaches(
    result: MetricResult,
    interval: tuple[float, float] | None,
    *,
    harmful: bool,
    effect: float | None = None,
) -> bool:
    """Does the interval reach the margin on the harmful (or good) side?"""
    centre = result.effect if effect is None else effect
    return reaches_margin(
        result.kind, result.direction, result.margin, centre, interval, harmful=harmful
    )


def reaches_margin(
    kind: Kind,
    direction: Direction,
    margin: float,
    centre: float | None,
    interval: tuple[float, float] | None,
    *,
    harmful: bool,
) -> bool:
    """:func:`reaches` for a metric's parts (an adaptive look has no MetricResult yet)."""
    if interval is None:
        return False
    low, high = interval
    if direction == "changed":
        if not harmful or centre is None:
            return False
        up = centre >= (1.0 if KINDS[kind].scale.ratio else 0.0)
        return KINDS[kind].beyond(margin, high if up else low, up)
    harm_up = direction == "higher"
    up = harm_up if harmful else not harm_up
    return KINDS[kind].beyond(margin, high if up else low, up)


def rules_out(result: MetricResult) -> bool:
    """Does the interval exclude a change of the margin on every harmful side?"""
    if result.effect_ci is None:
        return False
    low, high = result.effect_ci
    ups = {"higher": (True,), "lower": (False,)}.get(result.direction, (True, False))
    kind = KINDS[result.kind]
    return not any(kind.beyond(result.margin, high if up else low, up) for up in ups)
