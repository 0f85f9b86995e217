"""A judge check (``checks: judge:``) end to end against a fake judge endpoint: in a live night
through the CLI and in frozen mode through pytest. Its calls are never the agent's, a judge
endpoint that fails is an infrastructure fault, a judge answer without a grade is the judge's
bug, and its disagreement with itself is measured."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner
from click.testing import CliRunner
from fake_endpoint import Entry, FakeEndpoint, Fault, Reply
from runner_agents import write_suite

from evalrunner.cli._main import main
from evalrunner.core._scope import install
from evalrunner.live._results import ResultsDir

install()  # import and wrap litellm before pytester snapshots sys.modules

pytest_plugins = ["pytester"]


@dataclass
class World:
    """The agent's model answers ``answer``; the judge (its system prompt) grades it."""

    answer: str = "The capital of France is Paris."
    judge: str = "fair"  # fair | noisy | mute | down
    judge_models: list[str] = field(default_factory=list)
    agent_calls: int = 0
    graded: int = 0

    def __call__(self, body: dict[str, Any], n: int) -> Entry:
        first = body["messages"][0]
        if first["role"] == "system" and first["content"].startswith("You grade one answer"):
            self.judge_models.append(body["model"])
            self.graded += 1
            if self.judge == "down":
                return Fault("503")
            if self.judge == "mute":
                return Reply("I would rather not say.")
            said = body["messages"][1]["content"].split("The agent's answer:\n", 1)[1]
            score = 1.0 if "Paris" in said else 0.0
            if self.judge == "noisy" and self.graded % 2:
                score = 1.0 - score
            return Reply(
                json.dumps({"score": score, "reason": "names Paris" if score else "no Paris"})
            )
        self.agent_calls += 1
        return Reply(self.answer)


JUDGE = {"rubric": "Names Paris as the capital of France.", "model": "openai/judge"}


def scenario(**judge: Any) -> dict[str, Any]:
    return {
        "id": "graded",
        "agent": "runner_agents:plain_agent",
        "input": "What is the capital of France?",
        "checks": {"judge": {**JUDGE, **judge}},
    }


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    write_suite(
        tmp_path,
        "judged",
        [scenario()],
        timeout_s=30,
        retry={"max_attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.02},
        tolerance={"min_baseline_nights": 1},
    )
    world = World()
    with FakeEndpoint(responder=world) as ep:

        def run(out: str, *args: str) -> Any:
            common = ["--suite", "judged", "--suites-dir", str(tmp_path), "--no-history"]
            return evalrunner(
                ep, "run", *common, "--out", str(tmp_path / out), "--runs", "6", *args
            )

        def cli(*args: str) -> Any:
            return evalrunner(ep, *args, "--suite", "judged", "--suites-dir", str(tmp_path))

        yield tmp_path, run, world, cli


def test_the_judge_grades_each_answer_apart_from_the_agents_calls(night: Any) -> None:
    root, run, world, _ = night
    result = run("n1", "--no-compare")
    assert result.exit_code == 0, result.output
    records = ResultsDir(root / "n1").records()
    assert [r.outcome for r in records] == ["passed"] * 6
    for r in records:
        assert r.checks["judge"] is True and r.scores == {"judge": 1.0}
        assert r.judge_grades == [1.0, 1.0] and r.judge_agreed is True
        # The judge's two calls are not the agent's: one model call, its tokens only.
        assert r.llm_calls == 1 and r.step_count == 3
    assert world.agent_calls == 6 and world.graded == 12
    assert set(world.judge_models) == {"judge"}  # the judge's own model, not the agent's
    for path in (root / "n1" / "runs").rglob("*.json"):
        assert "You grade one answer" not in path.read_text(encoding="utf-8")
    assert "graded × openai/fake: its grades of one answer disagreed on 0 of 6 runs" in (
        result.output
    )


def test_a_failing_grade_fails_the_run_with_the_judges_reason(night: Any) -> None:
    root, run, world, _ = night
    world.answer = "The capital of France is Lyon."
    result = run("n1", "--no-compare")
    assert result.exit_code == 0, result.output
    (first, *_) = ResultsDir(root / "n1").records()
    assert first.outcome == "failed" and first.checks["judge"] is False
    assert first.reason == "judge (grade 0.00 < 0.5: no Paris)"


def test_a_judge_endpoint_that_fails_is_infra_not_the_agents_failure(night: Any) -> None:
    root, run, world, _ = night
    world.judge = "down"
    result = run("n1", "--no-compare")
    assert result.exit_code == 3, result.output  # every run unjudged: an outage
    records = ResultsDir(root / "n1").records()
    assert {r.outcome for r in records} == {"infra_error"}
    assert all(
        re.match(r"judge openai/judge unreachable: .*503", r.reason or "") for r in records
    ), records[0].reason
    assert "Traceback" not in result.output


def test_a_judge_answer_without_a_grade_is_the_judges_bug_reported_once(night: Any) -> None:
    root, run, world, _ = night
    world.judge = "mute"
    result = run("n1", "--no-compare")
    assert result.exit_code == 0, result.output
    assert result.output.count("the judge failed itself on graded/") == 1
    # A judge that never graded does not pass for one that did.
    assert "scenario graded: the judge failed itself on 6 runs in all" in result.output
    assert "the judge's answer holds no grade: 'I would rather not say.'" in result.output
    records = ResultsDir(root / "n1").records()
    assert [r.outcome for r in records] == ["passed"] * 6  # judged without it
    assert all("judge" not in r.checks for r in records)


def test_a_judge_that_starts_disagreeing_with_itself_is_flagged_as_the_judge(night: Any) -> None:
    root, run, world, cli = night
    base = run("base", "--no-compare", "--runs", "20")
    assert base.exit_code == 0, base.output
    accepted = cli("baseline", "--from", str(root / "base"), "--baselines", str(root / "b"))
    assert accepted.exit_code == 0, accepted.output
    world.judge = "noisy"  # half its grades flip: the agent's answers are the same
    moved = run("n2", "--baselines", str(root / "b"), "--runs", "20")
    lines = {
        (row.split()[0], row.split()[2]): row
        for row in moved.stdout.splitlines()
        if row.startswith("graded ")
    }
    assert "REGRESSION" in lines[("graded", "judge_agreement")], moved.stdout
    assert "REGRESSION" in lines[("graded", "score:judge")]
    # Said as the judge's doing: its grades of one answer disagree where they did not (on
    # the runs the night made: escalation follows the gating metrics, not the judge's).
    assert re.search(r"disagreed on [1-9]\d* of \d+ runs \(metric judge_agreement\)", moved.output)


# ------------------------------------------------------------------------ frozen mode

FROZEN = """\
format_version: 1
name: judged
temperature: 0
retry: {max_attempts: 2, backoff_s: 0.01, max_backoff_s: 0.02}
scenarios:
  - id: graded
    agent: runner_agents:plain_agent
    input: What is the capital of France?
    tags: [frozen]
    checks:
      judge: {rubric: 'RUBRIC', model: openai/judge}
"""


def frozen_project(pytester: pytest.Pytester, rubric: str = "Names Paris.") -> Path:
    suites = pytester.path / "suites"
    suites.mkdir(exist_ok=True)
    (suites / "judged.yaml").write_text(FROZEN.replace("RUBRIC", rubric), encoding="utf-8")
    return suites / "goldens" / "judged"


def record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, world: World
) -> pytest.RunResult:
    """``pytest suites --golden-record`` in the project, every model at a fake endpoint."""
    with FakeEndpoint(responder=world) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        return pytester.runpytest("-p", "no:cacheprovider", "suites", "--golden-record")


