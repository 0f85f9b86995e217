"""``evalrunner explain`` on the nights a suite that evolved over weeks leaves: a code check
whose body changed, a scenario whose configuration changed since its baseline, a night of
models no baseline is for, and a night that was never finished.

Each used to read as something else: "none found" for a check that now fails every run,
a diff against a baseline the night itself refused, a click usage block, and an interrupted
night explained as if it were whole.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner
from click.testing import Result
from fake_endpoint import FakeEndpoint, Reply
from runner_agents import write_suite

from evalrunner.live._results import ResultsDir

SUITE = "agent"
CHECKS = "explain_city_checks"  # a module of the project's own, as a user's my_checks.py
CHECK = """from evalrunner import CheckInput, CheckResult


def mentions_city(run: CheckInput) -> CheckResult:
    held = {city!r} in (run.answer or "").lower()
    return CheckResult(passed=held, reason=None if held else "no city named")
"""


def model(body: dict[str, Any], n: int) -> Reply:
    """Look up once, then answer: the same model every night."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return Reply(None, tool_calls=[("lookup", '{"country": "France"}')])
    return Reply("The capital of France is Paris.")


def write_agent_suite(root: Path, population_input: str) -> None:
    scenarios = [
        {
            "id": "forecast",
            "agent": "baseline_agents:lookup_agent",
            "input": "[forecast] What is the capital of France?",
            "tools": ["lookup"],
            "checks": {"code": [f"{CHECKS}:mentions_city"]},
        },
        {
            "id": "population",
            "agent": "baseline_agents:lookup_agent",
            "input": population_input,
            "tools": ["lookup"],
            "checks": {"answer_contains": ["Paris"]},
        },
    ]
    write_suite(
        root, SUITE, scenarios, concurrency=8, timeout_s=30, tolerance={"min_baseline_nights": 1}
    )


def write_check(root: Path, city: str) -> None:
    (root / f"{CHECKS}.py").write_text(CHECK.format(city=city), encoding="utf-8")
    sys.modules.pop(CHECKS, None)  # the next night imports the check as the file now says


