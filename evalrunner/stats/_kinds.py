"""The metric kinds: one entry each, everything the statistics decide by a metric's kind.

A metric's kind (``binary``, ``count``, ``continuous``, ``categorical``; the
``Metric`` registry in :mod:`evalrunner.suite._metrics` gives each metric one) says
how its per-run values are put on a test scale, how tonight is tested against the
baseline's nights, how a margin and a change on that scale read in the metric's own
units, and when every run of a night has moved. The statistics look the kind up
here and nowhere else: adding a kind is one :class:`MetricKind` in :data:`KINDS`
(and its name in ``Kind`` and its effect scale in ``SCALES`` in the suite, which
validates margins and labels reports without the statistics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evalrunner.stats import _binary, _counts, _logs, _paths
from evalrunner.stats._formulas import FloatArray, placements
from evalrunner.stats._measured import Measured, Moments, Reference
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._metrics import SCALES, Kind, Scale, metric

_EPS = 1e-12


def _same(value: float) -> float:
    return value


def _never(result: MetricResult) -> bool:
    del result
    return False


@dataclass(frozen=True)
class MetricKind:
    """One metric kind: how its values are tested, scaled and read."""

    name: Kind
    measure: Callable[[Reference, FloatArray, float], Measured]
    """Tonight's test against the baseline's nights (values on the kind's scale, the CI level)."""
    moments: Callable[[FloatArray], Moments]
    """The baseline's null mean and run variance on the test scale."""
    to_test_scale: Callable[[float], float]
    """A margin (effect units) in the units the test works in."""
    to_effect: Callable[[float], float]
    """A change on the test scale in effect units."""
    every_run_moved: Callable[[MetricResult], bool]
    """Tonight no run looks like the baseline's (an inconclusive verdict says "unconfirmed")."""
    adaptive_promise: float
    """The adaptive look's bar (:data:`~evalrunner.stats._sequential.PROMISE_ADAPTIVE`)."""
    ranked: bool = False
    """Runs are tested by their placement among the baseline's values, not as they are."""
    paired: bool = False
    """Runs of one dataset row are paired across nights (tonight's own spread is not taken)."""
    improvable: bool = True
    """A move in the good direction is an improvement (tool paths: any move is away)."""
    smoothed: bool = False
    """The null mean is smoothed: accumulated changes are told from the raw estimate."""
    bounds: tuple[float, float] | None = None
    """The values' range: a side with no room left has no MDE, a change stays within it."""
    exact_mde: Callable[[Reference, int, float, float, float, int], float | None] | None = None
    """The MDE summed exactly (tonight's gating tests), where the kind has one."""
    zero_unrecorded: bool = False
    """A side of all zeros means the value was not recorded, not that it changed."""
    night_scale: Callable[[FloatArray, float], float] = lambda values, run_var: run_var
    """How an endpoint's night effect, one size for every cell, shows on this kind's test
    scale: a cell's tau^2 is the suite's common value times this (of the baseline's
    per-run values and their run variance on the test scale;
    :func:`~evalrunner.stats._reference.pool_tau2`). By default the run variance: a
    night shares the same part of every cell's variance (paths)."""

    @property
    def scale(self) -> Scale:
        """How the kind's effect reads (the suite's: its label, and whether it is a ratio)."""
        return SCALES[self.name]

    def on_test_scale(self, values: FloatArray, sorted_base: FloatArray) -> FloatArray:
        """Per-run values as the test sees them (counts: placements among the baseline's)."""
        return placements(values, sorted_base) if self.ranked else values

    def beyond(self, margin: float, value: float, up: bool) -> bool:
        """Is ``value`` (effect units) a margin or more from no change, upwards / downwards?"""
        if up:
            return value >= margin - _EPS
        return value <= (1 / margin if self.scale.ratio else -margin) + _EPS

    def clipped(self, low: float, high: float) -> tuple[float, float]:
        """A change's interval within the most the values' range allows."""
        if self.bounds is None:
            return low, high
        most = self.bounds[1] - self.bounds[0]
        return max(low, -most), min(high, most)


def _placement_scale(values: FloatArray, run_var: float) -> float:
    """A night that scales the counts by exp(delta) moves their mean placement by about
    delta x mean / sd of the counts (over 2 sqrt(pi)): a cell of long, steady runs shows
    the same night effect more than one of short, erratic ones (8 steps against 3 under
    the same log-scale drift: about twice the night share)."""
    if values.size < 2:
        return run_var
    spread = float(values.var())
    return run_var * float(values.mean()) ** 2 / spread if spread > 0 else run_var


def _rate_moved(r: MetricResult) -> bool:
    """A rate at 0 or 1 tonight against a baseline more than the margin away."""
    if r.night_estimate is None or r.baseline_estimate is None:
        return False
    extreme = r.night_estimate in (0.0, 1.0)
    return extreme and abs(r.night_estimate - r.baseline_estimate) > r.margin


KINDS: Mapping[Kind, MetricKind] = {
    "binary": MetricKind(
        name="binary",
        measure=_binary.measure,
        moments=_binary.moments,
        to_test_scale=_same,
        to_effect=_same,
        every_run_moved=_rate_moved,
        adaptive_promise=0.1,
        paired=True,
        smoothed=True,
        bounds=(0.0, 1.0),
        exact_mde=_binary.mde,
        # A night moves every rate by the same amount on the logit scale: p(1 - p) times
        # as much on the rate's own (a 0.9 rate moves less than a 0.6 one).
        night_scale=lambda values, run_var: run_var**2,
    ),
    "count": MetricKind(
        name="count",
        measure=_counts.measure,
        moments=_counts.moments,
        # Cliff's delta = 2 * (mean placement - 0.5)
        to_test_scale=lambda margin: margin / 2,
        to_effect=lambda value: min(1.0, max(-1.0, 2 * value)),
        # (Nearly) every count beyond the baseline's.
        every_run_moved=lambda r: r.effect is not None and abs(r.effect) >= 0.9,
        adaptive_promise=0.4,
        ranked=True,
        paired=True,
        night_scale=_placement_scale,
    ),
    "continuous": MetricKind(
        name="continuous",
        measure=_logs.measure,
        moments=_logs.moments,
        to_test_scale=math.log,
        to_effect=lambda value: math.exp(min(value, 50.0)),
        every_run_moved=_never,
        adaptive_promise=0.4,
        zero_unrecorded=True,
        # A night scales every cell's tokens by the same factor: one log-scale variance.
        night_scale=lambda values, run_var: 1.0,
    ),
    "categorical": MetricKind(
        name="categorical",
        measure=_paths.measure,
        moments=_paths.moments,
        to_test_scale=_same,
        to_effect=_same,
        # No run on the usual path.
        every_run_moved=lambda r: r.effect is not None and r.effect >= 1.0,
        adaptive_promise=0.1,
        improvable=False,
        smoothed=True,
        exact_mde=_paths.mde,
    ),
}
"""Every metric kind, by name."""


def kind_of(name: str) -> MetricKind:
    """The kind of metric ``name`` (``tool_used:<tool>``, ``tool_calls_of:<tool>`` and ``score:<check>`` by family)."""
    return KINDS[metric(name).kind]
