"""Verdicts: BH across the night, the margin rule, what "ok" and "inconclusive" say."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from evalrunner.stats import CellNight, MetricResult, compare_night
from evalrunner.stats._verdict import finalize

from .conftest import RunsMaker


def _result(**values: Any) -> MetricResult:
    row: dict[str, Any] = {
        "scenario": "s",
        "model": "m",
        "metric": "success_rate",
        "kind": "binary",
        "gating": True,
        "direction": "lower",
        "margin": 0.1,
        "effect": -0.3,
        "effect_ci": (-0.45, -0.15),
        "p": 0.001,
    }
    row.update(values)
    return MetricResult.model_validate(row)


def test_bh_runs_across_the_whole_night_per_family() -> None:
    night = [_result(scenario=f"s{i}", p=p) for i, p in enumerate((0.001, 0.02, 0.04, 0.5))]
    night.append(
        _result(
            scenario="d",
            gating=False,
            metric="prompt_tokens",
            kind="continuous",
            p=0.02,
            effect=2.0,
            effect_ci=(1.5, 2.5),
            direction="higher",
            margin=1.25,
        )
    )
    final = finalize(night)
    assert [r.q for r in final[:4]] == pytest.approx([0.004, 0.04, 0.04 * 4 / 3, 0.5])
    assert [r.verdict for r in final[:4]] == [
        "regression",
        "regression",
        "inconclusive",
        "inconclusive",
    ]
    assert final[4].q == pytest.approx(0.02)  # diagnostics are their own family
    assert finalize(final) == final  # idempotent


def test_significant_but_ruled_out_beyond_the_margin_is_ok() -> None:
    small = finalize([_result(effect=-0.03, effect_ci=(-0.05, -0.01), p=1e-6)])[0]
    assert small.q is not None and small.q < 0.05
    assert small.verdict == "ok"


def test_a_change_at_the_margin_whose_interval_reaches_it_is_flagged() -> None:
    # The point estimate is inside the margin, but a change of 0.1 is not ruled out.
    near = finalize([_result(effect=-0.08, effect_ci=(-0.14, -0.02), p=1e-5)])[0]
    assert near.verdict == "regression" and near.flagged_by == "tonight"


def test_improvement_and_changed() -> None:
    better = finalize([_result(effect=0.3, effect_ci=(0.15, 0.45), p=0.99, p_improvement=1e-4)])[0]
    assert better.verdict == "improvement" and not better.fails_night
    moved = finalize(
        [
            _result(
                metric="step_count",
                kind="count",
                direction="changed",
                margin=0.33,
                effect=-0.9,
                effect_ci=(-1.0, -0.8),
            )
        ]
    )[0]
    assert moved.verdict == "changed" and moved.fails_night


def test_accumulated_evidence_flags_a_gating_metric() -> None:
    quiet_tonight = _result(p=0.2, effect=-0.08, effect_ci=(-0.2, 0.04))
    alarmed = quiet_tonight.model_copy(
        update={
            "evidence": 600.0,
            "evidence_threshold": 500.0,
            "evidence_effect": -0.09,
            "evidence_ci": (-0.13, -0.05),
        }
    )
    assert finalize([quiet_tonight])[0].verdict == "inconclusive"
    flagged = finalize([alarmed])[0]
    assert (flagged.verdict, flagged.flagged_by) == ("regression", "evidence")


def test_an_inconclusive_verdict_says_what_is_known(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, passed=18) for _ in range(5)]
    result = next(
        r
        for r in compare_night([cell(nights, runs(20, passed=16))]).results
        if r.metric == "success_rate"
    )
    assert result.verdict == "inconclusive"
    assert result.note is not None
    assert "nothing flagged; changes from -0." in result.note
    assert "are still possible (margin 0.1)" in result.note


def test_ok_is_reached_for_a_stable_scenario(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    nights = [runs(20, passed=19) for _ in range(5)]
    tonight = runs(60, passed=58)
    result = next(
        r for r in compare_night([cell(nights, tonight)]).results if r.metric == "success_rate"
    )
    assert result.verdict == "ok"


def test_old_history_rows_still_load() -> None:
    old = _result().model_dump(
        mode="json",
        exclude={
            "baseline_nights",
            "night_share",
            "bar",
            "evidence",
            "evidence_threshold",
            "evidence_nights",
            "evidence_effect",
            "evidence_ci",
            "flagged_by",
        },
    )
    old["direction"] = "any"
    loaded = MetricResult.model_validate(old)
    assert loaded.direction == "changed" and loaded.evidence is None


def test_non_finite_numbers_become_none_and_the_json_is_strict() -> None:
    result = _result(effect=float("nan"), p=float("inf"), effect_ci=(float("-inf"), 1.0))
    assert result.effect is None and result.p is None and result.effect_ci is None
    json.dumps(result.model_dump(mode="json"), allow_nan=False)
    with pytest.raises(ValidationError):
        _result(direction="sideways")
