"""A step after the runs that fails never loses the night (issue 10, item 6).

The history location is checked before the runs; if it still fails at the
end (here: replaced by a file while the night ran), the night's tables are
printed first, then one line says what was not written, and the command exits 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli, summary_table
from runner_agents import write_suite

from evalrunner.live._results import ResultsDir


def test_a_failed_history_append_comes_after_the_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    write_suite(tmp_path, "late", [scenario], runs=3)
    history = tmp_path / "history"

    def respond(body: dict[str, Any], n: int) -> Reply:
        if history.is_dir():  # the location was fine when the night started; now it is not
            shutil.rmtree(history, ignore_errors=True)
            history.write_text("someone put a file here")
        return Reply("Paris.")

    with FakeEndpoint(responder=respond) as ep:
        history.mkdir()
        result = cli(ep, tmp_path, "--suite", "late", "--out", "out", "--history", str(history))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert summary_table(result.stdout)["s"][2:4] == ["3", "3"]  # the table is there
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: history not written to {history}: ")
    assert result.stderr.rstrip().endswith(errors[0])  # said last
    # The runs are safe, and a later resume would still append them (none recorded as sent).
    manifest = ResultsDir(tmp_path / "out").read_manifest()
    assert manifest.status == "finished" and manifest.history_run_ids == []
    # The line ends with the command that appends the night (before: no fix was named).
    # It carries the suites directory the night was given (the resume reads the suite there).
    fix = f"evalrunner run --suite late --suites-dir {tmp_path} --out out --resume --history {history}"
    assert errors[0].endswith(f"; once it can be, append the night with {fix}")
    history.unlink()
    with FakeEndpoint(responder=respond) as ep:
        history.mkdir()
        again = cli(ep, tmp_path, *fix.split()[2:])
    assert again.exit_code == 0, again.output
    assert len(ResultsDir(tmp_path / "out").read_manifest().history_run_ids) == 3
