"""A project outside this repository: the built wheel and a scrubbed environment.

:func:`build_wheel_site` builds this checkout's wheel offline (from a copy of its
tracked files) and unpacks it where the scrubbed runs import it from: what
``pip install <wheel>`` puts in site-packages. :func:`scrubbed` is the whole
environment such a run gets: ``PATH``, ``HOME`` and that path, nothing our test
session set (our conftest exports litellm's settings, for one; users have none).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from paths import REPO


def build_wheel_site(workdir: Path) -> Path:
    source, wheels, site = workdir / "source", workdir / "wheels", workdir / "site"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("evalrunner-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def scrubbed(project: Path, site: Path, **env: str) -> dict[str, str]:
    """A user's environment: PATH (with this interpreter's scripts), HOME, the wheel; ``env``."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return {"PATH": path, "HOME": str(project), "PYTHONPATH": str(site), **env}


def run_in(project: Path, site: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``argv`` in ``project``, scrubbed; ``python`` is this interpreter."""
    command = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
    return subprocess.run(
        command,
        cwd=project,
        env=scrubbed(project, site, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
