"""The `evalrunner` command's cheap paths: list, validate, config errors, --help.

None of these may talk to a model, and none may pay for importing litellm
(seconds on a small machine): `--help` and friends must stay instant.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from paths import REPO

from evalrunner import __version__
from evalrunner.cli import main

HEAVY = ("litellm", "openai", "pandas", "scipy", "numpy", "pyarrow")


def suite_yaml(
    name: str, *scenario_ids: str, agent: str = "evalrunner.examples:direct_answer"
) -> str:
    scenarios = "".join(
        f"  - id: {sid}\n    description: Scenario {sid}.\n    agent: {agent}\n    input: Say hello.\n"
        for sid in scenario_ids
    )
    return f"format_version: 1\nname: {name}\nruns: 3\nscenarios:\n{scenarios}"


@pytest.fixture
def suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # relative defaults (results/, reports/) stay in tmp_path
    root = tmp_path / "suites"
    root.mkdir()
    (root / "alpha.yaml").write_text(suite_yaml("alpha", "hello", "greet"))
    (root / "beta.yaml").write_text(suite_yaml("beta", "only"))
    return root


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def error_lines(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


# ------------------------------------------------------------------------------- list


def test_list_shows_suites_and_scenarios(suites: Path) -> None:
    result = invoke("list", "--suites-dir", str(suites))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 5
    assert lines[0].startswith(f"alpha  ({suites / 'alpha.yaml'}, 2 scenarios")
    assert lines[1:3] == ["  hello  Scenario hello.", "  greet  Scenario greet."]
    assert lines[3].startswith(f"beta  ({suites / 'beta.yaml'}, 1 scenario")
    assert lines[4] == "  only  Scenario only."


def test_list_shows_a_scenario_s_own_runs(suites: Path) -> None:
    text = suite_yaml("delta", "quick", "thorough").replace(
        "    description: Scenario thorough.\n",
        "    description: Scenario thorough.\n    runs: 9\n",
    )
    (suites / "delta.yaml").write_text(text)
    lines = invoke("list", "--suites-dir", str(suites)).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("delta  ("))
    assert lines[at + 1 : at + 3] == [
        "  quick  Scenario quick.",  # the suite's 3
        "  thorough  (runs 9)  Scenario thorough.",
    ]


def test_list_with_no_suites_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()  # a directory that does not exist is an error (bad input)
    result = invoke("list", "--suites-dir", str(tmp_path / "empty"))
    assert result.exit_code == 0 and result.stdout.strip() == f"no suites in {tmp_path / 'empty'}/"


def test_list_outside_a_project_shows_the_built_in_example_run_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run --suite example` works in any directory; list said "suites does not exist".
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALRUNNER_SUITES", raising=False)
    result = invoke("list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("example  (built in, ") and "  single_tool  [frozen]" in lines[2]
    assert result.stderr.strip() == "note: no suites/ here; evalrunner init creates one"


def test_list_of_an_evalrunner_suites_that_does_not_exist_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the built-in example, exit 0, and "note: no /nonexist/ here" (a review).
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALRUNNER_SUITES", str(tmp_path / "nonexist"))
    result = invoke("list")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        f"error: suites directory {tmp_path / 'nonexist'} does not exist; pass --suites-dir (or "
        "set EVALRUNNER_SUITES), or create it with evalrunner init"
    ]


def test_list_of_a_broken_suite_is_one_line_exit_2(suites: Path) -> None:
    (suites / "gamma.yaml").write_text("format_version: 1\nname: gamma\nscenarios: nope\n")
    result = invoke("list", "--suites-dir", str(suites))
    assert result.exit_code == 2
    assert len(error_lines(result)) == 1 and error_lines(result)[0].startswith(
        f"error: {suites / 'gamma.yaml'}:3"
    )


# --------------------------------------------------------------------------- validate


def test_validate_ok(suites: Path) -> None:
    result = invoke("validate", "--suites-dir", str(suites))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["ok", str(suites / "alpha.yaml")],
        ["ok", str(suites / "beta.yaml")],
    ]
    assert "(2 scenarios)" in lines[0]
    result = invoke("validate", str(REPO / "suites" / "example.yaml"))  # the shipped example
    assert result.exit_code == 0 and result.stdout.startswith("ok  ")


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (
            "format_version: 1\nname: bad\nruns: 0\nscenarios: []\n",
            "bad.yaml:3",
            "runs: must be at least 1",
        ),
        (
            "format_version: 1\nname: bad\nscenarios:\n  - id: x\n    agent: a.b\n    input: hi\n",
            "bad.yaml:5",
            "import path",
        ),
        ("format_version: 1\nname: bad\nscenarios:\n\t- id: x\n", "bad.yaml:4", "invalid YAML"),
        (
            suite_yaml("bad", "x", agent="evalrunner.examples:no_such_agent"),
            "bad.yaml:7",
            "has no attribute 'no_such_agent'",
        ),
        (
            suite_yaml("bad", "x", agent="not_installed_pkg.mod:fn"),
            "bad.yaml:7",
            "no module named 'not_installed_pkg'",
        ),
        (suite_yaml("other", "x"), "bad.yaml:2", "does not match the file name"),
    ],
    ids=["range", "agent-path", "tab", "missing-attr", "missing-module", "name"],
)
def test_validate_malformed_is_one_line_exit_2(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = invoke("validate", str(path))
    assert result.exit_code == 2
    lines = error_lines(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {tmp_path / where}"), lines[0]
    assert what in lines[0]
    assert result.stdout == "" and "Traceback" not in result.output


def test_validate_reads_the_suite_s_baselines_and_goldens_and_names_every_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `validate` said ok with every baseline and golden left in conflict by a merge.
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "suites", tmp_path / "suites")
    shutil.copytree(REPO / "baselines", tmp_path / "baselines")
    conflicted = [
        Path("baselines/example/fanout--local.json"),
        Path("baselines/example/single_tool--local.json"),
        Path("suites/goldens/example/fanout.json"),
        Path("suites/goldens/example/fanout.llm.json"),
    ]
    for path in conflicted:
        path.write_text("<<<<<<< HEAD\n" + path.read_text() + "=======\n>>>>>>> theirs\n")
    gone = Path("baselines/example/renamed--local.json")
    doc = json.loads(Path("baselines/example/cities--local.json").read_text())
    gone.write_text(json.dumps({**doc, "scenario": "renamed"}))

    result = invoke("validate", "suites/example.yaml")
    assert result.exit_code == 2
    lines = error_lines(result)
    named = [
        p
        for p in conflicted
        if any(line.startswith(f"error: {p}: holds git merge conflict markers") for line in lines)
    ]
    assert named == conflicted, lines
    assert (
        f"note: {gone}: scenario 'renamed' is not in suites/example.yaml; delete the file"
        in "\n".join(lines)
    )
    assert (
        lines[-1]
        == "error: suites/example.yaml: 4 of the suite's committed files cannot be read (above)"
    )
    assert result.stdout == ""


def test_validate_with_nothing_to_validate_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("validate", "--suites-dir", str(tmp_path / "none"))
    assert result.exit_code == 2 and "no suite files given" in result.output


# ---------------------------------------------------- a misspelt metric in a tolerance

MISSPELT = """\
format_version: 1
name: typo
tolerance:
  margins:
    sucess_rate: 0.1
