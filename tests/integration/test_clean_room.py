"""Journeys from a project outside this repository, as a user makes them.

The wheel is built from this checkout (offline, from a copy of its tracked
files) and unpacked where the runs import it from; each run is a fresh
process in a temporary project with a scrubbed environment: ``PATH``,
``HOME`` and the path to the unpacked wheel, nothing this test session set
(our conftest exports litellm's settings, for one: users have none of them).
The model is the loopback fake endpoint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, Reply
from paths import REPO


@pytest.fixture(scope="session")
def wheel_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, unpacked: what ``pip install <wheel>`` puts in site-packages."""
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    wheels = tmp_path_factory.mktemp("wheels")
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
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def run_in(project: Path, site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, in a scrubbed environment plus ``env``."""
    scrubbed = {"PATH": os.environ["PATH"], "HOME": str(project), "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env={**scrubbed, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


ONE_TEST = """
def agent(t):
    from openai import OpenAI
    return OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": t}]).choices[0].message.content

def test_min(golden_trajectory):
    assert golden_trajectory.proxied(agent, "hi").output
"""


def test_a_one_test_sdk_project_records_then_replays_in_a_plain_environment(
    wheel_site: Path, tmp_path: Path
) -> None:
    # The project: an OpenAI SDK agent with its client made inside the run.
    (tmp_path / "test_min.py").write_text(ONE_TEST, encoding="utf-8")
    with FakeEndpoint(responder=lambda body, n: Reply("hello there")) as ep:
        recorded = run_in(
            tmp_path,
            wheel_site,
            "--golden-record",
            EVALRUNNER_MODEL="openai/fake",
            EVALRUNNER_API_BASE=ep.api_base,
        )
        assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-2000:]
    assert (tmp_path / "__goldens__" / "test_min" / "test_min.proxy.json").is_file()
    # Offline and with nothing exported, replay passes, and again (no background fetch).
    for _ in range(2):
        replayed = run_in(tmp_path, wheel_site)
        assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr[-2000:]
        assert "1 passed" in replayed.stdout
