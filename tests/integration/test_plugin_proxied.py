"""Frozen mode for agents on provider SDKs and in other languages, through the capture proxy,
with pytester: ``golden_trajectory.proxied(fn, ...)`` (the official OpenAI SDK, sync
and async, streamed and not; the Anthropic SDK) and ``golden_trajectory.command([...])``
(a Python script on the SDK, and a Node.js agent on the ``openai`` npm package), plus a
frozen suite scenario with ``command:``.

Recorded from the loopback fake endpoint with ``--golden-record``, replayed
offline three times (goldens unchanged), broken (a changed system prompt: the
message names the field), and never written when the agent made no model call.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, Reply
from paths import REPO
from sdk_agents import content_responder

from evalrunner.core._scope import install

install()

pytest_plugins = ["pytester"]

SUPPORT = REPO / "tests" / "support"
NODE_AGENT = REPO / "examples" / "node_agent" / "agent.mjs"
HAS_NODE = shutil.which("node") is not None and (NODE_AGENT.parent / "node_modules").is_dir()

TESTS = f"""
import asyncio
import os
import sys

import pytest
import sdk_agents

TASK = "Capitals of: France, Japan"
SUPPORT = {str(SUPPORT)!r}
NODE_AGENT = {str(NODE_AGENT)!r}


def system():
    return os.environ.get("DEMO_SYSTEM", sdk_agents.SYSTEM)


def sync_agent(task, stream=False):
    # The SDK client is created inside the run: it reads OPENAI_BASE_URL then.
    return sdk_agents.openai_agent(os.environ, task, stream=stream, system=system())


async def async_agent(task):
    return await sdk_agents.openai_agent_async(os.environ, task, stream=True)


def test_openai_sync(golden_trajectory):
    assert golden_trajectory.proxied(sync_agent, TASK).output == "Capitals: Paris, Tokyo."


def test_openai_sync_streamed(golden_trajectory):
    assert golden_trajectory.proxied(sync_agent, TASK, stream=True).output == "Capitals: Paris, Tokyo."


def test_openai_async_streamed(golden_trajectory):
    assert golden_trajectory.proxied(async_agent, TASK).output == "Capitals: Paris, Tokyo."


def test_anthropic(golden_trajectory):
    result = golden_trajectory.proxied(sdk_agents.anthropic_agent, os.environ, TASK)
    assert "Paris" in result.output


def test_python_command(golden_trajectory):
    argv = [sys.executable, os.path.join(SUPPORT, "sdk_agent_main.py"), "openai-async", TASK]
    result = golden_trajectory.command(argv, env={{"PYTHONPATH": SUPPORT}})
    assert result.output == "Capitals: Paris, Tokyo."


@pytest.mark.skipif(not {HAS_NODE}, reason="npm ci --prefix examples/node_agent")
def test_node_command(golden_trajectory):
    result = golden_trajectory.command(["node", NODE_AGENT, TASK], env={{"AGENT_STREAM": "1"}})
    assert result.output == "Capitals: Paris, Tokyo."
"""

SUITE = f"""
format_version: 1
name: demo
models: [openai/fake]
scenarios:
  - id: node-capitals
    command: [{sys.executable!r}, {str(SUPPORT / "sdk_agent_main.py")!r}, anthropic, "{{task}}"]
    env: {{PYTHONPATH: {str(SUPPORT)!r}}}
    input: "Capitals of: France, Japan"
    tools: [lookup]
    checks: {{answer_contains: [Paris], tools_used: [lookup]}}
    tags: [frozen]
