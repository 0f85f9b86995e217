"""Journeys from a project outside this repository, as a user makes them.

The wheel is built from this checkout (offline, from a copy of its tracked
files) and unpacked where the runs import it from; each run is a fresh
process in a temporary project with a scrubbed environment: ``PATH``,
``HOME`` and the path to the unpacked wheel, nothing this test session set
(our conftest exports litellm's settings, for one: users have none of them).
The model is the loopback fake endpoint.
"""

from __future__ import annotations

from pathlib import Path

from clean_room import run_in
from fake_endpoint import FakeEndpoint, Reply

PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")

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
            *PYTEST,
            "--golden-record",
            EVALRUNNER_MODEL="openai/fake",
            EVALRUNNER_API_BASE=ep.api_base,
        )
        assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-2000:]
    assert (tmp_path / "__goldens__" / "test_min" / "test_min.proxy.json").is_file()
    # Offline and with nothing exported, replay passes, and again (no background fetch).
    for _ in range(2):
        replayed = run_in(tmp_path, wheel_site, *PYTEST)
        assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr[-2000:]
        assert "1 passed" in replayed.stdout
