"""The plugin under pytest-xdist: what its workers found is printed by the controller.

Workers have no terminal. Before, a `-n 2` session printed only its pass count: no
goldens written by --golden-update/--golden-record, no replay notes, no unused goldens.
"""

from __future__ import annotations

import shutil

import pytest
from fake_endpoint import FakeEndpoint, Reply

pytest.importorskip("xdist", reason="needs pytest-xdist (the dev extra)")

pytest_plugins = ["pytester"]

AGENT = """
import os

import litellm


def plain(question):
    response = litellm.completion(
        model="openai/fake",
        api_base=os.environ.get("DEMO_API_BASE"),
        api_key="sk-demo-0000000000000000",
        messages=[{"role": "user", "content": question}],
        **({"tool_choice": os.environ["DEMO_TOOL_CHOICE"]} if "DEMO_TOOL_CHOICE" in os.environ else {}),
    )
    return response.choices[0].message.content
"""

TESTS = """
import agent_demo


def test_one(golden_trajectory):
    golden_trajectory(agent_demo.plain, "Say one.")


def test_two(golden_trajectory):
    golden_trajectory(agent_demo.plain, "Say two.")


def test_three(golden_trajectory):
    golden_trajectory(agent_demo.plain, "Say three.")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2", *args
    )


def test_under_xdist_the_controller_prints_what_the_workers_wrote_noted_and_left_unused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(agent_demo=AGENT, test_demo=TESTS)
    goldens = pytester.path / "__goldens__" / "test_demo"
    with FakeEndpoint(default=Reply("Said.")) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        recorded = run(pytester, "--golden-record")
    recorded.assert_outcomes(passed=3)
    assert sorted(p.name for p in goldens.glob("*.json") if ".llm." not in p.name) == [
        "test_one.json",
        "test_three.json",
        "test_two.json",
    ]
    recorded.stdout.fnmatch_lines(["*evalrunner goldens*"])
    written = [line for line in recorded.outlines if str(goldens) in line]
    assert len(written) >= 3, recorded.outlines

    # A golden whose test is gone, and requests that differ from the recording.
    shutil.copy(goldens / "test_one.json", goldens / "test_gone.json")
    monkeypatch.setenv("DEMO_TOOL_CHOICE", "none")  # not in the trajectory: the tests pass
    replayed = run(pytester)
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines(["*evalrunner: replay notes*"])
    replayed.stdout.fnmatch_lines(["*evalrunner: unused goldens*", str(goldens / "test_gone.json")])
    assert str(goldens / "test_one.json") + " " not in replayed.stdout.str()
