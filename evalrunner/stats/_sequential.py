"""Escalation and adaptive stopping within a night: one decision per look, and the loop.

The runner runs a batch of a cell, calls :func:`decide`, and does what it says
(:func:`drive` is that loop, for callers that can run a cell synchronously; the
calibration uses it). Looks:

* ``adaptive``: the first look is at half the scenario's runs, and another after
  each batch up to N. The cell stops at the first look where no metric is
  promising (a flag at N still likely enough); otherwise it runs on.
* at N (and after each extra batch): if some metric is suspicious the cell gets
  another batch, up to ``escalate_to`` x N; otherwise it stops.

A metric is *suspicious* when its raw p is at or below a small floor, or when the
predictive probability that it is flagged at the end (at N during the adaptive
look, at the cap after N) is at least the PROMISE_* level of the look and family,
and its interval tonight still reaches the margin on the harmful side (a flag needs
both, and more runs only narrow the interval).
"Flagged" is judged at Benjamini-Hochberg's step-up bar for the metric's rank
among the cell's own metrics of its family (k fdr_q / m when k of them have a p at
most its own): metrics that move together, such as a success rate and the answers
that go with it, are flagged together at a looser bar than a lone change. At the adaptive
looks every metric counts, gating and diagnostic, so stopping early never skips a
diagnostic that was about to show something. Past N only gating metrics do: a
diagnostic never fails the night, so extra runs buy it nothing, and an endpoint's slow
night (every cell's latency up) took a review's 8-scenario night from 80 runs to 220.
The accumulated evidence of a gating metric that is halfway to its boundary keeps the
cell escalating too, so slow changes get more runs.

Error control: the verdict is the fixed-N test on the runs the cell ended with
(:func:`evalrunner.stats._comparison.compare_night`). A cell stops short of the cap
only when no metric's p is at or below ``floor`` = min(fdr_q, 10 fdr_q / m) (m:
tests in its family tonight), so every p that Benjamini-Hochberg could reject with
up to ten rejections in the family comes from a cell that ran to the cap, where it
is the ordinary fixed-N p of that many runs: P(reported p <= t) <= t for all such
t, with no alpha spent on the looks. With more than ten true changes in a night
the guarantee for the extra ones loosens to 2t. Stopping early (futility) can only
lower the false-alarm rate. A metric whose interval rules out its margin may stop a
cell with its p below the floor: on those runs its verdict cannot be a flag.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalrunner.stats._comparison import measure
from evalrunner.stats._evidence_state import EvidenceState, halfway
from evalrunner.stats._formulas import z_upper
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._measured import Measured
from evalrunner.stats._observe import Runs
from evalrunner.stats._power import predictive_power
from evalrunner.stats._reference import CellReference, MetricReference
from evalrunner.stats._verdict import reaches_margin
from evalrunner.suite._metrics import Kind
from evalrunner.suite._record import RunRecord
from evalrunner.suite._tolerance import Tolerance

PROMISE_ENTER = 0.1
"""At N: escalate when a gating metric would be flagged at the cap with this chance. Lenient:
20 runs cannot tell a 0.6 success rate from 0.75 (a changed cell's first 20 runs look
harmless a quarter of the time), and a false escalation is cheap because..."""
PROMISE_GATING = 0.2
"""...after N, a cell keeps escalating only while a gating metric stays this promising."""
PROMISE_ADAPTIVE: dict[Kind, float] = {name: kind.adaptive_promise for name, kind in KINDS.items()}
"""The adaptive look (half of N): run on to N while some metric would be flagged at N with this
chance, by the metric's kind (each kind's ``adaptive_promise`` in
:data:`~evalrunner.stats._kinds.KINDS`; the calibration script overrides them here). Rates and
paths move in coarse steps at 10 runs, so their look is lenient; counts, tokens and latency say
more per run, and an unchanged cell has many of them (each one a chance to look promising by
luck), so theirs is strict. Chosen by simulation (benchmarks/calibrate_stats.py, adaptive
table): in a 5-scenario suite one threshold of 0.2 for every kind saved 39 % of runs and lost
4-6.5 points on a rate; these (with the later looks' bars below) save ~43 % and lose 3-3.5
points (bigger suites scale them: PROMISE_ADAPTIVE_CELLS; docs/calibration.md)."""
PROMISE_ADAPTIVE_LATER = 0.5
"""The looks after the first and before N use PROMISE_ADAPTIVE times this. A cell that got
past the first look had something promising there; halving the bar at the later looks keeps
more changed cells running to N (and to escalation) while still stopping most unchanged ones.
Chosen on seed 0's nights: against the first look's bar at every look, the same savings
(43.6 against 43.8 %) and up to 3.5 more points of power under --adaptive with escalation;
docs/calibration.md."""
PROMISE_ADAPTIVE_CELLS = 5
"""The suite size the adaptive bars were chosen on. A suite of more cells uses them times
sqrt(5 / cells): there a lone change must pass a stricter bar (Benjamini-Hochberg over every
cell's tests), so at an early look a real change looks less promising than in 5 cells and
the same bar stops more of them. On 50 x 1 (seed 1, 80 nights) the bars as chosen saved
47.4 % of runs and lost up to 5 points of power against fixed N; scaled, 42.5 % and 1.2."""

FLOOR_REJECTIONS = 10
"""The validity floor covers BH thresholds of up to this many rejections in a family."""


@dataclass(frozen=True)
class Budget:
    """How many runs one cell may get tonight."""

    runs: int
    """The scenario's runs (N): a cell always gets them unless ``adaptive`` stops it early."""
    cap: int
    """The cap with escalation (``runs`` turns escalation off)."""
    batch: int
    """Runs per look after the first: with ``adaptive`` the looks from N/2 up to N, and
    escalation's extra batches after N."""
    adaptive: bool = False
    """Look at half of ``runs`` and every ``batch`` runs after it, and stop at the first look
    where nothing is promising."""
    cells: int = 1
    """Cells compared tonight: sets the level a lone change must reach (BH over the night)."""

    @classmethod
    def of(
        cls,
        tolerance: Tolerance,
        runs: int,
        *,
        cells: int,
        adaptive: bool = False,
        batch: int | None = None,
    ) -> Budget:
        """The budget a scenario of ``runs`` runs gets under ``tolerance`` (its escalate_to)."""
        cap = max(runs, math.floor(runs * tolerance.escalate_to))
        return cls(runs, cap, batch or max(1, math.ceil(runs / 2)), adaptive, max(1, cells))

    @property
    def first_look(self) -> int:
        return max(1, math.ceil(self.runs / 2)) if self.adaptive else self.runs


@dataclass(frozen=True)
class Step:
    """What to do after a look."""

    action: Literal["continue", "stop"]
    more: int
    """Runs to add now (0 when stopping)."""
    runs: int
    """Runs of this cell so far tonight (infra errors included: they cost a run too)."""
    reason: str
    suspicious: tuple[str, ...] = ()
    """Metrics that keep the cell running."""


@dataclass(frozen=True)
class Driven:
    """A cell's night under :func:`drive`: its runs and every decision on the way."""

    records: list[RunRecord]
    steps: list[Step] = field(default_factory=list)


@dataclass(frozen=True)
class _Look:
    metric: str
    p: float
    promise: float
    suspicious: bool
    floor: float | None = None
    """The validity floor, when the p is at or below it (then the cell runs to its cap)."""

    def said(self, target: int) -> str:
        if self.floor is not None and self.promise < 0.005:
            # Not its promise: a p this small must come from a cell run to its cap
            # (the error-control argument above), whatever its chance of a flag.
            return f"{self.metric} (p {self.p:.2g}, at or below {self.floor:.2g}: runs to the cap)"
        return (
            f"{self.metric} (p {self.p:.2g}, chance of a flag at {target} runs {self.promise:.0%})"
        )


def decide(
    reference: CellReference,
    tonight: Sequence[RunRecord],
    budget: Budget,
    evidence: EvidenceState | None = None,
) -> Step:
    """Stop, or run more of this cell? Pure: the same runs give the same answer."""
    done = len(tonight)
    fixed = _fixed_step(reference, done, budget)
    if fixed is not None:
        return fixed
    target = budget.runs if done < budget.runs else budget.cap
    runs = Runs.of(sorted(tonight, key=lambda r: r.index))
    looks = _looks(reference, runs, budget, done, target)
    # Evidence halfway to its boundary keeps a cell running only when tonight's runs can
    # add to it: runs that all met endpoint faults measured nothing, nor would more.
    watched = _watched(reference, evidence) if done >= budget.runs and runs.outcome else []
    keep = [look for look in looks if look.suspicious]
    if not keep and not watched:
        return _nothing_suspicious(looks, done, target)
    return _run_on(keep, watched, done, target, budget)


def _run_on(
    keep: Sequence[_Look], watched: Sequence[str], done: int, target: int, budget: Budget
) -> Step:
    """Another batch, and the metrics that asked for it."""
    more = min(budget.batch, target - done)
    said = [k.said(target) for k in keep]
    said += [f"{name} (evidence since the anchor halfway to its boundary)" for name in watched]
    return Step(
        "continue",
        more,
        done,
        f"after {done} runs {', '.join(said)}: {more} more (cap {budget.cap})",
        tuple(k.metric for k in keep) + tuple(watched),
    )


def _nothing_suspicious(looks: Sequence[_Look], done: int, target: int) -> Step:
    best = max(looks, key=lambda look: look.promise, default=None)
    why = (
        ""
        if best is None
        else f" (best chance of a flag at {target} runs: {best.promise:.0%}, {best.metric})"
    )
    return Step("stop", 0, done, f"nothing suspicious after {done} runs{why}")


def _fixed_step(reference: CellReference, done: int, budget: Budget) -> Step | None:
    """The decisions that need no look at the runs: before the first look, at the cap, young."""
    if done < budget.first_look:
        more = budget.first_look - done
        return Step(
            "continue", more, done, f"{done} of {budget.first_look} runs before the first look"
        )
    if done >= budget.cap:
        return Step("stop", 0, done, f"reached the cap of {budget.cap} runs")
    if not reference.young:
        return None
    if done < budget.runs:
        return Step("continue", budget.runs - done, done, "baseline too young to gate: runs its N")
    return Step("stop", 0, done, "baseline too young to gate: no escalation")


def _looks(
    reference: CellReference, runs: Runs, budget: Budget, done: int, target: int
) -> list[_Look]:
    tol = reference.tolerance
    measured = []
    codings = reference.codings(runs)
    for coding in codings:
        ref = reference.reference(coding)
        found = measure(ref, runs, tol.ci_level)
        if not isinstance(found, str):
            measured.append((ref, found, tol.is_gating(coding.metric)))
    gating = sum(tol.is_gating(c.metric) for c in codings)
    family = {True: max(1, gating), False: max(1, len(codings) - gating)}
    # The bar a lone change in each family must reach tonight (BH over the night).
    lone = {gates: tol.fdr_q / (budget.cells * size) for gates, size in family.items()}
    out = []
    for ref, found, gates, rank in _ranked(measured):
        if not gates and done >= budget.runs:
            continue  # past N: a diagnostic never fails the night (module docstring)
        # Benjamini-Hochberg's step-up bar at this metric's rank among the cell's own
        # metrics of its family: metrics that move together (a success rate and the
        # answer that goes with it) are flagged together at a looser bar than a lone one.
        # The validity floor stays at the lone bar (the error-control argument above).
        floor = min(tol.fdr_q, FLOOR_REJECTIONS * lone[gates])
        promise = _enough(ref.kind, done, budget)
        margin = tol.margin_for(ref.name)
        out.append(_look(ref, found, rank * lone[gates], floor, done, target, promise, margin))
    return out


def _enough(kind: Kind, done: int, budget: Budget) -> float:
    """The chance of a flag at the look's target that keeps a metric's cell running."""
    if done < budget.runs:  # an adaptive look before N
        later = done > budget.first_look
        scale = min(1.0, math.sqrt(PROMISE_ADAPTIVE_CELLS / budget.cells))
        return PROMISE_ADAPTIVE[kind] * (PROMISE_ADAPTIVE_LATER if later else 1.0) * scale
    return PROMISE_ENTER if done == budget.runs else PROMISE_GATING


def _ranked(
    measured: Sequence[tuple[MetricReference, Measured, bool]],
) -> list[tuple[MetricReference, Measured, bool, int]]:
    """Each metric with its step-up rank: how many of the cell's metrics of its family have
    a p at most its own (ties share the larger rank, as Benjamini-Hochberg rejects them)."""
    p = [found.p_values(ref.direction, improvable=False)[0] for ref, found, _ in measured]
    return [
        (ref, found, gates, sum(q <= p[i] for j, q in enumerate(p) if measured[j][2] == gates))
        for i, (ref, found, gates) in enumerate(measured)
    ]


def _look(
    ref: MetricReference,
    m: Measured,
    bar: float,
    floor: float,
    done: int,
    target: int,
    enough: float,
    margin: float,
) -> _Look:
    p, _ = m.p_values(ref.direction, improvable=False)
    # A flag needs the interval to reach the margin too, and more runs only narrow it:
    # a metric whose interval already rules the margin out (a latency 5 % up against a
    # margin of x1.25) cannot hold its cell, however small its p.
    if not reaches_margin(ref.kind, ref.direction, margin, m.effect, m.effect_ci, harmful=True):
        return _Look(ref.name, p, 0.0, False)
    # The z the test's own p corresponds to (exact tails for rates and paths: a single
    # crash against a crash-free baseline is not a 2-sigma event).
    side_bar = bar / 2 if ref.direction == "changed" else bar
    z = z_upper(p / 2 if ref.direction == "changed" else p)
    final_n = max(m.n, round(m.n * target / max(done, 1)))
    promise = predictive_power(z, 1 / ref.null_var(m.n), 1 / ref.null_var(final_n), side_bar)
    return _Look(
        ref.name, p, promise, p <= floor or promise >= enough, floor if p <= floor else None
    )


def _watched(reference: CellReference, evidence: EvidenceState | None) -> list[str]:
    """Gating metrics whose evidence since the anchor is halfway to flagging."""
    tol = reference.tolerance
    if evidence is None or evidence.anchor != reference.anchor:
        return []
    out = []
    for name in evidence.metrics:
        z, limit = evidence.z(name)
        if tol.is_gating(name) and limit is not None and halfway(z, limit):
            out.append(name)
    return out


def drive(
    reference: CellReference,
    budget: Budget,
    run_more: Callable[[int], Sequence[RunRecord]],
    *,
    evidence: EvidenceState | None = None,
    tonight: Sequence[RunRecord] = (),
) -> Driven:
    """Run one cell look by look until :func:`decide` says stop.

    ``run_more(k)`` runs k more runs of the cell and returns their records (an
    empty result ends the loop: the runner could not run more). ``tonight``: runs
    already done (a resumed night).
    """
    records = list(tonight)
    steps = []
    while True:
        step = decide(reference, records, budget, evidence)
        steps.append(step)
        if step.action == "stop":
            return Driven(records, steps)
        new = list(run_more(step.more))
        if not new:
            return Driven(records, steps)
        records += new