"""

NAMES = [
    "test_openai_sync",
    "test_openai_sync_streamed",
    "test_openai_async_streamed",
    "test_anthropic",
    "test_python_command",
] + (["test_node_command"] if HAS_NODE else [])


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


@pytest.fixture
def demo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("DEMO_SYSTEM", "EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    pytester.makepyfile(test_demo=TESTS)
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "demo.yaml").write_text(SUITE, encoding="utf-8")
    return pytester.path / "__goldens__" / "test_demo"


def goldens(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(directory.rglob("*.json"))}


def test_sdk_and_command_agents_record_replay_three_times_then_break(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    total = len(NAMES) + 1  # the suite's frozen command scenario
    with FakeEndpoint(responder=content_responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        result = run(pytester, "--golden-record")
        upstream_calls = len(ep.requests)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    result.assert_outcomes(passed=total, skipped=0 if HAS_NODE else 1)
    assert upstream_calls == 2 * total
    assert sorted(p.name for p in demo.iterdir()) == sorted(
        [f"{t}.json" for t in NAMES] + [f"{t}.proxy.json" for t in NAMES]
    )
    scenario = pytester.path / "suites" / "goldens" / "demo"
    assert sorted(p.name for p in scenario.iterdir()) == [
        "node-capitals.json",
        "node-capitals.proxy.json",
    ]
    written = goldens(pytester.path)
    golden = json.loads(written["test_openai_sync.json"])
    assert golden["shape"]["tools"] == ["lookup", "lookup"] and golden["shape"]["llm_calls"] == 2
    # Neither the upstream key nor the proxy's dummy key is in any file.
    assert not any("sk-upstream" in text or "dummy-key" in text for text in written.values())

    # Three offline replays (no upstream at all), goldens untouched, nothing reported unused.
    for _ in range(3):
        result = run(pytester)
        result.assert_outcomes(passed=total, skipped=0 if HAS_NODE else 1)
        assert goldens(pytester.path) == written
        assert "unused goldens" not in result.stdout.str()
    # --golden-update from the recordings rewrites identical goldens.
    run(pytester, "--golden-update").assert_outcomes(passed=total, skipped=0 if HAS_NODE else 1)
    assert goldens(pytester.path) == written

    # The agent changed: its requests no longer match; the message names the field.
    monkeypatch.setenv("DEMO_SYSTEM", "You answer in French.")
    result = run(pytester, "-k", "test_openai_sync and not streamed")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "model call 1 has no recorded response" in text
    assert "system message" in text and "French" in text
    # The test's own re-record command, as in process (it gave every test's, and the
    # proxy CLI's, which a pytest user does not run).
    assert 're-record: pytest --golden-record "test_demo.py::test_openai_sync"' in text
    assert "--golden-update" not in text.split("short test summary")[0].split("no recorded")[1]
    monkeypatch.delenv("DEMO_SYSTEM")

    # A golden no test uses any more is listed with the recording it would leave behind
    # (it said "(and test_x.llm.json if present)", a file a proxied test never has).
    shutil.copy(demo / "test_anthropic.json", demo / "test_gone.json")
    shutil.copy(demo / "test_anthropic.proxy.json", demo / "test_gone.proxy.json")
    result = run(pytester, "-p", "no:randomly", "test_demo.py")
    result.stdout.fnmatch_lines([f"{demo / 'test_gone.json'} (with test_gone.proxy.json)"])


def test_golden_record_writes_nothing_when_no_model_call_was_seen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An SDK agent given its own base URL bypasses the proxy; a litellm-less agent
    # bypasses capture: both must fail --golden-record, leaving no empty golden. A command
    # agent that crashed before its first call says so first (the crash came last, after
    # ~700 characters of advice about clients that bypass the proxy).
    pytester.makepyfile(
        test_bypass="""
import os
import sys

import openai


def bypassing(task):
    client = openai.OpenAI(base_url=os.environ["DEMO_DIRECT"], api_key="sk-x")
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": task}]).choices[0].message.content


def test_proxied_bypass(golden_trajectory):
    golden_trajectory.proxied(bypassing, "hi")


def test_capture_bypass(golden_trajectory):
    golden_trajectory(bypassing, "hi")


def test_crash(golden_trajectory):
    golden_trajectory.command([sys.executable, "-c", "raise SystemExit('agent crashed on purpose')"])
