"""Evidence since the anchor: a cumulative z per metric against one boundary per season,
stored per night, reset by a new anchor, restarted by a new season."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from evalrunner.stats import (
    CellComparison,
    CellNight,
    EvidenceState,
    compare_night,
    fit_references,
)
from evalrunner.stats._evidence import boundary, metric_alpha
from evalrunner.stats._evidence_state import halfway
from evalrunner.stats._formulas import z_upper
from evalrunner.suite import Tolerance

from .conftest import RunsMaker, cell_night


def _night(
    runs: RunsMaker,
    cell: Callable[..., CellNight],
    state: EvidenceState | None,
    anchor: str,
    passed: int,
    tolerance: Tolerance | None = None,
) -> tuple[EvidenceState, CellComparison]:
    nights = [runs(20, passed=18) for _ in range(5)]
    tonight = runs(20, passed=passed)
    fresh = cell(nights, tonight, anchor=anchor, tolerance=tolerance)
    found = compare_night([CellNight(fresh.baseline, tonight, state)]).cells[0]
    return found.evidence, found


def test_the_state_is_json_and_comes_back_the_same(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    state, _ = _night(runs, cell, None, "a1", 16)
    again = EvidenceState.model_validate_json(state.model_dump_json())
    assert again == state
    assert state.format_version == 4 and state.anchor == "a1" and state.nights == 1
    assert {"success_rate", "step_count", "tool_sequence"} <= set(state.metrics)


def test_a_format_2_state_with_an_e_value_loads_and_keeps_its_sums() -> None:
    old = {
        "format_version": 2,
        "anchor": "a1",
        "nights": 4,
        "metrics": {
            "success_rate": {"nights": 4, "weight": 800.0, "weighted_sum": 720.0, "e_value": 12.5}
        },
    }
    state = EvidenceState.model_validate(old)
    kept = state.metrics["success_rate"]
    assert (kept.weight, kept.weighted_sum, kept.boundary) == (800.0, 720.0, None)


def test_evidence_carries_over_and_resets_with_a_new_anchor(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    first, _ = _night(runs, cell, None, "a1", 15)
    second, _ = _night(runs, cell, first, "a1", 15)
    assert second.nights == 2 and second.metrics["success_rate"].nights == 2
    # success falls: the harmful side, so the z is positive and grows with the nights.
    assert second.z("success_rate")[0] > first.z("success_rate")[0] > 0
    reset, _ = _night(runs, cell, second, "a2", 15)
    assert reset.anchor == "a2" and reset.nights == 1
    assert reset.z("success_rate")[0] == pytest.approx(first.z("success_rate")[0])


def test_a_new_season_restarts_the_sums_and_keeps_the_night_to_night_spread(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    short = Tolerance(season_nights=2)
    state = None
    for _ in range(2):
        state, _ = _night(runs, cell, state, "a1", 15, short)
    assert state is not None and state.season == 1 and state.nights == 2
    third, _ = _night(runs, cell, state, "a1", 15, short)
    assert third.season == 2 and third.nights == 1
    assert third.metrics["success_rate"].nights == 1
    assert third.metrics["success_rate"].pairs == state.metrics["success_rate"].pairs + 1


def test_a_persistent_fall_from_0_9_to_0_75_is_flagged_by_the_evidence_within_7_nights(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """15 of 20 every night against a 5 x 20 anchor at 18 of 20: no single night is
    significant, seven together are. The e-value rule this replaced had not flagged it
    by night 10 (e 53 of 100)."""
    state, first = None, 0
    for night in range(1, 8):
        state, found = _night(runs, cell, state, "a1", 15)
        sources = {r.flagged_by for r in found.results if r.metric == "success_rate"}
        assert night > 1 or sources == {None}, "one night alone is not enough"
        if "evidence" in sources:
            first = night
            break
    assert 0 < first <= 7


def test_unchanged_nights_stay_under_the_boundary(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    state = None
    for _ in range(10):
        state, found = _night(runs, cell, state, "a1", 18)
        assert not any(r.fails_night for r in found.results)
    assert state is not None and abs(state.z("success_rate")[0]) < 1.0


@pytest.mark.parametrize(("looks", "pocock"), [(2, 2.178), (5, 2.413), (10, 2.555)])
def test_the_boundary_with_a_negligible_baseline_error_is_pococks_constant(
    looks: int, pocock: float
) -> None:
    """With no shared baseline error the z's are a standardised random walk's: the
    boundary is Pocock's (two-sided 0.05; Jennison & Turnbull, table 2.1)."""
    assert boundary(1e-3, looks, 0.05, two_sided=True, first=1) == pytest.approx(pocock, abs=0.04)