def test_frozen_mode_records_the_judge_apart_and_replays_it_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    goldens = frozen_project(pytester)
    world = World()
    recorded = record(pytester, monkeypatch, world)
    recorded.assert_outcomes(passed=1)
    assert sorted(p.name for p in goldens.iterdir()) == [
        "graded.json",
        "graded.judge.json",
        "graded.llm.json",
    ]
    assert "You grade one answer" not in (goldens / "graded.llm.json").read_text()
    assert world.graded == 2
    # Replay: offline, the judge's answers from its own recording.
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    pytester.runpytest("-p", "no:cacheprovider", "suites").assert_outcomes(passed=1)
    # A changed rubric is a grading request nobody recorded: said, with the fix.
    frozen_project(pytester, rubric="Names Paris, and only Paris.")
    changed = pytester.runpytest("-p", "no:cacheprovider", "suites")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        ["*graded.judge.json: no recorded judge answer for this grading request*"]
    )
    changed.stdout.fnmatch_lines(["*pytest --golden-record*"])


def test_frozen_mode_says_a_failing_judge_is_the_judge(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen_project(pytester)
    world = World(judge="down")
    down = record(pytester, monkeypatch, world)
    down.assert_outcomes(failed=1)
    down.stdout.fnmatch_lines(
        ["*the judge's endpoint openai/judge failed (an infrastructure fault, not the agent's)*"]
    )
    wrong = record(pytester, monkeypatch, World(answer="It is Lyon."))
    wrong.assert_outcomes(failed=1)
    wrong.stdout.fnmatch_lines(
        ["*fails the scenario's check(s) judge (grade 0.00 < 0.5: no Paris)*"]
    )


def test_a_judge_model_litellm_cannot_resolve_is_one_line_before_any_run(night: Any) -> None:
    root, run, world, _ = night
    write_suite(root, "judged", [scenario(model="nope")], timeout_s=30)
    said = "judged.yaml:21: scenarios[0] (id 'graded').checks.judge.model: unknown model 'nope'"
    checked = CliRunner().invoke(main, ["validate", str(root / "judged.yaml")])
    assert checked.exit_code == 2 and said in checked.output, checked.output
    ran = run("n1", "--no-compare", "--model", "openai/fake")
    assert ran.exit_code == 2 and said in ran.output, ran.output
    assert world.agent_calls == 0


def test_the_judge_s_calls_are_priced_apart_from_the_agent_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 55: what grading cost is kept beside what the agent cost, never in it."""
    monkeypatch.chdir(tmp_path)
    pricing = {
        "openai/fake": {"input_per_million": 1.0, "output_per_million": 2.0},
        "openai/judge": {"input_per_million": 10.0, "output_per_million": 20.0},
    }
    write_suite(tmp_path, "judged", [scenario()], timeout_s=30, pricing=pricing)
    with FakeEndpoint(responder=World()) as ep:
        result = evalrunner(
            ep,
            "run",
            "--suite",
            "judged",
            "--suites-dir",
            str(tmp_path),
            "--no-history",
            "--no-compare",
            "--out",
            "n1",
            "--runs",
            "2",
        )
    assert result.exit_code == 0, result.output
    for r in ResultsDir(tmp_path / "n1").records():
        agent = (r.prompt_tokens * 1.0 + r.completion_tokens * 2.0) / 1e6
        assert r.cost_usd is not None and abs(r.cost_usd - agent) < 1e-8
        # Two grading calls at ten times the agent's price: dearer than the agent's one call.
        assert r.judge_cost_usd is not None and r.judge_cost_usd > r.cost_usd
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("night: ")]
    assert re.match(
        r"night: 2 runs \(2 passed\), cost \$[0-9.]+ \(and the judge's \$[0-9.]+\)", line
    )
