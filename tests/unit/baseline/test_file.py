"""Baseline files: where each cell's file lives, what a saved one loads back as, which
files are refused, and which run stands for the baseline's typical trajectory."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalrunner._version import __version__
from evalrunner.baseline._file import (
    AcceptedNight,
    Baseline,
    baseline_path,
    load_baseline,
    load_baselines,
    save_baseline,
    typical_run,
)
from evalrunner.errors import FileFormatError, NewerFormat
from evalrunner.suite._record import CellKey, RunRecord


def run(index: int, outcome: str, tools: tuple[str, ...], steps: int) -> RunRecord:
    return RunRecord(
        run_id=f"capital/m/{index}",
        suite="demo",
        scenario="capital",
        model="m",
        index=index,
        outcome=outcome,
        tools=list(tools),
        step_count=steps,
    )


def baseline(*sources: str, model: str = "m") -> Baseline:
    return Baseline(
        suite="demo",
        scenario="capital",
        model=model,
        fingerprint="0123456789abcdef",
        created_at="2025-01-03T02:00:00Z",
        evalrunner_version="0.0.0",
        nights=[
            AcceptedNight(
                started_at=f"2025-01-0{n + 1}T02:00:00Z",
                source=source,
                records=[run(2 * n, "passed", ("lookup",), 2), run(2 * n + 1, "failed", (), 1)],
            )
            for n, source in enumerate(sources)
        ],
        summary={"success_rate": 0.5},
    )


def test_a_baseline_lives_under_its_suite_named_by_scenario_and_model_slug() -> None:
    path = baseline_path(Path("baselines"), "demo", "capital", "openai/gpt-4o mini")
    assert path == Path("baselines/demo/capital--openai_gpt-4o_mini.json")
    # A model name with nothing file-safe in it still gets a file name.
    assert baseline_path(Path("b"), "demo", "capital", "//").name == "capital--model.json"


def test_a_saved_baseline_loads_back_equal(tmp_path: Path) -> None:
    saved = baseline("results/night1", "results/night2")
    path = baseline_path(tmp_path, "demo", "capital", "m")
    save_baseline(path, saved)
    loaded = load_baseline(path)
    assert loaded == saved
    assert loaded.anchor == saved.anchor
    assert [r.run_id for r in loaded.records] == [f"capital/m/{i}" for i in range(4)]


def test_the_anchor_changes_with_the_accepted_nights_only() -> None:
    one, two = baseline("results/night1"), baseline("results/night1", "results/night2")
    assert one.anchor != two.anchor
    assert len(one.anchor) == 16
    later = one.model_copy(update={"created_at": "2026-01-01T00:00:00Z", "summary": {}})
    assert later.anchor == one.anchor


def test_load_baselines_returns_the_cells_that_have_a_file(tmp_path: Path) -> None:
    save_baseline(baseline_path(tmp_path, "demo", "capital", "m"), baseline("results/night1"))
    found = load_baselines(tmp_path, "demo", [CellKey("capital", "m"), CellKey("capital", "other")])
    assert list(found) == [CellKey("capital", "m")]
    assert found[CellKey("capital", "m")].nights[0].source == "results/night1"


def test_a_baseline_copied_from_another_suite_is_refused_in_one_line(tmp_path: Path) -> None:
    # Before: used as the other suite's without a word (its fingerprint matched).
    made = baseline_path(tmp_path, "demo", "capital", "m")
    save_baseline(made, baseline("results/night1"))
    copied = baseline_path(tmp_path, "other", "capital", "m")
    copied.parent.mkdir(parents=True)
    copied.write_bytes(made.read_bytes())
    with pytest.raises(FileFormatError) as excinfo:
        load_baselines(tmp_path, "other", [CellKey("capital", "m")])
    message = str(excinfo.value)
    assert message.startswith(
        f"{copied}: holds the baseline of suite 'demo', scenario 'capital', not of 'other', "
        "'capital'; build this one with evalrunner baseline --suite other --from NIGHT"
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("version", "said"),
    [
        (
            0,
            "is not supported (expected 1, 2, 3, 4, 5, 6 or 7); rebuild it with 'evalrunner baseline'",
        ),
        # Rebuilding (or --golden-update, or re-recording) would overwrite what a newer
        # release wrote: the fix for a newer format is a newer evalrunner.
        (
            8,
            f"is newer than this evalrunner ({__version__}) reads (up to 7); upgrade evalrunner to read it",
        ),
    ],
    ids=["older", "newer"],
)
def test_a_baseline_of_another_format_version_is_refused_in_one_line(
    tmp_path: Path, version: int, said: str
) -> None:
    path = tmp_path / "capital--m.json"
    path.write_text(f'{{"format_version": {version}}}', encoding="utf-8")
    with pytest.raises(FileFormatError) as excinfo:
        load_baseline(path)
    assert str(excinfo.value) == f"{path}: baseline format_version {version} {said}"


def test_a_newer_baseline_names_the_release_that_wrote_it(tmp_path: Path) -> None:
    # Every build once called itself 0.1.0; a number of its own per release now says
    # which release to upgrade to.
    path = tmp_path / "capital--m.json"
    path.write_text('{"format_version": 8, "evalrunner_version": "9.1.0"}', encoding="utf-8")
    with pytest.raises(NewerFormat, match=r"\(up to 7, written by evalrunner 9\.1\.0\); upgrade"):
        load_baseline(path)


def test_a_format_version_written_as_text_says_to_write_the_number(tmp_path: Path) -> None:
    # Before: "format_version '3' is not supported (expected 1, 2 or 3)".
    path = tmp_path / "capital--m.json"
    path.write_text('{"format_version": "3"}', encoding="utf-8")
    with pytest.raises(FileFormatError) as excinfo:
        load_baseline(path)
    assert str(excinfo.value) == (
        f"{path}: baseline format_version is the text '3'; write it as the number 3, without quotes"
    )


def test_a_baseline_with_a_nan_latency_is_refused_in_one_line_naming_the_field(
    tmp_path: Path,
) -> None:
    # JSON has no NaN; a hand edit or another writer's NaN token must not load as data.
    path = baseline_path(tmp_path, "demo", "capital", "m")
    save_baseline(path, baseline("results/night1"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["nights"][0]["records"][0]["latency_s"] = math.nan
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FileFormatError) as excinfo:
        load_baseline(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}: ") and "latency_s" in message and "\n" not in message


def test_the_typical_run_takes_the_modal_path_and_prefers_a_passed_run() -> None:
    records = [
        run(0, "passed", ("lookup", "answer"), 3),
        run(1, "failed", ("lookup",), 2),
        run(2, "passed", ("lookup",), 2),
        run(3, "passed", ("lookup",), 2),
        # Infra errors are the endpoint's: their path, however common, is not the agent's.
        *(run(4 + i, "infra_error", (), 0) for i in range(5)),
    ]
    typical = typical_run(records)
    assert typical is not None and typical.index == 2


def test_runs_that_all_ended_in_infra_errors_have_no_typical_run() -> None:
    assert typical_run([run(0, "infra_error", (), 0), run(1, "infra_error", (), 0)]) is None


def _edited(tmp_path: Path, edit: Callable[[dict[str, Any]], object]) -> tuple[Path, str]:
    """A saved baseline with ``edit`` applied to its JSON, and the error loading it gives."""
    path = baseline_path(tmp_path, "demo", "capital", "m")
    save_baseline(path, baseline("results/night1"))
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FileFormatError) as excinfo:
        load_baseline(path)
    return path, str(excinfo.value)


def test_a_baseline_of_no_nights_is_refused_in_one_line(tmp_path: Path) -> None:
    # Before: loaded, and every metric "compared" with 0 nights of 0 runs (a review).
    path, error = _edited(tmp_path, lambda data: data.update(nights=[]))
    assert error == (
        f"{path}: nights: empty: a baseline holds the nights it accepted; rebuild it with "
        "'evalrunner baseline'"
    )


def test_a_baseline_holding_one_night_twice_is_refused_in_one_line(tmp_path: Path) -> None:
    # Two branches each appended a night; "keep both" in the merge copied a night again.
    # Before: loaded as one more night than was run, so the baseline gated early.
    first: list[dict[str, Any]] = []

    def twice(data: dict[str, Any]) -> None:
        first.append(data["nights"][0])
        data["nights"].append(data["nights"][0])

    path, error = _edited(tmp_path, twice)
    started, source = first[0]["started_at"], first[0]["source"]
    assert error == (
        f"{path}: nights: night 1 (started {started}, from {source}) is an earlier night again "
        f"(night 0, from {source}), the same runs; a baseline counts each night once: remove "
        "one; rebuild it with 'evalrunner baseline'"
    )


def test_a_baseline_night_mixing_the_runs_of_two_nights_is_refused(tmp_path: Path) -> None:
    # A merge of two appended nights resolved hunk by hunk: one night's label and start,
    # the other night's runs. Before: loaded without a word.
    def mixed(data: dict[str, Any]) -> None:
        night = data["nights"][0]
        night["started_at"] = "2031-01-02T02:00:00Z"
        night["records"][0]["started_at"] = "2031-01-01T02:00:03Z"

    _, error = _edited(tmp_path, mixed)
    assert re.search(
        r"night 0 \(started 2031-01-02T02:00:00Z\) holds run '.*', started "
        r"2031-01-01T02:00:03Z, before the night: it mixes the runs of two nights",
        error,
    ), error


def _dataset_baseline(version: int, pass_hat_3: float) -> dict[str, Any]:
    passed: str = "passed"
    failed: str = "failed"
    rows = [("easy", passed)] * 3 + [("hard", failed)] * 3
    records = [
        run(i, outcome, ("lookup",), 2).model_copy(update={"row": row})
        for i, (row, outcome) in enumerate(rows)
    ]
    doc = baseline("results/night1").model_copy(
        update={
            "nights": [
                AcceptedNight(started_at="2025-01-01T02:00:00Z", source="n", records=records)
            ]
        }
    )
    data: dict[str, Any] = json.loads(doc.model_dump_json())
    data.update(format_version=version, summary={"pass_hat_k": {"3": pass_hat_3}})
    return data


@pytest.mark.parametrize(
    ("version", "pass_hat_3", "refused"),
    [
        (3, 0.05, False),  # format 3 pooled the rows: 3 tries of 6 runs all pass 1 in 20
        (4, 0.5, False),  # format 4: per row (1 and 0), averaged
        (4, 0.05, True),
    ],
    ids=["format-3-pooled", "format-4-per-row", "format-4-pooled"],
)
def test_a_dataset_baselines_pass_k_is_checked_as_its_format_summed_it_up(
    tmp_path: Path, version: int, pass_hat_3: float, refused: bool
) -> None:
    # A baseline the last release wrote must still load after pass^k went per row; one
    # this release writes is still checked against its runs.
    path = tmp_path / "capital--m.json"
    path.write_text(json.dumps(_dataset_baseline(version, pass_hat_3)), encoding="utf-8")
    if not refused:
        assert load_baseline(path).summary["pass_hat_k"]["3"] == pass_hat_3
        return
    with pytest.raises(
        FileFormatError, match=r"summary\.pass_hat_k\.3 is 0\.05, but its runs give 0\.5"
    ):
        load_baseline(path)
