"""The pytest plugin end to end, with pytester: a small project whose tests use the
``golden_trajectory`` fixture, recorded from the loopback fake endpoint, then
checked, broken in every way the plugin must explain, updated and checked again.

Runs are in-process (litellm is imported once, here, so every run shares the
same wrapped module); agents switch behaviour through DEMO_* environment
variables instead of rewritten files, so no import cache can serve stale code.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.core._scope import install

install()  # import and wrap litellm before pytester snapshots sys.modules

pytest_plugins = ["pytester"]

AGENTS = '''
import os

import litellm

from evalrunner.suite._contract import RunContext
from evalrunner.reference_agent import run_agent, tool


@tool("Look up the capital city of a country.", country="string")
def lookup_capital(country):
    return {"france": "Paris"}.get(country.lower(), "unknown")


def ctx():
    return RunContext("openai/fake", api_base=os.environ.get("DEMO_API_BASE"), api_key="sk-demo-0000000000000000", temperature=0.0)


def reference(task):
    tools = {"lookup_capital": lookup_capital}
    if os.environ.get("DEMO_VARIANT") != "reminder":
        return run_agent(task, ctx(), tools).answer
    # The changed agent: a middleware adds a reminder after the task.
    inner = litellm.completion

    def completion(**kwargs):
        messages = list(kwargs["messages"])
        messages.insert(2, {"role": "user", "content": "Reminder: use the tool, answer in one word."})
        return inner(**{**kwargs, "messages": messages})

    litellm.completion = completion
    try:
        return run_agent(task, ctx(), tools).answer
    finally:
        litellm.completion = inner


def plain(question):
    response = litellm.completion(messages=[{"role": "user", "content": question}], **ctx().litellm_kwargs())
    return response.choices[0].message.content


def fragile(question):
    answer = plain(question)
    if os.environ.get("DEMO_VARIANT") == "crash":
        return {}["Tokyo"]  # a bug the change brought in
    return answer


def always_raises(question):
    plain(question)
    raise KeyError("Tokyo")


def greedy(n):
    """Retries anything, so it swallows the replay's ScriptExhausted."""
    extra = 1 if os.environ.get("DEMO_VARIANT") else 0
    out = []
    for i in range(n + extra):
        try:
            out.append(plain(f"question {i}"))
        except Exception as exc:
            out.append(repr(exc))
    return out
