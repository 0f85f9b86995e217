"""A change every run showed, which the night cannot confirm (N = 3, a young baseline, many
tests), is marked ``unconfirmed`` with what would settle it: never silent, never failing."""

from __future__ import annotations

import numpy as np

from evalrunner.stats import compare_night
from evalrunner.suite._record import RunRecord

from .conftest import cell_night, make_runs


def test_changes_every_run_showed_at_three_runs_are_marked_unconfirmed() -> None:
    # Ten scenarios, N = 3, a baseline of one night. Eight now call calculator before
    # get_weather (steps 4 -> 5), one went from 3/3 passes to 0/3, one is unchanged.
    cells = []
    for c in range(10):
        scenario = f"s{c}"
        base = [make_runs(3, tools=[("get_weather",)], steps=4, scenario=scenario)]
        tools: list[tuple[str, ...]] = [("get_weather",)]
        steps, passed = 4, 0 if c == 8 else None
        if c < 8:
            tools, steps = [("calculator", "get_weather")], 5
        tonight = make_runs(3, tools=tools, steps=steps, passed=passed, scenario=scenario, start=10)
        cells.append(cell_night(base, tonight, scenario=scenario))
    night = compare_night(cells)
    marked = {(r.scenario, r.metric) for r in night.results if r.unconfirmed}
    for c in range(8):
        assert {(f"s{c}", "tool_sequence"), (f"s{c}", "step_count")} <= marked
    assert ("s8", "success_rate") in marked
    assert not [m for m in marked if m[0] == "s9"]
    assert not night.failures, "a young baseline does not gate"
    result = next(r for r in night.results if (r.scenario, r.metric) == ("s8", "success_rate"))
    assert result.verdict == "inconclusive" and result.note is not None
    assert "changed, unconfirmed: every run moved" in result.note
    assert "the baseline is too young to gate" in result.note
    assert "more baseline nights first, then runs" in result.note


def test_an_ordinary_night_marks_nothing_unconfirmed() -> None:
    # Fifty scenarios, 5 x 20 baselines, tonight drawn from the same law: raw p values
    # below 0.05 happen by the dozen, but no run moved, so nothing is marked.
    rng = np.random.default_rng(11)

    def night(scenario: str, start: int) -> list[RunRecord]:
        steps = list(rng.poisson(4, 20) + 1)
        passed = int(rng.binomial(20, 0.8))
        return make_runs(20, steps=steps, passed=passed, scenario=scenario, start=start)

    cells = [
        cell_night([night(s, 20 * j) for j in range(5)], night(s, 500), scenario=s)
        for s in (f"s{c}" for c in range(50))
    ]
    night_ = compare_night(cells)
    assert sum(r.p is not None and r.p <= 0.05 for r in night_.results) >= 5
    assert not [r for r in night_.results if r.unconfirmed]
