"""The budget planner: runs for 80 % power at each gating margin, and what a night costs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evalrunner.stats import CellNight, compare_night, fit_references, plan
from evalrunner.stats._observe import Coding
from evalrunner.stats._planner import Plan
from evalrunner.stats._power import mde
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey

from .conftest import RunsMaker

STEPS = (3, 4, 5, 3, 4, 6, 2, 4, 5, 4)


def _cells(
    runs: RunsMaker, cell: Callable[..., CellNight], tolerance: Tolerance
) -> list[CellNight]:
    return [
        cell(
            [
                runs(
                    20,
                    passed=18,
                    steps=STEPS,
                    prompt=1000,
                    completion=250,
                    scenario=s,
                    start=20 * i,
                )
                for i in range(nights)
            ],
            [],
            scenario=s,
            tolerance=tolerance,
        )
        for s, nights in (("mature", 10), ("young", 1))
    ]


def test_runs_for_the_margin_and_the_cost(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    tolerance = Tolerance(margins={"success_rate": 0.3})
    cells = _cells(runs, cell, tolerance)
    found = plan([c.baseline for c in cells], 20)
    mature = found.cells[0]
    assert (mature.scenario, mature.runs, mature.budget, mature.gating) == ("mature", 20, 60, True)
    assert found.cells[1].gating is False
    success = next(m for m in mature.metrics if m.metric == "success_rate")
    assert success.runs_for_margin is not None and success.attainable
    # The MDE at the planned runs is the margin (or less): 80 % power there.
    ref = fit_references([c.baseline for c in cells])[CellKey("mature", "m")].reference(
        Coding("success_rate")
    )
    at = mde(ref, success.runs_for_margin, found.level, 0.3, tolerance.ci_level)
    assert at is not None and at <= 0.3
    assert mature.calls_per_run == pytest.approx(sum(STEPS) / len(STEPS))
    assert mature.tokens_per_run == pytest.approx(1250)
    assert found.runs_now == 40
    assert found.tokens_now == pytest.approx(40 * 1250)
    assert found.level == pytest.approx(0.05 / sum(len(c.metrics) for c in found.cells))


def test_margins_out_of_reach_are_named(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    cells = _cells(runs, cell, Tolerance())
    found = plan([c.baseline for c in cells], 20, budget=25)
    assert any(
        line.startswith("mature [m]: success_rate 0.1") and "out of reach at 25 runs" in line
        for line in found.unattainable
    )
    success = next(m for m in found.cells[0].metrics if m.metric == "success_rate")
    assert not success.attainable


def test_a_margin_no_runs_tonight_reach_says_how_many_baseline_nights_would(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # Before: "none (needs a larger baseline)", with no number (review 4, defect 4).
    def baseline(nights: int) -> CellNight:
        return cell(
            [runs(10, passed=9, steps=STEPS, start=10 * i) for i in range(nights)],
            [],
            # Success alone gates: the route found is then the one its margin needs.
            tolerance=Tolerance(margins={"success_rate": 0.3}, gating=["success_rate"]),
        )

    small = plan([baseline(3).baseline], 10)
    success = next(m for m in small.cells[0].metrics if m.metric == "success_rate")
    assert not success.attainable and success.nights_for_margin is not None
    k = success.nights_for_margin
    [line] = small.unattainable
    [route] = [r for r in small.cells[0].routes if r.nights == k]
    assert route.runs <= small.cells[0].budget
    assert f"{route.runs} runs a night with a baseline of {k} nights ({k - 3} more)" in line
    # An estimate (the night effect's padding shrinks with the nights, its estimate kept):
    # a baseline of one night more like these reaches the margin at the budget; two fewer
    # do not.
    for nights, reached in ((k + 1, True), (k - 2, False)):
        found = plan([baseline(nights).baseline], 10).cells[0]
        assert next(m for m in found.metrics if m.metric == "success_rate").attainable is reached


def test_the_nights_since_the_anchor_plan_for_the_band_tonight_s_test_will_use(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Anchor nights that happened to agree, then a season that swung: tonight's test widens
    its band by the nights since (``fit_references`` with the history's evidence), so a plan
    without them would promise power the night will not have."""
    tolerance = Tolerance(margins={"success_rate": 0.3})
    steady = [runs(20, passed=17, start=20 * i) for i in range(5)]
    state = None
    for i, passed in enumerate([20, 13, 19, 14, 20, 12] * 5):
        tonight = runs(20, passed=passed, start=1000 + 20 * i)
        night = cell(steady, tonight, tolerance=tolerance)
        state = compare_night([CellNight(night.baseline, tonight, state)]).cells[0].evidence
    baseline = cell(steady, [], tolerance=tolerance).baseline

    def success(found: Plan) -> tuple[float | None, int | None]:
        [m] = [m for m in found.cells[0].metrics if m.metric == "success_rate"]
        return m.mde_at_runs, m.runs_for_margin

    mde_alone, needed_alone = success(plan([baseline], 20))
    mde_since, needed_since = success(plan([baseline], 20, evidence={baseline.key: state}))
    assert mde_alone is not None and needed_alone is not None
    assert mde_since is not None and mde_since > mde_alone + 0.2
    # Nights that swing +/-0.2 leave a 0.3 margin out of reach at any number of runs tonight.
    assert needed_since is None


def test_a_margin_neither_more_runs_nor_more_nights_alone_reach_gets_the_cheapest_mix_of_both(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Issue 52: ``plan`` says the cheapest way to reach a margin. Three nights of ten runs
    leave a 0.25 drop out of reach at any runs tonight (the baseline's own uncertainty), and
    thirty nights at the budget of 30 runs cannot reach it either (tonight's); the line used
    to say "a larger baseline: more than 30 nights at the budget", as if no route existed."""
    passed = (9, 8, 9, 10, 8, 9, 9, 7, 10, 9)

    def baseline(nights: int) -> CellNight:
        return cell(
            [runs(10, passed=passed[i % 10], steps=STEPS, start=10 * i) for i in range(nights)],
            [],
            tolerance=Tolerance(margins={"success_rate": 0.25}, gating=["success_rate"]),
        )

    small = plan([baseline(3).baseline], 10)
    [success] = small.cells[0].metrics
    assert success.runs_for_margin is None and success.nights_for_margin is None
    [route] = small.cells[0].routes
    assert route.nights > 3 and route.runs > 30
    assert route.season_runs == (route.nights - 3) * 10 + 90 * route.runs
    [line] = small.unattainable
    assert (
        f"{route.runs} runs a night with a baseline of {route.nights} nights "
        f"({route.nights - 3} more) ({route.season_runs:,} runs a season)"
    ) in line
    # The route holds for a baseline really that large: its runs reach the margin there.
    [grown] = plan([baseline(route.nights).baseline], 10, budget=route.runs).cells[0].metrics
    assert grown.attainable