scenarios:
  - id: x
    agent: runner_agents:tool_agent
    input: Say hello.
"""
MISSPELT_ERROR = (
    "typo.yaml:5: tolerance.margins.sucess_rate: unknown metric 'sucess_rate'; "
    "did you mean 'success_rate'?"
)


def test_validate_rejects_a_misspelt_margin_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(MISSPELT)
    result = invoke("validate", str(path))
    assert result.exit_code == 2
    assert error_lines(result) == [f"error: {tmp_path / MISSPELT_ERROR}"]
    assert result.stdout == ""


def test_run_rejects_a_misspelt_margin_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_endpoint import FakeEndpoint, Reply

    monkeypatch.chdir(tmp_path)
    (tmp_path / "typo.yaml").write_text(MISSPELT)
    with FakeEndpoint(responder=lambda body, n: Reply("Hello.")) as ep:
        result = CliRunner().invoke(
            main,
            ["run", "--suite", "typo", "--suites-dir", str(tmp_path), "--out", "out"],
            env={"EVALRUNNER_API_BASE": ep.api_base, "EVALRUNNER_MODEL": "openai/fake"},
            catch_exceptions=False,
        )
        assert ep.requests == []
    assert result.exit_code == 2
    assert error_lines(result) == [f"error: {tmp_path / MISSPELT_ERROR}"]
    assert "Value error" not in result.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "reports").exists()


# -------------------------------------------------------------------------------- run


def test_run_with_an_unknown_suite_lists_the_available_ones(suites: Path) -> None:
    result = invoke("run", "--suite", "gamma", "--suites-dir", str(suites))
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"error: no suite named 'gamma' in {suites}/; available: alpha, beta"
    ]
    result = invoke("run", "--suite", "alpah", "--suites-dir", str(suites))
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"error: no suite named 'alpah' in {suites}/; did you mean 'alpha'? available: alpha, beta"
    ]
    assert not (suites.parent / "results").exists()


def test_run_with_no_suites_dir_says_how_to_start(tmp_path: Path) -> None:
    result = invoke("run", "--suite", "mine", "--suites-dir", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"error: no suite named 'mine': {tmp_path / 'nowhere'}/ does not exist; create {tmp_path / 'nowhere'}/mine.yaml"
    ]


def test_run_with_an_unknown_scenario_lists_the_scenarios(suites: Path) -> None:
    result = invoke(
        "run", "--suite", "alpha", "--suites-dir", str(suites), "--scenario", "bye", "--out", "out"
    )
    assert result.exit_code == 2
    assert (
        error_lines(result)[-1]
        == "error: suite 'alpha' has no scenario 'bye'; its scenarios: hello, greet"
    )
    assert not (suites.parent / "out").exists()


# ------------------------------------------------------------------------ staying fast


PROBE = textwrap.dedent(
    """
    import json, sys
    import evalrunner
    after_package = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
    from evalrunner.cli._main import main
    for args in (["--help"], *([name, "--help"] for name in main.commands)):
        try:
            main(args, standalone_mode=False)
        except SystemExit:
            pass
    print(json.dumps({
        "after_package": after_package,
        "after_help": sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY)),
        "commands": sorted(main.commands),
    }))
    """
)


def test_import_and_help_do_not_load_litellm() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["after_package"] == [], "`import evalrunner` loads heavy modules"
    assert probe["after_help"] == [], "`evalrunner [CMD] --help` loads heavy modules"
    assert {"list", "validate", "run"} <= set(probe["commands"])


def test_console_script_help_and_version() -> None:
    script = Path(sys.executable).with_name("evalrunner")
    if not script.exists():
        pytest.skip("the evalrunner console script is not installed next to this python")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "evalrunner run --suite NAME" in proc.stdout
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and __version__ in proc.stdout


def _cli(args: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from evalrunner.cli._main import main

    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def test_a_bad_agent_path_or_history_location_fails_before_any_run(tmp_path: Path) -> None:
    from runner_agents import write_suite

    scenario = {"id": "ok", "agent": "runner_agents:tool_agent", "input": "q"}
    write_suite(
        tmp_path / "suites",
        "broken",
        [scenario, {"id": "bad", "agent": "no_such_module_x:agent", "input": "q"}],
    )
    code, out = _cli(
        [
            "run",
            "--suite",
            "broken",
            "--suites-dir",
            str(tmp_path / "suites"),
            "--out",
            str(tmp_path / "r1"),
            "--no-history",
            "--model",
            "openai/fake",
        ]
    )
    assert code == 2 and "no_such_module_x" in out
    assert not list((tmp_path / "r1").glob("runs/**/*.json"))

    write_suite(tmp_path / "suites", "fine", [scenario])
    code, out = _cli(
        [
            "run",
            "--suite",
            "fine",
            "--suites-dir",
            str(tmp_path / "suites"),
            "--out",
            str(tmp_path / "r2"),
            "--history",
            "nosuchproto://x",
            "--model",
            "openai/fake",
        ]
    )
    assert code == 2 and "history location" in out
    assert not (tmp_path / "r2").exists()


def test_help_names_every_command_and_shows_defaults_as_values() -> None:
    # Before: "baseline     Accept nights as the..." and defaults printed "(5)" and
    # "(suites (env EVALRUNNER_SUITES))" (a review).
    top = invoke("--help").stdout
    assert "baseline     Accept nights into the committed baselines." in top
    run_help = " ".join(invoke("run", "--help").stdout.split())
    assert "default: (" not in run_help
    assert "[env var: EVALRUNNER_SUITES; default: suites]" in run_help
    assert "Default: 5." in run_help and "Default: 20." in run_help
