"""Scenarios with ``command:``: what the file may say (one-line errors naming file and
field), how argv, the final answer and the exit are read, and fingerprints that keep every
existing baseline."""

from __future__ import annotations

import shutil
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
        # Before, each of these passed `validate` and the runs never got the input (a review).
        (
            HEAD + "scenarios:\n" + COMMAND.replace(', "{task}"', ""),
            "scenarios[0] (id 'a').command: never gives the program the scenario's input: add "
            """'{task}' where it takes the task, e.g. ["python3", "agent.py", "{task}"]""",
        ),
        (
            HEAD + "scenarios:\n" + COMMAND.replace("{task}", "{taks}"),
            "scenarios[0] (id 'a').command[2]: '{taks}' is not a placeholder: '{task}', the "
            "scenario's input, is the only one",
        ),
        (
            # Flow style reads an unquoted {task} as a mapping.
            HEAD + "scenarios:\n" + COMMAND.replace('"{task}"', "{task}"),
            "scenarios[0] (id 'a').command[2]: expected text, got a mapping; quote it: \"{task}\"",
        ),
    ],
    ids=[
        "neither",
        "both",
        "env-without-command",
        "empty-command",
        "env-not-text",
        "no-task",
        "misspelt-task",
        "unquoted-task",
    ],
)
def test_mistakes_are_one_line_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    shown = str(info.value)
    assert "\n" not in shown and message in shown, shown


def test_a_missing_program_is_found_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a command starts here, and its relative paths are from here
    suite = load_suite_text(tmp_path, COMMAND.replace("python3", "no-such-prog-xyz"))
    with pytest.raises(ConfigError, match=r"\.command: program 'no-such-prog-xyz' not found"):
        suite.scenarios[0].load_agent()
    # Before: a script the interpreter is given, missing where the command starts (a night
    # run from another directory), made every run "crashed": behaviour, of nothing.
    with pytest.raises(ConfigError) as info:
        load_suite_text(tmp_path, COMMAND).scenarios[0].load_agent()
    assert str(info.value).endswith(
        f".command[1]: script 'agent.py' not found relative to {tmp_path}, where the command "
        "starts (the directory evalrunner runs in, or the scenario's cwd); run evalrunner from "
        "the directory that holds it, or give cwd or its absolute path"
    )
    (tmp_path / "agent.py").write_text("print('hi')\n", encoding="utf-8")
    ok = load_suite_text(tmp_path, COMMAND)
    ok.scenarios[0].load_agent()  # python3 is on PATH, agent.py where it starts


@pytest.mark.parametrize(
    "argv",
    [
        # Files that are not the script an interpreter runs from where the command starts.
        '[sh, -c, "cd agents && python3 agent.py \\"$0\\"", "{task}"]',
        '[python3, -X, importtime, agent2.py, "{task}"]',
        '[node, --import=./otel.mjs, agent.mjs, "{task}"]',
        '[env, python3, other/agent.py, "{task}"]',
        '[python3, https://example.com/agent.py, "{task}"]',
    ],
)
def test_arguments_that_may_name_files_elsewhere_are_not_taken_for_a_missing_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: str
) -> None:
    # The script check stops a night before it starts: a command it cannot read the shape
    # of (options first, another program's arguments) must not be refused by it.
    monkeypatch.chdir(tmp_path)
    for program in ("node", "env"):
        if shutil.which(program) is None and program in argv:
            pytest.skip(f"{program} not on PATH")
    text = COMMAND.replace('[python3, agent.py, "{task}"]', argv)
    load_suite_text(tmp_path, text).scenarios[0].load_agent()


def test_a_shell_variable_in_a_command_is_not_taken_for_a_placeholder(tmp_path: Path) -> None:
    suite = load_suite_text(tmp_path, COMMAND.replace('"{task}"', '"${HOME}/{task}"'))
    assert suite.scenarios[0].command == ["python3", "agent.py", "${HOME}/{task}"]


def test_a_program_that_is_not_executable_is_found_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: every run "crashed" on PermissionError, and the night offered itself as the
    # baseline (a review).
    monkeypatch.chdir(tmp_path)  # a command's relative program is found from here
    (tmp_path / "agent.sh").write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    suite = load_suite_text(tmp_path, COMMAND.replace("python3, agent.py", "./agent.sh"))
    with pytest.raises(ConfigError) as info:
        suite.scenarios[0].load_agent()
    assert str(info.value).endswith(
        "command: program './agent.sh' is not executable; chmod +x ./agent.sh, or name its "
        "interpreter first: [bash, ./agent.sh, ...]"
    )
    (tmp_path / "agent.sh").chmod(0o755)
    suite.scenarios[0].load_agent()


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
