"""`evalrunner init --workflows`: pinning the action rewrites the workflows, not the team's suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalrunner.cli import main

PIN = "OWNER/evalrunner@" + "0" * 40


def test_pinning_the_action_rewrites_the_workflows_and_keeps_the_suite_and_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the documented pin command (init --force --action ...) replaced the suite
    # and agent the team had written since with the scaffold's.
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["init"]).exit_code == 0
    suite, agent = tmp_path / "suites" / "agent.yaml", tmp_path / "evalrunner_agent.py"
    suite.write_text(suite.read_text() + "# the team's scenarios\n")
    agent.write_text("# the team's agent\n")
    ours = {p: p.read_bytes() for p in (suite, agent)}

    pinned = runner.invoke(main, ["init", "--workflows", "--force", "--action", PIN])
    assert pinned.exit_code == 0, pinned.output
    assert {p: p.read_bytes() for p in ours} == ours
    assert pinned.output.splitlines() == [
        "wrote .github/workflows/evalrunner-pr.yml",
        "wrote .github/workflows/evalrunner-nightly.yml",
    ]
    for name in ("evalrunner-pr.yml", "evalrunner-nightly.yml"):
        assert PIN in (tmp_path / ".github" / "workflows" / name).read_text()


def test_the_pr_workflow_collects_the_golden_tests_a_project_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `paths: suites` always, so a team following the README's golden test in
    # tests/ got a green PR job that never ran it.
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    workflow = tmp_path / ".github" / "workflows" / "evalrunner-pr.yml"
    assert runner.invoke(main, ["init"]).exit_code == 0
    assert "          paths: suites\n" in workflow.read_text()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent.py").write_text(
        "def test_agent(golden_trajectory):\n    golden_trajectory(print, 'hi')\n"
    )
    again = runner.invoke(main, ["init", "--workflows", "--force"])
    assert again.exit_code == 0, again.output
    assert "          paths: suites tests\n" in workflow.read_text()
