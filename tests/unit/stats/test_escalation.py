"""Escalation and adaptive stopping: one pure decision per look, and the loop that follows it."""

from __future__ import annotations

from collections.abc import Callable

from evalrunner.stats import Budget, CellNight, CellReference, decide, drive, fit_references
from evalrunner.stats._sequential import PROMISE_ADAPTIVE
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord

from .conftest import RunsMaker

STEPS = (3, 4, 5, 3, 4)


def _reference(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    nights: int = 5,
    tolerance: Tolerance | None = None,
) -> CellReference:
    night = cell([runs(20, passed=18, steps=STEPS) for _ in range(nights)], [], tolerance=tolerance)
    return fit_references([night.baseline])[CellKey("s", "m")]


def _feeder(runs: RunsMaker, passed_share: float) -> Callable[[int], list[RunRecord]]:
    done = [0]

    def run_more(k: int) -> list[RunRecord]:
        start = done[0]
        done[0] += k
        return runs(k, passed=round(k * passed_share), steps=STEPS, start=start)

    return run_more


def test_the_budget_follows_the_tolerance() -> None:
    assert Budget.of(Tolerance(), 20, cells=5) == Budget(20, 60, 10, False, 5)
    assert Budget.of(Tolerance(escalate_to=1), 20, cells=5).cap == 20
    assert Budget.of(Tolerance(), 20, cells=5, adaptive=True).first_look == 10
    assert Budget.of(Tolerance(), 20, cells=5).first_look == 20