"""
    )
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        monkeypatch.setenv("DEMO_DIRECT", ep.api_base)
        result = run(pytester, "--golden-record")
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    # Count in the failure reports: the short summary repeats them, cut to the terminal's width.
    reports = text.split("short test summary info")[0]
    assert reports.count("recording failed, nothing written") == 3
    assert "the agent made no model call through the capture proxy. It must" in text
    crash = reports.split(" test_crash _")[1]
    first = next(line for line in crash.splitlines() if "recording failed" in line)
    assert "the agent failed before any model call reached the capture proxy" in first
    assert "agent crashed on purpose" in first
    assert "golden_trajectory.proxied" in text
    assert not (pytester.path / "__goldens__").exists() or not list(
        (pytester.path / "__goldens__").rglob("*.json")
    )


def calls_test(default: int) -> str:
    """A test module whose SDK agent makes ``DEMO_CALLS`` model calls (``default`` unset)."""
    return f"""
import os

import openai


def agent(task):
    client = openai.OpenAI()  # OPENAI_BASE_URL: the run's proxy
    for i in range(int(os.environ.get("DEMO_CALLS", "{default}"))):
        client.chat.completions.create(
            model="m", messages=[{{"role": "user", "content": f"{{task}} (step {{i}})"}}]
        )
    return "done"


def test_calls(golden_trajectory):
    golden_trajectory.proxied(agent, "hi")
"""


def test_a_replay_that_leaves_recorded_calls_unused_fails_and_names_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded with two calls; the agent now stops after one. The replay fails (strict by
    # default) and the message lists the recorded call nobody asked for, and how to re-record.
    pytester.makepyfile(test_calls=calls_test(default=2))
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=1)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    run(pytester).assert_outcomes(passed=1)  # offline, both calls used

    monkeypatch.setenv("DEMO_CALLS", "1")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    report = result.stdout.str().split("short test summary info")[0]
    assert "1 recorded model call(s) of" in report and "were not used" in report
    assert "test_calls.proxy.json" in report
    assert "recorded call 2 (1 messages, last user message 'hi (step 1)')" in report
    assert "If the agent changed on purpose, re-record with:" in report


def test_a_recording_the_proxy_refused_names_the_refusal_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Responses request with a built-in tool the proxy does not carry: the message
    # used to blame "no model call through the capture proxy" and name the cause last.
    pytester.makepyfile(
        test_refused="""
import openai


def searching(task):
    return openai.OpenAI().responses.create(
        model="m", input=task, tools=[{"type": "web_search"}]
    ).output_text


def test_refused(golden_trajectory):
    golden_trajectory.proxied(searching, "news today")
"""
    )
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        result = run(pytester, "--golden-record")
        assert ep.requests == []
    result.assert_outcomes(failed=1)
    report = result.stdout.str().split("short test summary info")[0]
    assert (
        "recording failed, nothing written: the capture proxy refused the agent's request "
        "(400: tool type 'web_search' is not supported by the proxy (function tools only))"
    ) in report
    assert "no model call through the capture proxy" not in report


CONCURRENT = """
import asyncio
import os

import openai


async def two_cities(task):
    client = openai.AsyncOpenAI()  # OPENAI_BASE_URL: the run's proxy

    async def one(city):
        response = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"{task} {city}"}]
        )
        return response.choices[0].message.content

    cities = os.environ.get("DEMO_CITIES", "Paris,Rome").split(",")
    if os.environ.get("DEMO_ONE_BY_ONE"):
        # The order in which concurrent requests may reach the proxy, made certain.
        return " / ".join([await one(city) for city in cities])
    return " / ".join(await asyncio.gather(*(one(city) for city in cities)))


def test_two_cities(golden_trajectory):
    assert golden_trajectory.proxied(two_cities, "weather in").output
"""


def test_concurrent_conversations_replay_as_recorded_whichever_arrives_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two conversations in flight together (asyncio.gather) reach the proxy in any
    # order, and the first to arrive is the agent, the other its sub-agent. Before,
    # a replay in which Rome came first failed ($.steps[0].message: "weather in
    # Paris" -> "weather in Rome"); now a replay is read in the recorded order.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("DEMO_CITIES", "DEMO_ONE_BY_ONE", "EVALRUNNER_GOLDEN_RECORD"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_concurrent=CONCURRENT)
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    monkeypatch.setenv("DEMO_ONE_BY_ONE", "1")  # recorded: Paris first
    with FakeEndpoint(responder=content_responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=1)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    golden = pytester.path / "__goldens__" / "test_concurrent" / "test_two_cities.json"
    written = golden.read_text(encoding="utf-8")
    trajectory = json.loads(written)["trajectory"]
    assert trajectory["steps"][0]["message"] == "weather in Paris"
    assert trajectory["subagent_trajectories"][0]["steps"][0]["message"] == "weather in Rome"

    monkeypatch.setenv("DEMO_CITIES", "Rome,Paris")  # replayed: Rome reaches the proxy first
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.delenv("DEMO_ONE_BY_ONE")  # and truly concurrent, a few times
    for _ in range(3):
        run(pytester).assert_outcomes(passed=1)
    assert golden.read_text(encoding="utf-8") == written


SEARCH_KEY = "srch_inline_55aa66bb77cc"
"""A credential that matches no pattern: only its variable's name says what it is."""


