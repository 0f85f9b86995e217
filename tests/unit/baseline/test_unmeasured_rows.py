"""A dataset row the endpoint failed on every run tonight (a content filter on one input):
the night says so, and the night and ``--append`` compare the baseline on the rows it
measured."""

from __future__ import annotations

from pathlib import Path

from evalrunner.baseline._build import _Found, _refuse_flagged
from evalrunner.baseline._compare import Comparison, compare_with_baselines
from evalrunner.baseline._file import AcceptedNight, Baseline
from evalrunner.live._results import ResultsDir
from evalrunner.suite import Suite, load_suite
from evalrunner.suite._record import CellKey, RunRecord

from .conftest import record

SUITE = """\
format_version: 1
name: t
scenarios:
  - id: s
    agent: evalrunner.examples:direct_answer
    dataset: capitals.jsonl
    input: "What is the capital of {country}?"
    checks:
      answer_contains: ["{capital}"]
"""
ROWS = (
    '{"id": "fr", "country": "France", "capital": "Paris"}\n'
    '{"id": "jp", "country": "Japan", "capital": "Tokyo"}\n'
)


def runs(outcomes: dict[str, str], start: int) -> list[RunRecord]:
    """Two runs of each row, each ending as ``outcomes`` says for its row."""
    rows = [row for row in outcomes for _ in range(2)]
    return [record(start + i, row=row, outcome=outcomes[row]) for i, row in enumerate(rows)]


def suite_on_disk(tmp_path: Path) -> Suite:
    (tmp_path / "capitals.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "t.yaml").write_text(SUITE, encoding="utf-8")
    return load_suite(tmp_path / "t.yaml")


def baseline_of(suite: Suite, outcomes: dict[str, str]) -> Baseline:
    """Three accepted nights, each row's runs ending as ``outcomes`` says."""
    nights = [
        AcceptedNight(
            started_at=f"2024-01-0{j + 1}T00:00:00Z",
            source=f"n{j}",
            records=runs(outcomes, 10 * j),
        )
        for j in range(3)
    ]
    fingerprint = suite.scenarios[0].fingerprint
    return Baseline(
        suite="t",
        scenario="s",
        model="m",
        fingerprint=fingerprint,
        created_at="t",
        evalrunner_version="0",
        nights=nights,
    )


def night_against_baseline(tmp_path: Path, tonight: list[RunRecord]) -> Comparison:
    """Tonight against three accepted nights in which fr passes and jp (a hard row) fails."""
    suite = suite_on_disk(tmp_path)
    baseline = baseline_of(suite, {"fr": "passed", "jp": "failed"})
    return compare_with_baselines(
        suite, tonight, tmp_path / "baselines", loaded={CellKey("s", "m"): baseline}
    )


def test_a_row_every_run_of_which_was_infra_error_is_noted_and_left_out_of_both_sides(
    tmp_path: Path,
) -> None:
    comparison = night_against_baseline(tmp_path, runs({"fr": "passed", "jp": "infra_error"}, 100))
    assert (
        "dataset scenario s [m]: row jp not measured tonight (2 of 2 runs infra_error); its row "
        "was left out of the paired comparison, the baseline's runs too"
    ) in comparison.notes
    # The baseline's jp runs (all failed) kept against none tonight read 0.5 -> 1.0.
    [success] = [r for r in comparison.results if r.metric == "success_rate"]
    assert (success.baseline_n, success.baseline_estimate) == (6, 1.0), success
    assert success.verdict != "improvement", success


def test_a_night_that_measured_every_row_or_none_has_no_row_note(tmp_path: Path) -> None:
    # None measured: the cell's own "no run measured tonight" says it, once, not per row.
    every: list[dict[str, str]] = [
        {"fr": "passed", "jp": "failed"},
        {"fr": "infra_error", "jp": "infra_error"},
    ]
    for outcomes in every:
        notes = night_against_baseline(tmp_path, runs(outcomes, 100)).notes
        assert not [n for n in notes if n.startswith("dataset scenario")], notes


def test_append_compares_a_night_on_the_rows_it_measured_and_takes_it_in(tmp_path: Path) -> None:
    # The baseline's fr runs fail and its jp runs pass; the night to append fails fr as
    # always, and the endpoint failed every jp run. Against the baseline's jp runs too it
    # read 0.5 -> 0 and --append refused the night as a regression of the agent.
    suite = suite_on_disk(tmp_path)
    scenario = suite.scenarios[0]
    old = baseline_of(suite, {"fr": "failed", "jp": "passed"})
    night = AcceptedNight(
        started_at="2024-01-09T00:00:00Z",
        source="n9",
        records=runs({"fr": "failed", "jp": "infra_error"}, 100),
    )
    found = [_Found(night, ResultsDir(tmp_path / "n9"), scenario.fingerprint)]
    _refuse_flagged("t", scenario, CellKey("s", "m"), tmp_path / "b.json", old, found)