def test_the_boundary_of_one_look_or_a_dominant_baseline_error_is_the_fixed_test() -> None:
    # One look: z is one standard normal. A baseline error that dwarfs a night's: every
    # night's z is the same draw, so however many nights there are, it is one test.
    assert boundary(0.2, 1, 0.01, two_sided=False, first=1) == pytest.approx(
        z_upper(0.01), abs=0.03
    )
    # A season of two nights looked at from the second: one look too (the 99th percentile
    # of 40,000 draws is known to about +/-0.02; this seed's reads 2.35-2.38).
    assert boundary(0.2, 2, 0.01, two_sided=False) == pytest.approx(z_upper(0.01), abs=0.06)
    assert z_upper(0.01) < boundary(100.0, 90, 0.01, two_sided=False) < z_upper(0.01) + 0.08
    assert boundary(1.0, 90, 0.01, two_sided=False) > z_upper(0.01) + 0.2


def test_the_boundary_holds_its_alpha_on_an_independent_simulation() -> None:
    """Null seasons of the statistic the engine computes, drawn here with unequal nights
    (a night's runs vary 10-60), looked at from the second night as the engine does: the
    share of seasons that ever cross stays near alpha."""
    rng = np.random.default_rng(7)
    alpha, nights, base_var, seasons = 0.01, 30, 0.0009, 20_000
    sizes = rng.integers(10, 61, size=nights)
    night_var = 0.09 / sizes + 0.0004  # p = 0.9 runs plus a night effect
    weight = np.cumsum(1 / night_var)
    means = np.cumsum(rng.standard_normal((seasons, nights)) * np.sqrt(night_var) / night_var, 1)
    base = rng.standard_normal((seasons, 1)) * math.sqrt(base_var)
    z = (means / weight - base) / np.sqrt(1 / weight + base_var)
    share = base_var * weight / np.arange(1, nights + 1)
    limits = np.array([boundary(s, nights, alpha, two_sided=False) for s in share])
    crossed = (z >= limits)[:, 1:].any(axis=1).mean()
    assert 0.6 * alpha <= crossed <= 1.4 * alpha


