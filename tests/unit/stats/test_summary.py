"""The summary a baseline file shows: rates with intervals, medians, paths, pass^k."""

from __future__ import annotations

import json

import pytest

from evalrunner.stats import summarize
from evalrunner.stats._formulas import wilson

from .conftest import RunsMaker


def test_summarize(runs: RunsMaker) -> None:
    records = runs(
        32,
        passed=24,
        skipped=3,
        infra=2,
        tools=[("search", "read")] * 3 + [("lookup",)],
        steps=(3, 4, 5),
    )
    summary = summarize(records)
    json.dumps(summary.model_dump(mode="json"), allow_nan=False)
    assert summary.n == 30 and summary.infra_excluded == 2 and summary.n_valid == 27
    rate = summary.rates["success_rate"]
    assert (rate.k, rate.n) == (24, 30)
    assert rate.ci95 == pytest.approx(wilson(24, 30))
    assert summary.rates["skip_rate"].estimate == pytest.approx(0.1)
    assert next(iter(summary.tool_sequences)) == "search > read"
    assert sum(summary.tool_sequences.values()) == pytest.approx(1.0)
    assert summary.medians["step_count"] == 4.0
    assert summary.pass_hat_k is not None and set(summary.pass_hat_k) == {"1", "3", "5"}


def test_summarize_no_runs() -> None:
    summary = summarize([])
    assert summary.n == 0 and summary.rates["success_rate"].estimate is None
    assert summary.pass_hat_k is None and summary.medians["step_count"] is None