def test_a_key_given_to_a_command_through_env_is_in_no_golden_or_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `.command(argv, env={"SEARCH_API_KEY": ...})` wrote the key in clear to the
    # golden and its recording (a review); inherited from the environment it was redacted.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    pytester.makepyfile(
        test_env=f"""
import os, sys

def test_echo(golden_trajectory):
    argv = [sys.executable, os.path.join({str(SUPPORT)!r}, "sdk_agent_main.py"), "echo-env", "hi"]
    golden_trajectory.command(argv, env={{"PYTHONPATH": {str(SUPPORT)!r}, "SEARCH_API_KEY": {SEARCH_KEY!r}}})
"""
    )
    with FakeEndpoint(responder=content_responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=1)
        sent = json.dumps(ep.requests)
    assert SEARCH_KEY in sent  # the agent did send it: the test can fail
    written = goldens(pytester.path)
    assert sorted(written) == ["test_echo.json", "test_echo.proxy.json"]
    assert all(SEARCH_KEY not in text for text in written.values())
    assert any("[REDACTED]" in text for text in written.values())


@pytest.fixture
def one_call_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose one test's SDK agent makes ``DEMO_CALLS`` calls (1 unset) to
    openai/fake through the proxy; returns its golden folder."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("DEMO_CALLS", "EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_calls=calls_test(default=1))
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    return pytester.path / "__goldens__" / "test_calls"


def test_re_recording_through_the_proxy_says_what_changed_from_the_golden_it_replaced(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, one_call_project: Path
) -> None:
    # Before: "wrote <recording>, <golden>" alone, so whoever re-recorded by habit never
    # saw that the agent now makes one model call more (a review).
    goldens = one_call_project
    wrote = f"wrote {goldens / 'test_calls.proxy.json'}, {goldens / 'test_calls.json'}"
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        first = run(pytester, "--golden-record")
        first.assert_outcomes(passed=1)
        assert wrote in first.stdout.lines  # nothing it replaced
        monkeypatch.setenv("DEMO_CALLS", "2")
        again = run(pytester, "--golden-record")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([f"{wrote}: *llm_calls: 1 -> 2, *"])


def test_re_recording_through_the_proxy_leaves_a_newer_releases_golden_and_recording_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, one_call_project: Path
) -> None:
    # Re-recording wrote this release's format over a newer release's golden and its
    # recording, "wrote ...", rc 0 (--golden-update leaves such a golden as it is).
    folder = one_call_project
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=1)
        golden, recording = folder / "test_calls.json", folder / "test_calls.proxy.json"
        golden.write_text(json.dumps({**json.loads(golden.read_text()), "format_version": 99}))
        before = (golden.read_bytes(), recording.read_bytes())
        again = run(pytester, "--golden-record")
    again.assert_outcomes(failed=1)
    assert "--golden-record left it as it is" in again.stdout.str()
    assert (golden.read_bytes(), recording.read_bytes()) == before


CRASH_AFTER_A_CALL = """
import os
import sys

import openai

openai.OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
if os.environ.get("DEMO_CRASH"):
    sys.exit("agent crashed after its model call")
print("done")
"""


