"""Dataset scenarios end to end (``dataset:`` in a suite): every row run N times with its
input and checks filled from the row, a stable ``--rows`` subset, bad data found at load
as one line naming the file, line and row, a regression planted on some rows flagged with
those rows named first (terminal, explain, Markdown, JUnit, HTML), and frozen mode with one
pytest item, golden and recording per row."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner, flagged, verdict_table
from click.testing import CliRunner, Result
from dataset_world import Capitals, countries, dataset_scenario, write_jsonl
from fake_endpoint import FakeEndpoint, Fault
from paths import REPO
from runner_agents import write_suite

from evalrunner.cli._main import main
from evalrunner.core._scope import install
from evalrunner.live._results import ResultsDir

install()  # import and wrap litellm before pytester snapshots sys.modules

pytest_plugins = ["pytester"]


def _suite(root: Path, rows: int, **extra: Any) -> None:
    write_jsonl(root / "capitals.jsonl", countries(rows))
    write_suite(root, "atlas", [dataset_scenario(**extra)], concurrency=8, timeout_s=30)


def _cli(*args: str) -> Result:
    """``evalrunner ARGS`` in-process, for commands that reach no model."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _run(ep: FakeEndpoint, root: Path, out: str, *args: str) -> Any:
    common = ["--suite", "atlas", "--suites-dir", str(root), "--out", str(root / out)]
    return evalrunner(ep, "run", *common, *args)


def test_every_row_runs_n_times_with_its_input_and_checks_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(
        tmp_path,
        3,
        checks={
            "answer_contains": ["{capital}"],
            "code": ["checks_for_tests:names_the_rows_capital", "checks_for_tests:buggy"],
        },
    )
    world = Capitals(wrong={1})
    with FakeEndpoint(responder=world) as ep:
        result = _run(ep, tmp_path, "n1", "--runs", "2", "--no-compare", "--no-history")
    assert result.exit_code == 0, result.output
    records = ResultsDir(tmp_path / "n1").records()
    assert Counter(r.row for r in records) == {"c00": 2, "c01": 2, "c02": 2}
    by_row = {r.row: r for r in records}
    assert by_row["c00"].outcome == "passed"
    assert by_row["c01"].outcome == "failed"
    # The declarative check was filled from the row, and the code check read the row itself.
    assert "answer_contains" in (by_row["c01"].reason or "")
    assert by_row["c01"].checks["code:names_the_rows_capital"] is False
    assert by_row["c02"].checks["code:names_the_rows_capital"] is True
    assert sorted(set(world.seen)) == [f"What is the capital of Country{i}?" for i in range(3)]
    # A check's own bug is named with the row it failed on, not only the run.
    assert re.search(r"code check buggy failed itself on \S+ \(row 'c0\d'\)", result.stderr)
    # The run files say which row each run was.
    doc = json.loads((tmp_path / "n1" / "runs" / "capitals" / "openai_fake" / "1.json").read_text())
    assert doc["record"]["row"] == "c01"


def test_a_command_agent_gets_each_rows_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "capitals.jsonl", countries(3))
    support = REPO / "tests" / "support"
    scenario = {
        **{k: v for k, v in dataset_scenario().items() if k != "agent"},
        "command": [sys.executable, str(support / "sdk_agent_main.py"), "openai", "{task}"],
        "env": {"PYTHONPATH": str(support)},
    }
    write_suite(tmp_path, "atlas", [scenario], timeout_s=60)
    world = Capitals(wrong={2})
    with FakeEndpoint(responder=world) as ep:
        result = _run(ep, tmp_path, "n1", "--runs", "1", "--no-compare", "--no-history")
    assert result.exit_code == 0, result.output
    outcomes = {r.row: r.outcome for r in ResultsDir(tmp_path / "n1").records()}
    assert outcomes == {"c00": "passed", "c01": "passed", "c02": "failed"}
    assert sorted(set(world.seen)) == [f"What is the capital of Country{i}?" for i in range(3)]


