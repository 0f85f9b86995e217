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

import pytest
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


LITELLM_TEST = """
import os

import litellm


def agent(task):
    reply = litellm.completion(
        model="openai/fake",
        api_base=os.environ.get("DEMO_API_BASE", "http://127.0.0.1:9/v1"),
        api_key="sk-demo-0000000000000000",
        messages=[{"role": "user", "content": task}],
    )
    return reply.choices[0].message.content


def test_litellm(golden_trajectory):
    assert golden_trajectory(agent, "hi").output == "hello there"
"""

COMMAND_TEST = '''
import sys

AGENT = """
import sys
from openai import OpenAI
reply = OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": sys.argv[1]}])
print(reply.choices[0].message.content)
"""


def test_command(golden_trajectory, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    assert golden_trajectory.command([sys.executable, str(script), "hi"]).output == "hello there"
'''


SAYS_IF_LITELLM_LOADED = """
import sys
from pathlib import Path


def pytest_sessionfinish(session):
    Path(__file__).with_name("litellm-loaded").write_text(str("litellm" in sys.modules))
"""


def record(project: Path, site: Path) -> None:
    """``pytest --golden-record`` against the fake endpoint, with what a user would export."""
    with FakeEndpoint(responder=lambda body, n: Reply("hello there")) as ep:
        recorded = run_in(
            project,
            site,
            *PYTEST,
            "--golden-record",
            DEMO_API_BASE=ep.api_base,
            EVALRUNNER_MODEL="openai/fake",
            EVALRUNNER_API_BASE=ep.api_base,
        )
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-2000:]


def replay(project: Path, site: Path) -> None:
    """Plain ``pytest``: offline, nothing exported."""
    replayed = run_in(project, site, *PYTEST)
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr[-2000:]
    assert "1 passed" in replayed.stdout


@pytest.mark.parametrize("text", [LITELLM_TEST, COMMAND_TEST], ids=["litellm", "command"])
def test_in_process_and_command_goldens_record_then_replay_in_a_plain_environment(
    wheel_site: Path, tmp_path: Path, text: str
) -> None:
    (tmp_path / "test_agent.py").write_text(text, encoding="utf-8")
    record(tmp_path, wheel_site)
    replay(tmp_path, wheel_site)


def test_a_one_test_sdk_project_records_then_replays_in_a_plain_environment(
    wheel_site: Path, tmp_path: Path
) -> None:
    # The project: an OpenAI SDK agent with its client made inside the run.
    (tmp_path / "test_min.py").write_text(ONE_TEST, encoding="utf-8")
    record(tmp_path, wheel_site)
    assert (tmp_path / "__goldens__" / "test_min" / "test_min.proxy.json").is_file()
    # Offline and with nothing exported, replay passes, and again (no background fetch).
    replay(tmp_path, wheel_site)
    replay(tmp_path, wheel_site)
    # And without importing litellm: the proxy renders recorded answers itself (litellm's
    # import was most of a proxied golden session's CPU).
    (tmp_path / "conftest.py").write_text(SAYS_IF_LITELLM_LOADED, encoding="utf-8")
    replay(tmp_path, wheel_site)
    assert (tmp_path / "litellm-loaded").read_text(encoding="utf-8") == "False"


def test_the_example_suite_runs_from_an_installed_wheel_in_an_empty_project(
    wheel_site: Path, tmp_path: Path
) -> None:
    # The README's main job, anywhere: `--suite example` finds the suite the package ships.
    assert (wheel_site / "evalrunner" / "example.yaml").is_file()
    with FakeEndpoint(responder=lambda body, n: Reply("Paris, in a few sentences.")) as ep:
        night = run_in(
            tmp_path,
            wheel_site,
            "python",
            "-c",
            "from evalrunner.cli._main import command; command()",  # what the `evalrunner` script runs
            "run",
            "--suite",
            "example",
            "--runs",
            "1",
            "--model",
            "openai/fake",
            "--no-history",
            "--no-compare",
            "--out",
            str(tmp_path / "out"),
            EVALRUNNER_API_BASE=ep.api_base,
        )
    assert night.returncode == 0, night.stdout[-2000:] + night.stderr[-2000:]
    assert "suite example: results in" in night.stderr
    assert night.stderr.splitlines()[-1].startswith("night: 9 runs")  # 5 scenarios + 4 rows
    assert not (tmp_path / "suites").exists()  # nothing scaffolded: the packaged suite ran
