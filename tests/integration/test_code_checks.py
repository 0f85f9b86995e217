"""Checks in code (``checks: code:``), end to end: in a live night through the CLI, and in
frozen mode through pytest. A check's bug is never the agent's failure; a score is a metric."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner, flagged, verdict_table
from fake_endpoint import FakeEndpoint, Reply
from runner_agents import write_suite

from evalrunner.core._scope import install
from evalrunner.live._results import ResultsDir

install()  # import and wrap litellm before pytester snapshots sys.modules

pytest_plugins = ["pytester"]

ANSWER = {"text": "The capital of France is Paris."}


def model(body: dict[str, Any], n: int) -> Reply:
    """Look up once, then answer with ANSWER's text."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return Reply(None, tool_calls=[("lookup", '{"country": "France"}')])
    return Reply(ANSWER["text"])


def scenario(sid: str, code: list[str], **checks: Any) -> dict[str, Any]:
    return {
        "id": sid,
        "agent": "baseline_agents:lookup_agent",
        "input": "What is the capital of France?",
        "tools": ["lookup"],
        "checks": {"code": [f"checks_for_tests:{c}" for c in code], **checks},
    }


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    write_suite(
        tmp_path,
        "coded",
        [
            scenario("scored", ["names_paris", "brevity", "sees_the_run", "buggy", "says_yes"]),
            scenario("cited", ["cites_a_source"]),
        ],
        timeout_s=30,
        concurrency=4,
        tolerance={"min_baseline_nights": 1, "gating": ["success_rate", "score"]},
    )
    ANSWER["text"] = "The capital of France is Paris."
    with FakeEndpoint(responder=model) as ep:

        def run(out: str, *args: str) -> Any:
            common = ["--suite", "coded", "--suites-dir", str(tmp_path), "--no-history"]
            return evalrunner(ep, "run", *common, "--out", out, "--runs", "6", *args)

        yield tmp_path, run, ep


def test_code_checks_judge_runs_and_a_broken_check_is_reported_once_not_counted(
    night: Any,
) -> None:
    root, run, _ = night
    result = run("n1", "--no-compare")
    assert result.exit_code == 0, result.output
    records = {r.run_id: r for r in ResultsDir(root / "n1").records()}
    scored = [r for r in records.values() if r.scenario == "scored"]
    assert [r.outcome for r in scored] == ["passed"] * 6
    for r in scored:
        assert r.checks == {"code:names_paris": True, "code:sees_the_run": True}
        assert r.scores == {"brevity": 1.0}
    # The checks that failed themselves: named once each for the night, with the traceback,
    # as the check's bug; the runs were judged without them.
    err = result.stderr
    assert err.count("code check buggy failed itself on scored/") == 1
    assert err.count("ValueError: the check's own bug") == 1
    assert err.count("code check says_yes failed itself on scored/") == 1
    # ...and then how many runs each left unjudged, so a check that never ran is not missed.
    assert "scenario scored: code check buggy failed itself on 6 runs in all" in err
    assert "returned str; a check returns True/False, a score in [0, 1]" in err
    # ...and the night's last line says so: "6 passed; nothing flagged" read as clean.
    (last,) = [line for line in err.splitlines() if line.startswith("night:")]
    assert (
        "; checks that failed themselves, their runs judged without them: scored: code "
        "check buggy (6 runs), scored: code check says_yes (6 runs)"
    ) in last, last
    cited = [r for r in records.values() if r.scenario == "cited"]
    assert {(r.outcome, r.reason) for r in cited} == {
        ("failed", "code:cites_a_source (no 'source:' in the answer)")
    }
    written = json.loads((root / "n1" / "runs" / "scored" / "openai_fake" / "0.json").read_text())
    assert written["record"]["scores"] == {"brevity": 1.0}


def test_a_check_that_failed_itself_is_in_the_report_not_only_the_terminal(night: Any) -> None:
    # The terminal said it once a night; the report (what a team reads) never did, while
    # the scenario showed 100 % passed: a check could check nothing for weeks unseen.
    root, _, ep = night
    common = ["--suite", "coded", "--suites-dir", str(root), "--out", "n1", "--runs", "6"]
    result = evalrunner(ep, "run", *common, "--history", str(root / "h"), "--no-compare")
    assert result.exit_code == 0, result.output
    made = evalrunner(ep, "report", "--history", str(root / "h"), "--out", str(root / "r"))
    assert made.exit_code == 0, made.output
    lines = [
        "scenario scored: code check buggy failed itself on 6 runs; they were judged without it",
        "scenario scored: code check says_yes failed itself on 6 runs; they were judged without it",
    ]
    summary = (root / "r" / "summary.md").read_text()
    html = (root / "r" / "report.html").read_text()
    junit = (root / "r" / "junit.xml").read_text()
    for line in lines:
        assert f"Warning: {line}." in summary.replace("\\", "")
        assert f"Warning: {line}." in html
        assert f"warning: {line}" in junit


