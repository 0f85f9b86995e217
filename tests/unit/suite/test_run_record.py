"""The per-run record: what it refuses where it is made, and that what it accepts loads back."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from evalrunner.suite._record import RunRecord


def record(**fields: object) -> RunRecord:
    base: dict[str, object] = {
        "run_id": "s/m/0",
        "suite": "t",
        "scenario": "s",
        "model": "m",
        "index": 0,
        "outcome": "passed",
    }
    return RunRecord.model_validate(base | fields)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0])
def test_a_latency_that_is_not_a_finite_duration_is_refused_where_the_record_is_made(
    value: float,
) -> None:
    with pytest.raises(ValidationError, match="latency_s"):
        record(latency_s=value)


def test_every_record_it_accepts_round_trips_through_json() -> None:
    for latency in (0.0, 1e-9, 1.5, 1e9):
        made = record(latency_s=latency, tools=["a", "b"], checks={"x": True})
        assert RunRecord.model_validate_json(made.model_dump_json()) == made