def test_the_evidence_does_not_flag_on_its_first_night(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """On its first night the cumulative z is tonight's test again, at one scenario's
    season bar instead of the night's bar across the suite. In a 50-scenario night, 13 of
    20 against 18 of 20 is not a regression by tonight's test; the first night's evidence
    flagged it (and such duplicates failed 5-15 % of unchanged 50 x 1 nights)."""
    others = [
        cell(
            [runs(20, passed=17, scenario=f"o{i}") for _ in range(5)],
            runs(20, passed=17, scenario=f"o{i}"),
            scenario=f"o{i}",
        )
        for i in range(49)
    ]
    changed = cell([runs(20, passed=18) for _ in range(5)], runs(20, passed=13), anchor="a1")
    found = compare_night([changed, *others])
    result = next(r for r in found.results if r.scenario == "s" and r.metric == "success_rate")
    assert result.evidence is not None and result.evidence_threshold is None
    assert not result.fails_night
    state = found.cells[0].evidence
    second = cell([runs(20, passed=18) for _ in range(5)], runs(20, passed=13), anchor="a1")
    again = compare_night([CellNight(second.baseline, second.tonight, state), *others])
    result = next(r for r in again.results if r.scenario == "s" and r.metric == "success_rate")
    assert result.evidence_threshold is not None and result.flagged_by == "evidence"


def test_halfway_is_half_the_log_likelihood_ratio_of_the_boundary() -> None:
    assert halfway(2.0, 2.8) and not halfway(1.9, 2.8)
    assert metric_alpha(0.05, 5) == pytest.approx(0.01) and metric_alpha(0.05, 0) == 0.05


def test_a_metric_that_failed_a_night_starts_its_evidence_over(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """One bad night (5 of 20) is flagged; once the agent is fixed (18 of 20 again) the
    next night is not flagged again for the same past night."""
    bad, found = _night(runs, cell, None, "a1", 5)
    assert any(r.metric == "success_rate" and r.fails_night for r in found.results)
    kept = bad.metrics["success_rate"]
    assert (kept.nights, kept.weight, kept.boundary) == (0, 0.0, None)
    assert kept.last_mean is not None  # the night-to-night spread is kept
    fixed, found = _night(runs, cell, bad, "a1", 18)
    assert not any(r.fails_night for r in found.results)
    assert fixed.metrics["success_rate"].nights == 1


def test_the_evidence_weighs_its_nights_by_the_night_effect_as_estimated_not_padded(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    # Five identical baseline nights estimate no drift; tonight's test adds standard errors
    # of that estimate (TAU2_ERRORS), and so did the evidence, which has its own bound for
    # the season: a persistent 0.9 -> 0.8 on a 5 x 20 anchor was found by night 7 in 25 %
    # of sequences padded, 38 % as estimated (docs/calibration.md).
    nights = [runs(20, passed=18, start=20 * i) for i in range(5)]
    tonight = runs(20, passed=16)
    fresh = cell(nights, tonight)
    refs = fit_references([fresh.baseline])
    ref = refs[fresh.baseline.key].metrics["success_rate"]
    assert ref.point_icc == 0.0 < ref.icc
    padded = {
        key: replace(c, metrics={n: replace(m, point_icc=None) for n, m in c.metrics.items()})
        for key, c in refs.items()
    }
    estimated = compare_night([fresh], refs).cells[0]
    as_padded = compare_night([fresh], padded).cells[0]
    assert estimated.evidence.z("success_rate")[0] > as_padded.evidence.z("success_rate")[0] > 0
    # Tonight's own test is the padded one either way.
    [p_estimated, p_padded] = [
        next(r.p for r in c.results if r.metric == "success_rate") for c in (estimated, as_padded)
    ]
    assert p_estimated == p_padded


def test_a_change_found_and_fixed_leaves_the_metric_as_sensitive_as_before(
    runs: RunsMaker,
) -> None:
    """A three-scenario suite (10 runs a night, three baseline nights); on one night every
    run of ``beta`` takes one more tool call (flagged), the next night it is fixed. The pair
    of nights out of the flagged one entered the night-to-night spread: from then on the
    fitted night share of beta's tool path was that of a volatile endpoint, and its margin
    out of reach (review 4, defect 2: the MDE of tool_sequence went from 0.48 to 0.92)."""
    usual, longer = ("lookup", "population"), ("lookup", "population", "lookup")
    shapes = {"alpha": ([("lookup",)], 3), "beta": ([usual], 4), "gamma": ([()], 2)}
    base = {
        name: [runs(10, scenario=name, tools=tools, steps=steps) for _ in range(3)]
        for name, (tools, steps) in shapes.items()
    }
    states: dict[str, EvidenceState | None] = dict.fromkeys(shapes)
    baselines = {name: cell_night(base[name], [], scenario=name).baseline for name in shapes}
    for night in range(3):  # like the baseline, changed (and flagged), fixed
        changed = night == 1
        cells = []
        for name, (tools, steps) in shapes.items():
            moved = name == "beta" and changed
            tonight = runs(
                10, scenario=name, tools=[longer] if moved else tools, steps=steps + moved
            )
            cells.append(CellNight(baselines[name], tonight, states[name]))
        found = {c.key.scenario: c for c in compare_night(cells).cells}
        states = {name: found[name].evidence for name in shapes}
        failing = {r.metric for r in found["beta"].results if r.fails_night}
        assert ("tool_sequence" in failing) == changed, (night, failing)
    fresh = fit_references(list(baselines.values()), {})
    after = fit_references(
        list(baselines.values()), {baselines[name].key: states[name] for name in shapes}
    )
    for name in shapes:
        key = baselines[name].key
        for metric in ("tool_sequence", "step_count"):
            assert after[key].metrics[metric].icc == pytest.approx(
                fresh[key].metrics[metric].icc, abs=0.02
            ), (name, metric)


def test_a_change_that_persists_fails_every_night_not_only_the_first(runs: RunsMaker) -> None:
    """A three-scenario suite (6 runs a night, three baseline nights); from the second night
    on, every run of ``beta`` takes one more tool call, and runs 18 (escalated). The pair of
    nights across its first failure entered the night-to-night spread, whose band the next
    night took for drift: the same change was "inconclusive" the night after it failed."""
    usual, longer = ("lookup", "population"), ("lookup", "population", "lookup")
    shapes = {"alpha": ([("lookup",)], 3), "beta": ([usual], 4), "gamma": ([()], 2)}
    base = {
        name: [runs(6, scenario=name, tools=tools, steps=steps) for _ in range(3)]
        for name, (tools, steps) in shapes.items()
    }
    states: dict[str, EvidenceState | None] = dict.fromkeys(shapes)
    for night in range(4):  # a night like the baseline's, then the change for three nights
        cells = []
        for name, (tools, steps) in shapes.items():
            changed = name == "beta" and night > 0
            tonight = runs(
                18 if name == "beta" else 6,
                scenario=name,
                tools=[longer] if changed else tools,
                steps=steps + changed,
            )
            cells.append(
                CellNight(
                    cell_night(base[name], tonight, scenario=name).baseline, tonight, states[name]
                )
            )
        for found in compare_night(cells).cells:
            states[found.key.scenario] = found.evidence
            failing = {r.metric for r in found.results if r.fails_night}
            expected = (
                {"tool_sequence", "step_count"} if found.key.scenario == "beta" and night else set()
            )
            assert failing == expected, (night, found.key.scenario, failing)


def test_a_drop_of_a_common_rate_enters_the_evidence_at_its_full_size(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Issue 52: each night's tail p turned back into a share (mean + z sd) read a 0.9 rate's
    0.10 drop as about 0.08 (its skewed lower tail), and summed over a season that cost
    the evidence about a fifth of its power. 48 of 60 against a 5 x 20 anchor at 18 of 20:
    the evidence's effect is the night's own, -0.10."""
    nights = [runs(20, passed=18, start=20 * i) for i in range(5)]
    tonight = runs(60, passed=48, start=1000)
    found = compare_night([cell(nights, tonight)]).cells[0]
    [result] = [r for r in found.results if r.metric == "success_rate"]
    assert result.evidence_effect == pytest.approx(0.8 - 0.9, abs=1e-9)


def test_a_rare_outcome_enters_the_evidence_through_its_exact_tail(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    """Three crashes in 20 runs against none in 100: a normal model of so few expected
    crashes calls that a 5-sigma event; the evidence weighs it by the exact test's p, so
    its effect is well under the raw 0.15."""
    nights = [runs(20, start=20 * i) for i in range(5)]
    tonight = runs(20, crashed=3, start=1000)
    found = compare_night([cell(nights, tonight)]).cells[0]
    [result] = [r for r in found.results if r.metric == "crash_rate"]
    assert result.evidence_effect is not None and 0 < result.evidence_effect < 0.1
