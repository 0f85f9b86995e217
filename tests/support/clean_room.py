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
from typing import Any

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


def action_venv(workdir: Path, site: Path, mode: str) -> Path:
    """A virtualenv holding only what ``action/install.sh`` installs in ``mode``, and its
    ``bin``: the scripts' pip commands, logged by a stand-in ``python``, resolved against
    the distributions installed here (no network), evalrunner from ``site`` (the wheel).

    Each distribution's files are linked in from where it is installed, with the
    dependencies its metadata names for the extras asked for, as pip would resolve them;
    nothing else of this environment is importable there.
    """
    venv = workdir / "action-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = next((venv / "lib").glob("python*/site-packages"))
    for dist in _closure(_action_installs(workdir, mode), site):
        for file in dist.files or []:
            if file.parts[0] == ".." or file.suffix == ".pyc":
                continue  # scripts outside site-packages; bytecode is rebuilt
            link = target / file
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(Path(str(dist.locate_file(file))).resolve())
    return venv / "bin"


def _action_installs(workdir: Path, mode: str) -> list[tuple[str, bool]]:
    """(requirement, with its dependencies) for each package install.sh asks pip for."""
    stand_in = workdir / "logging-python"
    stand_in.mkdir()
    (stand_in / "python").write_text('#!/bin/sh\necho "$*" >>"$PY_LOG"\n')
    (stand_in / "python").chmod(0o755)
    log, project = workdir / "pip.log", workdir / "no-project"
    project.mkdir()
    env = {"PATH": f"{stand_in}{os.pathsep}{os.environ['PATH']}", "MODE": mode}
    env |= {"EVALRUNNER_SRC": "evalrunner", "PY_LOG": str(log)}
    subprocess.run(["bash", str(REPO / "action" / "install.sh")], cwd=project, env=env, check=True)
    wanted = []
    for line in log.read_text().splitlines():
        words = line.split()
        if words[:3] != ["-m", "pip", "install"] or "--upgrade" in words:
            continue
        deps = "--no-deps" not in words
        wanted += [(w, deps) for w in words[3:] if not w.startswith("-")]
    return wanted


def _closure(wanted: list[tuple[str, bool]], site: Path) -> list[Any]:
    """The installed distributions ``wanted`` resolves to, dependencies and extras included."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    (own,) = site.glob("evalrunner-*.dist-info")
    found: dict[str, tuple[Any, set[str]]] = {}
    queue = [(Requirement(spec), deps) for spec, deps in wanted]
    while queue:
        req, deps = queue.pop()
        key = canonicalize_name(req.name)
        dist, extras = found.get(key, (None, set()))
        if dist is not None and set(req.extras) <= extras:
            continue
        extras |= set(req.extras)
        own_dist = key == "evalrunner"
        dist = metadata.PathDistribution(own) if own_dist else metadata.distribution(req.name)
        found[key] = (dist, extras)
        for spec in dist.requires or [] if deps else []:
            needed = Requirement(spec)
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": e}) for e in extras | {""}
            ):
                queue.append((needed, True))
    return [dist for dist, _ in found.values()]
