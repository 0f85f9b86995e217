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


def test_a_dataset_scenarios_pass_k_is_per_row_averaged_not_its_rows_pooled(
    runs: RunsMaker,
) -> None:
    # Row "easy" always passes, row "hard" never does: each task passes k of k tries or 0.
    easy = [r.model_copy(update={"row": "easy"}) for r in runs(3, passed=3)]
    hard = [r.model_copy(update={"row": "hard"}) for r in runs(3, passed=0, start=3)]
    summary = summarize(easy + hard)
    assert summary.pass_hat_k is not None and summary.pass_at_k is not None
    # Pooled, three tries drawn from the six runs would mix the rows: pass^3 0.05, pass@3 0.95.
    assert summary.pass_hat_k["3"] == pytest.approx(0.5)
    assert summary.pass_at_k["3"] == pytest.approx(0.5)
    # A row with fewer runs than k that measured the agent has no k tries to count.
    short = [r.model_copy(update={"row": "short"}) for r in runs(2, passed=0, start=6)]
    again = summarize(easy + hard + short)
    assert again.pass_hat_k is not None and again.pass_hat_k["3"] == pytest.approx(0.5)
    # Each row weighs the same (a task is a task), so k = 1 is the rows' mean success rate.
    assert again.pass_hat_k["1"] == pytest.approx((1 + 0 + 0) / 3)
    assert summarize(short).pass_hat_k is not None
    assert "3" not in (summarize(short).pass_hat_k or {})
