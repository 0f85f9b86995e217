"""Bad arguments to any command: one line naming what is wrong and the fix, exit 2, no
traceback, nothing started. One row per case; add a row for each new refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# (arguments, a phrase the one line must hold). {tmp} is a fresh directory.
CASES = [
    (["proxy", "--port", "99999", "--replay", "{tmp}"], "99999 is not in the range 0<=x<=65535"),
    (["proxy", "--replay", "{tmp}/nosuchdir"], "no such directory"),
    (["proxy", "--model", "opena/gpt-4o-mini"], "did you mean 'openai'"),
    (
        ["report", "--since", "2030-01-01", "--until", "2020-01-01", "--history", "{tmp}"],
        "is not before --until",
    ),
    (["report", "--since", "yesterday", "--history", "{tmp}"], "not an ISO 8601 date"),
    (["validate", "{tmp}/binary.yaml"], "not UTF-8 text"),
    (["serve-local", "--port", "70000"], "70000 is not in the range"),
    (["validate", "{tmp}/suites/typo.yaml"], "did you mean 'input' where it says 'inptu'?"),
    (["validate", "{tmp}/suites/huge.yaml"], "runs: must be at most 10000, got 1000000000"),
    (
        ["run", "--suite", "huge", "--runs", "100000000"],
        "100000000 is not in the range 1<=x<=10000",
    ),
    (["run", "--suite", "dir", "--suites-dir", "{tmp}/suites"], "is a directory, not a suite"),
    (["run", "--suite", "link", "--suites-dir", "{tmp}/suites"], "which does not exist"),
    (["run", "--suite", "huge", "--ray-address", "auto"], "--ray-address is for --executor ray"),
    (["baseline", "--suite", "huge", "--from", "{tmp}", "--runs", "5"], "shapes a live run"),
    (["plan", "--suite", "nosuch", "--suites-dir", "{tmp}/suites"], "no suite named 'nosuch'"),
    (
        ["plan", "--suite", "huge", "--suites-dir", "{tmp}/suites", "--history", "{tmp}/histroy"],
        "history location '{tmp}/histroy' does not exist",
    ),
    # Before: read as a history of no nights, and planned as for a first night.
    (
        [
            "plan",
            "--suite",
            "huge",
            "--suites-dir",
            "{tmp}/suites",
            "--history",
            "{tmp}/binary.yaml",
        ],
        "history location '{tmp}/binary.yaml' is a file, not a directory",
    ),
    # Before: accepted, planning an MDE at a budget below N.
    (
        ["plan", "--suite", "huge", "--suites-dir", "{tmp}/suites", "--runs", "5", "--budget", "2"],
        "--budget 2 is below --runs 5",
    ),
    (["list", "--suites-dir", "{tmp}/nosuchdir"], "{tmp}/nosuchdir does not exist"),
    (["compare", "{tmp}", "{tmp}/suites"], "results manifest not found"),
    (["init", "--suite", "Bad!"], "is not a valid suite name"),
    (["show", "{tmp}/binary.yaml"], "a YAML file (a suite?), not a trajectory"),
    (
        ["diff", "{tmp}/binary.yaml", "{tmp}/binary.yaml"],
        "a YAML file (a suite?), not a trajectory",
    ),
]

SCENARIO = "scenarios:\n  - id: a\n    agent: evalrunner.examples:direct_answer\n"


def _evalrunner(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``evalrunner ARGV`` in a process of its own, as a user runs it (a server that started
    anyway would hang here until the timeout instead of passing), EVALRUNNER_* unset but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUNNER_")}
    return subprocess.run(
        [str(Path(sys.executable).with_name("evalrunner")), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=clean | (env or {}),
    )


@pytest.mark.parametrize(
    ("args", "said"), CASES, ids=[" ".join(a[:3]).replace("{tmp}", "") for a, _ in CASES]
)
def test_a_bad_argument_is_one_line_and_exit_2(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)))
    suites = tmp_path / "suites"
    (suites / "dir.yaml").mkdir(parents=True)
    (suites / "link.yaml").symlink_to(tmp_path / "gone.yaml")
    head = "format_version: 1\nname: {}\n"
    (suites / "typo.yaml").write_text(head.format("typo") + SCENARIO + "    inptu: hi\n")
    (suites / "huge.yaml").write_text(
        head.format("huge") + "runs: 1000000000\n" + SCENARIO + "    input: hi\n"
    )
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = _evalrunner(argv, tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert said.replace("{tmp}", str(tmp_path)) in lines[-1], lines
    assert len([line for line in lines if line.startswith(("error:", "Error:"))]) == 1


@pytest.mark.parametrize("api_base", ["not-a-url", "127.0.0.1:8080/v1", "ftp://host/v1"])
@pytest.mark.parametrize("model_from", ["EVALRUNNER_MODEL", "--model"])
def test_an_api_base_that_is_not_a_url_is_one_line_before_any_run(
    tmp_path: Path, api_base: str, model_from: str
) -> None:
    # It used to pass for an outage: every run retried, then infra_error, exit 3 (with the
    # model given by --model, until a review found it).
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "ok.yaml").write_text("format_version: 1\nname: ok\n" + SCENARIO + "    input: hi\n")
    env = {"EVALRUNNER_API_BASE": api_base}
    args = ["run", "--suite", "ok", "--no-history"]
    if model_from == "--model":
        args += ["--model", "openai/fake"]
    else:
        env["EVALRUNNER_MODEL"] = "openai/fake"
    done = _evalrunner(args, tmp_path, env)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert lines[-1] == (
        f"error: EVALRUNNER_API_BASE {api_base!r} is not an http(s) URL; give the server's "
        "base URL, e.g. http://127.0.0.1:8080/v1"
    ), lines
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("model_from", ["EVALRUNNER_MODEL", "--model"])
def test_two_models_whose_files_would_share_a_name_are_one_line_before_any_run(
    tmp_path: Path, model_from: str
) -> None:
    # Before: the night ran both, and one model's run files overwrote the other's (a
    # review: 12 runs asked for, 6 in the results, one model's runs under the other's name).
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "ok.yaml").write_text("format_version: 1\nname: ok\n" + SCENARIO + "    input: hi\n")
    env = {"EVALRUNNER_API_BASE": "http://127.0.0.1:9/v1"}
    args = ["run", "--suite", "ok", "--no-history"]
    if model_from == "--model":
        args += ["--model", "openai/org/x", "--model", "openai/org_x"]
    else:
        env["EVALRUNNER_MODEL"] = "openai/org/x,openai/org_x"
    done = _evalrunner(args, tmp_path, env)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert lines[-1] == (
        "error: models 'openai/org/x' and 'openai/org_x' would share their results and "
        "baseline files (both are named 'openai_org_x' there); run one of them in another suite"
    ), lines
    assert not (tmp_path / "results").exists()


def test_serve_local_on_a_busy_port_is_one_line_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(Path(sys.executable).with_name("evalrunner")), "serve-local", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        f"error: port {port} on 127.0.0.1 is in use (Address already in use); pick another "
        "--port, or leave it out for a free one"
    ]


def test_a_place_the_file_system_refuses_is_one_line_not_a_traceback() -> None:
    # /sys refuses new entries to every user, root included (EPERM; EACCES for others):
    # a directory the user cannot write, without needing a user who cannot write it.
    done = subprocess.run(
        [str(Path(sys.executable).with_name("evalrunner")), "init"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/sys",
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, lines
    assert lines[0].startswith("error: /sys/suites: "), lines
    assert lines[0].endswith(
        "; give this user access to it, free some space, or choose another location"
    )
