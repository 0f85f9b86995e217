"""Tolerance: one model, partial as a suite file sets it, complete as the statistics read it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalrunner.suite._metrics import DEFAULT_GATING, DEFAULT_MARGINS
from evalrunner.suite._tolerance import Tolerance


def test_tolerance_merges_margins_over_defaults() -> None:
    tol = Tolerance.model_validate(
        {"margins": {"prompt_tokens": 1.5}, "gating": ["success_rate"], "fdr_q": 0.1}
    )
    assert tol.margin_for("prompt_tokens") == 1.5
    assert tol.margin_for("success_rate") == DEFAULT_MARGINS["success_rate"]
    assert tol.margin_for("tool_used:search") == DEFAULT_MARGINS["tool_used"]
    assert tol.is_gating("success_rate") and not tol.is_gating("crash_rate")
    assert tol.ci_level == pytest.approx(0.9)
    assert list(Tolerance().gating) == list(DEFAULT_GATING)
    scenario = Tolerance.model_validate({"margins": {"tool_used:search": 0.3}}).over(tol)
    assert scenario.margin_for("tool_used:search") == 0.3
    assert scenario.margin_for("prompt_tokens") == 1.5
    assert scenario.fdr_q == 0.1


def test_a_partial_tolerance_over_the_defaults_is_complete() -> None:
    partial = Tolerance.model_validate({"margins": {"step_count": 0.5}})
    assert partial.model_fields_set == {"margins"} and partial.margins == {"step_count": 0.5}
    complete = partial.over(Tolerance())
    assert complete.margins == {**DEFAULT_MARGINS, "step_count": 0.5}
    assert complete.gating == list(DEFAULT_GATING) and complete.fdr_q == 0.05
    # What a layer does not set stays the base's: gating, alpha, fdr_q and every margin.
    base = Tolerance(gating=["crash_rate"], alpha=0.1, fdr_q=0.2, margins={"step_count": 0.4})
    assert Tolerance.model_validate({}).over(base) == base
    over = Tolerance.model_validate({"fdr_q": 0.01}).over(base)
    assert (over.gating, over.alpha, over.fdr_q) == (["crash_rate"], 0.1, 0.01)
    assert over.margins == {"step_count": 0.4}


def test_the_engine_knobs_have_defaults_and_layer() -> None:
    tol = Tolerance()
    assert (tol.min_baseline_nights, tol.escalate_to, tol.season_alpha) == (3, 3.0, 0.05)
    layered = Tolerance.model_validate({"min_baseline_nights": 5, "escalate_to": 1.0}).over(tol)
    assert (layered.min_baseline_nights, layered.escalate_to) == (5, 1.0)
    assert layered.season_alpha == 0.05


@pytest.mark.parametrize(
    "data",
    [
        {"margins": {"prompt_tokens": 0.9}},
        {"margins": {"success_rate": 0}},
        {"margins": {"succes_rate": 0.1}},
        {"gating": ["nope"]},
        {"fdr_q": 2},
        {"surprise": 1},
        {"min_baseline_nights": 0},
        {"escalate_to": 0.5},
        {"season_alpha": 1.5},
    ],
)
def test_tolerance_rejects_bad_settings(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Tolerance.model_validate(data)


@pytest.mark.parametrize(
    ("given", "meant"), [("tool_seq", "tool_sequence"), ("success_rate_v", "success_rate_valid")]
)
def test_a_metric_name_cut_short_suggests_the_metric_it_starts(given: str, meant: str) -> None:
    # Before: 'tool_seq' suggested 'tool_used', which looks closer letter by letter.
    with pytest.raises(ValidationError) as info:
        Tolerance.model_validate({"gating": [given]})
    assert info.value.errors()[0]["msg"].endswith(f"did you mean {meant!r}?")


def test_an_unknown_metric_is_named_with_a_suggestion_at_its_own_key() -> None:
    with pytest.raises(ValidationError) as info:
        Tolerance.model_validate({"margins": {"sucess_rate": 0.1}})
    [error] = info.value.errors()
    assert error["loc"] == ("margins", "sucess_rate", "[key]")
    assert error["msg"].endswith("unknown metric 'sucess_rate'; did you mean 'success_rate'?")
    with pytest.raises(ValidationError) as info:
        Tolerance.model_validate({"gating": ["success_rate", "crash_rat"]})
    [error] = info.value.errors()
    assert error["loc"] == ("gating", 1)
    assert "did you mean 'crash_rate'?" in error["msg"]
