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

Five nights say little about tau^2 on their own (an ANOVA estimate of rho from
5 nights of 20 runs has a standard error of ~0.04, as large as the drift it is
after), but every cell of a suite shares the endpoint. So each cell's estimate of
tau^2 (with its sampling variance) is put on the scale where one endpoint's night is
one size for every cell (rates: the logit scale, where a night moves a 0.9 rate less
than a 0.6 one; counts: the log scale; the kind's ``night_scale``) and combined with
the other cells' for the same metric and model as in a random-effects meta-analysis
weighed by precision: the suite-wide value and the spread of the cells' true values
around it. A cell's tau^2 is then its own estimate shrunk towards the suite's by the
usual precision weights: all the way when the cells' estimates scatter no more than
their sampling error says (one endpoint, one drift), less when some cells
really are more volatile (:func:`pool_tau2`). A cell with fewer than ``min_baseline_nights`` nights is
compared but does not gate (its baseline is too young to show how much nights
differ); it uses the suite's tau^2 (or :data:`PRIOR_ICC` when no cell has two
nights). The nights compared since the anchor are a second estimate, which may
widen what a test uses but never narrow it (:func:`fit_references`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import optimize, special

from evalrunner.stats._evidence_state import EvidenceState, MetricEvidence
from evalrunner.stats._formulas import FloatArray, hermite, icc
from evalrunner.stats._kinds import KINDS, MetricKind
from evalrunner.stats._observe import Coding, Runs, codings, concat
from evalrunner.stats._pairing import paired_share
from evalrunner.stats._pool import Pool, pool_tau2
from evalrunner.suite._metrics import Direction, Kind, family_of, metric
from evalrunner.suite._record import CellKey, RunRecord
from evalrunner.suite._tolerance import Tolerance

PRIOR_ICC = 0.05
"""Between-night share of variance assumed when nothing estimates it (no cell has 2+ nights).
For a success rate of 0.9 it is a night-to-night sd of 0.067, about a +/-0.10 drift."""
MAX_ICC = 0.5
TAU2_ERRORS: float | None = 0.6
"""Standard errors of the tau^2 estimate added to it before use (see :meth:`MetricReference.with_pool`).
Since the suite's night variance is pooled on each kind's common scale (issue 52), 0.6: on
400 A/A nights of 5 x 1 under the logit-normal law (seed 0) 2.5 % failed with escalation
(2.2 % at fixed N), against 3.0 % at 0.5 and 4.0 % at 0.35 (2.8 % fixed), for 1-3 points
of first-night success power (79.5 / 62.0 % quiet / logit drift, against 82.0 / 65.5 %
at 0.35; docs/calibration.md). None integrates over tau^2's uncertainty instead
(:func:`integrated_tau2`)."""
_TAU2_NODES = 24
"""Gauss-Hermite nodes over tau^2's uncertainty in :func:`integrated_tau2`."""


@dataclass(frozen=True)
class CellBaseline:
    """One cell's anchored baseline: its accepted nights, oldest first."""

    key: CellKey
    tolerance: Tolerance
    nights: Sequence[Sequence[RunRecord]]
    anchor: str
    """Identifies the accepted baseline; accumulated evidence resets when it changes."""
    rows: frozenset[str] | None = None
    """A dataset scenario's rows tonight runs: the baseline's runs of other rows are left
    out, so both sides ask the same questions. None: every run (no dataset)."""

    def kept(self, night: Sequence[RunRecord]) -> list[RunRecord]:
        """A baseline night's runs of :attr:`rows` (all of them without a dataset)."""
        if self.rows is None:
            return list(night)
        return [r for r in night if r.row in self.rows]


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
    night_size: float
    """Mean runs per baseline night (for the sampling error of the own estimate)."""
    size_sq: float
    """sum(n_j^2) / N^2 over baseline nights."""
    sorted_base: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Counts: every baseline value, sorted (placements are taken against it)."""
    shares: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """Tool paths: smoothed baseline shares of (usual path, other known path, new path)."""
    history: tuple[float, float, int] | None = None
    """Nights compared since the anchor: tau^2 from consecutive nights' differences, a
    night mean's mean sampling variance, and the number of consecutive pairs."""
    within_share: float = 1.0
    """Paired rows: the share of a run's within-night variance left once its dataset row
    is known (:func:`~evalrunner.stats._pairing.within_share`); 1 without rows. The same rows run every night, so
    what differs between rows cancels between tonight's mean and the baseline's."""
    night_scale: float = 1.0
    """What the suite's common night variance is multiplied by on this cell's test scale
    (the kind's ``night_scale`` of the baseline's values; 0 when no run varies)."""
    point_icc: float | None = None
    """rho as estimated, without the standard errors :attr:`icc` adds (None: :attr:`icc`).
    The evidence since the anchor weighs its nights by it (:meth:`for_evidence`)."""

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
        own = (1 - self.icc) * self.within_share / self.n
        return self.run_var * (own + self.icc * self.size_sq)

    def within_var(self, n: int) -> float:
        """Variance of tonight's mean around tonight's own true value (n runs)."""
        return self.run_var * (1 - self.icc) * self.within_share / max(n, 1)

    def effective_runs(self, n: int) -> int:
        """``n`` paired runs as the exchangeable runs they are worth (Kish's design effect)."""
        return max(n, round(n / self.within_share))

    def null_var(self, n: int) -> float:
        """Variance of tonight's mean around the baseline's mean when nothing changed."""
        return self.within_var(n) + self.night_var + self.base_var

    def for_evidence(self) -> MetricReference:
        """This reference with rho as estimated, for the evidence since the anchor.

        The padding (:data:`TAU2_ERRORS`) and the anchor's own fit as a floor
        (:func:`fit_references`) keep tonight's test, looked at every night, from turning
        an underestimated drift into false alarms. The evidence has its own bound for the
        whole season, so it takes neither: its rho is the anchor's nights and the nights
        since, as estimated. Padded, it found a persistent 0.9 -> 0.8 (5 x 20 anchor) by
        night 7 in 25 % of 48 sequences; floored, 39.5 % of 200; as estimated, 43 % of 200,
        spending 3.8 and 5.0 % of scenario-seasons under the two drift laws against 3.3
        and 4.0 % floored (docs/calibration.md, the season tables).
        """
        if self.point_icc is None or self.point_icc >= self.icc:
            return self
        return replace(self, icc=self.point_icc)

    def night_mean(self, values: FloatArray) -> tuple[float, float]:
        """A night's mean of per-run values on the test scale (counts: placements among the
        baseline's) and that mean's sampling variance, from the night's own runs.

        Its own, not :meth:`within_var`'s (the baseline's run variance): the spread of
        nights since the anchor subtracts it from each pair's difference, and a night that
        runs at another rate than the baseline (a success rate of 0.7 against a baseline
        at 1.0) has a sampling noise the baseline's never had, which then passed for
        night-to-night drift and widened the band that should have caught it.
        """
        values = KINDS[self.kind].on_test_scale(values, self.sorted_base)
        n = values.size
        if n < 2:
            return float(values.mean()), self.within_var(n)
        return float(values.mean()), float(values.var(ddof=1)) * self.within_share / n

    def rho_of(self, tau2: float) -> float:
        """``tau2`` (this cell's test scale) as the share of a run's variance it is."""
        if self.run_var <= 0:
            return 0.0
        return min(max(tau2 / self.run_var, 0.0), MAX_ICC)

    def own_tau2(self, at: float | None = None) -> tuple[float, float] | None:
        """This cell's estimate of tau^2 (unclipped) and its sampling variance, if it has one:
        the anchor's nights (ANOVA) and the nights compared since (consecutive differences),
        combined by inverse variance.

        The variance is evaluated at rho = ``at`` (the suite's typical rho), not at the
        cell's own estimate: weights that grow as an estimate falls would pull the
        suite's value down.
        """
        anchor = self._anchor_tau2(at)
        if self.history is None:
            return anchor
        tau2, noise, pairs = self.history
        rho = (
            at
            if at is not None
            else (anchor[0] / self.run_var if anchor and self.run_var > 0 else 0.0)
        )
        level = min(max(rho, 0.0), MAX_ICC) * self.run_var
        # Consecutive differences d have variance s^2 = 2 (tau^2 + noise); d^2 has variance
        # 2 s^4 and neighbouring d^2 covary by s^4 / 2, so the mean of (d^2 - noise) / 2
        # over k pairs has variance 3 (tau^2 + noise)^2 / k (von Neumann's ratio, 2/3 as
        # efficient as independent nights).
        found = (tau2, 3 * (level + noise) ** 2 / pairs)
        if anchor is None:
            return found
        w_anchor, w_found = 1 / max(anchor[1], 1e-300), 1 / max(found[1], 1e-300)
        return (
            (w_anchor * anchor[0] + w_found * found[0]) / (w_anchor + w_found),
            1 / (w_anchor + w_found),
        )

    def _anchor_tau2(self, at: float | None) -> tuple[float, float] | None:
        """tau^2 from the baseline's own nights (ANOVA) and its sampling variance."""
        if self.own_icc is None or self.night_size < 2:
            return None
        rho, df = self.own_icc
        at = min(max(rho if at is None else at, 0.0), MAX_ICC)
        n = self.night_size
        # Large-sample variance of the ANOVA intraclass correlation (Fisher; Donner 1986).
        var = 2 * (1 - at) ** 2 * (1 + (n - 1) * at) ** 2 / (n * (n - 1) * df)
        return rho * self.run_var, var * self.run_var**2

    def with_history(self, found: MetricEvidence | None) -> MetricReference:
        """This reference with the nights compared since its anchor (``found``: their state)."""
        if found is None or found.pairs < 1:
            return self
        return replace(
            self,
            history=(found.pair_excess / found.pairs, found.pair_noise / found.pairs, found.pairs),
        )

    def with_pool(self, pool: Pool | None, bar: float = 0.002) -> MetricReference:
        """This reference with tau^2 from its own nights and the suite's, and its uncertainty.

        With a few nights the estimate of tau^2 is often much too small (5 nights of 20
        runs estimate a +/-0.10 drift of a success rate to within about its own size), and
        an underestimate is exactly what turns an endpoint's drift into false alarms. So a
        test uses the estimate plus :data:`TAU2_ERRORS` standard errors of it, or (None)
        the tau^2 whose normal tail at ``bar``, the raw p a lone change must reach, is the
        tail averaged over what tau^2 may be (:func:`integrated_tau2`).
        """
        scale = self.night_scale
        at = None if pool is None else self.rho_of(pool.tau2 * scale)
        own = self.own_tau2(at)
        if pool is None:
            tau2, var = (PRIOR_ICC * self.run_var, 0.0) if own is None else own
        elif own is None:
            tau2, var = pool.tau2 * scale, (pool.mean_var + pool.spread) * scale**2
        elif pool.spread <= 0:
            tau2, var = pool.tau2 * scale, pool.mean_var * scale**2
        else:
            w_own = 1 / max(own[1], 1e-300)
            w_pool = 1 / max((pool.spread + pool.mean_var) * scale**2, 1e-300)
            tau2 = (w_own * own[0] + w_pool * pool.tau2 * scale) / (w_own + w_pool)
            var = 1 / (w_own + w_pool)
        point = max(tau2, 0.0)
        if self.run_var <= 0:
            return replace(self, icc=0.0, point_icc=0.0)
        if TAU2_ERRORS is not None:
            used = point + TAU2_ERRORS * math.sqrt(var)
        else:
            # Tonight's mean less the baseline's has variance fixed + slope * tau^2.
            runs = self.within_share * (1 / max(self.night_size, 1.0) + 1 / max(self.n, 1))
            used = integrated_tau2(tau2, var, self.run_var * runs, 1 + self.size_sq - runs, bar)
        return replace(
            self,
            icc=min(used / self.run_var, MAX_ICC),
            point_icc=min(point / self.run_var, MAX_ICC),
        )


def integrated_tau2(tau2: float, var: float, fixed: float, slope: float, bar: float) -> float:
    """The tau^2 at which a normal test's two-sided tail at ``bar`` is what it is on
    average over tau^2's uncertainty.

    A difference of means has variance ``fixed + slope * tau^2``; tau^2 is taken as normal
    around its estimate ``tau2`` with variance ``var``, censored at 0 (a negative
    estimate says "little drift", not "none for sure"). Its predictive tail is the mixture
    of the normal tails over tau^2 (Gauss-Hermite nodes), and a one-variance normal
    matching it at the bar is what every test, escalation look and MDE then reads. Fatter
    than any one variance in the mixture, so the less tau^2 is known and the larger a part
    of the night's variance it is, the more it adds: about its estimate plus 0.2-0.8 of a
    standard error at the bars 5- to 50-scenario suites use.
    """
    point = max(tau2, 0.0)
    if var <= 0 or slope <= 0:
        return point
    unit, weights = hermite(_TAU2_NODES)
    nodes = np.maximum(tau2 + math.sqrt(var) * unit, 0.0)
    sd = np.sqrt(np.maximum(fixed + slope * nodes, 1e-300))
    z = float(special.ndtri(1 - bar / 2))

    def excess(c: float) -> float:
        return float((weights * special.ndtr(-c / sd)).sum()) * 2 - bar

    low, high = z * float(sd.min()), z * float(sd.max())
    if high - low <= 1e-12 * high:
        return point
    c = float(optimize.brentq(excess, low, high, xtol=1e-9 * high))
    return max(((c / z) ** 2 - fixed) / slope, point)


@dataclass(frozen=True)
class CellReference:
    """One cell's baseline, fitted: what every comparison and escalation decision reads."""

    key: CellKey
    tolerance: Tolerance
    anchor: str
    night_runs: tuple[Runs, ...]
    pool: Mapping[str, Pool]
    """Suite-wide tau^2 per metric family (this cell's model)."""
    metrics: dict[str, MetricReference] = field(default_factory=dict)
    rows: frozenset[str] | None = None
    """The dataset rows the baseline was fitted on (:attr:`CellBaseline.rows`)."""
    bar: float = 0.002
    """The raw p a lone gating change must reach tonight, as fitted (:func:`gating_tests`)."""

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
            found = _fit(coding, self.night_runs).with_pool(
                self.pool.get(family(coding.metric)), self.bar
            )
            self.metrics[coding.metric] = found
        return found

    def codings(self, tonight: Runs | None = None) -> list[Coding]:
        return codings(self.pooled, tonight)


def family(name: str) -> str:
    """Metrics whose between-night share is pooled together: ``tool_used:*`` as one,
    ``score:*`` as one, ``tool_calls_of:*`` as one."""
    return family_of(name)


def fit_references(
    cells: Sequence[CellBaseline], evidence: Mapping[CellKey, EvidenceState | None] | None = None
) -> dict[CellKey, CellReference]:
    """Fit every cell's baseline, pooling the between-night share across cells of a model.

    ``evidence``: each cell's accumulated state from the history. The nights compared
    since the same anchor (a state for another anchor is ignored, as the evidence
    itself is) are a second estimate of tau^2, and tonight's test uses the larger of the
    two fits: the anchor's nights alone, and with the nights since. Only ever wider: the
    nights since correct an anchor that saw too little drift, and a quiet season does
    not narrow a band the anchor's own nights set (that would turn tonight's test,
    looked at every night of a season, into a steady source of false alarms). The
    evidence since the anchor, bounded over the season as a whole, takes the fit with
    the nights since as it is (:meth:`MetricReference.for_evidence`).
    """
    nights = {c.key: tuple(Runs.of(c.kept(night)) for night in c.nights) for c in cells}
    alone = {c.key: _fit_alone(nights[c.key]) for c in cells}
    taught = {c.key: _taught(alone[c.key], c, (evidence or {}).get(c.key)) for c in cells}
    pools, taught_pools = _pools(alone), _pools(taught)
    tests = gating_tests(cells, {key: list(metrics) for key, metrics in alone.items()})
    out = {}
    for c in cells:
        pool, wider = pools.get(c.key.model, {}), taught_pools.get(c.key.model, {})
        bar = c.tolerance.fdr_q / max(1, tests)
        metrics = {}
        for name, ref in taught[c.key].items():
            floor = alone[c.key][name].with_pool(pool.get(family(name)), bar)
            fitted = ref.with_pool(wider.get(family(name)), bar)
            # Only tonight's test keeps the anchor's band as a floor; the evidence, bounded
            # over the whole season, takes the night effect the nights since show.
            metrics[name] = replace(fitted, icc=max(fitted.icc, floor.icc))
        out[c.key] = CellReference(
            c.key, c.tolerance, c.anchor, nights[c.key], pool, metrics, c.rows, bar
        )
    return out


def _fit_alone(nights: Sequence[Runs]) -> dict[str, MetricReference]:
    """Every metric of a cell fitted on its own nights."""
    return {coding.metric: _fit(coding, nights) for coding in codings(concat(nights))}


def _taught(
    alone: Mapping[str, MetricReference], c: CellBaseline, state: EvidenceState | None
) -> dict[str, MetricReference]:
    """A cell's fits with the nights compared since its anchor (a state for another anchor
    is not read)."""
    since = state.metrics if state is not None and state.anchor == c.anchor else {}
    return {name: ref.with_history(since.get(name)) for name, ref in alone.items()}


def gating_tests(cells: Sequence[CellBaseline], metrics: Mapping[CellKey, Sequence[str]]) -> int:
    """The gating tests the night will make: cells old enough to gate, times their gating
    metrics. ``fdr_q`` over it is the raw p a lone change must reach, as
    :func:`~evalrunner.stats._comparison.compare_night` sets it (less the metrics with no runs
    tonight, which a fit cannot know)."""
    return sum(
        sum(c.tolerance.is_gating(name) for name in metrics.get(c.key, ()))
        for c in cells
        if len(c.nights) >= c.tolerance.min_baseline_nights
    )


def _pools(own: Mapping[CellKey, Mapping[str, MetricReference]]) -> dict[str, dict[str, Pool]]:
    """Per model, per metric family: the suite's night variance from every cell's own."""
    found: dict[tuple[str, str], list[MetricReference]] = {}
    for key, metrics in own.items():
        for name, ref in metrics.items():
            found.setdefault((key.model, family(name)), []).append(ref)
    pools: dict[str, dict[str, Pool]] = {}
    for (model, fam), refs in found.items():
        pool = pool_tau2(refs)
        if pool is not None:
            pools.setdefault(model, {})[fam] = pool
    for (model, fam), refs in found.items():
        of_model = pools.get(model, {})
        if fam not in of_model and (kin := _kin_pool(of_model, found, model, refs[0].kind)):
            of_model[fam] = kin
    return pools


def _kin_pool(
    of_model: Mapping[str, Pool],
    found: Mapping[tuple[str, str], Sequence[MetricReference]],
    model: str,
    kind: Kind,
) -> Pool | None:
    """The night variance for a metric no cell has seen vary (a crash rate of 0 in every
    night): the best-estimated of the model's metrics of the same kind, on the common
    scale the kind's night law shares (one endpoint's night moves its rates alike).
    Nothing in the metric's own runs says how far a night moves it; :data:`PRIOR_ICC`
    put a night sd of 0.023 on a rate of 0.01 and 0.067 on one of 0.1, so `plan` said
    no runs and no baseline could see a crash rate of 0 rise to 0.1."""
    kin = [
        pool
        for (m, fam), refs in found.items()
        if m == model and refs[0].kind == kind and (pool := of_model.get(fam)) is not None
    ]
    return min(kin, key=lambda p: p.mean_var + p.spread, default=None)


def _own_icc(
    kind: MetricKind, per_night: Sequence[FloatArray], pooled: FloatArray, run_var: float
) -> tuple[float, int] | None:
    if kind.ranked:
        if not pooled.size:
            return None
        return _left_out_icc(kind, per_night, run_var)
    return icc(per_night)


def _left_out_icc(
    kind: MetricKind, per_night: Sequence[FloatArray], run_var: float
) -> tuple[float, int] | None:
    """The night share of placements, from each night placed among the other nights as
    tonight is placed among the baseline's (method of moments on the same statistic).

    Each night's mean placement among the others, less a half, has variance
    run_var [(1 - rho) (1/n + 1/N') + rho (1 + S')] (N' the other nights' runs, S'
    their sum(n_i^2) / N'^2): tonight's test's own null variance. Solved for rho, it
    estimates the night share the test needs. The ANOVA of placements among every night,
    each night's own included, read lower: steps under the logit law, 400 anchors of 5 x
    20, 0.027 where tonight's null spread says 0.037; this reads 0.029
    (benchmarks/night_share.py). A small correction; most of the gap is estimating a
    variance from five nights at all."""
    used = [v for v in per_night if v.size]
    if len(used) < 2 or run_var <= 0:
        return None
    square, noise, slope = np.mean([_left_out(kind, used, j) for j in range(len(used))], axis=0)
    if slope <= 1e-9:
        # Nights of one run each: a night's mean is its one run, and nights and runs
        # cannot be told apart (the variance says nothing of rho). Placed among all.
        ordered = np.sort(np.concatenate(used))
        return icc([kind.on_test_scale(v, ordered) for v in used])
    return float((square / run_var - noise) / slope), len(used) - 1


def _left_out(kind: MetricKind, used: Sequence[FloatArray], j: int) -> tuple[float, float, float]:
    """Night ``j`` placed among the other nights: its mean placement's squared distance
    from a half, and that variance's run and night coefficients (in units of run_var)."""
    others = [v for i, v in enumerate(used) if i != j]
    rest = np.sort(np.concatenate(others))
    d = float(kind.on_test_scale(used[j], rest).mean()) - 0.5
    runs = 1 / used[j].size + 1 / rest.size
    sizes = np.array([v.size for v in others], dtype=float)
    return d * d, runs, 1 + float((sizes**2).sum()) / rest.size**2 - runs


def _fit(coding: Coding, nights: Sequence[Runs]) -> MetricReference:
    """One metric's reference from the cell's own nights (rho: its own estimate, unshrunk)."""
    info = metric(coding.metric)
    kind = KINDS[info.kind]
    per_night = tuple(coding.values(night) for night in nights)
    values = np.concatenate(per_night) if per_night else np.zeros(0)
    n = values.size
    moments = kind.moments(values)
    own = _own_icc(kind, per_night, values, moments.run_var)
    rho = PRIOR_ICC if own is None else min(max(own[0], 0.0), MAX_ICC)
    sizes = np.array([v.size for v in per_night], dtype=float)
    size_sq = float((sizes**2).sum() / n**2) if n else 1.0
    paired, own = paired_share(coding, nights, per_night, moments.sorted_base, own)
    return MetricReference(
        coding=coding,
        kind=info.kind,
        direction=info.direction,
        nights=per_night,
        n=n,
        estimate=float(values.mean()) if n else float("nan"),
        mean=moments.mean,
        run_var=moments.run_var,
        icc=rho,
        own_icc=own,
        night_size=n / max(1, sum(v.size > 0 for v in per_night)),
        size_sq=size_sq,
        sorted_base=moments.sorted_base,
        shares=moments.shares,
        within_share=paired,
        night_scale=kind.night_scale(values, moments.run_var) if moments.run_var > 0 else 0.0,
    )
