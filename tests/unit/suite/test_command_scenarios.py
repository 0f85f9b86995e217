"""Scenarios with ``command:``: what the file may say (one-line errors naming file and
field), how argv, the final answer and the exit are read, and fingerprints that keep every
existing baseline."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_texts import HEAD, SCENARIO

from evalrunner.errors import ConfigError
from evalrunner.live._command import _exit_problem
from evalrunner.suite._contract import command_argv, final_answer
from evalrunner.suite._loader import load_suite
from evalrunner.suite._settings import Suite

COMMAND = '  - id: a\n    command: [python3, agent.py, "{task}"]\n    input: do it\n'


def load(tmp_path: Path, text: str) -> Suite:
    path = tmp_path / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            HEAD + "scenarios:\n  - id: a\n    input: do it\n",
            "demo.yaml:4: scenarios[0] (id 'a').agent: needs an agent: give agent: "
            "'package.module:callable' or command: [argv, ...]",
        ),
        (
            HEAD + "scenarios:\n" + COMMAND + "    agent: pkg.mod:fn\n",
            "scenarios[0] (id 'a').command: give agent or command, not both; remove one",
        ),
        (
            HEAD + "scenarios:\n" + SCENARIO + "    env: {A: b}\n",
            "scenarios[0] (id 'a').env: env applies only to command agents; remove it",
        ),
        (
            HEAD + "scenarios:\n  - id: a\n    command: []\n    input: do it\n",
            "scenarios[0] (id 'a').command:",
        ),
        (
            HEAD + "scenarios:\n" + COMMAND + "    env: {A: 1}\n",
            "scenarios[0] (id 'a').env.A:",
        ),
    ],
    ids=["neither", "both", "env-without-command", "empty-command", "env-not-text"],
)
def test_mistakes_are_one_line_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    shown = str(info.value)
    assert "\n" not in shown and message in shown, shown


def test_a_missing_program_is_found_before_any_run(tmp_path: Path) -> None:
    suite = load_suite_text(tmp_path, COMMAND.replace("python3", "no-such-prog-xyz"))
    with pytest.raises(ConfigError, match=r"\.command: program 'no-such-prog-xyz' not found"):
        suite.scenarios[0].load_agent()
    ok = load_suite_text(tmp_path, COMMAND)
    ok.scenarios[0].load_agent()  # python3 is on PATH


def load_suite_text(tmp_path: Path, scenario: str) -> Suite:
    return load(tmp_path, HEAD + "scenarios:\n" + scenario)


def test_the_fingerprint_of_agent_scenarios_is_unchanged_and_commands_count(
    tmp_path: Path,
) -> None:
    agent = load_suite_text(tmp_path, SCENARIO)
    command = load_suite_text(tmp_path, COMMAND)
    other = load_suite_text(tmp_path, COMMAND.replace("agent.py", "agent2.py"))
    env = load_suite_text(tmp_path, COMMAND + "    env: {MODE: fast}\n")
    prints = {s.scenarios[0].fingerprint for s in (agent, command, other, env)}
    assert len(prints) == 4


def test_task_is_substituted_in_every_argument() -> None:
    assert command_argv(["x", "{task}", "--q={task}"], "hi") == ["x", "hi", "--q=hi"]


@pytest.mark.parametrize(
    ("stdout", "answer"),
    [
        ('log\n{"final_answer": "Paris"}\n', "Paris"),
        ('{"final_answer": "Paris"}\nbye\n', "Paris"),  # the JSON line wins over later text
        ('{"final_answer": null}\n', None),  # gave up
        ("thinking\nParis\n\n", "Paris"),  # the last non-empty line
        ('{"other": 1}\n', '{"other": 1}'),
        ("", None),
        ('{"final_answer": {"city": "Paris"}}', '{"city": "Paris"}'),
    ],
)
def test_the_final_answer_is_read_from_stdout(stdout: str, answer: str | None) -> None:
    assert final_answer(stdout) == answer


def test_exits_are_described() -> None:
    assert _exit_problem(0, "noise") is None
    crashed = _exit_problem(3, "Traceback\nValueError: boom\n")
    assert crashed is not None and str(crashed).endswith(
        "status 3; stderr: Traceback\nValueError: boom"
    )
    killed = _exit_problem(-9, "")
    assert killed is not None and str(killed) == "command was killed by SIGKILL; no stderr"
