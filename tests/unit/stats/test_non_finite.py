"""A record that skipped validation with NaN or infinity in a number is refused by the
engine, naming the run and the field, not left out of a metric or taken in silently."""

from __future__ import annotations

import math

import pytest

from evalrunner.errors import FileFormatError
from evalrunner.stats import compare_night, fit_references
from evalrunner.suite._record import RunRecord

from .conftest import cell_night, make_runs


def _baseline() -> list[list[RunRecord]]:
    return [make_runs(10, passed=8, latency=[1.0, 2.0, 1.5], start=10 * j) for j in range(5)]


def _damaged(records: list[RunRecord], field: str, value: object) -> list[RunRecord]:
    """``records`` with the first one's ``field`` set as validation would never let it be."""
    first = RunRecord.model_construct(**{**dict(records[0]), field: value})
    return [first, *records[1:]]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("latency_s", math.nan),
        ("latency_s", math.inf),
        ("step_count", math.nan),
        ("prompt_tokens", -math.inf),
        ("scores", {"f1": math.nan}),
    ],
)
def test_a_non_finite_number_tonight_is_refused_naming_the_run_and_field(
    field: str, value: object
) -> None:
    tonight = _damaged(make_runs(10, passed=8, start=1000), field, value)
    with pytest.raises(FileFormatError, match=rf"run s/m/1000: {field}.* is -?(nan|inf)"):
        compare_night([cell_night(_baseline(), tonight)])


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_latency_in_the_baseline_is_refused_where_it_is_fitted(value: float) -> None:
    baseline = _baseline()
    baseline[2] = _damaged(baseline[2], "latency_s", value)
    night = cell_night(baseline, make_runs(10, passed=8, start=1000))
    with pytest.raises(FileFormatError, match=r"run s/m/20: latency_s is (nan|inf)"):
        fit_references([night.baseline])


def test_an_infra_error_is_no_statistic_so_its_numbers_are_not_asked() -> None:
    tonight = make_runs(10, passed=7, infra=1, start=1000)
    infra = next(i for i, r in enumerate(tonight) if not r.measured)
    tonight[infra] = RunRecord.model_construct(**{**dict(tonight[infra]), "latency_s": math.nan})
    assert compare_night([cell_night(_baseline(), tonight)]).results
