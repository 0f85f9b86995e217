"""The CI workflow files parse, have the documented triggers, and call the documented commands."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    assert isinstance(data, dict)
    return data


def _commands(workflow: dict[str, Any]) -> str:
    return "\n".join(
        step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]
    )


def test_ci_runs_on_prs_and_pushes_without_secrets() -> None:
    ci = _load("ci.yml")
    assert "pull_request" in ci["on"] and "push" in ci["on"]
    text = (WORKFLOWS / "ci.yml").read_text()
    assert "secrets." not in text
    commands = _commands(ci)
    for expected in (
        "ruff check",
        "mypy",
        "pytest",
        "pip install -e '.[dev,proxy,ray,browser,frameworks,s3]'",
    ):
        assert expected in commands


def test_nightly_has_schedule_dispatch_inputs_and_documented_commands() -> None:
    nightly = _load("nightly.yml")
    assert nightly["on"]["schedule"][0]["cron"]
    inputs = nightly["on"]["workflow_dispatch"]["inputs"]
    assert {"suite", "runs", "model"} <= set(inputs)
    commands = _commands(nightly)
    assert "evalrunner run --suite" in commands
    assert "evalrunner report --history" in commands
    assert "GITHUB_STEP_SUMMARY" in commands
    steps = [s for job in nightly["jobs"].values() for s in job["steps"]]
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)
    # Keys come from repository secrets, never from the file.
    env = nightly["jobs"]["live"]["env"]
    assert env["OPENAI_API_KEY"].startswith("${{ secrets.")


def test_only_the_history_job_can_write_and_no_checkout_keeps_its_token() -> None:
    for name in ("ci.yml", "nightly.yml", "release.yml"):
        workflow = _load(name)
        assert workflow["permissions"] in ({}, {"contents": "read"}), name
        for job_name, job in workflow["jobs"].items():
            write = job.get("permissions", {}).get("contents") == "write"
            assert write == ((name, job_name) == ("nightly.yml", "history")), (name, job_name)
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout"):
                    assert step["with"]["persist-credentials"] is False, (name, job_name)


def test_every_action_is_pinned_to_a_commit_hash() -> None:
    for name in ("ci.yml", "nightly.yml", "release.yml"):
        text = (WORKFLOWS / name).read_text()
        uses = re.findall(r"uses:\s*(\S+)(.*)", text)
        assert uses, name
        for ref, comment in uses:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
            assert re.search(r"# v\d+\.\d+\.\d+", comment), f"{ref}: say which version in a comment"


def test_workflows_pass_the_zizmor_audit() -> None:
    """The static audit of the workflows (offline): pinned actions, no persisted
    credentials, no template expansion in run blocks. A new workflow can't regress."""
    zizmor = Path(sys.executable).with_name("zizmor")
    found = str(zizmor) if zizmor.exists() else shutil.which("zizmor")
    if found is None:
        pytest.skip("zizmor is not installed (pip install -e '.[dev]')")
    proc = subprocess.run(
        [found, "--offline", "--no-progress", str(WORKFLOWS)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_release_builds_the_wheel_and_uses_it_from_a_clean_environment() -> None:
    release = _load("release.yml")
    assert release["on"]["push"]["tags"] == ["v*"] and "workflow_dispatch" in release["on"]
    commands = _commands(release)
    assert "python -m build" in commands
    assert "env -i" in commands and "evalrunner init" in commands


def _zizmor() -> str:
    zizmor = Path(sys.executable).with_name("zizmor")
    found = str(zizmor) if zizmor.exists() else shutil.which("zizmor")
    if found is None:
        pytest.skip("zizmor is not installed (pip install -e '.[dev]')")
    return found


def test_the_action_and_the_workflows_init_writes_pass_the_audit(tmp_path: Path) -> None:
    """What a team adopts is held to the same audit as our own workflows (with the action
    pinned to a commit, as `evalrunner init --action OWNER/REPO@COMMIT` writes it)."""
    from evalrunner.cli._init import scaffold

    pinned = "evalrunner/evalrunner@" + "0" * 40
    for agent in ("litellm", "command"):
        for path, text in scaffold(tmp_path / agent, "agent", agent, pinned).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        workflows = tmp_path / agent / ".github" / "workflows"
        proc = subprocess.run(
            [_zizmor(), "--offline", "--no-progress", str(workflows), str(REPO / "action.yml")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (REPO / "action.yml").read_text()
    for ref, comment in re.findall(r"uses:\s*(\S+)(.*)", text):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
        assert re.search(r"# v\d+\.\d+\.\d+", comment), ref


def test_readme_documents_the_commands_the_workflows_use() -> None:
    readme = (REPO / "README.md").read_text()
    for command in (
        "evalrunner run --suite",
        "evalrunner report",
        "evalrunner baseline",
        "python -m pytest",
    ):
        assert command in readme


def test_ci_script_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    script = (REPO / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest" in readme
    assert script.rstrip().splitlines()[-1] == ".venv/bin/python -m pytest"


def test_ci_script_installs_every_extra_whose_tests_skip_without_it() -> None:
    # The compiled engine's, browser, Ray, framework-agent and S3 tests skip when their extra is
    # missing, so a contributor's `.[dev]` run stays light; CI must install them or they
    # never run.
    script = (REPO / ".ci" / "run").read_text()
    installed = re.search(r"pip install -q -e '\.\[([a-z0-9,-]+)\]'", script)
    assert installed, "no pip install -e '.[...]' line in .ci/run"
    extras = {"local", "local-compiled", "dev", "ray", "browser", "frameworks", "s3"}
    assert extras <= set(installed.group(1).split(","))


def test_the_action_keeps_pip_s_cache_between_runs() -> None:
    # Issue 54, A6: a night's install comes from the cache, not the package index, once
    # the action has run; a new release of the action starts a cache of its own.
    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    names = [step.get("name", "") for step in steps]
    cache = steps[names.index("Cache pip's downloads")]
    assert cache["uses"].startswith("actions/cache@")
    assert cache["with"]["path"] == "~/.cache/pip"
    assert "github.action_ref" in cache["with"]["key"] and "inputs.mode" in cache["with"]["key"]
    assert names.index("Cache pip's downloads") < names.index("Install evalrunner and the project")