def test_before_the_first_look_it_runs_up_to_it(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    step = decide(ref, runs(5, passed=5), Budget.of(Tolerance(), 20, cells=1))
    assert (step.action, step.more, step.runs) == ("continue", 15, 5)
    assert step.reason == "5 of 20 runs before the first look"


def test_runs_like_the_baseline_s_stop_at_n(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    step = decide(ref, runs(20, passed=18, steps=STEPS), Budget.of(Tolerance(), 20, cells=1))
    assert step.action == "stop" and step.more == 0
    assert step.reason.startswith(
        "nothing suspicious after 20 runs (best chance of a flag at 60 runs:"
    )


def test_a_suspicious_cell_gets_another_batch_and_says_why(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    step = decide(ref, runs(20, passed=13, steps=STEPS), Budget.of(Tolerance(), 20, cells=1))
    assert (step.action, step.more) == ("continue", 10)
    assert "success_rate" in step.suspicious
    assert step.reason.startswith("after 20 runs success_rate (p ")
    assert step.reason.endswith(": 10 more (cap 60)")


def test_the_cap_ends_it(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    ref = _reference(runs, cell)
    step = decide(ref, runs(60, passed=30), Budget.of(Tolerance(), 20, cells=1))
    assert (step.action, step.reason) == ("stop", "reached the cap of 60 runs")


def test_a_young_baseline_runs_its_n_and_never_escalates(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell, nights=1)
    budget = Budget.of(Tolerance(), 20, cells=1, adaptive=True)
    assert decide(ref, runs(10, passed=2), budget).more == 10
    step = decide(ref, runs(20, passed=2), budget)
    assert (step.action, step.reason) == ("stop", "baseline too young to gate: no escalation")


def test_drive_escalates_a_changed_cell_to_the_cap(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    driven = drive(ref, Budget.of(Tolerance(), 20, cells=1), _feeder(runs, 0.5))
    assert len(driven.records) == 60
    assert [s.action for s in driven.steps] == ["continue"] * 5 + ["stop"]
    assert [r.index for r in driven.records] == list(range(60))


def test_drive_stops_an_unchanged_cell_at_half_n_when_adaptive(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    driven = drive(ref, Budget.of(Tolerance(), 20, cells=1, adaptive=True), _feeder(runs, 0.9))
    assert len(driven.records) == 10
    assert driven.steps[-1].reason.startswith("nothing suspicious after 10 runs")


def test_adaptive_looks_again_after_every_batch_until_n(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # --adaptive with --batch 5: looks at 10 and 15 runs, so a cell that looked promising
    # at 10 but not at 15 stops there instead of running its whole N.
    ref = _reference(runs, cell)
    budget = Budget.of(Tolerance(), 20, cells=1, adaptive=True, batch=5)
    first = decide(ref, runs(10, passed=5, steps=STEPS), budget)
    assert (first.action, first.more) == ("continue", 5)
    assert first.reason.endswith(": 5 more (cap 60)")
    settled = decide(ref, runs(15, passed=14, steps=STEPS), budget)
    assert (settled.action, settled.runs) == ("stop", 15)
    assert settled.reason.startswith(
        "nothing suspicious after 15 runs (best chance of a flag at 20"
    )


def test_later_adaptive_looks_keep_a_cell_the_first_look_s_bar_would_stop(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # A cell that got past the first look had something promising there: at 15 runs a 6 %
    # chance of a flag at 20 (under the first look's 10 % bar for rates) still runs on.
    ref = _reference(runs, cell)
    budget = Budget.of(Tolerance(), 20, cells=2, adaptive=True, batch=5)
    step = decide(ref, runs(15, passed=10, steps=STEPS), budget)
    assert step.action == "continue" and "success_rate" in step.suspicious
    assert "success_rate (p 0.041, chance of a flag at 20 runs 6%)" in step.reason
    assert PROMISE_ADAPTIVE["binary"] > 0.06


def test_a_big_suite_s_early_looks_keep_a_cell_the_bars_chosen_on_5_cells_would_stop(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # In 100 cells a lone change must pass a 20 times stricter bar than in 5, so a real
    # change looks less promising at an early look: 6 of 10 passing has a 3 % chance of a
    # flag at 20 runs, under the 10 % bar chosen on 5 cells; scaled to the suite, it runs on.
    ref = _reference(runs, cell)
    budget = Budget.of(Tolerance(), 20, cells=100, adaptive=True, batch=5)
    step = decide(ref, runs(10, passed=6, steps=STEPS), budget)
    assert step.action == "continue" and "success_rate" in step.suspicious
    assert "success_rate (p 0.033, chance of a flag at 20 runs 3%)" in step.reason
    assert PROMISE_ADAPTIVE["binary"] > 0.03


def test_drive_ends_when_the_runner_cannot_run_more(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    ref = _reference(runs, cell)
    driven = drive(ref, Budget.of(Tolerance(), 20, cells=1), lambda k: [])
    assert driven.records == [] and len(driven.steps) == 1


def test_metrics_that_move_together_are_judged_at_the_step_up_bar(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # 23 of 30 passing against a 0.9 baseline of 20 nights (its night variance well
    # known), in a night of 3 cells, after one batch past N. When the failed runs also
    # give another answer, success_rate_valid and final_answer_match fall together:
    # Benjamini-Hochberg flags both at twice a lone bar, so both keep the cell escalating.
    # When the failed runs still answer as usual, success_rate_valid falls alone and is
    # not promising enough at the lone bar. (Both made gating, success_rate not: past N,
    # diagnostics hold no cell.)
    gating = ["crash_rate", "skip_rate", "tool_sequence", "step_count"]
    tolerance = Tolerance(gating=[*gating, "success_rate_valid", "final_answer_match"])
    ref = _reference(runs, cell, nights=20, tolerance=tolerance)
    budget = Budget.of(tolerance, 20, cells=3)
    together = runs(30, passed=23, steps=STEPS)
    alone = [r.model_copy(update={"final_answer": "Paris"}) for r in together]
    assert {"success_rate_valid", "final_answer_match"} <= set(
        decide(ref, together, budget).suspicious
    )
    assert "success_rate_valid" not in decide(ref, alone, budget).suspicious


def test_a_diagnostic_holds_no_cell_past_n(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    """A latency 50 % up on every run (p ~ 1e-8), nothing else moved: a diagnostic never fails
    the night, so escalation stops at N. A review's 8-scenario night on an endpoint 40 ms
    slower went from 80 runs to 220, every extra run for latency_s. Made gating, it escalates."""
    steady = (0.030, 0.031, 0.032, 0.029, 0.030)
    slower = tuple(1.5 * x for x in steady)

    def step(tolerance: Tolerance) -> str:
        baseline = cell(
            [runs(20, passed=18, steps=STEPS, latency=steady, start=20 * i) for i in range(3)],
            [],
            tolerance=tolerance,
        ).baseline
        ref = fit_references([baseline])[CellKey("s", "m")]
        tonight = runs(20, passed=18, steps=STEPS, latency=slower)
        return decide(ref, tonight, Budget.of(tolerance, 20, cells=1)).action

    assert step(Tolerance()) == "stop"
    assert step(Tolerance(gating=["success_rate", "latency_s"])) == "continue"


def test_a_metric_whose_interval_rules_out_its_margin_does_not_hold_its_cell(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """The verdict flags a metric only if its interval reaches the margin, and more runs only
    narrow the interval: a latency 10 % up (p ~ 1e-8) against a margin of x20 is no reason
    to run on, while the same latency against a margin of x1.05 is."""
    steady = (0.030, 0.031, 0.032, 0.029, 0.030)
    slower = tuple(1.1 * x for x in steady)

    def step(margin: float) -> tuple[str, str]:
        tolerance = Tolerance(margins={"latency_s": margin})
        baseline = cell(
            [runs(20, passed=18, steps=STEPS, latency=steady, start=20 * i) for i in range(3)],
            [],
            tolerance=tolerance,
        )
        ref = fit_references([baseline.baseline])[CellKey("s", "m")]
        tonight = runs(10, passed=9, steps=STEPS, latency=slower, start=100)
        found = decide(ref, tonight, Budget.of(tolerance, 20, cells=1, adaptive=True))
        return found.action, found.reason

    action, reason = step(20.0)
    assert action == "stop" and "latency_s" not in reason, reason
    action, reason = step(1.05)
    assert action == "continue" and "latency_s (p " in reason, reason


def test_a_metric_held_by_the_validity_floor_says_so_not_a_zero_chance() -> None:
    # A p at or below the floor runs its cell to the cap whatever its chance of a flag
    # (error control); the reason said "chance of a flag ... 0%", which read as a bug.
    from evalrunner.stats._sequential import _Look

    held = _Look("latency_s", 0.0043, 0.0, True, floor=0.0083)
    assert held.said(180) == "latency_s (p 0.0043, at or below 0.0083: runs to the cap)"
    promising = _Look("success_rate", 0.0043, 0.42, True, floor=0.0083)
    assert promising.said(60) == "success_rate (p 0.0043, chance of a flag at 60 runs 42%)"


def test_evidence_halfway_escalates_a_cell_only_when_tonight_measured_something(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # An outage night: every run an endpoint fault. Evidence from earlier nights halfway to
    # its boundary used to buy more runs of the cell, every one another fault.
    from evalrunner.stats import EvidenceState
    from evalrunner.stats._evidence_state import MetricEvidence

    ref = _reference(runs, cell)
    halfway = MetricEvidence(nights=3, z=2.5, boundary=2.9)
    evidence = EvidenceState(anchor=ref.anchor, nights=3, metrics={"success_rate": halfway})
    budget = Budget.of(Tolerance(), 20, cells=1)
    outage = decide(ref, runs(20, infra=20), budget, evidence)
    assert (outage.action, outage.more) == ("stop", 0), outage.reason
    measured = decide(ref, runs(20, passed=18, steps=STEPS), budget, evidence)
    assert measured.action == "continue" and measured.suspicious == ("success_rate",)
    assert "success_rate (evidence since the anchor halfway to its boundary)" in measured.reason
