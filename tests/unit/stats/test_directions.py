"""Which way is harmful, per metric: less variety is not a regression, fewer steps is a change.

On the old engine a night where every run took the usual tool path gated as a
tool-sequence *regression* (a Jensen-Shannon distance has no direction), and steps
collapsing to 1 counted as an *improvement*.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.suite._metrics import REGISTRY

from .conftest import RunsMaker

PATHS = [("search", "read")] * 7 + [("search",)] * 2 + [("lookup", "read")]
STEPS = (3, 4, 5, 3, 4, 6, 3, 4, 5, 2)
PROMPT = (900, 1100, 1000, 950, 1050, 1200, 800, 1000, 1020, 980)


def _tonight(
    runs: RunsMaker, cell: Callable[..., CellNight], **change: object
) -> dict[str, MetricResult]:
    usual: dict[str, object] = {"passed": 18, "tools": PATHS, "steps": STEPS, "prompt": PROMPT}
    nights = [runs(20, start=20 * i, **usual) for i in range(5)]
    tonight = runs(20, **{**usual, **change})
    return {r.metric: r for r in compare_night([cell(nights, tonight)]).results}


def test_every_run_on_the_usual_path_is_not_a_regression(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _tonight(runs, cell, tools=[("search", "read")])["tool_sequence"]
    assert result.verdict not in ("regression", "changed")
    assert not result.fails_night
    assert result.effect is not None and result.effect < 0  # less atypical than the baseline
    assert result.p is not None and result.p > 0.5


def test_runs_leaving_the_usual_path_are_a_regression(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _tonight(runs, cell, tools=[("lookup", "read")])["tool_sequence"]
    assert result.verdict == "regression" and result.fails_night
    assert result.effect == result.night_estimate - result.baseline_estimate  # type: ignore[operator]


def test_steps_collapsing_is_a_change_not_an_improvement(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    result = _tonight(runs, cell, steps=1)["step_count"]
    assert result.direction == "changed"
    assert result.verdict == "changed" and result.fails_night
    assert result.effect == -1.0
    assert result.p_improvement is None and result.q_improvement is None


def test_steps_growing_is_a_change_too(runs: RunsMaker, cell: Callable[..., CellNight]) -> None:
    result = _tonight(runs, cell, steps=[v + 6 for v in STEPS])["step_count"]
    assert result.verdict == "changed" and result.fails_night


def test_tokens_are_cost_more_is_a_regression_less_an_improvement(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    more = _tonight(runs, cell, prompt=[2 * v for v in PROMPT])["prompt_tokens"]
    assert more.verdict == "regression" and not more.fails_night  # a diagnostic
    less = _tonight(runs, cell, prompt=[v // 2 for v in PROMPT])["prompt_tokens"]
    assert less.verdict == "improvement"


def test_a_tool_used_more_or_less_often_is_a_change(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    found = _tonight(runs, cell, tools=[("lookup", "read")])
    assert found["tool_used:lookup"].verdict == "changed"
    assert found["tool_used:search"].verdict == "changed"
    assert found["tool_used:search"].effect == pytest.approx(-0.9)  # 90 % of baseline runs


def test_every_direction_is_stated_and_two_sided_where_no_side_is_harmful() -> None:
    directions = {m.name: m.direction for m in REGISTRY}
    assert directions["tool_sequence"] == "higher"  # atypicality: runs off the baseline's paths
    assert {directions[m] for m in ("step_count", "llm_calls", "tool_calls", "tool_used")} == {
        "changed"
    }
    assert directions["success_rate"] == "lower"
    assert directions["prompt_tokens"] == "higher"
