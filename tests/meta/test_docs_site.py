"""The docs site (mkdocs.yml over docs/) builds with no warning: a broken link or anchor fails."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO


def test_docs_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    # The site goes to tmp_path, and no bytecode of docs/hooks.py lands in the checkout.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, (
        "the docs site does not build (`mkdocs build --strict`; pages are in docs/, the nav "
        "and the link checks in mkdocs.yml):\n" + proc.stdout + proc.stderr
    )
    assert (tmp_path / "index.html").is_file()
