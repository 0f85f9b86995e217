"""Metric-specific notes live with the metric (``Metric.note``), not in the statistics."""

from __future__ import annotations

from evalrunner.suite._metrics import REGISTRY, NoteFacts, metric


def _facts(
    usual: object = None, rows: int = 0, skipped: tuple[float, float] | None = None
) -> NoteFacts:
    return NoteFacts(usual, rows, skipped, {"skip_rate": 0.10}.__getitem__)


def test_usual_answer_names_the_answer_or_the_rows() -> None:
    note = metric("final_answer_match").note
    assert note is not None
    assert note(_facts("paris")) == "share of runs answering the baseline's usual 'paris'"
    assert str(note(_facts("x" * 61))).endswith("usual '" + "x" * 57 + "...'")
    assert (
        note(_facts("paris", rows=3)) == "share of runs answering their row's usual answer (3 rows)"
    )


def test_first_tool_names_the_tool_or_none() -> None:
    note = metric("first_tool").note
    assert note is not None
    assert (
        note(_facts("lookup")) == "share of runs whose first tool is the baseline's usual 'lookup'"
    )
    assert str(note(_facts(None))).endswith("usual '(no tools)'")


def test_valid_success_is_biased_when_skips_moved_half_the_skip_margin() -> None:
    note = metric("success_rate_valid").note
    assert note is not None
    assert note(_facts(skipped=(0.0, 0.04))) is None
    assert note(_facts(skipped=(0.0, 0.05))) == (
        "skip rate moved (0.00 -> 0.05): success over valid runs is biased"
    )
    assert note(_facts(skipped=None)) is None


def test_outcome_rates_cover_non_infra_runs_the_rest_valid_runs() -> None:
    covers = {m.name: m.covers for m in REGISTRY}
    assert {n for n, c in covers.items() if c == "non-infra runs"} == {
        "success_rate",
        "crash_rate",
        "skip_rate",
    }
    assert covers["tool_error_rate"] == "non-infra runs that recorded their tool errors"
    assert covers["tool_latency_s"] == "valid runs whose tool spans timed their executions"
    assert set(covers.values()) == {
        "non-infra runs",
        "valid runs",
        "non-infra runs that recorded their tool errors",
        "valid runs whose tool spans timed their executions",
    }
