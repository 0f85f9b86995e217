"""A changed request reads the same from in-process replay and from the capture proxy.

One agent, written twice (litellm in process; the OpenAI SDK through
``golden_trajectory.proxied``), recorded from the loopback fake endpoint, then
replayed with its system prompt changed: both runs fail naming model call 1 and
the same differing field in the same words (``core._mismatch``).
"""

from __future__ import annotations

import sys

import pytest
from fake_endpoint import FakeEndpoint
from sdk_agents import content_responder

from evalrunner.core._scope import install

install()  # import and wrap litellm before pytester snapshots sys.modules

pytest_plugins = ["pytester"]

TESTS = """
import os

import litellm
import openai
import sdk_agents

TASK = "Capitals of: France, Japan"


def messages(task):
    system = os.environ.get("DEMO_SYSTEM", sdk_agents.SYSTEM)
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def litellm_agent(task):
    reply = litellm.completion(
        model="openai/fake",
        api_base=os.environ.get("DEMO_API_BASE"),
        api_key="sk-demo-0000000000000000",
        messages=messages(task),
        tools=sdk_agents.CHAT_TOOLS,
    )
    return reply.choices[0].message.content


def sdk_agent(task):
    client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    reply = client.chat.completions.create(
        model="fake", messages=messages(task), tools=sdk_agents.CHAT_TOOLS
    )
    return reply.choices[0].message.content


def test_in_process(golden_trajectory):
    golden_trajectory(litellm_agent, TASK)


def test_proxied(golden_trajectory):
    golden_trajectory.proxied(sdk_agent, TASK)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def differing(section: str) -> list[str]:
    """The mismatch's lines naming what differs (after "it differs in:")."""
    lines = section.split("it differs in:", 1)[1].splitlines()[1:]
    return [line.strip() for line in lines if line.strip().startswith("- ")]


def test_a_changed_request_reads_the_same_in_process_and_through_the_proxy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("DEMO_SYSTEM", "EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    pytester.makepyfile(test_demo=TESTS)
    with FakeEndpoint(responder=content_responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=2)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    run(pytester, "--golden-strict").assert_outcomes(passed=2)

    monkeypatch.setenv("DEMO_SYSTEM", "You answer in French.")
    result = run(pytester, "--golden-strict")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    in_process = text.split("_ test_in_process _", 1)[1].split("_ test_proxied _", 1)[0]
    proxied = text.split("_ test_proxied _", 1)[1].split("short test summary", 1)[0]
    for section in (in_process, proxied):
        assert "model call 1 has no recorded response" in section, section
    assert differing(in_process) == differing(proxied) != []
    assert differing(in_process)[0].startswith("- system message: ")
    assert "French" in differing(in_process)[0]
