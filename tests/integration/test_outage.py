"""A night the endpoints failed is an outage, not a measurement (issue 10, item 4).

When more than ``--outage-share`` (default half) of a night's runs end in
infra_error, `evalrunner run` says so in one line, exits 3, computes no pass^k
and no verdicts from the little that is left, and its history entry is marked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner
from click.testing import Result
from fake_endpoint import FakeEndpoint, Fault, Reply
from night_cli import cli, summary_table
from runner_agents import write_suite

from evalrunner.history._store import read_entries

RUNS = 6


@dataclass
class Endpoint:
    """Answers 'Paris.', except for the first ``failing`` runs' calls of each night."""

    failing: int = 0
    _seen: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def night(self, failing: int) -> None:
        self.failing, self._seen = failing, 0

    def __call__(self, body: dict[str, Any], n: int) -> Reply | Fault:
        with self._lock:
            self._seen += 1
            # max_attempts is 1 below: one request per run, so the first `failing` runs fail.
            return Fault("503") if self._seen <= self.failing else Reply("Paris.")


@dataclass
class Lab:
    root: Path
    ep: FakeEndpoint
    world: Endpoint

    def run(self, out: str, failing: int, *args: str) -> Result:
        self.world.night(failing)
        return cli(self.ep, self.root, "--suite", "night", "--out", str(self.root / out), *args)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    monkeypatch.chdir(tmp_path)  # baselines/ and reports/history/ by default
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    write_suite(tmp_path, "night", [scenario], runs=RUNS, concurrency=1, retry={"max_attempts": 1})
    world = Endpoint()
    with FakeEndpoint(responder=world) as ep:
        lab = Lab(tmp_path, ep, world)
        healthy = lab.run("healthy", 0, "--no-history")
        assert healthy.exit_code == 0, healthy.output
        made = evalrunner(
            ep, "baseline", "--suite", "night", "--suites-dir", str(tmp_path), "--from", "healthy"
        )
        assert made.exit_code == 0, made.output
        yield lab


def test_a_night_of_infra_errors_is_an_outage(lab: Lab) -> None:
    result = lab.run("down", RUNS)
    assert result.exit_code == 3, result.output
    outage = [line for line in result.stderr.splitlines() if line.startswith("outage:")]
    assert outage == [
        f"outage: {RUNS} of {RUNS} runs ended in infra_error (100%, more than 50%): the "
        "endpoints failed, not the agent; no pass^k or verdicts were computed from this night"
    ]
    row = summary_table(result.stdout)["s"]
    assert row[2:8] == [str(RUNS), "0", "0", "0", str(RUNS), "0"]  # N, outcomes: all infra
    assert row[-4:-2] == ["-", "-"]  # pass^3, pass@3: nothing measured them
    assert "Compared with baselines" not in result.stdout
    [entry] = read_entries(str(lab.root / "reports" / "history"))
    assert entry.outage and entry.verdicts == [] and len(entry.records) == RUNS


def test_a_minority_of_infra_errors_is_no_outage_and_is_not_measured(lab: Lab) -> None:
    result = lab.run("half", RUNS // 2)  # exactly half: not more than half
    assert result.exit_code == 0, result.output
    assert "outage" not in result.stderr
    row = summary_table(result.stdout)["s"]
    assert row[2:8] == [str(RUNS), str(RUNS // 2), "0", "0", str(RUNS // 2), "0"]
    # pass^3 over the runs that measured the agent: all passed.
    assert row[-4:-2] == ["1.00", "1.00"]
    assert "Compared with baselines" in result.stdout
    [entry] = read_entries(str(lab.root / "reports" / "history"))
    assert not entry.outage and entry.verdicts


def test_the_outage_share_is_configurable(lab: Lab) -> None:
    result = lab.run("strict", 2, "--outage-share", "0.25")
    assert result.exit_code == 3, result.output
    assert "(33%, more than 25%)" in result.stderr
    assert lab.run("lenient", RUNS, "--outage-share", "1").exit_code == 0
