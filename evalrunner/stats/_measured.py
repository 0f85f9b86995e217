"""Tonight against one metric's reference: what every kind's test reads and produces."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from evalrunner.stats._formulas import FloatArray, z_upper
from evalrunner.stats._observe import Coding
from evalrunner.suite._metrics import Direction


class Reference(Protocol):
    """What a kind's test reads of a metric's fitted reference
    (:class:`~evalrunner.stats._reference.MetricReference` is the one there is). A protocol,
    so that the kinds' tests sit below the reference that dispatches on them."""

    @property
    def coding(self) -> Coding: ...
    @property
    def name(self) -> str: ...
    @property
    def nights(self) -> tuple[FloatArray, ...]: ...
    @property
    def estimate(self) -> float: ...
    @property
    def mean(self) -> float: ...
    @property
    def run_var(self) -> float: ...
    @property
    def icc(self) -> float: ...
    @property
    def size_sq(self) -> float: ...
    @property
    def sorted_base(self) -> FloatArray: ...
    @property
    def shares(self) -> tuple[float, float, float]: ...
    @property
    def within_share(self) -> float: ...
    @property
    def night_var(self) -> float: ...
    @property
    def base_var(self) -> float: ...
    def within_var(self, n: int) -> float: ...
    def null_var(self, n: int) -> float: ...
    def effective_runs(self, n: int) -> int: ...


POWER = 0.8
"""The chance of a flag an MDE is stated at."""


def normal_mde(ref: Reference, n: int, bar: float, margin_t: float, level: float) -> float:
    """MDE on the test scale under the normal model (one side at level ``bar``): the change
    whose estimate passes both the tail's threshold and the margin's with chance
    :data:`POWER`, tonight's night effect and the baseline's uncertainty counted."""
    spread = math.sqrt(ref.null_var(n))
    se = math.sqrt(ref.within_var(n) + ref.base_var)
    threshold = max(z_upper(bar) * spread, margin_t - z_upper((1 - level) / 2) * se)
    return threshold + z_upper(1 - POWER) * spread


@dataclass(frozen=True)
class Moments:
    """A baseline's null mean and run variance on its kind's test scale."""

    mean: float
    run_var: float
    sorted_base: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Counts: every baseline value, sorted (placements are taken against it)."""
    shares: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """Tool paths: smoothed baseline shares of (usual path, other known path, new path)."""


@dataclass(frozen=True)
class Measured:
    """One metric tonight: estimates, effect, interval and raw p values in both directions."""

    n: int
    z: float
    """Tonight against the baseline's nights as a normal score (up = higher): the test's own
    tail turned into a z (for exact tests the mid-p, so a discrete count maps to a
    continuous score). Accumulated evidence adds these up."""
    p_lower: float
    """Raw p that tonight is below the baseline's nights."""
    p_higher: float
    effect: float
    effect_ci: tuple[float, float]
    baseline_estimate: float
    baseline_ci: tuple[float, float] | None
    night_estimate: float
    night_ci: tuple[float, float] | None
    test: str
    p_min_lower: float | None = None
    p_min_higher: float | None = None
    mean_diff: float | None = None
    mean_diff_ci: tuple[float, float] | None = None
    note: str | None = None

    def p_values(self, direction: Direction, improvable: bool) -> tuple[float, float | None]:
        """(p in the harmful direction or two-sided, p in the good direction or None)."""
        if direction == "changed":
            return min(1.0, 2 * min(self.p_lower, self.p_higher)), None
        bad, good = (
            (self.p_lower, self.p_higher) if direction == "lower" else (self.p_higher, self.p_lower)
        )
        return bad, good if improvable else None

    def p_min(self, direction: Direction) -> float | None:
        """The smallest p the test could give tonight (exact tests only)."""
        low, high = self.p_min_lower, self.p_min_higher
        if direction == "lower":
            return low
        if direction == "higher":
            return high
        if low is None or high is None:
            return None
        return min(1.0, 2 * min(low, high))


def normal_interval(centre: float, var: float, level: float) -> tuple[float, float]:
    half = z_upper((1 - level) / 2) * math.sqrt(max(var, 0.0))
    return centre - half, centre + half


def mid_z(mid: float) -> float:
    """The normal score of a mid-p P(T < t) + P(T = t) / 2 (clipped away from 0 and 1)."""
    return -z_upper(min(max(mid, 1e-300), 1 - 1e-16))
