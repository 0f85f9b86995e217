"""What a baseline predicts about tonight: the between-night model, fitted once per anchor.

Every metric is a per-run value (a 0/1 rate, a count's placement among the
baseline's counts, a log token count, a tool path's atypicality). Runs of one
night share that night's endpoint state, so a value varies as

    run value = metric mean + night effect (variance tau^2) + run noise,

and the intraclass correlation rho = tau^2 / sigma^2 is the share of a run's
variance that its night shares. Tonight's mean then has variance, around the
baseline's mean,

    sigma^2 (1 - rho) / n  +  rho sigma^2  +  var(baseline mean),

the second term being tonight's own night effect, which no number of runs tonight
averages away, and the third the baseline's uncertainty (its nights are clusters
too: sigma^2 [(1 - rho) / N + rho sum(n_j^2) / N^2]).

rho is estimated per cell from its baseline nights (ANOVA estimator) and shrunk
towards the suite-wide estimate for the same metric and model (every cell of a
suite shares the endpoint), weighted as if the suite-wide value were
:data:`POOL_NIGHTS` more nights. A cell with fewer than ``min_baseline_nights``
nights is compared but does not gate (its baseline is too young to show how much
nights differ).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from evalrunner.live._record import CellKey, RunRecord
from evalrunner.stats._formulas import FloatArray, icc, placements, tie_factor
from evalrunner.stats._metrics import TOOL_USED, Direction, Kind, metric
from evalrunner.stats._observe import Coding, Runs, codings, concat
from evalrunner.stats._stats import Tolerance

POOL_NIGHTS = 6.0
"""How many baseline nights the suite-wide intraclass correlation counts for in a cell's own."""
PRIOR_ICC = 0.05
"""Between-night share of variance assumed when nothing estimates it (no cell has 2+ nights).
For a success rate of 0.9 it is a night-to-night sd of 0.067, about a +/-0.10 drift."""
MAX_ICC = 0.5
_LOG_VAR_FLOOR = 1e-4
"""Log-scale run variance floor: identical token counts still allow a 1 % wobble."""


@dataclass(frozen=True)
class CellBaseline:
    """One cell's anchored baseline: its accepted nights, oldest first."""

    key: CellKey
    tolerance: Tolerance
    nights: Sequence[Sequence[RunRecord]]
    anchor: str
    """Identifies the accepted baseline; accumulated evidence resets when it changes."""


@dataclass(frozen=True)
class MetricReference:
    """One metric of one cell: the baseline's per-night values and the fitted night model."""

    coding: Coding
    kind: Kind
    direction: Direction
    nights: tuple[FloatArray, ...]
    """Per-night per-run values (rates 0/1, raw counts, log values, atypicality scores)."""
    n: int
    """Baseline runs the metric covers."""
    estimate: float
    """The baseline's own estimate in the metric's units (rate, mean count, mean log, mean score)."""
    mean: float
    """The null mean on the test scale (a smoothed rate, 0.5 for count placements, ...)."""
    run_var: float
    """sigma^2: a run's variance on the test scale."""
    icc: float
    """rho used: own estimate shrunk to the suite's."""
    own_icc: tuple[float, int] | None
    """This cell's own estimate of rho and its degrees of freedom (nights - 1), if any."""
    size_sq: float
    """sum(n_j^2) / N^2 over baseline nights."""
    sorted_base: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Counts: every baseline value, sorted (placements are taken against it)."""
    shares: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """Tool paths: smoothed baseline shares of (usual path, other known path, new path)."""

    @property
    def name(self) -> str:
        return self.coding.metric

    @property
    def night_var(self) -> float:
        """tau^2: the variance of a night's true mean around the metric's mean."""
        return self.icc * self.run_var

    @property
    def base_var(self) -> float:
        """Variance of the baseline's mean (its nights are clusters)."""
        if not self.n:
            return float("inf")
        return self.run_var * ((1 - self.icc) / self.n + self.icc * self.size_sq)

    def within_var(self, n: int) -> float:
        """Variance of tonight's mean around tonight's own true value (n runs)."""
        return self.run_var * (1 - self.icc) / max(n, 1)

    def null_var(self, n: int) -> float:
        """Variance of tonight's mean around the baseline's mean when nothing changed."""
        return self.within_var(n) + self.night_var + self.base_var

    def with_pool(self, pooled: float | None) -> MetricReference:
        """This reference with rho shrunk towards the suite-wide value ``pooled``."""
        return replace(self, icc=_shrunk_icc(self.own_icc, pooled))