@dataclass
class Project:
    ep: FakeEndpoint
    root: Path

    def cli(self, *args: str) -> Result:
        return evalrunner(self.ep, *args, "--suite", SUITE, "--suites-dir", str(self.root))

    def explain(self, results: Path | str, *args: str) -> Result:
        return self.cli("explain", "--results", str(results), *args)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A suite with its baselines accepted from one night (results/base)."""
    root = tmp_path_factory.mktemp("evolved")
    write_agent_suite(root, "[population] What is the capital of France?")
    write_check(root, "paris")
    with FakeEndpoint(responder=model) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # relative paths, as the user types them: results/n33, baselines/agent
        lab = Project(ep, root)
        base = lab.cli("run", "--out", "results/base", "--runs", "9", "--no-compare")
        assert base.exit_code == 0, base.output
        accepted = lab.cli("baseline", "--from", "results/base")
        assert accepted.exit_code == 0, accepted.output
        yield lab
    sys.modules.pop(CHECKS, None)


@pytest.fixture(scope="module")
def n33(project: Project) -> Result:
    """The night after the check's body and population's input changed."""
    write_check(project.root, "lyon")  # the check's body, not its name: the fingerprint holds
    write_agent_suite(project.root, "[population] Name the capital of France.")
    return project.cli("run", "--out", "results/n33", "--runs", "9", "--no-history")


def test_a_check_that_moved_on_runs_like_the_baseline_is_named_by_explain_and_the_night(
    project: Project, n33: Result
) -> None:
    # It read "cause: none found (the first request, the tools' answers and the runs'
    # actions are as in the baseline)" while success_rate fell 9/9 -> 0/9.
    records = ResultsDir(project.root / "results/n33").records()
    ran = sum(r.scenario == "forecast" for r in records)  # 9, or more where the night escalated
    cause = (
        f'cause: check code:mentions_city: passed 9/9 in the baseline, 0/{ran} tonight ("no '
        "city named\"); the agent's runs are as in the baseline, so the check itself may have "
        "changed"
    )
    said = project.explain("results/n33", "--scenario", "forecast")
    assert said.exit_code == 0, said.output
    assert said.stdout == f"forecast × openai/fake: {cause}\n"
    assert n33.exit_code == 1, n33.output
    assert f"forecast × openai/fake: {cause}" in n33.stdout.splitlines()


def test_a_baseline_the_night_did_not_compare_is_said_to_be_for_another_configuration(
    project: Project, n33: Result
) -> None:
    # The night: "not compared, the scenario's configuration changed since ... was recorded";
    # explain diffed against that baseline all the same, and said nothing of it.
    before = json.loads((project.root / "baselines/agent/population--openai_fake.json").read_text())
    tonight = ResultsDir(project.root / "results/n33").read_manifest().scenarios["population"]
    assert before["fingerprint"] != tonight
    assert "population [openai/fake]: not compared, the scenario's configuration changed" in (
        n33.stderr
    )
    said = project.explain("results/n33", "--scenario", "population")
    assert said.exit_code == 0, said.output
    lines = said.stdout.splitlines()
    assert lines[:3] == [
        f"population × openai/fake: its baseline is for another configuration (fingerprint "
        f"{before['fingerprint']} -> {tonight}), so the night did not compare it; refresh it "
        f"with: evalrunner baseline --suite agent --suites-dir {project.root} --scenario "
        "population --model openai/fake",
        "  against that baseline all the same: cause: request changed (first user message, 1 line)",
        "    request: first user message, 1 line",
    ]
    # The diff is still shown, under that heading.
    assert "      +[population] Name the capital of France." in lines[3:]


def test_a_night_of_models_no_baseline_is_for_is_one_line_naming_them_and_the_next_command(
    project: Project,
) -> None:
    # It was click's usage block ("Usage: evalrunner explain [OPTIONS]" ... "Error: no
    # scenario of results/n23 has a baseline under baselines/agent"), models unnamed.
    night = project.cli(
        "run", "--out", "results/n23", "--runs", "2", "--model", "openai/new", "--no-history"
    )
    assert night.exit_code == 0, night.output
    said = project.explain("results/n23", "--no-diff")
    assert said.exit_code == 2, said.output
    assert said.stdout == ""
    assert said.stderr == (
        "error: no scenario of results/n23 has a baseline under baselines/agent for "
        "openai/new, the model it ran; the baselines there are for openai/fake (explain a "
        "night of that model instead), or accept nights of openai/new first: evalrunner "
        f"baseline --suite agent --suites-dir {project.root} --model openai/new\n"
    )
    # With no baseline at all, the command that makes one.
    empty = project.explain("results/n23", "--baselines", str(project.root / "none"))
    assert empty.exit_code == 2, empty.output
    assert empty.stderr == (
        f"error: no scenario of results/n23 has a baseline under {project.root / 'none/agent'}; "
        f"accept nights first: evalrunner baseline --suite agent --suites-dir {project.root} "
        f"--baselines {project.root / 'none'} --model openai/new\n"
    )


def test_an_unfinished_night_says_so_as_compare_does_and_names_what_it_left_out(
    project: Project, n33: Result
) -> None:
    # Explained as if whole: population, which ran nothing, was left out unsaid.
    night = Path(shutil.copytree(project.root / "results/n33", project.root / "results/int1"))
    manifest = json.loads((night / "manifest.json").read_text())
    (night / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    for record in ResultsDir(night).records():
        if record.scenario == "population":
            ResultsDir(night).run_path(record.run_id).unlink()
    compared = evalrunner(project.ep, "compare", "results/base", "results/int1")
    assert compared.exit_code in (0, 1), compared.output
    [compare_note] = [x for x in compared.stderr.splitlines() if "unfinished" in x]
    said = project.explain("results/int1")
    assert said.exit_code == 0, said.output
    # One note, its own verb, and the suites directory explain was given in its command.
    own = compare_note.replace(": compared on ", ": explained on ").replace(
        "--suite agent ", f"--suite agent --suites-dir {project.root} "
    )
    assert said.stderr.splitlines() == [
        own,
        "note: no run of population [openai/fake] has finished yet: not explained",
    ]
    assert compare_note == (
        "note: results/int1 is an unfinished night (its status is interrupted): compared on "
        "the runs it holds; finish it with evalrunner run --suite agent --out results/int1 "
        "--resume"
    )
    assert [x.split(":")[0] for x in said.stdout.splitlines()] == ["forecast × openai/fake"]