def test_a_command_agent_that_crashes_after_a_model_call_writes_no_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "recording failed, nothing written", and the crashed run's calls were left
    # as the recording (replacing a good one), which the next plain run then replayed.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD"):
        monkeypatch.delenv(var, raising=False)
    (pytester.path / "agent.py").write_text(CRASH_AFTER_A_CALL, encoding="utf-8")
    pytester.makepyfile(
        test_cmd=f"""
import sys


def test_cmd(golden_trajectory):
    golden_trajectory.command([sys.executable, {str(pytester.path / "agent.py")!r}])
"""
    )
    folder = pytester.path / "__goldens__" / "test_cmd"
    monkeypatch.setenv("EVALRUNNER_MODEL", "openai/fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-key-0123456789abcdef")
    monkeypatch.setenv("DEMO_CRASH", "1")
    with FakeEndpoint(default=Reply("hello")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        crashed = run(pytester, "--golden-record")
        crashed.assert_outcomes(failed=1)
        assert "recording failed, nothing written: the agent failed" in crashed.stdout.str()
        assert len(ep.requests) == 1
        assert not folder.exists() or not list(folder.iterdir())

        monkeypatch.delenv("DEMO_CRASH")
        run(pytester, "--golden-record").assert_outcomes(passed=1)
        written = goldens(folder)
        assert sorted(written) == ["test_cmd.json", "test_cmd.proxy.json"]

        monkeypatch.setenv("DEMO_CRASH", "1")
        run(pytester, "--golden-record").assert_outcomes(failed=1)
    assert goldens(folder) == written


THINKING_TEST = """
import os

import anthropic


def agent(task):
    client = anthropic.Anthropic()  # ANTHROPIC_BASE_URL: the run's proxy
    budget = int(os.environ.get("DEMO_BUDGET", "1024"))
    message = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": budget},
        messages=[{"role": "user", "content": task}],
    )
    return "".join(b.text for b in message.content if b.type == "text")


def test_thinks(golden_trajectory):
    golden_trajectory.proxied(agent, "hi")
"""


def test_a_pr_that_changes_only_the_thinking_budget_is_named_and_fails_golden_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53, rows 17 and 18: an Anthropic agent with extended thinking records through
    the proxy (it was refused), and a PR that changes only its budget is named on replay,
    and fails --golden-strict (a proxied replay compared no sampling setting)."""
    pytester.makepyfile(test_thinks=THINKING_TEST)
    monkeypatch.setenv("EVALRUNNER_MODEL", "anthropic/claude-test-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-upstream-key-0123456789abcdef")
    with FakeEndpoint(default=Reply("hello", thinking=("Greet back.", "c2ln"))) as ep:
        monkeypatch.setenv("ANTHROPIC_API_BASE", ep.api_base.removesuffix("/v1"))
        run(pytester, "--golden-record").assert_outcomes(passed=1)
        assert ep.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    monkeypatch.delenv("ANTHROPIC_API_BASE")
    quiet = run(pytester)
    quiet.assert_outcomes(passed=1)
    assert "other sampling settings" not in quiet.stdout.str()
    monkeypatch.setenv("DEMO_BUDGET", "4096")
    strict = run(pytester, "--golden-strict")
    strict.assert_outcomes(failed=1)
    said = strict.stdout.str()
    assert "model call 1 was recorded with other sampling settings (thinking" in said
    assert (
        '(thinking {"budget_tokens": 1024, "type": "enabled"} -> '
        '{"budget_tokens": 4096, "type": "enabled"})'
    ) in said
    lenient = run(pytester)
    lenient.assert_outcomes(passed=1)
    assert "recorded with other sampling settings" in lenient.stdout.str()


def test_a_command_scenario_replayed_for_another_model_is_named_and_fails_golden_strict(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53, row 18: the suite now names another model than its command scenario's
    recording was made against."""
    with FakeEndpoint(responder=content_responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        run(pytester, "suites", "--golden-record").assert_outcomes(passed=1)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    suite = pytester.path / "suites" / "demo.yaml"
    suite.write_text(SUITE.replace("models: [openai/fake]", "models: [openai/fake-mini]"))
    strict = run(pytester, "suites", "--golden-strict")
    strict.assert_outcomes(failed=1)
    said = "recorded against openai/fake, the scenario now runs openai/fake-mini"
    assert said in strict.stdout.str()
    lenient = run(pytester, "suites")
    lenient.assert_outcomes(passed=1)
    assert said in lenient.stdout.str()
