"""`evalrunner run` ends with one line: what the night found and the command to run next."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli
from runner_agents import FAKE_KEY, write_suite

from evalrunner.cli._main import main
from evalrunner.live import ResultsDir

SCENARIO = {
    "id": "s",
    "agent": "runner_agents:timed_agent",
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}


def night_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith("night: ")]
    return line


def test_the_last_line_says_what_the_night_found_and_what_to_do_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "capitals", [SCENARIO], runs=12, tolerance={"min_baseline_nights": 1})
    answer = {"text": "Paris."}

    def respond(body: dict[str, Any], n: int) -> Reply:
        return Reply(answer["text"])

    def night(out: str) -> str:
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", out, "--no-history")
        return night_line(result.stderr)

    with FakeEndpoint(responder=respond) as ep:
        first = night("n1")
        assert first == (
            "night: 12 runs (12 passed); no baselines yet, so nothing was compared. Next, to "
            f"make this night the baseline: evalrunner baseline --suite capitals --suites-dir "
            f"{tmp_path} --from n1"
        )
        made = CliRunner().invoke(
            main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "capitals", "--from", "n1"]
        )
        assert made.exit_code == 0, made.output
        # The same night again: nothing flagged (a loaded machine's latency may escalate it).
        assert re.match(r"night: (\d+) runs \(\1 passed\); nothing flagged", night("n2"))
        answer["text"] = "Lima."  # the agent now gets it wrong every time
        flagged = night("n3")
    # Escalation added runs before it flagged: the count is the night's, whatever it came to.
    assert re.match(r"night: (\d+) runs \(\1 failed\); flagged: s success_rate", flagged)
    # A new baseline of nights that show the change, not the old one with this night in it.
    assert flagged.endswith(
        "if the change is intended, a new baseline from nights that show it: evalrunner "
        f"baseline --suite capitals --suites-dir {tmp_path} --from n3 [--from ANOTHER_NIGHT "
        "...] --scenario s (not --append: a baseline of both behaviours flags neither)"
    )


def _young_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: int) -> Any:
    """A baseline of one night (three are needed to gate), then a night on which the agent
    gets every answer wrong."""
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "capitals", [SCENARIO], runs=runs)
    answer = {"text": "Paris."}

    def respond(body: dict[str, Any], n: int) -> Reply:
        return Reply(answer["text"])

    with FakeEndpoint(responder=respond) as ep:
        cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
        made = CliRunner().invoke(
            main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "capitals", "--from", "n1"]
        )
        assert made.exit_code == 0, made.output
        answer["text"] = "Lima."
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n2", "--no-history")
    assert result.exit_code == 0, "a young baseline does not gate"
    return result


def test_a_change_every_run_showed_on_a_young_baseline_is_named_not_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # N = 3: 3/3 -> 0/3 cannot be confirmed, but the night must not read as if nothing
    # happened.
    result = _young_night(tmp_path, monkeypatch, 3)
    line = night_line(result.stderr)
    assert "nothing could fail tonight: every baseline is too young to gate" in line
    assert "changed but unconfirmed (every run moved): s success_rate, " in line, line
    assert re.search(r"s +openai/fake +success_rate \(young\) +unconfirmed", result.stdout)
    # What "accept more nights" is, as a command (before: no command, a review).
    assert (
        "note: baselines too young to gate: 1; accept nights that behaved as intended into "
        f"them with evalrunner baseline --suite capitals --suites-dir {tmp_path} --from NIGHT "
        "--scenario s --append "
        "(tonight's: --from n2)"
    ) in result.stderr


def test_a_regression_against_a_young_baseline_is_named_in_the_last_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # N = 10: 10/10 -> 0/10 is a REGRESSION (young) in the table, and the last line read
    # "nothing flagged" without naming it (review 4, defect 1).
    result = _young_night(tmp_path, monkeypatch, 10)
    assert re.search(r"s +openai/fake +success_rate \(young\) +REGRESSION", result.stdout)
    line = night_line(result.stderr)
    assert (
        "flagged against baselines too young to gate (not failing the night): s success_rate"
        in line
    ), line


def test_a_night_whose_baselines_are_all_for_another_configuration_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "no baselines yet", below a note naming the baseline it did not use.
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "capitals", [SCENARIO], runs=3, tolerance={"min_baseline_nights": 1})
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
        made = CliRunner().invoke(
            main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "capitals", "--from", "n1"]
        )
        assert made.exit_code == 0, made.output
        edited = {**SCENARIO, "input": "Capital of Peru?"}  # a new configuration
        write_suite(tmp_path, "capitals", [edited], runs=3, tolerance={"min_baseline_nights": 1})
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n2", "--no-history")
    assert "not compared, the scenario's configuration changed" in result.stderr
    assert night_line(result.stderr) == (
        "night: 3 runs (3 passed); nothing was compared: 1 baseline(s) are for another model or "
        "configuration (the notes above name them). Next, to make this night the baseline: "
        f"evalrunner baseline --suite capitals --suites-dir {tmp_path} --from n2"
    )


@pytest.mark.parametrize(
    ("status", "advice"),
    [("401", "check the model's API key"), ("404", "check the model name and api_base")],
)
def test_a_night_the_endpoint_refused_is_an_outage_whose_next_step_is_what_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str, advice: str
) -> None:
    # A rotated key or a renamed model: every run was `crashed`, every scenario a
    # regression, and the last line advised making that night the baseline.
    from fake_endpoint import Fault

    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "capitals", [SCENARIO], runs=3)
    with FakeEndpoint(default=Fault(status, message="no such key or model")) as ep:
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
    assert result.exit_code == 3, result.output
    assert night_line(result.stderr) == (
        f"night: 3 runs (3 infra_error); an outage, so nothing was compared. Next: {advice}."
    )


def test_a_flagged_night_also_names_the_scenarios_it_measured_nothing_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The line named the flags only: a scenario whose every run failed at the endpoint
    # (and changes it could not confirm) went unsaid beside them.
    from fake_endpoint import Fault

    monkeypatch.chdir(tmp_path)
    peru = {**SCENARIO, "id": "p", "input": "Capital of Peru?", "checks": {}}
    write_suite(
        tmp_path,
        "capitals",
        [SCENARIO, peru],
        runs=6,
        retry={"max_attempts": 1},
        tolerance={"min_baseline_nights": 1},
    )
    night = {"n": 1}

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        if night["n"] == 1:
            return Reply("Paris.")
        asked = " ".join(str(m.get("content")) for m in body["messages"])
        return Fault("503") if "Peru" in asked else Reply("Lima.")

    with FakeEndpoint(responder=respond) as ep:
        cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
        made = CliRunner().invoke(
            main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "capitals", "--from", "n1"]
        )
        assert made.exit_code == 0, made.output
        night["n"] = 2
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n2", "--no-history")
    line = night_line(result.stderr)
    assert "; flagged: s success_rate" in line, line
    assert (
        "; 1 scenario × model with no run measured tonight (every run infra_error: the "
        "endpoint failed). Next: evalrunner report"
    ) in line, line


def _night_given_no_api_base(tmp_path: Path, key: str | None) -> Any:
    """A one-run outage night of openai/fake given no api_base, with ``key`` (or none): its
    calls go to OPENAI_BASE_URL's dead loopback port, as no test may leave the machine."""
    write_suite(tmp_path, "capitals", [SCENARIO], runs=1, retry={"max_attempts": 1})
    env = {
        "EVALRUNNER_API_BASE": None,
        "EVALRUNNER_MODEL": None,
        "OPENAI_API_KEY": key,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    args = ["run", "--suites-dir", str(tmp_path), "--suite", "capitals", "--out", "n1"]
    result = CliRunner().invoke(main, [*args, "--no-history"], env=env, catch_exceptions=False)
    assert result.exit_code == 3, result.output
    return result


def test_a_night_whose_calls_had_no_api_base_names_where_they_went_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forgetting EVALRUNNER_API_BASE: the calls went to the provider's default, and the
    # reason named no URL and the last line no variable (a review).
    monkeypatch.chdir(tmp_path)
    result = _night_given_no_api_base(tmp_path, FAKE_KEY)
    # The night's line is the last, after the outage's own.
    assert (
        result.stderr.splitlines()[-1]
        == night_line(result.stderr)
        == (
            "night: 1 runs (1 infra_error); an outage, so nothing was compared. Next: check the "
            "model endpoint (calls given no api_base went where litellm sends them by default; "
            "EVALRUNNER_API_BASE=http://HOST:PORT/v1 sends openai/ models to a server of your own)."
        )
    )
    [record] = ResultsDir(tmp_path / "n1").records()
    assert (record.reason or "").startswith(
        "InternalServerError (connection error) from openai/fake at http://127.0.0.1:9/v1 "
        "(given no api_base): "
    ), record.reason


def test_a_night_with_no_key_to_send_says_so_not_http_500_and_keeps_the_hint_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "InternalServerError (HTTP 500) ... (check the model's API key; )": litellm
    # calls the client's refusal a 500, and the progress line cut the hint (a review).
    monkeypatch.chdir(tmp_path)
    result = _night_given_no_api_base(tmp_path, None)
    assert result.stderr.splitlines()[-1].endswith("Next: check the model's API key.")
    [record] = ResultsDir(tmp_path / "n1").records()
    reason = record.reason or ""
    assert reason.startswith("InternalServerError (no API key) from openai/fake at "), reason
    hint = "(check the model's API key; the client had no API key to send, no model answered)"
    assert reason.endswith(hint), reason
    [progress] = [line for line in result.stderr.splitlines() if line.startswith("[1/1]")]
    assert progress.endswith(hint + ")"), progress


def test_a_night_whose_every_run_crashed_is_not_offered_as_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "... Next, to make this night the baseline: evalrunner baseline --from ...",
    # a night of nothing but the agent's own bug (a review).
    monkeypatch.chdir(tmp_path)
    crashing = {**SCENARIO, "agent": "runner_agents:crashing_agent"}
    write_suite(tmp_path, "capitals", [crashing], runs=3)
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
    assert result.exit_code == 1, result.output
    assert (
        result.stderr.splitlines()[-1]
        == night_line(result.stderr)
        == (
            "night: 3 runs (3 crashed); every run crashed (the CRASHED sections above say where). "
            "Next: fix the agent and run the night again."
        )
    )


def test_a_first_night_of_many_scenarios_says_they_have_no_baseline_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a note per scenario × model, 80 of them on a big suite's first night (a review).
    monkeypatch.chdir(tmp_path)
    scenarios = [{**SCENARIO, "id": f"s{i}"} for i in range(5)]
    write_suite(tmp_path, "capitals", scenarios, runs=1)
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        result = cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--no-history")
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: 5 scenario × models have no baseline under {Path('baselines') / 'capitals'}/ "
        "(s0 [openai/fake], s1 [openai/fake], s2 [openai/fake] and 2 more); create them from a "
        f"night that ran them with evalrunner baseline --suite capitals --suites-dir {tmp_path} "
        "--from n1, or with a night of their own: evalrunner baseline --suite capitals "
        f"--suites-dir {tmp_path}"
    ], notes
    assert night_line(result.stderr).endswith(
        f"evalrunner baseline --suite capitals --suites-dir {tmp_path} --from n1"
    )


def test_the_commands_a_night_suggests_carry_the_locations_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "evalrunner baseline --suite capitals --from n1" after a night run with
    # --baselines elsewhere, which accepted the night into ./baselines, not the ones compared.
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "capitals", [SCENARIO], runs=3)
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        result = cli(
            ep,
            tmp_path,
            "--suite",
            "capitals",
            "--out",
            "n1",
            "--no-history",
            "--baselines",
            "team baselines",
        )
    said = (
        f"evalrunner baseline --suite capitals --suites-dir {tmp_path} --baselines 'team baselines'"
    )
    assert night_line(result.stderr).endswith(f"{said} --from n1")
    (note,) = [line for line in result.stderr.splitlines() if "no baseline at" in line]
    assert f"{said} --from n1 --scenario s" in note