@dataclass(frozen=True)
class CellReference:
    """One cell's baseline, fitted: what every comparison and escalation decision reads."""

    key: CellKey
    tolerance: Tolerance
    anchor: str
    night_runs: tuple[Runs, ...]
    pool: Mapping[str, float]
    """Suite-wide rho per metric family (this cell's model)."""
    metrics: dict[str, MetricReference] = field(default_factory=dict)

    @property
    def nights(self) -> int:
        return len(self.night_runs)

    @functools.cached_property
    def pooled(self) -> Runs:
        return concat(self.night_runs)

    @property
    def young(self) -> bool:
        return self.nights < self.tolerance.min_baseline_nights

    def young_note(self) -> str | None:
        """The one line saying why this cell does not gate, or None."""
        if not self.young:
            return None
        need = self.tolerance.min_baseline_nights
        return (
            f"{self.key}: baseline too young to gate ({self.nights} night{'s' * (self.nights != 1)} "
            f"of {self.pooled.attempted} runs; {need} needed): compared and reported, not gating; "
            f"accept {need - self.nights} more night{'s' * (need - self.nights != 1)} into it"
        )

    def reference(self, coding: Coding) -> MetricReference:
        """The fitted reference of one metric (a tool first seen tonight is fitted here)."""
        found = self.metrics.get(coding.metric)
        if found is None or found.coding != coding:
            found = _fit(coding, self.night_runs).with_pool(self.pool.get(family(coding.metric)))
            self.metrics[coding.metric] = found
        return found

    def codings(self, tonight: Runs | None = None) -> list[Coding]:
        return codings(self.pooled, tonight)


def family(name: str) -> str:
    """Metrics whose between-night share is pooled together: ``tool_used:*`` as one."""
    return TOOL_USED if name.startswith(TOOL_USED + ":") else name


def fit_references(cells: Sequence[CellBaseline]) -> dict[CellKey, CellReference]:
    """Fit every cell's baseline, pooling the between-night share across cells of a model."""
    nights = {c.key: tuple(Runs.of(night) for night in c.nights) for c in cells}
    own = {
        c.key: {coding.metric: _fit(coding, nights[c.key]) for coding in codings(concat(nights[c.key]))}
        for c in cells
    }
    raw: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for key, metrics in own.items():
        for name, ref in metrics.items():
            if ref.own_icc is not None:
                raw.setdefault((key.model, family(name)), []).append(ref.own_icc)
    pools: dict[str, dict[str, float]] = {}
    for (model, fam), found in raw.items():
        weight = sum(df for _, df in found)
        pools.setdefault(model, {})[fam] = max(0.0, sum(r * df for r, df in found) / weight)
    out = {}
    for c in cells:
        pool = pools.get(c.key.model, {})
        metrics = {name: ref.with_pool(pool.get(family(name))) for name, ref in own[c.key].items()}
        out[c.key] = CellReference(c.key, c.tolerance, c.anchor, nights[c.key], pool, metrics)
    return out


def _own_icc(kind: Kind, per_night: Sequence[FloatArray], pooled: FloatArray) -> tuple[float, int] | None:
    if kind == "count":
        if not pooled.size:
            return None
        ordered = np.sort(pooled)
        per_night = [placements(v, ordered) for v in per_night]
    return icc(per_night)


def _fit(coding: Coding, nights: Sequence[Runs]) -> MetricReference:
    """One metric's reference from the cell's own nights (rho: its own estimate, unshrunk)."""
    info = metric(coding.metric)
    per_night = tuple(coding.values(night) for night in nights)
    values = np.concatenate(per_night) if per_night else np.zeros(0)
    n = values.size
    own = _own_icc(info.kind, per_night, values)
    rho = _shrunk_icc(own, None)
    sizes = np.array([v.size for v in per_night], dtype=float)
    size_sq = float((sizes**2).sum() / n**2) if n else 1.0
    common = {
        "coding": coding,
        "kind": info.kind,
        "direction": info.direction,
        "nights": per_night,
        "n": n,
        "icc": rho,
        "own_icc": own,
        "size_sq": size_sq,
    }
    estimate = float(values.mean()) if n else float("nan")
    if info.kind == "binary":
        mean = (float(values.sum()) + 0.5) / (n + 1)
        return MetricReference(
            estimate=estimate, mean=mean, run_var=mean * (1 - mean), **common
        )
    if info.kind == "count":
        ordered = np.sort(values)
        # A baseline of identical counts would make any change infinitely significant:
        # floor at the rank variance one differing run would leave.
        var = max(tie_factor(ordered), 3.0 / (n + 1)) / 12.0 if n else 1 / 12
        return MetricReference(
            estimate=estimate, mean=0.5, run_var=var, sorted_base=ordered, **common
        )
    if info.kind == "continuous":
        var = float(values.var(ddof=1)) if n > 1 else 0.0
        return MetricReference(
            estimate=estimate, mean=estimate, run_var=max(var, _LOG_VAR_FLOOR), **common
        )
    usual, other = float((values == 0).sum()), float((values == 1).sum())
    total = n + 1.5
    shares = ((usual + 0.5) / total, (other + 0.5) / total, 0.5 / total)
    mean = shares[1] + 2 * shares[2]
    var = shares[1] + 4 * shares[2] - mean**2
    return MetricReference(
        estimate=estimate, mean=mean, run_var=var, shares=shares, **common
    )


def _shrunk_icc(own: tuple[float, int] | None, pooled: float | None) -> float:
    if own is None and pooled is None:
        rho = PRIOR_ICC
    elif own is None:
        rho = float(pooled)  # type: ignore[arg-type]
    else:
        value, df = max(own[0], 0.0), own[1]
        rho = value if pooled is None else (df * value + POOL_NIGHTS * pooled) / (df + POOL_NIGHTS)
    return min(max(rho, 0.0), MAX_ICC)
