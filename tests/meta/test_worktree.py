"""Running the frozen subset leaves the checkout exactly as it was: no logs, no
captures, no rewritten goldens (a prototype left ~280 files in its repo)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest
from paths import REPO, git_status


def tree_hashes() -> dict[str, str]:
    """sha256 of every tracked file and every untracked, not ignored one, by path."""
    listed = subprocess.run(
        [
            "git",
            "--no-optional-locks",
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    hashes = {}
    for name in sorted(set(os.fsdecode(n) for n in listed.split(b"\0")) - {""}):
        path = REPO / name
        hashes[name] = (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<missing>"
        )
    return hashes


def _changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


@pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git checkout"
)
def test_frozen_subset_leaves_the_worktree_untouched() -> None:
    status, hashes = git_status(), tree_hashes()
    env = dict(os.environ)
    for var in ("EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD", "PYTEST_ADDOPTS"):
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
    # (Files edited by hand while this runs show up here too: the paths say which.)
    assert _changed(hashes, tree_hashes()) == []
    assert git_status() == status


@pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git checkout"
)
def test_the_main_commands_default_outputs_are_ignored_by_git() -> None:
    """`evalrunner run` writes results/ and reports/history/ by default, `report` reports/out/:
    the README's first command must not dirty the checkout."""
    outputs = [
        "results/example-20261130T020000Z/manifest.json",
        "reports/history/example/20261130T020000Z-0a1b2c3d.parquet",
        "reports/out/report.html",
    ]
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", *outputs], cwd=REPO, capture_output=True, text=True
    )
    assert proc.stdout.split() == outputs
