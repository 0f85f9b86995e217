"""Dataset rows paired across nights: a row that passed in the baseline and fails tonight
is evidence a fresh sample of inputs would not give (``within_share``), and the baseline
is compared on tonight's rows only."""

from __future__ import annotations

import numpy as np

from evalrunner.stats import CellBaseline, CellNight, MetricResult, compare_night
from evalrunner.stats._pairing import PAIRED_FLOOR, within_share
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord

from .conftest import make_runs

ROWS = 30


def with_rows(records: list[RunRecord], rows: list[str] | None) -> list[RunRecord]:
    if rows is None:
        return records
    return [r.model_copy(update={"row": rows[i % len(rows)]}) for i, r in enumerate(records)]


def night(
    passing_rows: set[int], *, runs_per_row: int = 1, start: int = 0, paired: bool = True
) -> list[RunRecord]:
    """ROWS x runs_per_row runs, run i on row i % ROWS; a row passes every run or none."""
    n = ROWS * runs_per_row
    out = []
    for i in range(n):
        (record,) = make_runs(1, passed=1 if i % ROWS in passing_rows else 0, start=start + i)
        out.append(record.model_copy(update={"row": f"r{i % ROWS:02d}" if paired else None}))
    return out


def success(tonight: list[RunRecord], base: list[list[RunRecord]], paired: bool) -> MetricResult:
    rows = frozenset(f"r{r:02d}" for r in range(ROWS)) if paired else None
    cell = CellBaseline(CellKey("s", "m"), Tolerance(), base, "a", rows)
    (result,) = [
        r for r in compare_night([CellNight(cell, tonight)]).results if r.metric == "success_rate"
    ]
    return result


def test_five_rows_that_stopped_passing_are_flagged_paired_and_not_as_exchangeable_runs() -> None:
    half = set(range(0, ROWS, 2))  # every other row passes every run: rows differ, runs do not
    for paired in (True, False):
        base = [night(half, runs_per_row=2, start=100 * j, paired=paired) for j in range(3)]
        tonight = night(half - {0, 2, 4, 6, 8}, runs_per_row=2, start=900, paired=paired)
        result = success(tonight, base, paired)
        assert result.night_estimate == 10 / 30 and result.baseline_estimate == 0.5
        if paired:
            assert result.verdict == "regression", result
            assert "rows paired" in (result.test or "")
        else:
            # The same runs as exchangeable draws: 0.5 -> 0.33 at 60 runs is within chance.
            assert result.verdict == "inconclusive", result


def test_an_unchanged_night_is_not_flagged_paired() -> None:
    half = set(range(0, ROWS, 2))
    base = [night(half, runs_per_row=2, start=100 * j) for j in range(3)]
    result = success(night(half, runs_per_row=2, start=900), base, True)
    assert result.verdict == "ok"


def test_the_share_within_rows() -> None:
    rows = [f"r{i % 10}" for i in range(60)]
    # Rows that always give the same value: nothing is left within them, down to the floor.
    fixed = np.array([float(i % 10 < 5) for i in range(60)])
    assert within_share("binary", fixed, rows, np.zeros(0)) == PAIRED_FLOOR
    # Rows that do not differ: pairing leaves all of the variance.
    rng = np.random.default_rng(0)
    coin = (rng.random(600) < 0.5).astype(float)
    assert within_share("binary", coin, [f"r{i % 10}" for i in range(600)], np.zeros(0)) == 1.0
    # No rows, a kind that is not paired, or a row per run: no pairing.
    assert within_share("binary", fixed, [None] * 60, np.zeros(0)) == 1.0
    assert within_share("continuous", fixed, rows, np.zeros(0)) == 1.0
    assert within_share("binary", fixed, [f"r{i}" for i in range(60)], np.zeros(0)) == 1.0


def test_the_baseline_is_compared_on_tonights_rows_only() -> None:
    # The baseline's rows 20-29 always fail; tonight runs rows 0-19 only (--rows), all passing.
    base = [night(set(range(20)), start=100 * j) for j in range(3)]
    tonight = [r for r in night(set(range(20)), start=900) if int(str(r.row)[1:]) < 20]
    estimates = {}
    for rows in (frozenset(f"r{r:02d}" for r in range(20)), None):
        cell = CellBaseline(CellKey("s", "m"), Tolerance(), base, "a", rows)
        results = {r.metric: r for r in compare_night([CellNight(cell, tonight)]).results}
        estimates[rows is not None] = results["success_rate"].baseline_estimate
        assert not results["success_rate"].fails_night
    assert estimates == {True: 1.0, False: 20 / 30}


def test_a_dataset_scenarios_usual_answer_is_each_rows_own() -> None:
    # Before: one usual answer across rows; a baseline whose every run answered its own
    # row right read 0.5, and rows that ran in other shares tonight looked like a change
    # (a review: "final_answer_match 0.5 -> 0.0556" with every baseline run right).
    def answered(rows: list[str], start: int) -> list[RunRecord]:
        out = []
        for i, row in enumerate(rows):
            (record,) = make_runs(1, passed=1, start=start + i)
            out.append(record.model_copy(update={"row": row, "final_answer": f"answer {row}"}))
        return out

    base = [answered(["ke", "fr"] * 9, 100 * j) for j in range(3)]
    cell = CellBaseline(CellKey("s", "m"), Tolerance(), base, "a", frozenset({"ke", "fr"}))
    tonight = answered(["ke"] * 6 + ["fr"] * 12, 900)  # the same answers, in other shares
    (result,) = [
        r
        for r in compare_night([CellNight(cell, tonight)]).results
        if r.metric == "final_answer_match"
    ]
    assert (result.baseline_estimate, result.night_estimate) == (1.0, 1.0), result
    assert result.verdict != "regression"
    assert "their row's usual answer (2 rows)" in (result.note or "")