'''

TESTS = """
import agents_demo


def test_reference(golden_trajectory):
    result = golden_trajectory(agents_demo.reference, "What is the capital of France?")
    assert result.output == "Paris."


def test_plain(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say hi.")


def test_greedy(golden_trajectory):
    golden_trajectory(agents_demo.greedy, 2)


def test_broken(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say bye.")


def test_new(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say something new.")


def test_without_goldens():
    assert True
"""

GOLDEN_TESTS = ["test_reference", "test_plain", "test_greedy", "test_broken", "test_new"]


def responder(body: dict[str, Any], n: int) -> Reply:
    messages = body["messages"]
    if body.get("tools") and not any(m["role"] == "tool" for m in messages):
        return Reply(
            None,
            tool_calls=[("lookup_capital", '{"country": "France"}')],
            prompt_tokens=60,
            completion_tokens=9,
        )
    if any(m["role"] == "tool" for m in messages):
        return Reply("Paris.", prompt_tokens=80, completion_tokens=2)
    return Reply(f"echo: {messages[-1]['content']}", prompt_tokens=12, completion_tokens=4)


def section(result: pytest.RunResult, test: str) -> str:
    """The failure report of one test."""
    text = result.stdout.str()
    m = re.search(rf"_{{3,}} {test} _{{3,}}\n(.*?)(?=\n_{{3,}} |\n={{3,}} )", text, re.S)
    assert m, f"no failure section for {test} in:\n{text}"
    return m.group(1)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


@pytest.fixture
def demo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in (
        "DEMO_API_BASE",
        "DEMO_VARIANT",
        "EVALRUNNER_GOLDEN_UPDATE",
        "EVALRUNNER_GOLDEN_RECORD",
    ):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(agents_demo=AGENTS, test_demo=TESTS)
    return pytester.path / "__goldens__" / "test_demo"


def test_record_check_break_update_cycle(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1. Record from the live (loopback) model: goldens and scripts are created.
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        result = run(pytester, "--golden-record")
    monkeypatch.delenv("DEMO_API_BASE")
    result.assert_outcomes(passed=6)
    assert sorted(p.name for p in demo.iterdir()) == sorted(
        [f"{t}.json" for t in GOLDEN_TESTS] + [f"{t}.llm.json" for t in GOLDEN_TESTS]
    )
    result.stdout.fnmatch_lines(
        [
            "*evalrunner goldens*",
            f"wrote {demo / 'test_reference.llm.json'}, {demo / 'test_reference.json'}",
        ]
    )
    golden = json.loads((demo / "test_reference.json").read_text())
    assert golden["shape"]["tools"] == ["lookup_capital"] and golden["shape"]["llm_calls"] == 2
    steps = golden["shape"]["step_count"]
    moved = f"step_count: {steps} -> {steps + 1}"
    assert golden["trajectory"]["steps"][0]["message"].startswith(
        "You are a helpful assistant."
    )  # the prompt is visible

    # 2. Check from the recording, with the endpoint gone: all pass. A golden whose
    #    test no longer exists is reported.
    shutil.copy(demo / "test_plain.json", demo / "test_gone.json")
    result = run(pytester)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "*evalrunner: unused goldens*",
            f"{demo / 'test_gone.json'}",
            "1 golden(s) belong to no test that ran; delete them if their tests are gone.",
        ]
    )

    # 3. Break it every way: the reference agent takes one extra step, an agent
    #    makes one call more than recorded (and swallows the error), a golden from
    #    an older schema, a malformed golden, a missing golden.
    monkeypatch.setenv("DEMO_VARIANT", "reminder")
    plain = json.loads((demo / "test_plain.json").read_text())
    plain["schema_version"] = "ATIF-v1.7"
    (demo / "test_plain.json").write_text(json.dumps(plain))
    (demo / "test_broken.json").write_text('{"format_version": 1, "shape": ')
    (demo / "test_new.json").unlink()
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=5)

    reference = section(result, "test_reference")
    golden_path = demo / "test_reference.json"
    assert reference.startswith(f"{golden_path}: {moved}, steps: ")
    order = [
        reference.index(f"Behaviour changed:\n  {moved}\n  steps: "),
        reference.index("\n--- golden\n+++ actual\n"),
        reference.index('+      "message": "Reminder: use the tool, answer in one word.",'),
        reference.index("2 request(s) differed from the recording:"),
        # The recording answered other requests: the fix is a new recording. (Before, it
        # offered --golden-update, which wrote a passing golden from the stale answers.)
        reference.index(
            "The recording no longer answers what the agent asks, so --golden-update would "
            "write a golden from stale answers. If this change is intended, re-record with:\n"
            '  pytest --golden-record "test_demo.py::test_reference"'
        ),
    ]
    assert order == sorted(order)
    assert "pytest --golden-update" not in reference
    assert "content_hash" in reference.split("\n\n")[1].splitlines()[-1]  # the hash comes last

    schema = section(result, "test_plain")
    assert (
        f"{demo / 'test_plain.json'}: golden recorded under ATIF-v1.7, running ATIF-v1.8; "
        "regenerate it from its recording with:" in schema
    )
    assert 'pytest --golden-update "test_demo.py::test_plain"' in schema
    assert "--- golden" not in schema and "Behaviour changed" not in schema

    exhausted = section(result, "test_greedy")
    assert (
        f"ScriptExhausted: {demo / 'test_greedy.llm.json'}: the agent made model call 3, but only 2 were recorded."
        in exhausted
    )
    # The test's own record command, as every other failure gives it (it named none).
    assert 're-record with: pytest --golden-record "test_demo.py::test_greedy"' in exhausted

    broken = section(result, "test_broken")
    message = [line for line in broken.splitlines() if line.strip()]
    assert message == [
        f"{demo / 'test_broken.json'}: not valid JSON at line 1 column 32: Expecting value; "
        "regenerate it with --golden-update"
    ]

    missing = section(result, "test_new")
    assert (
        f"no golden at {demo / 'test_new.json'}; create it from the recording with:\n"
        '  pytest --golden-update "test_demo.py::test_new"'
    ) in missing
    assert not (demo / "test_new.json").exists()  # never auto-created
    result.stdout.fnmatch_lines([f"{demo / 'test_gone.json'}"])

    # 4. --golden-update on part of the module rewrites the golden and says what moved;
    #    only the selected test's goldens are judged unused.
    shutil.copy(demo / "test_reference.json", demo / "test_reference-old.json")
    result = run(pytester, "--golden-update", "-k", "test_reference")
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines([f"updated {golden_path}: {moved}, steps: *, content_hash: *"])
    result.stdout.fnmatch_lines(
        [
            "warning: test_reference.json was written from answers recorded for other requests, "
            "not from what the agent now does; re-record it with:",
            '  pytest --golden-record "test_demo.py::test_reference"',
        ]
    )
    result.stdout.fnmatch_lines([f"{demo / 'test_reference-old.json'}"])
    result.stdout.no_fnmatch_line("*test_gone.json*")
    assert json.loads(golden_path.read_text())["shape"]["step_count"] == steps + 1

    # 5. The changed agent now passes against its updated golden.
    result = run(pytester, "-k", "test_reference")
    result.assert_outcomes(passed=1, deselected=5)


def test_missing_recording_names_the_record_command(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "EVALRUNNER_GOLDEN_UPDATE", "1"
    )  # update mode cannot invent model responses either
    result = run(pytester, "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    assert (
        f"no recorded model responses at {demo / 'test_plain.llm.json'}; record them (needs the live model) with:\n"
        '  pytest --golden-record "test_demo.py::test_plain"'
    ) in section(result, "test_plain")
    assert not demo.exists()


def _record_plain(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        run(pytester, "--golden-record", "-k", "test_plain").assert_outcomes(passed=1, deselected=5)
    monkeypatch.delenv("DEMO_API_BASE")


def test_unused_recorded_calls_are_shown_and_fail_under_strict(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_plain(pytester, monkeypatch)
    recording = demo / "test_plain.llm.json"
    data = json.loads(recording.read_text())
    data["entries"].append(data["entries"][0])  # one call more than the agent makes
    recording.write_text(json.dumps(data))

    result = run(pytester, "-k", "test_plain")
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(
        [
            "*evalrunner: replay notes*",
            f"test_demo.py::test_plain: 1 recorded model call(s) of {recording} were not used *",
            "  entries[1] (recorded after 1 messages, last user message 'Say hi.'; "
            "answered 'echo: Say hi.')",
            "(--golden-strict fails on this)",
        ]
    )

    result = run(pytester, "--golden-strict", "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    assert "  entries[1] (recorded after 1 messages" in section(result, "test_plain")


def test_a_recording_without_entries_is_called_malformed(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_plain(pytester, monkeypatch)
    (demo / "test_plain.llm.json").write_text('{"format_version": 1}')
    result = run(pytester, "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    message = [line for line in section(result, "test_plain").splitlines() if line.strip()]
    assert message == [
        f"{demo / 'test_plain.llm.json'}: entries: Field required; malformed recording; "
        're-record it with: pytest --golden-record "test_demo.py::test_plain"'
    ]


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda t: t.update(steps="x"), "$.steps"),
        (lambda t: t["steps"][1].update(tool_calls="x"), "$.steps[1].tool_calls"),
    ],
    ids=["steps", "tool_calls"],
)
def test_a_golden_whose_trajectory_is_not_atif_is_one_line_naming_where(
    pytester: pytest.Pytester,
    demo: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[dict[str, Any]], None],
    where: str,
) -> None:
    # Before: an AttributeError from deep in the comparison, ~790 lines of traceback.
    _record_plain(pytester, monkeypatch)
    golden = demo / "test_plain.json"
    data = json.loads(golden.read_text())
    edit(data["trajectory"])
    golden.write_text(json.dumps(data))
    result = run(pytester, "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    message = [line for line in section(result, "test_plain").splitlines() if line.strip()]
    assert len(message) == 1, message
    assert message[0].startswith(f"{golden}: trajectory: {where}: "), message
    assert message[0].endswith("; regenerate it with --golden-update"), message


MISUSE = """
import agents_demo


def test_twice(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say hi.")
    golden_trajectory(agents_demo.plain, "Say bye.")


def test_twice_named(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say hi.")
    golden_trajectory(agents_demo.plain, "Say bye.", name="bye")


def test_fragile(golden_trajectory):
    golden_trajectory(agents_demo.fragile, "Say hi.")


def test_always_raises(golden_trajectory):
    golden_trajectory(agents_demo.always_raises, "Say hi.")
"""


def _record_misuse(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    pytester.makepyfile(test_misuse=MISUSE)
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        result = run(pytester, "--golden-record", "test_misuse.py")
    monkeypatch.delenv("DEMO_API_BASE")
    return result


def test_a_second_call_of_the_fixture_on_the_same_golden_fails_and_named_calls_pass(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the second call overwrote the first's golden and recording, and the test
    # could never pass again, re-recorded or not.
    result = _record_misuse(pytester, monkeypatch)
    message = section(result, "test_twice")
    assert "golden_trajectory was already called without a name in this test" in message
    assert 'name="second"' in message
    goldens = demo.parent / "test_misuse"
    golden = json.loads((goldens / "test_twice.json").read_text())
    assert golden["shape"]["final_answer"] == "echo: Say hi."  # the first call's, kept
    result = run(pytester, "test_misuse.py", "-k", "twice_named")
    result.assert_outcomes(passed=1, deselected=3)
    # A test that fails at its first golden never reaches its second: that one is not
    # "unused" (before: listed, with "delete them if their tests are gone").
    (goldens / "test_twice_named.json").unlink()
    result = run(pytester, "test_misuse.py", "-k", "twice_named")
    result.assert_outcomes(failed=1, deselected=3)
    assert (goldens / "test_twice_named-bye.json").exists()
    assert "unused goldens" not in result.stdout.str()


def _a_newer_releases_golden(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch, ep: FakeEndpoint
) -> Path:
    """test_plain's golden, recorded against ``ep``, then marked as a newer release's."""
    monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
    run(pytester, "--golden-record", "-k", "test_plain").assert_outcomes(passed=1, deselected=5)
    golden = demo / "test_plain.json"
    golden.write_text(json.dumps({**json.loads(golden.read_text()), "format_version": 99}))
    return golden


def test_golden_update_leaves_a_golden_written_by_a_newer_evalrunner_as_it_is(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was "replaced ..., which could not be read", rc 0: a teammate on an older
    # release quietly took the golden back to the older format.
    with FakeEndpoint(responder=responder) as ep:
        golden = _a_newer_releases_golden(pytester, demo, monkeypatch, ep)
    monkeypatch.delenv("DEMO_API_BASE")
    newer = golden.read_bytes()
    result = run(pytester, "--golden-update", "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    message = section(result, "test_plain")
    assert "golden format_version 99 is newer than this evalrunner (" in message
    assert "upgrade evalrunner to read it; --golden-update left it as it is" in message
    assert golden.read_bytes() == newer


def test_golden_record_leaves_a_golden_written_by_a_newer_evalrunner_as_it_is(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Re-recording wrote this release's format over it, with "wrote ...", rc 0.
    with FakeEndpoint(responder=responder) as ep:
        golden = _a_newer_releases_golden(pytester, demo, monkeypatch, ep)
        recording = demo / "test_plain.llm.json"
        newer, recorded = golden.read_bytes(), recording.read_bytes()
        calls = len(ep.requests)
        result = run(pytester, "--golden-record", "-k", "test_plain")
        assert len(ep.requests) == calls  # stopped before it called the model
    result.assert_outcomes(failed=1, deselected=5)
    message = section(result, "test_plain")
    assert "golden format_version 99 is newer than this evalrunner (" in message
    assert "upgrade evalrunner to read it; --golden-record left it as it is" in message
    assert (golden.read_bytes(), recording.read_bytes()) == (newer, recorded)


SHARED = """
import pytest

import agents_demo


@pytest.mark.parametrize("city", ["Paris", "Paris?"])
def test_city(golden_trajectory, city):
    golden_trajectory(agents_demo.plain, f"Weather in {city}")


@pytest.mark.parametrize("town", ["Rome", "ROME"])
def test_town(golden_trajectory, town):
    golden_trajectory(agents_demo.plain, f"Weather in {town}")


class TestA:
    def test_same(self, golden_trajectory):
        golden_trajectory(agents_demo.plain, "Say hi.")


class TestB:
    def test_same(self, golden_trajectory):
        golden_trajectory(agents_demo.plain, "Say bye.")

    def test_same_named(self, golden_trajectory):
        golden_trajectory(agents_demo.plain, "Say bye.", name="b")


def test_alone(golden_trajectory):
    golden_trajectory(agents_demo.plain, "Say hi.")
"""


@pytest.mark.parametrize("xdist", [False, True])
def test_two_tests_whose_goldens_would_be_one_file_are_refused_naming_each_other(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    # A golden is named after the test alone: TestA::test_same and TestB::test_same, or
    # test_city[Paris] and test_city[Paris?], were one file. Recording wrote it twice,
    # said "9 passed", and the next replay failed whichever recorded first.
    if xdist:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_shared=SHARED)
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        result = run(pytester, "--golden-record", "test_shared.py", *(["-n", "2"] if xdist else []))
    result.assert_outcomes(passed=2, failed=6)
    text = result.stdout.str()
    for test, other in [
        ("test_city[Paris]", "test_shared.py::test_city[Paris?]"),
        ("test_city[Paris?]", "test_shared.py::test_city[Paris]"),
        # One file on the default disks of macOS and Windows.
        ("test_town[Rome]", "test_shared.py::test_town[ROME]"),
        ("test_town[ROME]", "test_shared.py::test_town[Rome]"),
        ("TestA::test_same", "test_shared.py::TestB::test_same"),
        ("TestB::test_same", "test_shared.py::TestA::test_same"),
    ]:
        assert f"test_shared.py::{test}: its golden " in text
        assert f"would be the same file as that of {other} " in text
    goldens = demo.parent / "test_shared"
    assert sorted(p.name for p in goldens.glob("*.json") if ".llm" not in p.name) == [
        "test_alone.json",
        "test_same_named-b.json",
    ]


LONG_ID = """
import pytest

import agents_demo


@pytest.mark.parametrize("q", ["hi", "bye"], ids=["y" * 300, "y" * 299 + "z"])
def test_long(golden_trajectory, q):
    golden_trajectory(agents_demo.plain, "Say " + q)
"""


def test_a_test_id_too_long_for_a_file_name_gets_a_golden_cut_short_with_a_hash(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: an OSError "File name too long" traceback, recorded or replayed.
    pytester.makepyfile(test_long_id=LONG_ID)
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        run(pytester, "--golden-record", "test_long_id.py").assert_outcomes(passed=2)
    monkeypatch.delenv("DEMO_API_BASE")
    run(pytester, "test_long_id.py").assert_outcomes(passed=2)
    names = sorted(p.name for p in (demo.parent / "test_long_id").iterdir())
    assert len(names) == 4  # two goldens, two recordings: the ids differ in their last letter
    assert all(len(name.encode()) < 255 for name in names)
    assert all(name.startswith("test_long_" + "y" * 100) for name in names)


def test_an_agent_that_raises_is_never_recorded_and_fails_with_its_traceback(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the crash was recorded as the golden's behaviour and passed on every replay.
    result = _record_misuse(pytester, monkeypatch)
    message = section(result, "test_always_raises")
    assert "recording failed, nothing written: the agent raised KeyError: 'Tokyo'" in message
    assert "in always_raises" in message and 'raise KeyError("Tokyo")' in message
    goldens = demo.parent / "test_misuse"
    assert not (goldens / "test_always_raises.json").exists()
    assert not (goldens / "test_always_raises.llm.json").exists()

    # A golden of a run that worked, and a change that makes the agent raise.
    assert (goldens / "test_fragile.json").exists()
    monkeypatch.setenv("DEMO_VARIANT", "crash")
    result = run(pytester, "test_misuse.py", "-k", "fragile")
    result.assert_outcomes(failed=1, deselected=3)
    message = section(result, "test_fragile")
    assert f"{goldens / 'test_fragile.json'}: the replayed run failed: the agent raised" in message
    assert 'return {}["Tokyo"]' in message  # the agent's own line
    result = run(pytester, "--golden-update", "test_misuse.py", "-k", "fragile")
    result.assert_outcomes(failed=1, deselected=3)
    assert "not updated: the agent raised KeyError" in section(result, "test_fragile")
    assert json.loads((goldens / "test_fragile.json").read_text())["shape"]["crashed"] is False


def test_a_golden_whose_summary_disagrees_with_its_trajectory_is_one_line_naming_the_field(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: comparisons read the trajectory, so an edited summary passed and showed
    # reviewers behaviour the golden does not hold.
    _record_plain(pytester, monkeypatch)
    golden = demo / "test_plain.json"
    data = json.loads(golden.read_text())
    data["shape"]["step_count"] = 99
    golden.write_text(json.dumps(data))
    result = run(pytester, "-k", "test_plain")
    result.assert_outcomes(failed=1, deselected=5)
    message = [line for line in section(result, "test_plain").splitlines() if line.strip()]
    assert len(message) == 1, message
    assert message[0].startswith(f"{golden}: shape.step_count is 99 but the golden's trajectory")
    assert message[0].endswith("; regenerate it with --golden-update"), message
    updated = run(pytester, "--golden-update", "-k", "test_plain")
    updated.assert_outcomes(passed=1, deselected=5)
    # Said as what it did (before: "created", as if there had been no golden).
    updated.stdout.fnmatch_lines([f"replaced {golden}, which could not be read ({golden}: *"])
    run(pytester, "-k", "test_plain").assert_outcomes(passed=1, deselected=5)


def test_goldens_of_a_deleted_test_module_are_listed_as_unused(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: only the directories of modules that ran were looked at.
    _record_plain(pytester, monkeypatch)
    _record_misuse(pytester, monkeypatch)
    (pytester.path / "test_misuse.py").unlink()
    result = run(pytester)
    gone = demo.parent / "test_misuse"
    result.stdout.fnmatch_lines(
        [
            "*evalrunner: unused goldens*",
            f"{gone / 'test_fragile.json'} (with test_fragile.llm.json)",
            f"{gone / 'test_twice.json'} (with test_twice.llm.json)",
        ]
    )


def test_goldens_of_a_deleted_module_are_listed_when_no_test_beside_it_has_goldens(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: found only when another test of that directory used goldens, so deleting
    # a project's one golden test module left its goldens unlisted.
    _record_misuse(pytester, monkeypatch)
    (pytester.path / "test_misuse.py").unlink()
    (pytester.path / "test_demo.py").unlink()
    pytester.makepyfile(test_other="def test_other():\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    gone = demo.parent / "test_misuse"
    result.stdout.fnmatch_lines(
        [
            "*evalrunner: unused goldens*",
            f"{gone / 'test_fragile.json'} (with test_fragile.llm.json)",
        ]
    )


def test_a_command_in_a_message_names_the_test_as_pytest_takes_it_where_it_was_run(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: run from tests/, the hint said "tests/test_sub.py::test_sub" (the node id,
    # relative to the rootdir), which pytest in tests/ does not find.
    pytester.makeini("[pytest]\n")
    pytester.syspathinsert()
    sub = pytester.mkdir("tests")
    (sub / "test_sub.py").write_text(
        "import agents_demo\n\n\ndef test_sub(golden_trajectory):\n"
        '    golden_trajectory(agents_demo.plain, "Say hi.")\n'
    )
    monkeypatch.chdir(sub)
    result = run(pytester, "test_sub.py")
    result.assert_outcomes(failed=1)
    assert 'pytest --golden-record "test_sub.py::test_sub"' in section(result, "test_sub")


SCENARIO_AGENTS = """
import litellm


def answer(task, ctx):
    response = litellm.completion(messages=[{"role": "user", "content": task}], **ctx.litellm_kwargs())
    return response.choices[0].message.content
"""

SUITE = """\
format_version: 1
name: demo
models: [openai/fake]
scenarios:
  - id: greets
    agent: scenario_agents:answer
    input: Say hello.
    tags: [frozen]
    checks: {answer_matches: '(?i)hello'}
  - id: names_paris
    agent: scenario_agents:answer
    input: Capital of France?
    tags: [frozen]
    checks: {answer_contains: [Paris], max_tool_calls: 0}
"""


def _record_suite(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    suite: str = SUITE,
    env_model: str | None = None,
) -> pytest.RunResult:
    """A project with suites/demo.yaml (``suite``), its frozen scenarios recorded
    (``env_model``: EVALRUNNER_MODEL while recording)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for var in ("EVALRUNNER_GOLDEN_UPDATE", "EVALRUNNER_GOLDEN_RECORD", "EVALRUNNER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    if env_model is not None:
        monkeypatch.setenv("EVALRUNNER_MODEL", env_model)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-not-a-secret")
    pytester.makepyfile(scenario_agents=SCENARIO_AGENTS)
    pytester.syspathinsert()
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "demo.yaml").write_text(suite)
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        recorded = run(pytester, "suites", "--golden-record", *args)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    return recorded


def test_frozen_scenarios_apply_their_checks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _record_suite(pytester, monkeypatch)
    # Recorded either way; the one that does not do what its scenario asks says so.
    recorded.assert_outcomes(passed=1, failed=1)
    assert section(recorded, "scenario demo::names_paris").startswith(
        f"{pytester.path / 'suites' / 'goldens' / 'demo' / 'names_paris.json'}: the run was "
        "recorded but fails the scenario's check(s) answer_contains:Paris"
    )
    goldens = pytester.path / "suites" / "goldens" / "demo"
    assert sorted(p.name for p in goldens.iterdir()) == [
        "greets.json",
        "greets.llm.json",
        "names_paris.json",
        "names_paris.llm.json",
    ]

    result = run(pytester, "suites")  # replayed: the goldens match, one check fails
    result.assert_outcomes(passed=1, failed=1)
    message = section(result, "scenario demo::names_paris")
    assert message.startswith(
        f"{goldens / 'names_paris.json'}: the run matches its golden but fails the scenario's "
        "check(s) answer_contains:Paris (final answer 'echo: Capital of France?', tools []). "
    )
    assert 'pytest --golden-record "suites/demo.yaml::names_paris"' in message
    assert "or correct the check in demo.yaml if the check is wrong." in message


def test_a_re_record_that_fails_its_checks_keeps_the_golden_it_would_replace(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-record whose run fails the scenario's checks replaced the good golden and
    recording anyway (issue 53, row 19); they are now put back, and the failure says so."""
    _record_suite(pytester, monkeypatch).assert_outcomes(passed=1, failed=1)
    goldens = pytester.path / "suites" / "goldens" / "demo"
    kept = {p.name: p.read_bytes() for p in goldens.glob("greets*")}
    assert sorted(kept) == ["greets.json", "greets.llm.json"]
    with FakeEndpoint(responder=lambda body, n: Reply("Goodbye.")) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        again = run(pytester, "suites", "--golden-record", "-k", "greets")
    again.assert_outcomes(failed=1)
    said = section(again, "scenario demo::greets")
    assert "the run was recorded but fails the scenario's check(s) answer_matches" in said
    assert said.rstrip().endswith("The golden and recording from before were kept (greets.json).")
    assert {p.name: p.read_bytes() for p in goldens.glob("greets*")} == kept


def test_a_pr_that_changes_only_the_temperature_is_named_and_fails_golden_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same answers replayed whatever the temperature, and even --golden-strict said
    "no behavioural change" (issue 53, row 18)."""
    _record_suite(pytester, monkeypatch).assert_outcomes(passed=1, failed=1)
    suite = pytester.path / "suites" / "demo.yaml"
    suite.write_text(
        SUITE.replace("models: [openai/fake]", "models: [openai/fake]\ntemperature: 0.1")
    )
    strict = run(pytester, "suites", "--golden-strict", "-k", "greets")
    strict.assert_outcomes(failed=1)
    said = section(strict, "scenario demo::greets")
    assert "was recorded with other sampling settings (temperature" in said
    assert "-> 0.1)" in said
    lenient = run(pytester, "suites", "-k", "greets")
    lenient.assert_outcomes(passed=1)
    assert "recorded with other sampling settings" in lenient.stdout.str()


def test_a_pr_that_changes_only_the_model_is_named_and_fails_golden_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenario now runs another model: its recorded answers are another model's, and
    replay passed every check with them (issue 53, row 18)."""
    _record_suite(pytester, monkeypatch).assert_outcomes(passed=1, failed=1)
    recorded = pytester.path / "suites" / "goldens" / "demo" / "greets.llm.json"
    assert json.loads(recorded.read_text())["model"] == "openai/fake"
    suite = pytester.path / "suites" / "demo.yaml"
    suite.write_text(SUITE.replace("models: [openai/fake]", "models: [openai/fake-mini]"))
    strict = run(pytester, "suites", "--golden-strict", "-k", "greets")
    strict.assert_outcomes(failed=1)
    said = section(strict, "scenario demo::greets")
    assert "recorded against openai/fake, the scenario now runs openai/fake-mini" in said
    lenient = run(pytester, "suites", "-k", "greets")
    lenient.assert_outcomes(passed=1)
    assert "recorded against openai/fake, the scenario now runs openai/fake-mini" in (
        lenient.stdout.str()
    )
    suite.write_text(SUITE)
    again = run(pytester, "suites", "--golden-strict", "-k", "greets")
    again.assert_outcomes(passed=1)  # the model it was recorded against: nothing said
    assert "recorded against" not in again.stdout.str()


def test_a_model_from_the_environment_is_not_a_change_of_the_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded against EVALRUNNER_MODEL's model, replayed in CI without it: the suite names
    no model, so nothing in the project moved and --golden-strict passes."""
    no_models = SUITE.replace("models: [openai/fake]\n", "")
    recorded = _record_suite(
        pytester, monkeypatch, "-k", "greets", suite=no_models, env_model="openai/fake"
    )
    recorded.assert_outcomes(passed=1)
    monkeypatch.delenv("EVALRUNNER_MODEL")
    replayed = run(pytester, "suites", "--golden-strict", "-k", "greets")
    replayed.assert_outcomes(passed=1)
    assert "recorded against" not in replayed.stdout.str()


def test_the_goldens_of_a_renamed_suite_are_listed_as_unused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: suites/goldens/<old name>/ was never listed after the suite file was renamed.
    _record_suite(pytester, monkeypatch, "-k", "greets")
    suites = pytester.path / "suites"
    (suites / "demo.yaml").unlink()
    (suites / "geo.yaml").write_text(SUITE.replace("name: demo", "name: geo"))
    result = run(pytester, "suites", "-k", "greets")
    result.assert_outcomes(failed=1, deselected=1)  # no golden yet under the new name
    old = suites / "goldens" / "demo" / "greets.json"
    result.stdout.fnmatch_lines(["*evalrunner: unused goldens*", f"{old} (with greets.llm.json)"])


LOADED_PROBE = """
import sys
from pathlib import Path


def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m == "pydantic" or m.startswith("evalrunner"))
    Path(__file__).with_name("loaded.txt").write_text("\\n".join(loaded))
"""

LIGHT = {
    "evalrunner",
    "evalrunner._heap",  # the standard library's gc, atexit, contextlib, functools
    "evalrunner._lazy",
    "evalrunner._litellm",
    "evalrunner._net",  # the telemetry switches the plugin sets (the standard library's ipaddress)
    "evalrunner._version",
    "evalrunner.frozen",
    "evalrunner.frozen._session",
    "evalrunner.frozen.plugin",
}


def test_a_session_that_never_uses_a_golden_loads_none_of_the_frozen_machinery(
    pytester: pytest.Pytester,
) -> None:
    # Every pytest session of a project with evalrunner installed loads the plugin;
    # one that asks for no golden must not pay for pydantic models, capture or the
    # suite loader (benchmarks/bench_pr.py: "a plain test, plugin on").
    pytester.makeconftest(LOADED_PROBE)
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    loaded = set((pytester.path / "loaded.txt").read_text(encoding="utf-8").split())
    assert loaded - LIGHT == set()
    # A test that asks for the fixture does load it: the probe sees what it should.
    pytester.makepyfile(
        test_plain="def test_plain(golden_trajectory):\n    assert golden_trajectory\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    loaded = set((pytester.path / "loaded.txt").read_text(encoding="utf-8").split())
    assert {"pydantic", "evalrunner.frozen._items"} <= loaded


CONCURRENT = """
import asyncio
import os

import litellm


async def two_cities(task):
    # Both calls are in flight together live; replayed, each is answered at once.
    async def one(city):
        response = await litellm.acompletion(
            model="openai/fake",
            api_base=os.environ.get("DEMO_API_BASE"),
            api_key="sk-demo-0000000000000000",
            messages=[{"role": "user", "content": f"{task} {city}"}],
        )
        return response.choices[0].message.content

    return " / ".join(await asyncio.gather(one("Paris"), one("Rome")))


def test_two_cities(golden_trajectory):
    assert golden_trajectory(two_cities, "weather in").output == (
        "echo: weather in Paris / echo: weather in Rome"
    )
"""


def test_concurrent_calls_in_one_scope_replay_as_recorded(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: live, both questions were steps before either answer (user, user, agent,
    # agent); in replay answers come at once (user, agent, user, agent), so a fresh
    # golden failed its first replay. Each answer now sits after its own question.
    pytester.makepyfile(test_concurrent=CONCURRENT)
    with FakeEndpoint(responder=responder, latency=0.3) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        run(pytester, "--golden-record", "test_concurrent.py").assert_outcomes(passed=1)
    monkeypatch.delenv("DEMO_API_BASE")
    golden = demo.parent / "test_concurrent" / "test_two_cities.json"
    written = golden.read_text(encoding="utf-8")
    for _ in range(2):
        run(pytester, "test_concurrent.py").assert_outcomes(passed=1)
    assert golden.read_text(encoding="utf-8") == written
    steps = json.loads(written)["trajectory"]["steps"]
    assert [(s["source"], s["message"]) for s in steps] == [
        ("user", "weather in Paris"),
        ("agent", "echo: weather in Paris"),
        ("user", "weather in Rome"),
        ("agent", "echo: weather in Rome"),
    ]


def test_recording_prints_no_warnings_from_litellms_types(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh process (pydantic warns once per process, as it builds litellm's types): a
    # dozen "... using the `ReadOnly` qualifier" warnings buried the lines saying which
    # goldens were written (a review).
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", "--golden-record", "-k", "test_reference"
        )
    result.assert_outcomes(passed=1)
    assert "wrote " in result.stdout.str()
    assert "ReadOnly" not in result.stdout.str() + result.stderr.str()


def test_golden_update_says_unchanged_of_a_golden_whose_bytes_it_left_as_they_were(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "updated <golden>: no behavioural change" for a file git showed no change
    # in, and reviewers looked for a diff that was not there (a review).
    _record_plain(pytester, monkeypatch)
    golden = demo / "test_plain.json"
    recorded = golden.read_bytes()
    result = run(pytester, "--golden-update", "-k", "test_plain")
    result.assert_outcomes(passed=1, deselected=5)
    assert golden.read_bytes() == recorded
    result.stdout.fnmatch_lines(
        ["*evalrunner goldens*", f"unchanged {golden}: no behavioural change"]
    )
    result.stdout.no_fnmatch_line("updated *")

    # The same behaviour in other bytes (reformatted by hand): rewritten, so "updated".
    golden.write_text(json.dumps(json.loads(recorded)), encoding="utf-8")
    result = run(pytester, "--golden-update", "-k", "test_plain")
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines([f"updated {golden}: no behavioural change"])
    assert golden.read_bytes() == recorded


def test_re_recording_a_golden_says_what_changed_in_the_words_of_the_check(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "wrote <recording>, <golden>" alone, so whoever re-recorded by habit never
    # saw that the agent's behaviour had changed (a review).
    golden, recording = demo / "test_reference.json", demo / "test_reference.llm.json"
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        first = run(pytester, "--golden-record", "-k", "test_reference")
        first.assert_outcomes(passed=1, deselected=5)
        assert f"wrote {recording}, {golden}" in first.stdout.lines  # nothing it replaced
        monkeypatch.setenv("DEMO_VARIANT", "reminder")  # one step more
        checked = run(pytester, "-k", "test_reference")
        checked.assert_outcomes(failed=1, deselected=5)
        moved = section(checked, "test_reference").splitlines()[0].removeprefix(f"{golden}: ")
        assert moved.startswith("step_count: ")
        again = run(pytester, "--golden-record", "-k", "test_reference")
        again.assert_outcomes(passed=1, deselected=5)
        assert f"wrote {recording}, {golden}: {moved}" in again.stdout.lines
        same = run(pytester, "--golden-record", "-k", "test_reference")
    same.assert_outcomes(passed=1, deselected=5)
    assert f"wrote {recording}, {golden}: no behavioural change" in same.stdout.lines


def test_re_recording_a_suite_scenario_says_what_changed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `pytest suites --golden-record` over a changed scenario: the same line as a test's.
    _record_suite(pytester, monkeypatch, "-k", "greets")
    suite = pytester.path / "suites" / "demo.yaml"
    suite.write_text(SUITE.replace("input: Say hello.", "input: Say hello twice."))
    recorded = _record_suite_again(pytester, monkeypatch, "-k", "greets")
    recorded.assert_outcomes(passed=1, deselected=1)
    goldens = pytester.path / "suites" / "goldens" / "demo"
    recorded.stdout.fnmatch_lines(
        [
            f"wrote {goldens / 'greets.llm.json'}, {goldens / 'greets.json'}: final_answer: "
            "'echo: Say hello.' -> 'echo: Say hello twice.', content_hash: *"
        ]
    )


def _record_suite_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("EVALRUNNER_API_BASE", ep.api_base)
        recorded = run(pytester, "suites", "--golden-record", *args)
    monkeypatch.delenv("EVALRUNNER_API_BASE")
    return recorded


def test_record_and_update_given_together_are_refused_before_any_test_runs(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: record won without a word, and called the live model where the user may
    # have meant to rewrite goldens from the recordings.
    pytester.makepyfile(test_long_id=LONG_ID)
    result = run(pytester, "--golden-record", "--golden-update", "test_long_id.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--golden-record and --golden-update" in result.stderr.str()
    assert "give one" in result.stderr.str()
    monkeypatch.setenv("EVALRUNNER_GOLDEN_UPDATE", "1")
    result = run(pytester, "--golden-record", "test_long_id.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (demo.parent / "test_long_id").exists()


def test_a_renamed_test_module_is_told_to_move_its_goldens_not_only_to_re_record(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: only "record them (needs the live model)", and the old folder listed as
    # goldens to delete: good recordings thrown away for a rename.
    module = 'import agents_demo\n\ndef test_w(golden_trajectory):\n    golden_trajectory(agents_demo.plain, "Say hi.")\n'
    pytester.makepyfile(test_other=module)
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        run(pytester, "--golden-record", "test_other.py").assert_outcomes(passed=1)
    monkeypatch.delenv("DEMO_API_BASE")
    (pytester.path / "test_other.py").rename(pytester.path / "test_rome.py")
    result = run(pytester, "test_rome.py")
    result.assert_outcomes(failed=1)
    old, new = demo.parent / "test_other", demo.parent / "test_rome"
    assert f"or, if the module was renamed from test_other.py: git mv {old} {new}" in (
        result.stdout.str()
    )
    old.rename(new)  # what git mv does to the files
    run(pytester, "test_rome.py").assert_outcomes(passed=1)


def test_a_skipped_test_keeps_its_goldens_and_hides_no_one_else_s_unused_ones(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One skipped test (no Node installed, a marker) made the session look stopped early,
    so no unused golden was listed at all (issue 53, row 24); its own goldens are kept."""
    _record_plain(pytester, monkeypatch)
    shutil.copy(demo / "test_plain.json", demo / "test_gone.json")
    pytester.makeconftest(
        """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_plain":
            item.add_marker(pytest.mark.skip(reason="needs a tool this machine lacks"))
"""
    )
    result = run(pytester)
    result.stdout.fnmatch_lines(["*evalrunner: unused goldens*", f"{demo / 'test_gone.json'}"])
    assert f"{demo / 'test_plain.json'}" not in result.stdout.str().split("unused goldens")[1]


def _frozen_summary(junit: Path) -> str:
    """The action's PR comment of a JUnit file (action/frozen_summary.py, loaded from its file
    as the action runs it)."""
    import importlib.util

    from paths import REPO

    spec = importlib.util.spec_from_file_location(
        "frozen_summary", REPO / "action" / "frozen_summary.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.summary(junit))


def test_the_pr_comment_names_what_happened_and_shows_the_whole_change(
    pytester: pytest.Pytester, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comment showed pytest's cut of the message ("[+61 more lines; full report in
    element text]") instead of the change, and headed an import error or a missing golden
    "behaviour changed" (issue 54, A3)."""
    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("DEMO_API_BASE", ep.api_base)
        run(pytester, "--golden-record").assert_outcomes(passed=6)
    monkeypatch.delenv("DEMO_API_BASE")
    (demo / "test_new.json").unlink()
    monkeypatch.setenv("DEMO_VARIANT", "reminder")
    junit = pytester.path / "frozen.xml"
    run(pytester, "-k", "reference or new", f"--junitxml={junit}").assert_outcomes(failed=2)
    comment = _frozen_summary(junit)
    assert "### evalrunner: frozen subset — behaviour changed: 1, missing golden: 1" in comment
    assert "<code>test_demo::test_reference</code>: behaviour changed</summary>" in comment
    assert "<code>test_demo::test_new</code>: missing golden</summary>" in comment
    assert "full report in element text" not in comment
    # The whole delta, to its last line: the command that accepts it.
    assert "If this change is intended, re-record with:" in comment

    pytester.makepyfile(test_broken="import module_that_is_not_there\n")
    run(pytester, f"--junitxml={junit}")
    assert "### evalrunner: frozen subset — error: 1" in _frozen_summary(junit)
