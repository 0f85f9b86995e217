"""The comparison draws no random numbers: the same runs give the same results, in any order.

The old engine resampled with seeds keyed by metric name only, so every scenario and
every night reused the same permutations. The new tests are exact or analytic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from evalrunner.stats import CellNight, compare_night

from .conftest import RunsMaker


def _cells(runs: RunsMaker, cell: Callable[..., CellNight]) -> list[CellNight]:
    out = []
    for s, passed in enumerate((18, 15, 12)):
        nights = [runs(20, passed=17 + i % 3, steps=(3, 4, 5), scenario=f"s{s}") for i in range(4)]
        out.append(
            cell(nights, runs(20, passed=passed, steps=(4, 5), scenario=f"s{s}"), scenario=f"s{s}")
        )
    return out


def test_no_random_numbers_are_drawn(
    runs: RunsMaker, cell: Callable[..., CellNight], monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = _cells(runs, cell)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the comparison drew random numbers")

    monkeypatch.setattr(np.random, "default_rng", forbidden)
    monkeypatch.setattr(np.random, "Generator", forbidden)
    compare_night(cells)


def test_same_runs_same_results_whatever_the_order(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    cells = _cells(runs, cell)
    first = {(r.scenario, r.metric): r for r in compare_night(cells).results}
    again = {(r.scenario, r.metric): r for r in compare_night(cells[::-1]).results}
    assert first == again