def test_rows_k_runs_the_same_subset_every_night_whatever_the_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path, 10)
    with FakeEndpoint(responder=Capitals()) as ep:
        first = _run(
            ep, tmp_path, "n1", "--runs", "1", "--rows", "4", "--no-compare", "--no-history"
        )
        assert first.exit_code == 0, first.output
        rows = countries(10)
        write_jsonl(tmp_path / "capitals.jsonl", rows[::-1])  # the file reordered
        again = _run(
            ep, tmp_path, "n2", "--runs", "1", "--rows", "4", "--no-compare", "--no-history"
        )
        assert again.exit_code == 0, again.output
    one = sorted(r.row or "" for r in ResultsDir(tmp_path / "n1").records())
    two = sorted(r.row or "" for r in ResultsDir(tmp_path / "n2").records())
    assert len(one) == 4 and one == two
    manifest = json.loads((tmp_path / "n1" / "manifest.json").read_text())
    assert manifest["rows"] == {"capitals": 4} and manifest["runs"] == {"capitals": 1}
    # --resume continues the recorded subset; asking for another is one line.
    with FakeEndpoint(responder=Capitals()) as ep:
        other = _run(ep, tmp_path, "n1", "--resume", "--rows", "5", "--no-compare", "--no-history")
    assert other.exit_code == 2, other.output
    assert "--rows 5 conflicts with the plan this directory was started with (rows capitals 4)" in (
        other.output
    )


