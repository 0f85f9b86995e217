"""Numbers and margins as text, the same in every format."""

from __future__ import annotations

import typing

import pytest

from evalrunner.report._format import fmt, margin
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._metrics import REGISTRY, SCALES, Kind


def test_numbers_have_three_significant_digits() -> None:
    assert [fmt(x) for x in (0, 0.123456, -0.5, 1234.5, 2.5e6, None, float("nan"))] == [
        "0",
        "0.123",
        "−0.5",
        "1.23k",
        "2.5M",
        "–",
        "–",
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("success_rate", "±0.1"),
        ("step_count", "±0.33"),
        ("latency_s", "×1.25"),
        ("tool_sequence", "≤0.2"),
    ],
)
def test_a_margin_reads_in_its_kinds_terms(name: str, text: str) -> None:
    [m] = [m for m in REGISTRY if m.name == name]
    result = MetricResult(
        scenario="a",
        model="m",
        metric=m.name,
        kind=m.kind,
        gating=m.gating,
        direction=m.direction,
        margin=m.margin,
    )
    assert margin(result) == text


def test_every_kind_has_a_margin_text() -> None:
    # A kind's margin text is a field of its scale, which every kind has.
    assert set(SCALES) == set(typing.get_args(Kind))
    assert all(scale.margin_prefix for scale in SCALES.values())


def test_a_chart_of_nights_of_one_day_tells_them_apart_by_time() -> None:
    from evalrunner.report._format import span_ends

    same_day = span_ends("2026-12-01T03:17:00Z", "2026-12-01T15:40:09Z")
    assert same_day == ("2026-12-01 03:17", "15:40 UTC")
    assert span_ends("2026-11-30T03:17:00Z", "2026-12-01T03:17:00Z") == ("2026-11-30", "2026-12-01")
    assert span_ends("2026-12-01T03:17:00Z", "2026-12-01T03:17:00Z") == ("2026-12-01", "2026-12-01")


def test_an_improvement_shows_the_p_and_q_of_its_own_side() -> None:
    # The HTML table and JUnit paired the harmful side's p (1) with the improvement's q
    # (0): "p 1, q 0", which no Benjamini-Hochberg q can be.
    from evalrunner.report._format import evidence_line

    result = MetricResult(
        scenario="a",
        model="m",
        metric="prompt_tokens",
        kind="continuous",
        gating=False,
        direction="higher",
        margin=1.25,
        verdict="improvement",
        p=1.0,
        q=1.0,
        p_improvement=0.0001,
        q_improvement=0.0002,
    )
    assert result.shown_pq == (0.0001, 0.0002)
    assert "p 0.0001, q 0.0002" in evidence_line(result)
    harmful = result.model_copy(update={"verdict": "regression"})
    assert harmful.shown_pq == (1.0, 1.0)