def test_a_score_is_a_metric_compared_across_nights(night: Any) -> None:
    root, run, _ = night
    base = run("base", "--no-compare")
    assert base.exit_code == 0, base.output
    built = evalrunner(
        night[2], "baseline", "--suite", "coded", "--suites-dir", str(root), "--from", "base",
        "--baselines", str(root / "b"),
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    same = run("same", "--baselines", str(root / "b"))
    assert same.exit_code == 0, same.output
    assert ("scored", "score:brevity") not in flagged(verdict_table(same.stdout))
    ANSWER["text"] = "The capital of France is Paris, " + "a city on the Seine, " * 6
    longer = run("longer", "--baselines", str(root / "b"))
    assert longer.exit_code == 1, longer.output
    assert ("scored", "score:brevity") in flagged(verdict_table(longer.stdout))


@pytest.mark.parametrize(
    ("check", "said"),
    [
        ("no_such_check", "'checks_for_tests' has no attribute 'no_such_check'"),
        # It used to pass `validate` and fail as a bug of the check on every run.
        (
            "takes_nothing",
            "'checks_for_tests:takes_nothing' is takes_nothing(), which cannot be called "
            "as takes_nothing(run)",
        ),
    ],
)
def test_a_check_path_that_does_not_import_fails_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "bad", [scenario("s", [check])])
    with FakeEndpoint(responder=model) as ep:
        for args in (
            ("validate", str(tmp_path / "bad.yaml")),
            ("run", "--suite", "bad", "--suites-dir", str(tmp_path)),
        ):
            result = evalrunner(ep, *args)
            assert result.exit_code == 2, result.output
            assert "scenarios[0] (id 's').checks.code: " + said in result.output, result.output
    assert not ep.requests


SCENARIO_AGENTS = """
import litellm


def answer(task, ctx):
    response = litellm.completion(messages=[{"role": "user", "content": task}], **ctx.litellm_kwargs())
    return response.choices[0].message.content
"""

MY_CHECKS = """
from evalrunner import CheckResult


def echoes(run):
    return run.answer.startswith("echo:")


def cites(run):
    return CheckResult(passed=False, reason="no source cited")


def buggy(run):
    raise KeyError("oops")
"""

SUITE = """\
format_version: 1
name: demo
models: [openai/fake]
scenarios:
  - id: echoed
    agent: scenario_agents:answer
    input: Say hello.
    tags: [frozen]
    checks: {code: ['my_checks:echoes']}
  - id: cited
    agent: scenario_agents:answer
    input: Say hello.
    tags: [frozen]
    checks: {code: ['my_checks:cites']}
  - id: buggy
    agent: scenario_agents:answer
    input: Say hello.
    tags: [frozen]
    checks: {code: ['my_checks:buggy']}
"""


def test_frozen_scenarios_apply_their_code_checks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD", "EVALRUNNER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-not-a-secret")
    pytester.makepyfile(scenario_agents=SCENARIO_AGENTS, my_checks=MY_CHECKS)
    pytester.syspathinsert()
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "demo.yaml").write_text(SUITE)

    def echo(body: dict[str, Any], n: int) -> Reply:
        return Reply(f"echo: {body['messages'][-1]['content']}")

    with FakeEndpoint(responder=echo) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        recorded = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "suites", "--golden-record"
        )
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    recorded.assert_outcomes(passed=1, failed=2)
    replayed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "suites")
    replayed.assert_outcomes(passed=1, failed=2)
    text = replayed.stdout.str()
    assert "fails the scenario's check(s) code:cites (no source cited)" in text
    assert (
        "scenario buggy: code check buggy failed itself (the check's bug, not the agent's)" in text
    )
    assert "KeyError: 'oops'" in text


def test_a_check_that_never_returns_is_the_checks_bug_after_the_scenarios_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a sync check that waited forever held the night forever, without a line,
    # and the first Ctrl-C with it (the loop's shutdown waited for the check's thread).
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "hung", [scenario("s", ["hangs", "ahangs", "names_paris"])], timeout_s=5)
    with FakeEndpoint(responder=model) as ep:
        common = ["--suite", "hung", "--suites-dir", str(tmp_path), "--no-history"]
        result = evalrunner(ep, "run", *common, "--out", "n1", "--runs", "2", "--no-compare")
    assert result.exit_code == 0, result.output
    records = list(ResultsDir(tmp_path / "n1").records())
    assert [(r.outcome, r.checks) for r in records] == [("passed", {"code:names_paris": True})] * 2
    for name in ("hangs", "ahangs"):
        assert f"scenario s: code check {name} failed itself on 2 runs in all" in result.stderr
    assert result.stderr.count("did not return within 5 s (the scenario's timeout_s)") == 2
