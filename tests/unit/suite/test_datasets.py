"""Dataset files and templates: rows read from JSONL or CSV, fields filled into the input and
the text checks, a stable subset, and the data in the scenario's fingerprint."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from evalrunner.errors import ConfigError
from evalrunner.suite import load_suite
from evalrunner.suite._dataset import fill, read_dataset

SUITE = """\
format_version: 1
name: atlas
scenarios:
  - id: capitals
    agent: evalrunner.examples:direct_answer
    dataset: {data}
    input: "What is the capital of {{country}}?"
    checks:
      answer_contains: ["{{capital}}"]
      answer_matches: "^{{capital}}\\\\.?\\\\d{{0,3}}$"
"""


def suite_with(
    tmp_path: Path, rows: Sequence[Mapping[str, object]], data: str = "capitals.jsonl"
) -> Path:
    (tmp_path / data).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "atlas.yaml"
    path.write_text(SUITE.format(data=data), encoding="utf-8")
    return path


ROWS = [
    {"id": "fr", "country": "France", "capital": "Paris"},
    {"id": "us", "country": "U.S.", "capital": "Washington, D.C."},
]


def test_a_row_fills_the_input_and_the_checks_and_a_regex_gets_the_value_escaped(
    tmp_path: Path,
) -> None:
    scenario = load_suite(suite_with(tmp_path, ROWS)).scenarios[0]
    us = scenario.at(1)
    assert us.input == "What is the capital of U.S.?"
    assert us.checks.answer_contains == ["Washington, D.C."]
    # The row's value is escaped; the regex's own {0,3} is left as written.
    assert us.checks.answer_matches == r"^Washington,\ D\.C\.\.?\d{0,3}$"
    assert re.search(us.checks.answer_matches, "Washington, D.C.12")
    assert us.row is not None and us.row.id == "us" and us.fingerprint == scenario.fingerprint
    assert scenario.cell_runs == 5 * 2 and [scenario.at(i).row.id for i in range(4)] == [  # type: ignore[union-attr]
        "fr",
        "us",
        "fr",
        "us",
    ]


def test_editing_the_data_changes_the_fingerprint_and_reordering_it_does_not(
    tmp_path: Path,
) -> None:
    first = load_suite(suite_with(tmp_path, ROWS)).scenarios[0].fingerprint
    reordered = load_suite(suite_with(tmp_path, ROWS[::-1])).scenarios[0]
    assert reordered.fingerprint == first
    assert [reordered.at(i).row.id for i in range(2)] == ["fr", "us"]  # type: ignore[union-attr]
    edited = [ROWS[0], {**ROWS[1], "capital": "Washington"}]
    assert load_suite(suite_with(tmp_path, edited)).scenarios[0].fingerprint != first
    assert load_suite(suite_with(tmp_path, ROWS)).scenarios[0].fingerprint == first


def test_a_stable_subset_is_the_same_rows_whatever_the_file_order(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "country": f"C{i}", "capital": f"K{i}"} for i in range(50)]
    one = load_suite(suite_with(tmp_path, rows)).scenarios[0]
    two = load_suite(suite_with(tmp_path, rows[::-1])).scenarios[0]
    assert one.data is not None and two.data is not None
    pick = {r.id for r in one.data.subset(7)}
    assert len(pick) == 7 and pick == {r.id for r in two.data.subset(7)}
    # A larger subset keeps the smaller one's rows: raising --rows adds rows, never swaps them.
    assert pick < {r.id for r in one.data.subset(20)}


def test_csv_rows_with_quoted_commas_and_rows_named_by_number(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('country,capital\nFrance,Paris\n"U.S.","Washington, D.C."\n', encoding="utf-8")
    data = read_dataset(path, "d.csv", {"capital": "input"})
    assert [(r.id, r.line, r.fields["capital"]) for r in data.rows] == [
        ("row-1", 2, "Paris"),
        ("row-2", 3, "Washington, D.C."),
    ]


def test_a_template_naming_a_field_no_row_has_is_one_line(tmp_path: Path) -> None:
    bad = [{"id": "fr", "country": "France", "city": "Paris"}]
    with pytest.raises(ConfigError) as caught:
        load_suite(suite_with(tmp_path, bad))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}/capitals.jsonl:1: row 'fr' has no field 'capital'")
    assert "checks.answer_contains[0]" in message and "\n" not in message


@pytest.mark.parametrize("value", ["", None, "  "], ids=["empty", "null", "blank"])
def test_a_row_that_fills_a_check_with_empty_text_is_one_line(
    tmp_path: Path, value: object
) -> None:
    # Before: answer_contains [""] from this row held for every answer; the same check
    # written in the suite file is refused.
    rows: list[Mapping[str, object]] = [ROWS[0], {"id": "jp", "country": "Japan", "capital": value}]
    with pytest.raises(ConfigError) as caught:
        load_suite(suite_with(tmp_path, rows))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}/capitals.jsonl:2: row 'jp': field 'capital' is empty")
    assert "checks.answer_contains[0] ('{capital}') becomes empty text" in message
    assert "\n" not in message


def test_an_empty_csv_cell_filling_a_check_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "capitals.csv").write_text("id,country,capital\nfr,France,\n", encoding="utf-8")
    (tmp_path / "atlas.yaml").write_text(SUITE.format(data="capitals.csv"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"capitals.csv:2: row 'fr': field 'capital' is empty"):
        load_suite(tmp_path / "atlas.yaml")


def test_an_empty_field_only_the_input_uses_is_not_a_check(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "a", "country": ""}) + "\n", encoding="utf-8")
    data = read_dataset(path, "d.jsonl", {"country": "input"})
    assert [r.id for r in data.rows] == ["a"]


def test_fill_leaves_unknown_braces_alone() -> None:
    assert fill("{a} {b} [{c}] x{2}", {"a": 1, "c": None}) == "1 {b} [] x{2}"


def test_a_glob_reads_every_matching_file_in_name_order_ids_unique_across_them(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "b.jsonl").write_text('{"id": "jp", "country": "Japan", "capital": "Tokyo"}\n')
    (data / "a.csv").write_text("id,country,capital\nfr,France,Paris\n")
    path = suite_with(tmp_path, ROWS)
    path.write_text(SUITE.format(data="'data/*'"), encoding="utf-8")
    scenario = load_suite(path).scenarios[0]
    assert scenario.data is not None
    assert [r.id for r in scenario.data.rows] == ["fr", "jp"]
    (data / "c.jsonl").write_text('{"id": "fr", "country": "X", "capital": "Y"}\n')
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert str(caught.value) == (
        f"{data}/c.jsonl:1: duplicate row id 'fr' (also {data}/a.csv:2); ids must be unique "
        "across the files of a dataset"
    )
    path.write_text(SUITE.format(data="'nothing/*.jsonl'"), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("nothing/*.jsonl: no file matches")):
        load_suite(path)