def test_compare_of_nights_that_ran_different_rows_compares_the_rows_both_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A ran all 10 rows (the 6 rows B left out are hard: answered wrong), B ran 4 of them
    # with --rows 4. compare called it a success_rate "improvement" 0.4 -> 1: the rows, not
    # the agent.
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path, 10)
    with FakeEndpoint(responder=Capitals()) as ep:
        b = _run(ep, tmp_path, "b", "--runs", "2", "--rows", "4", "--no-compare", "--no-history")
        assert b.exit_code == 0, b.output
    subset = {r.row for r in ResultsDir(tmp_path / "b").records()}
    hard = {i for i in range(10) if f"c{i:02d}" not in subset}
    with FakeEndpoint(responder=Capitals(wrong=hard)) as ep:
        a = _run(ep, tmp_path, "a", "--runs", "2", "--no-compare", "--no-history")
        assert a.exit_code == 0, a.output
        result = evalrunner(ep, "compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    rows = verdict_table(result.stdout)
    [success] = [r for r in rows if r["metric"] == "success_rate"]
    assert success["verdict"] not in ("improvement", "REGRESSION"), success
    assert (
        "note: capitals [openai/fake]: compared on the 4 dataset rows both ran (A ran 10, B 4): "
        "a row's difficulty is not the agent's change"
    ) in result.stderr.splitlines()


@pytest.mark.parametrize(
    ("data", "name", "said"),
    [
        (
            '{"id": "a", "country": "X", "capital": "Y"}\n{"id": "a", "country": "Z", "capital": "W"}\n',
            "capitals.jsonl",
            "capitals.jsonl:2: duplicate row id 'a' (also line 1); ids must be unique within a dataset",
        ),
        (
            '{"id": "a", "country": "X", "capital": "Y"}\n\n{"id": "b", "country": "Z"}\n',
            "capitals.jsonl",
            "capitals.jsonl:3: row 'b' has no field 'capital' (used by scenarios[0] (id "
            "'capitals').checks.answer_contains[0]); add it to every row or change the template "
            "(its fields: country, id)",
        ),
        (
            '{"id": "a", "country": "X"\n',
            "capitals.jsonl",
            "capitals.jsonl:1: not valid JSON: Expecting",
        ),
        (
            '["a"]\n',
            "capitals.jsonl",
            "capitals.jsonl:1: each line must be a JSON object of fields, got list",
        ),
        (
            '{"id": "a", "country": {"name": "X"}, "capital": "Y"}\n',
            "capitals.jsonl",
            "capitals.jsonl:1: field 'country' is a dict",
        ),
        (
            "id,country,capital\na,X,Y\nb,Z\n",
            "capitals.csv",
            "capitals.csv:3: 2 values for 3 columns",
        ),
        ("", "capitals.jsonl", "capitals.jsonl: has no rows"),
        (
            '{"id": "a b", "country": "X", "capital": "Y"}\n',
            "capitals.jsonl",
            "row id 'a b' is not usable",
        ),
        (
            '{"id": "a", "country": "X", "capital": "Y"}\n{"country": "Z", "capital": "W"}\n',
            "capitals.jsonl",
            "capitals.jsonl:2: this row has no 'id' field but others do",
        ),
        (None, "gone.jsonl", "gone.jsonl: no such file (a dataset is relative to its suite file)"),
        ("x\n", "capitals.txt", "capitals.txt: a dataset must be a .jsonl or .csv file"),
    ],
    ids=[
        "duplicate-id",
        "missing-field",
        "bad-json",
        "not-an-object",
        "nested-value",
        "csv-short-row",
        "empty",
        "bad-id",
        "some-ids",
        "missing-file",
        "wrong-suffix",
    ],
)
def test_bad_data_is_one_line_naming_the_file_line_and_row(
    tmp_path: Path, data: str | None, name: str, said: str
) -> None:
    if data is not None:
        (tmp_path / name).write_text(data, encoding="utf-8")
    write_suite(tmp_path, "atlas", [dataset_scenario(dataset=name)])
    result = _cli("validate", str(tmp_path / "atlas.yaml"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.output
    assert "Traceback" not in result.output


def test_rows_without_a_dataset_is_refused_at_the_field(tmp_path: Path) -> None:
    scenario = {"id": "plain", "agent": "runner_agents:plain_agent", "input": "hi", "rows": 3}
    write_suite(tmp_path, "atlas", [scenario])
    result = _cli("validate", str(tmp_path / "atlas.yaml"))
    assert result.exit_code == 2, result.output
    assert (
        "scenarios[0] (id 'plain').rows: applies only to a scenario with a dataset" in result.output
    )


def test_rows_for_a_suite_without_a_dataset_is_one_line(tmp_path: Path) -> None:
    scenario = {"id": "plain", "agent": "runner_agents:plain_agent", "input": "hi"}
    write_suite(tmp_path, "atlas", [scenario])
    with FakeEndpoint() as ep:
        result = _run(ep, tmp_path, "n1", "--rows", "3", "--no-history", "--no-compare")
    assert result.exit_code == 2, result.output
    assert "--rows applies to dataset scenarios, and suite 'atlas' has none" in result.output
    assert not (tmp_path / "n1" / "runs").exists()


def test_validate_list_and_plan_count_rows_times_n(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path, 30, runs=3)
    listed = _cli("list", "--suites-dir", str(tmp_path))
    assert "capitals  (30 rows of capitals.jsonl x 3 runs = 90 runs)" in listed.output
    checked = _cli("validate", str(tmp_path / "atlas.yaml"))
    assert checked.output.strip().endswith("(1 scenario, 30 dataset rows)")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A 30-row scenario at N = 3: a baseline night, then a night where 5 rows go wrong."""
    root = tmp_path_factory.mktemp("planted")
    _suite(root, 30, runs=3)
    write_suite(
        root,
        "atlas",
        [dataset_scenario(runs=3)],
        concurrency=8,
        timeout_s=30,
    )
    world = Capitals()
    moved = {3, 8, 14, 21, 27}
    with FakeEndpoint(responder=world) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        nights = []
        for k in range(3):  # a baseline of three nights, as a team would accept
            base = _run(ep, root, f"base{k}", "--no-compare", "--no-history")
            assert base.exit_code == 0, base.output
            nights += ["--from", str(root / f"base{k}")]
        suite = ["--suite", "atlas", "--suites-dir", str(root), "--baselines", str(root / "b")]
        accepted = evalrunner(ep, "baseline", *suite, *nights)
        assert accepted.exit_code == 0, accepted.output
        plan = evalrunner(ep, "plan", *suite)
        world.wrong = moved
        night = _run(
            ep, root, "night", "--baselines", str(root / "b"), "--history", str(root / "h")
        )
        explained = evalrunner(
            ep,
            "explain",
            "--suite",
            "atlas",
            "--suites-dir",
            str(root),
            "--results",
            str(root / "night"),
            "--baselines",
            str(root / "b"),
        )
        report = evalrunner(ep, "report", "--history", str(root / "h"), "--out", str(root / "r"))
        yield root, moved, plan, night, explained, report


def _names(moved: set[int]) -> set[str]:
    return {f"c{i:02d}" for i in moved}


def test_a_regression_on_five_of_thirty_rows_is_flagged_with_those_rows_named_first(
    planted: Any,
) -> None:
    _, moved, _, night, _, _ = planted
    assert night.exit_code == 1, night.output
    assert ("capitals", "success_rate") in flagged(verdict_table(night.stdout))
    line = next(x for x in night.stdout.splitlines() if "rows that moved most:" in x)
    named = [part.split(":")[0].strip() for part in line.split("most:", 1)[1].split(";")]
    assert set(named) == _names(moved), line
    assert all(f"{name}: passed 9/9 -> 0/9" in line for name in _names(moved)), line
    # Rows send different user messages: that is no request drift.
    assert "request changed" not in night.stdout


def test_explain_markdown_junit_and_html_name_the_rows(planted: Any) -> None:
    root, moved, _, _, explained, report = planted
    assert explained.exit_code == 0, explained.output
    rows = [x.strip() for x in explained.stdout.splitlines() if x.strip().startswith("row ")]
    assert {x.split()[1].rstrip(":") for x in rows} == _names(moved), explained.stdout
    assert report.exit_code == 0, report.output
    summary = (root / "r" / "summary.md").read_text(encoding="utf-8")
    assert "  - rows that moved most: c03: passed 9/9 -> 0/9; c08: " in summary
    junit = ET.parse(root / "r" / "junit.xml").getroot()
    text = "".join(str(f.text) for f in junit.iter("failure"))
    assert all(f"row {name}: passed 9/9 -> 0/9" in text for name in _names(moved)), text
    page = (root / "r" / "report.html").read_text(encoding="utf-8")
    assert "Rows that moved most:" in page
    # Each row opens a typical run of it tonight: the question it was asked, the answer.
    assert "<summary>c27: passed 9/9 -&gt; 0/9</summary>" in page
    assert "What is the capital of Country27?" in page and "The capital is Nowhere." in page


def test_plan_counts_the_rows_times_n(planted: Any) -> None:
    _, _, plan, _, _, _ = planted
    assert plan.exit_code == 0, plan.output
    assert "capitals: a dataset: 30 rows x 3 runs = 90 runs per model" in plan.output


def test_a_night_like_the_baseline_names_no_rows(planted: Any) -> None:
    root = planted[0]
    with FakeEndpoint(responder=Capitals()) as ep:
        same = _run(ep, root, "same", "--baselines", str(root / "b"), "--no-history")
    assert same.exit_code == 0, same.output
    assert "rows that moved most" not in same.stdout


def test_a_row_the_endpoint_refused_every_run_of_is_named_and_left_out(planted: Any) -> None:
    # Before: "nothing flagged", no word of the row; and its baseline runs, kept alone,
    # moved the scenario's rate (a hard row gone read as an improvement, an easy one as a
    # regression that failed the night).
    root = planted[0]
    world = Capitals()

    def refusing(body: dict[str, Any], n: int) -> Any:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return Fault("503") if "Country5?" in user else world(body, n)

    with FakeEndpoint(responder=refusing) as ep:
        night = _run(ep, root, "filtered", "--baselines", str(root / "b"), "--no-history")
    assert night.exit_code == 0, night.output
    assert (
        "note: dataset scenario capitals [openai/fake]: row c05 not measured tonight (3 of 3 "
        "runs infra_error); its row was left out of the paired comparison, the baseline's "
        "runs too"
    ) in night.stderr


# ------------------------------------------------------------------------ frozen mode


FROZEN_SUITE = """\
format_version: 1
name: atlas
temperature: 0
scenarios:
  - id: capitals
    agent: runner_agents:plain_agent
    dataset: capitals.jsonl
    input: "What is the capital of {country}?"
    checks:
      answer_contains: ["{capital}"]
    tags: [frozen]
"""


def test_frozen_dataset_scenario_is_one_item_golden_and_recording_per_row(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = pytester.path / "suites"
    suites.mkdir()
    (suites / "atlas.yaml").write_text(FROZEN_SUITE, encoding="utf-8")
    write_jsonl(suites / "capitals.jsonl", countries(3))
    world = Capitals()
    with FakeEndpoint(responder=world) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        recorded = pytester.runpytest("-p", "no:cacheprovider", "suites", "--golden-record", "-v")
        recorded.assert_outcomes(passed=3)
        recorded.stdout.fnmatch_lines(["*atlas.yaml::capitals?c00? PASSED*"])
    goldens = suites / "goldens" / "atlas" / "capitals"
    assert sorted(p.name for p in goldens.iterdir()) == [
        f"c0{i}.{kind}json" for i in range(3) for kind in ("", "llm.")
    ]
    # Replay is offline, row by row; a row whose recording changes fails alone, by name.
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    replayed = pytester.runpytest("-p", "no:cacheprovider", "suites")
    replayed.assert_outcomes(passed=3)
    script = goldens / "c01.llm.json"
    script.write_text(script.read_text().replace("Capital1", "Nowhere"), encoding="utf-8")
    broken = pytester.runpytest("-p", "no:cacheprovider", "suites")
    broken.assert_outcomes(passed=2, failed=1)
    broken.stdout.fnmatch_lines(["*FAILED suites/atlas.yaml::capitals?c01?*"])
