"""What a night costs (issue 55): each run priced from the usage its endpoint reported, shown
in the night's table and last line, kept in the history, and compared as a metric.

Through the CLI against a loopback fake endpoint whose usage is known exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli, summary_table
from paths import REPO
from runner_agents import FAKE_MODEL, write_suite

from evalrunner.history._store import read_entries

SCENARIO = {
    "id": "s",
    "agent": "runner_agents:timed_agent",
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}
# The same task as a subprocess agent on the OpenAI SDK, through the night's capture proxy.
COMMAND = {
    "id": "s",
    "command": [
        sys.executable,
        str(REPO / "tests" / "support" / "sdk_agent_main.py"),
        "openai",
        "{task}",
    ],
    "env": {"PYTHONPATH": str(REPO / "tests" / "support")},
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}
# $1 per million prompt tokens, $2 per million completion tokens.
PRICING = {FAKE_MODEL: {"input_per_million": 1.0, "output_per_million": 2.0}}


def _usage(prompt: int) -> Any:
    def respond(body: dict[str, Any], n: int) -> Reply:
        return Reply("Paris.", prompt_tokens=prompt, completion_tokens=500)

    return respond


def _accept(suites: Path, suite: str) -> None:
    """`evalrunner baseline --from n1`: the night accepted as the suite's baselines."""
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    made = CliRunner().invoke(
        main, ["baseline", "--suites-dir", str(suites), "--suite", suite, "--from", "n1"]
    )
    assert made.exit_code == 0, made.output


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

    _accept(tmp_path, "costly")
    with FakeEndpoint(responder=_usage(2200)) as ep:
        dearer = cli(ep, tmp_path, "--suite", "costly", "--out", "n2", "--no-history", "--verbose")
    # The same answers at 2.2 times the prompt: $0.0032 a run against $0.002.
    rows = [line.split() for line in dearer.stdout.splitlines() if line.startswith("s ")]
    verdicts = {row[2]: row[4] for row in rows if len(row) > 4 and row[3] == "(diag)"}
    assert verdicts["cost_usd"] == "REGRESSION", dearer.stdout
    assert verdicts["prompt_tokens"] == "REGRESSION"
    # compare says what each side cost.
    both = CliRunner().invoke(main, ["compare", "n1", "n2"])
    assert "A: n1 (10 runs, $0.02; $0.002 a run)" in both.stdout, both.output
    assert "B: n2 (10 runs, $0.032; $0.0032 a run)" in both.stdout


def _budget_night(
    ep: FakeEndpoint, tmp_path: Path, suite: str, budget: str, *more: str
) -> tuple[Any, str]:
    night = cli(
        ep, tmp_path, "--suite", suite, "--out", "n1", "--history", "h", "--budget", budget, *more
    )
    return night, _night_line(night.stderr)


@pytest.mark.parametrize("path", ["in-process", "command"])
def test_a_budget_stops_the_night_within_a_batch_keeps_every_run_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """$0.002 a run against $0.01: five runs fit. The first two start before any cost is
    known (two at a time), then no run starts that would cross the budget."""
    monkeypatch.chdir(tmp_path)
    scenario = SCENARIO if path == "in-process" else COMMAND
    write_suite(
        tmp_path, "costly", [scenario], runs=20, concurrency=2, pricing=PRICING, timeout_s=30
    )
    with FakeEndpoint(responder=_usage(1000)) as ep:
        night, line = _budget_night(ep, tmp_path, "costly", "0.01")
        assert night.exit_code == 4, night.output
        assert line == (
            "night: 5 runs (5 passed), cost $0.01; budget: $0.01 of $0.01 spent, 5 of 20 runs "
            "done; the rest were not started (one more would have crossed it), and nothing was "
            f"compared. Next, to finish it: evalrunner run --suite costly --suites-dir {tmp_path} "
            "--out n1 --resume --budget USD"
        )
        assert len(list((tmp_path / "n1" / "runs").rglob("*.json"))) == 5  # each kept
        assert not Path("h").exists()  # an unfinished night is not history yet
        finished, line = _budget_night(ep, tmp_path, "costly", "1", "--resume")
    assert finished.exit_code == 0, finished.output
    assert line.startswith("night: 20 runs (20 passed), cost $0.04;")
    (entry,) = read_entries("h", suites=["costly"])
    assert len(entry.records) == 20 and len(ep.requests) == 20  # no run made twice


