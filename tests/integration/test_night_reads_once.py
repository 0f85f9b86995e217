"""A night reads its baselines and its evidence once, and fits them once: escalation and
the comparison after the runs work on the same objects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli
from runner_agents import write_suite

import evalrunner.baseline._file as baseline_file
import evalrunner.history._store as history_store
import evalrunner.stats._comparison as stats_comparison
import evalrunner.stats._reference as reference
from evalrunner.cli._main import main

SCENARIO = {
    "id": "s",
    "agent": "runner_agents:timed_agent",
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}


def counting(calls: Counter[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    return wrapper


def test_a_night_reads_and_fits_its_baselines_and_evidence_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # A gating baseline of one night, so escalation looks at every cell tonight.
    write_suite(tmp_path, "capitals", [SCENARIO], runs=6, tolerance={"min_baseline_nights": 1})
    history = tmp_path / "history"
    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        first = cli(ep, tmp_path, "--suite", "capitals", "--out", "n1", "--history", str(history))
        assert first.exit_code == 0, first.output
        made = CliRunner().invoke(
            main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "capitals", "--from", "n1"]
        )
        assert made.exit_code == 0, made.output
        calls: Counter[str] = Counter()
        monkeypatch.setattr(
            baseline_file, "load_baseline", counting(calls, "load", baseline_file.load_baseline)
        )
        monkeypatch.setattr(
            history_store,
            "evidence_so_far",
            counting(calls, "evidence", history_store.evidence_so_far),
        )
        fit = counting(calls, "fit", reference.fit_references)
        monkeypatch.setattr(reference, "fit_references", fit)
        monkeypatch.setattr(stats_comparison, "fit_references", fit)
        second = cli(ep, tmp_path, "--suite", "capitals", "--out", "n2", "--history", str(history))
    assert second.exit_code == 0, second.output
    assert "nothing flagged" in second.stderr
    assert calls == Counter({"load": 1, "evidence": 1, "fit": 1})
