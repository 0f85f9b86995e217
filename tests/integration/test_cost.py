"""What a night costs (issue 55): each run priced from the usage its endpoint reported, shown
in the night's table and last line, kept in the history, and compared as a metric.

Through the CLI against a loopback fake endpoint whose usage is known exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli, summary_table
from runner_agents import FAKE_MODEL, write_suite

from evalrunner.history._store import read_entries

SCENARIO = {
    "id": "s",
    "agent": "runner_agents:timed_agent",
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}
# $1 per million prompt tokens, $2 per million completion tokens.
PRICING = {FAKE_MODEL: {"input_per_million": 1.0, "output_per_million": 2.0}}


def _usage(prompt: int) -> Any:
    def respond(body: dict[str, Any], n: int) -> Reply:
        return Reply("Paris.", prompt_tokens=prompt, completion_tokens=500)

    return respond


def _night_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith("night: ")]
    return line


def test_a_priced_night_shows_its_cost_in_the_table_the_last_line_and_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "costly", [SCENARIO], runs=4, pricing=PRICING)
    with FakeEndpoint(responder=_usage(1000)) as ep:
        night = cli(ep, tmp_path, "--suite", "costly", "--out", "n1", "--history", "h")
    assert night.exit_code == 0, night.output
    # 4 runs x (1,000 x $1 + 500 x $2) per million = 4 x $0.002.
    assert summary_table(night.stdout)["s"][-5] == "$0.008"
    assert _night_line(night.stderr).startswith("night: 4 runs (4 passed), cost $0.008;")
    assert "unpriced" not in night.stdout
    (entry,) = read_entries("h", suites=["costly"])
    assert [r.cost_usd for r in entry.records] == [0.002] * 4


def test_an_unpriced_model_says_so_with_the_fix_never_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "free", [SCENARIO], runs=2)
    with FakeEndpoint(responder=_usage(1000)) as ep:
        night = cli(ep, tmp_path, "--suite", "free", "--out", "n1", "--history", "h")
    assert night.exit_code == 0, night.output
    assert "unpriced" in summary_table(night.stdout)["s"]
    assert (
        f"cost: unpriced for {FAKE_MODEL} (not in litellm's price table): give each a "
        "pricing: entry in the suite, USD per million tokens (suites/README.md)"
    ) in night.stdout.splitlines()
    assert "cost" not in _night_line(night.stderr)
    (entry,) = read_entries("h", suites=["free"])
    assert [r.cost_usd for r in entry.records] == [None, None]


def test_a_change_that_doubles_the_prompt_flags_cost_usd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(
        tmp_path,
        "costly",
        [SCENARIO],
        runs=10,
        pricing=PRICING,
        tolerance={"min_baseline_nights": 1},
    )
    with FakeEndpoint(responder=_usage(1000)) as ep:
        first = cli(ep, tmp_path, "--suite", "costly", "--out", "n1", "--no-history")
    assert first.exit_code == 0, first.output
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    made = CliRunner().invoke(
        main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "costly", "--from", "n1"]
    )
    assert made.exit_code == 0, made.output
    with FakeEndpoint(responder=_usage(2200)) as ep:
        dearer = cli(ep, tmp_path, "--suite", "costly", "--out", "n2", "--no-history", "--verbose")
    # The same answers at 2.2 times the prompt: $0.0032 a run against $0.002.
    rows = [line.split() for line in dearer.stdout.splitlines() if line.startswith("s ")]
    verdicts = {row[2]: row[4] for row in rows if len(row) > 4 and row[3] == "(diag)"}
    assert verdicts["cost_usd"] == "REGRESSION", dearer.stdout
    assert verdicts["prompt_tokens"] == "REGRESSION"
