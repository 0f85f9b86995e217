"""A night says what escalation bought: each escalated cell judged again on its planned
runs alone (the rest of the night as it was), and counted where its verdict (the worst of
its gating metrics') came out the same (issue 52, item 3: "escalated: k, would not have helped: m")."""

from __future__ import annotations

from evalrunner.baseline._compare import CellPair, _escalation, compare_pairs
from evalrunner.suite._record import CellKey, RunRecord
from evalrunner.suite._tolerance import Tolerance


def _runs(scenario: str, outcomes: str, start: int = 0) -> list[RunRecord]:
    """One run per letter: p passed, f failed."""
    return [
        RunRecord(
            run_id=f"{scenario}/m/{start + i}",
            suite="t",
            scenario=scenario,
            model="m",
            index=start + i,
            outcome="passed" if o == "p" else "failed",
            step_count=3,
            llm_calls=3,
            tools=["lookup"],
            tool_calls=1,
        )
        for i, o in enumerate(outcomes)
    ]


def _pair(scenario: str, tonight: str) -> CellPair:
    nights = [_runs(scenario, "p" * 18 + "ff", start=100 * (n + 1)) for n in range(3)]
    return CellPair(CellKey(scenario, "m"), nights, _runs(scenario, tonight), Tolerance())


def test_escalated_cells_are_judged_again_at_their_planned_runs() -> None:
    pairs = [
        # Its planned 20 runs look like the baseline; the 20 escalation added all failed.
        _pair("turned", "p" * 18 + "ff" + "f" * 20),
        # Escalated, and its extra runs say what its planned ones said (inconclusive: a 0.9
        # success rate cannot be told from its margin at 40 runs either).
        _pair("same", "p" * 18 + "ff" + "p" * 18 + "ff"),
        _pair("planned", "p" * 18 + "ff"),  # not escalated
    ]
    night = compare_pairs(pairs)
    turned = [r for r in night.results if r.scenario == "turned" and r.metric == "success_rate"]
    assert [r.verdict for r in turned] == ["regression"]
    effect = _escalation(pairs, None, night, {"turned": 20, "same": 20, "planned": 20})
    assert effect is not None
    assert (effect.cells, effect.runs, effect.changed) == (2, 40, (CellKey("turned", "m"),))
    assert effect.line().startswith(
        "escalated: 2 cells (+40 runs); the extra runs changed a verdict in 1, "
        "would not have helped: 1"
    )


def test_a_night_without_escalation_says_nothing_about_it() -> None:
    pairs = [_pair("planned", "p" * 18 + "ff")]
    assert _escalation(pairs, None, compare_pairs(pairs), {"planned": 20}) is None
