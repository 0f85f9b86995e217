"""`evalrunner run` in-process against the fake endpoint, and reading the table it prints."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from fake_endpoint import FakeEndpoint
from runner_agents import FAKE_KEY

from evalrunner.cli._main import main


def cli(ep: FakeEndpoint, suites: Path, *args: str) -> Result:
    """``evalrunner run --suites-dir SUITES ARGS``, every model string sent to ``ep``."""
    env = {"EVALRUNNER_API_BASE": ep.api_base, "OPENAI_API_KEY": FAKE_KEY, "EVALRUNNER_MODEL": None}
    return CliRunner().invoke(
        main, ["run", "--suites-dir", str(suites), *args], env=env, catch_exceptions=False
    )


def summary_table(stdout: str) -> dict[str, list[str]]:
    """The per-scenario table `run` prints first: scenario id -> its cells (split on spaces)."""
    lines = stdout.splitlines()
    assert lines[0].split()[:3] == ["scenario", "model", "N"] and set(lines[1]) <= {"-", " "}
    rows = {}
    for line in lines[2:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line.split()
    return rows
