"""Tolerance: margins merged over the registry's, gating, error rates, and the new knobs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalrunner.errors import ConfigError
from evalrunner.stats import Tolerance
from evalrunner.stats._metrics import DEFAULT_GATING, DEFAULT_MARGINS


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
    scenario = tol.merged({"margins": {"tool_used:search": 0.3}})
    assert scenario.margin_for("tool_used:search") == 0.3
    assert scenario.margin_for("prompt_tokens") == 1.5
    assert scenario.fdr_q == 0.1


def test_the_new_knobs_have_defaults_and_merge() -> None:
    tol = Tolerance()
    assert (tol.min_baseline_nights, tol.escalate_to, tol.season_alpha) == (3, 3.0, 0.05)
    merged = tol.merged({"min_baseline_nights": 5, "escalate_to": 1})
    assert (merged.min_baseline_nights, merged.escalate_to) == (5, 1.0)


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
    with pytest.raises(ConfigError, match=r"suite\.yaml"):
        Tolerance.from_config(data, where="suite.yaml: tolerance")
