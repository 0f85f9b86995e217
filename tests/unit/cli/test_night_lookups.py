"""`explain` and `compare` name what they could not find in a night, and how to finish one.

They used to answer a mistyped scenario or model, and an interrupted night with no
finished run, with "no scenario ... has a baseline" or "the two directories share
no scenario": true-sounding, and pointing the wrong way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalrunner.cli import main
from evalrunner.live._results import Manifest, ResultsDir
from evalrunner.suite._record import RunRecord

SUITE = """format_version: 1
name: demo
models: [openai/fake]
runs: 2
scenarios:
  - id: capital
    agent: evalrunner.examples:single_tool
    input: Capital of France?
"""


def night(root: Path, status: str, runs: int) -> Path:
    results = ResultsDir(root)
    ids = [f"capital/openai_fake/{i}" for i in range(2)]
    results.write_manifest(
        Manifest(
            suite="demo",
            models=["openai/fake"],
            runs={"capital": 2},
            scenarios={"capital": "f"},
            run_ids=ids,
            started_at="2026-12-01T02:00:00Z",
            status=status,  # type: ignore[arg-type]
            evalrunner_version="test",
        )
    )
    for i in range(runs):
        record = RunRecord(
            run_id=ids[i],
            suite="demo",
            scenario="capital",
            model="openai/fake",
            index=i,
            outcome="passed",
        )
        results.write_run(record, {"steps": []})
    return root


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "demo.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    night(tmp_path / "results" / "done", "finished", 2)
    night(tmp_path / "results" / "cut", "interrupted", 0)
    return tmp_path


def error_of(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("Error: ")]
    return line


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--scenario", "capitol", "has no runs of scenario 'capitol' (its scenarios: capital)"),
        ("--model", "openai/fak", "has no runs of model 'openai/fak' (its models: openai/fake)"),
    ],
)
def test_explain_names_a_scenario_or_model_the_night_did_not_run(
    project: Path, option: str, value: str, said: str
) -> None:
    line = error_of("explain", "--suite", "demo", "--results", "results/done", option, value)
    assert line == f"Error: results/done {said}"


@pytest.mark.parametrize("command", ["explain", "compare"])
def test_a_night_with_no_finished_run_says_how_to_finish_it(project: Path, command: str) -> None:
    args = ["--suite", "demo", "--results", "results/cut"]
    line = error_of(command, *(args if command == "explain" else ["results/done", "results/cut"]))
    assert line == (
        "Error: results/cut holds no finished run yet (its night is interrupted): finish it "
        "with evalrunner run --suite demo --out results/cut --resume"
    )
