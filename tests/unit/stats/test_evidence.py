"""Accumulated evidence: an e-value per metric, stored per night, reset by a new anchor."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from scipy import integrate
from scipy import stats as sps

from evalrunner.stats import CellNight, EvidenceState, compare_night
from evalrunner.stats._evidence import log_e_value, threshold
from evalrunner.suite._metrics import REGISTRY, Direction

from .conftest import RunsMaker


def _night(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    state: EvidenceState | None,
    anchor: str,
    passed: int,
) -> EvidenceState:
    nights = [runs(20, passed=18) for _ in range(5)]
    tonight = runs(20, passed=passed)
    fresh = cell(nights, tonight, anchor=anchor)
    return compare_night([CellNight(fresh.baseline, tonight, state)]).cells[0].evidence


def test_the_state_is_json_and_comes_back_the_same(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    state = _night(runs, cell, None, "a1", 16)
    again = EvidenceState.model_validate_json(state.model_dump_json())
    assert again == state
    assert state.format_version == 2 and state.anchor == "a1" and state.nights == 1
    assert {"success_rate", "step_count", "tool_sequence"} <= set(state.metrics)


def test_evidence_carries_over_and_resets_with_a_new_anchor(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    first = _night(runs, cell, None, "a1", 15)
    second = _night(runs, cell, first, "a1", 15)
    assert second.nights == 2 and second.metrics["success_rate"].nights == 2
    assert second.e_value("success_rate") > first.e_value("success_rate") > 1
    reset = _night(runs, cell, second, "a2", 15)
    assert reset.anchor == "a2" and reset.nights == 1
    assert reset.e_value("success_rate") == pytest.approx(first.e_value("success_rate"))


@pytest.mark.parametrize("direction", ["higher", "lower", "changed"])
@pytest.mark.parametrize(
    ("diff", "var", "scale"), [(0.05, 0.001, 0.1), (-0.02, 0.0005, 0.1), (0.3, 0.01, 0.2)]
)
def test_the_e_value_is_robbins_normal_mixture(
    direction: Direction, diff: float, var: float, scale: float
) -> None:
    """E = integral of the likelihood ratio exp(theta S - theta^2 I / 2) over the mixing normal."""
    info = 1 / var
    score = diff * info
    sign = -1.0 if direction == "lower" else 1.0

    def ratio(theta: float) -> float:
        return math.exp(theta * score - theta**2 * info / 2)

    if direction == "changed":
        expected = integrate.quad(lambda t: ratio(t) * sps.norm.pdf(t, scale=scale), -5, 5)[0]
    else:
        half = integrate.quad(lambda t: ratio(sign * t) * 2 * sps.norm.pdf(t, scale=scale), 0, 5)
        expected = half[0]
    found = math.exp(log_e_value(diff, var, direction, scale))
    assert found == pytest.approx(expected, rel=1e-6)


def test_the_threshold_splits_the_season_alpha_over_every_gating_metric_of_the_suite() -> None:
    gating = sum(m.gating for m in REGISTRY)
    assert threshold(gating, 50 * 3, 0.05) == pytest.approx(gating * 150 / 0.05)
    assert threshold(0, 0, 0.05) == pytest.approx(20.0)