def test_a_budget_over_an_unpriced_model_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "free", [SCENARIO], runs=2)
    with FakeEndpoint(responder=_usage(1000)) as ep:
        night = cli(ep, tmp_path, "--suite", "free", "--out", "n1", "--budget", "1")
    assert night.exit_code == 2
    assert night.stderr.strip().splitlines()[-1] == (
        f"error: --budget: {FAKE_MODEL} is unpriced (not in litellm's price table), so what "
        "its runs spend cannot be counted; give it a pricing: entry in the suite (USD per "
        "million tokens, suites/README.md), or run without --budget"
    )
    assert ep.requests == []


def test_plan_prices_a_night_from_the_baselines_and_the_night_costs_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 55: `plan` in money, from the baselines' recorded cost per run, against what a
    night then spends (within 10 %; here the usage is the same, so to the cent)."""
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "costly", [SCENARIO], runs=10, pricing=PRICING)
    with FakeEndpoint(responder=_usage(1000)) as ep:
        assert (
            cli(ep, tmp_path, "--suite", "costly", "--out", "n1", "--history", "h").exit_code == 0
        )
        _accept(tmp_path, "costly")
        planned = CliRunner().invoke(
            main, ["plan", "--suites-dir", str(tmp_path), "--suite", "costly", "--history", "h"]
        )
        night = cli(ep, tmp_path, "--suite", "costly", "--out", "n2", "--no-history")
    assert planned.exit_code == 0, planned.output
    assert "; cost $0.02 -> $" in planned.stdout  # 10 runs at $0.002
    assert "at most $0.06 with every scenario escalated to its budget" in planned.stdout
    assert _night_line(night.stderr).startswith("night: 10 runs (10 passed), cost $0.02;")


def test_a_longer_system_prompt_flags_cost_usd_and_explain_names_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 55: a deliberate change that doubles the prompt is flagged as cost, on the CLI
    path, and `explain` names the cause: the system prompt that grew."""
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    monkeypatch.chdir(tmp_path)
    prompted = {**SCENARIO, "agent": "runner_agents:prompted_agent"}
    write_suite(
        tmp_path,
        "costly",
        [prompted],
        runs=10,
        pricing=PRICING,
        tolerance={"min_baseline_nights": 1},
    )

    def estimated(body: dict[str, Any], n: int) -> Reply:
        return Reply("Paris.", completion_tokens=5)  # prompt tokens: the messages' size

    with FakeEndpoint(responder=estimated) as ep:
        assert cli(ep, tmp_path, "--suite", "costly", "--out", "n1", "--no-history").exit_code == 0
        _accept(tmp_path, "costly")
        monkeypatch.setenv("AGENT_SYSTEM", "Answer briefly, and cite the atlas you used. " * 8)
        dearer = cli(ep, tmp_path, "--suite", "costly", "--out", "n2", "--no-history", "--verbose")
    rows = [line.split() for line in dearer.stdout.splitlines() if line.startswith("s ")]
    verdicts = {row[2]: row[4] for row in rows if len(row) > 4 and row[3] == "(diag)"}
    assert verdicts["cost_usd"] == "REGRESSION", dearer.stdout
    said = CliRunner().invoke(
        main,
        ["explain", "--suites-dir", str(tmp_path), "--suite", "costly", "--results", "n2"],
    )
    assert said.exit_code == 0, said.output
    assert "cause: request changed (system prompt, 1 line)" in said.stdout, said.stdout
    assert "+Answer briefly, and cite the atlas you used." in said.stdout


def test_plan_prices_baselines_recorded_before_runs_were_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline accepted before the suite priced its model: `plan` prices its runs' tokens
    at the price now, rather than say nothing (the example's baselines are such)."""
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "costly", [SCENARIO], runs=10)
    with FakeEndpoint(responder=_usage(1000)) as ep:
        assert (
            cli(ep, tmp_path, "--suite", "costly", "--out", "n1", "--history", "h").exit_code == 0
        )
    _accept(tmp_path, "costly")
    unpriced = ["plan", "--suites-dir", str(tmp_path), "--suite", "costly", "--history", "h"]
    assert (
        "cost unknown (some baseline runs are unpriced" in CliRunner().invoke(main, unpriced).stdout
    )
    write_suite(tmp_path, "costly", [SCENARIO], runs=10, pricing=PRICING)
    priced = CliRunner().invoke(main, unpriced)
    assert "; cost $0.02 -> $" in priced.stdout, priced.output
