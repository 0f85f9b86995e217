"""The action's PR comment step (action/comment.sh), run as the action runs it, against a
stand-in `gh` on PATH that logs its calls: our earlier comment is found by its marker and
updated (never another bot's, as `gh pr comment --edit-last` would), and a token that
cannot write (fork and Dependabot pull requests) leaves the step green with a notice
(issue 54, A4)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from paths import REPO

FAKE_GH = """#!/usr/bin/env bash
echo "$*" >>"$GH_LOG"
case "$1 $2" in
  "api repos/team/app/issues/7/comments") printf '%s' "$GH_OURS" ;;
  *) exit "${GH_FAIL:-0}" ;;
esac
"""


def _comment(tmp_path: Path, body: str, ours: str = "", fail: int = 0) -> tuple[int, str, str]:
    """Run the step in a project whose comment.md holds ``body``: its exit code, its output,
    and the calls it made of gh."""
    (tmp_path / "evalrunner-out").mkdir(exist_ok=True)
    (tmp_path / "evalrunner-out" / "comment.md").write_text(body)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    log = tmp_path / "gh.log"
    log.unlink(missing_ok=True)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_REPOSITORY": "team/app",
        "PR": "7",
        "GH_LOG": str(log),
        "GH_OURS": ours,
        "GH_FAIL": str(fail),
    }
    done = subprocess.run(
        ["bash", str(REPO / "action" / "comment.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, done.stdout, log.read_text() if log.exists() else ""


FROZEN = "<!-- evalrunner:frozen -->\n### evalrunner: frozen subset — no behavioural change\n"


def test_our_earlier_comment_is_found_by_its_marker_and_updated(tmp_path: Path) -> None:
    code, _, calls = _comment(tmp_path, FROZEN, ours="1001\n2002")
    assert code == 0
    (found, updated) = calls.splitlines()
    assert 'startswith("<!-- evalrunner:frozen -->")' in found
    assert updated == (
        "api -X PATCH repos/team/app/issues/comments/2002 -F body=@evalrunner-out/comment.md"
    )


def test_a_first_comment_is_posted_once(tmp_path: Path) -> None:
    code, _, calls = _comment(tmp_path, FROZEN)
    assert code == 0
    assert calls.splitlines()[-1] == "pr comment 7 --body-file evalrunner-out/comment.md"
    assert "--edit-last" not in calls  # it edits the last comment of whoever posts, any bot's


@pytest.mark.parametrize("ours", ["", "2002"])
def test_a_read_only_token_leaves_the_step_green_with_a_notice(tmp_path: Path, ours: str) -> None:
    code, out, _ = _comment(tmp_path, FROZEN, ours=ours, fail=1)
    assert code == 0
    assert out.startswith("::notice::evalrunner could not post its pull request comment")
