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
from baseline_agents import evalrunner, verdict_table
from click.testing import Result
from fake_endpoint import FakeEndpoint, Fault, Reply
from night_cli import cli, summary_table
from runner_agents import write_suite

from evalrunner.history._store import read_entries
from evalrunner.live import ResultsDir

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


@dataclass
class ByModel:
    """Answers per model: 'Paris.', 'London.' (a regression), or 503 (its endpoint is down)."""

    modes: dict[str, str] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any], n: int) -> Reply | Fault:
        mode = self.modes.get(str(body.get("model", "")), "good")
        if mode == "down":
            return Fault("503")
        return Reply("London." if mode == "wrong" else "Paris.")


@dataclass
class ThreeModels:
    """A suite of one scenario on models a, b and c, with a baseline of one good night each."""

    root: Path
    ep: FakeEndpoint
    world: ByModel

    def night(self, out: str, **modes: str) -> Result:
        self.world.modes = dict(modes)  # the endpoint sees "a", litellm having taken "openai/"
        return cli(
            self.ep, self.root, "--suite", "three", "--out", out, "--no-history", "--verbose"
        )

    def baseline(self, *args: str) -> Result:
        return evalrunner(
            self.ep, "baseline", "--suite", "three", "--suites-dir", str(self.root), *args
        )


@pytest.fixture
def three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreeModels]:
    monkeypatch.chdir(tmp_path)
    scenario = {
        "id": "s",
        "agent": "runner_agents:timed_agent",
        "input": "Capital of France?",
        "checks": {"answer_contains": ["Paris"]},
        "tolerance": {"min_baseline_nights": 1},
    }
    models = ["openai/a", "openai/b", "openai/c"]
    write_suite(tmp_path, "three", [scenario], runs=RUNS, models=models, retry={"max_attempts": 1})
    with FakeEndpoint(responder=(world := ByModel())) as ep:
        lab = ThreeModels(tmp_path, ep, world)
        assert lab.night("good").exit_code == 0
        made = lab.baseline("--from", "good")
        assert made.exit_code == 0, made.output
        yield lab


def outage_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("outage:")]


def test_other_models_outages_do_not_hide_one_model_s_regression(three: ThreeModels) -> None:
    # Before: 2 of 3 models down made 12 of 18 runs infra_error, so the whole night was an
    # outage (exit 3) and a's regression, every run wrong, was never compared.
    result = three.night("mixed", a="wrong", b="down", c="down")
    assert result.exit_code == 1, result.output
    flagged = [r for r in verdict_table(result.stdout) if r["verdict"] == "REGRESSION"]
    assert {(r["scenario"], r["model"]) for r in flagged} == {("s", "openai/a")}
    # The closing line names the model too (before: "flagged: s success_rate", any model).
    night_line = next(line for line in result.stderr.splitlines() if line.startswith("night:"))
    assert "; flagged: s [openai/a] success_rate" in night_line
    assert (
        "the endpoints of openai/b and openai/c failed, so their scenarios were not" in night_line
    )
    assert outage_lines(result) == [
        f"outage: openai/{m}: {RUNS} of {RUNS} runs ended in infra_error (100%, more than 50%): "
        "the endpoint failed, not the agent; no pass^k or verdicts were computed from its runs"
        for m in "bc"
    ]


def test_one_model_s_outage_is_said_exits_3_and_the_others_are_compared(
    three: ThreeModels,
) -> None:
    # Before: a third of the runs was no outage; the down model's rows read "inconclusive,
    # more baseline nights to settle", and the night exited 0.
    result = three.night("one-down", c="down")
    assert result.exit_code == 3, result.output
    assert {r["model"] for r in verdict_table(result.stdout)} == {"openai/a", "openai/b"}
    night_line = next(line for line in result.stderr.splitlines() if line.startswith("night:"))
    assert "; the endpoint of openai/c failed, so its scenarios were not compared" in night_line
    assert [line[:48] for line in outage_lines(result)] == [
        f"outage: openai/c: {RUNS} of {RUNS} runs ended in infra_error"[:48]
    ]
    # As a baseline night it is refused, with the command that accepts the other models.
    before = {p: p.read_bytes() for p in (three.root / "baselines").rglob("*.json")}
    refused = three.baseline("--from", "one-down", "--append")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip() == (
        f"error: one-down: the endpoint of openai/c failed ({RUNS} of {RUNS} runs ended in "
        "infra_error): a baseline accepts nights that measured the agent; accept the other "
        f"models' runs with evalrunner baseline --suite three --suites-dir {three.root} --from "
        "one-down --model openai/a --model openai/b"
    )
    assert {p: p.read_bytes() for p in (three.root / "baselines").rglob("*.json")} == before
    accepted = three.baseline(
        "--from", "one-down", "--append", "--model", "openai/a", "--model", "openai/b"
    )
    assert accepted.exit_code == 0, accepted.output
    written = [line.removeprefix("wrote ") for line in accepted.stdout.splitlines()]
    assert sorted(Path(w).name for w in written) == ["s--openai_a.json", "s--openai_b.json"]
    after = {p: p.read_bytes() for p in (three.root / "baselines").rglob("*.json")}
    assert (
        after[three.root / "baselines/three/s--openai_c.json"]
        == before[three.root / "baselines/three/s--openai_c.json"]
    )


def test_an_endpoint_down_for_the_night_is_not_waited_out_run_by_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every run waited out its retries and timeouts for the same answer: 40 runs took 50 s
    # against a hung endpoint, hours at the defaults (a review). After 10 runs in a row
    # ended in infra_error (at concurrency 2), the rest are recorded without being run.
    monkeypatch.chdir(tmp_path)
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    write_suite(tmp_path, "down", [scenario], runs=30, concurrency=2, retry={"max_attempts": 1})
    with FakeEndpoint(default=Fault("503")) as ep:
        result = cli(ep, tmp_path, "--suite", "down", "--out", "n1", "--no-history")
        asked = len(ep.requests)
    assert result.exit_code == 3, result.output
    records = ResultsDir(tmp_path / "n1").records()
    assert len(records) == 30 and {r.outcome for r in records} == {"infra_error"}
    skipped = [r for r in records if (r.reason or "").startswith("not run: ")]
    assert 10 <= asked < 14 and len(skipped) == 30 - asked, (asked, len(skipped))
    assert skipped[0].reason is not None and skipped[0].reason.startswith(
        "not run: the last 10 runs against openai/fake ended in infra_error, so it is taken as "
        "down for the rest of the night (the last: ServiceUnavailableError (HTTP 503)"
    ), skipped[0].reason


def test_a_model_down_for_the_night_does_not_cut_off_another_models_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario = {"id": "s", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}
    models = ["openai/fake", "openai/down"]
    write_suite(
        tmp_path,
        "half",
        [scenario],
        runs=20,
        concurrency=2,
        models=models,
        retry={"max_attempts": 1},
    )

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        return Fault("503") if body.get("model") == "down" else Reply("Paris.")

    with FakeEndpoint(responder=respond) as ep:
        result = cli(ep, tmp_path, "--suite", "half", "--out", "n1", "--no-history")
    assert result.exit_code == 3, result.output
    records = ResultsDir(tmp_path / "n1").records()
    fine = [r for r in records if r.model == "openai/fake"]
    down = [r for r in records if r.model == "openai/down"]
    assert len(fine) == 20 and {r.outcome for r in fine} == {"passed"}
    assert len(down) == 20 and any((r.reason or "").startswith("not run: ") for r in down)
