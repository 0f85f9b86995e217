"""A night against the embedded model, with a stand-in for its server (issue 10, items 20, 22).

The embedded server decodes a few requests at a time (its slots): runs against it go
that many at a time whatever --concurrency says (one line says so), and its latency,
which times the shared CPU rather than the agent, is neither gated nor flagged
unless a tolerance asks for it. Starting it takes seconds: evalrunner says so.

The stand-in is a FakeEndpoint behind the LocalModelServer interface, so no
model is loaded; tests/integration/test_live_local.py runs the real one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_endpoint import FakeEndpoint, Reply, most_in_flight
from runner_agents import write_suite

from evalrunner.baseline._compare import compare_records
from evalrunner.cli._main import main
from evalrunner.suite._record import RunRecord


class StandIn:
    """LocalModelServer's interface over a FakeEndpoint, with two slots."""

    endpoint: FakeEndpoint
    slots = 2

    def __init__(self) -> None:
        self.startup_seconds: float | None = None

    def start(self) -> StandIn:
        self.startup_seconds = 0.01
        return self

    def stop(self, *, keep_log: bool = False) -> None:
        pass

    def died(self) -> str | None:
        return None

    def death_notice(self, where: str = "") -> str | None:
        return None

    @property
    def model(self) -> str:
        return "openai/smollm2-135m-instruct"

    @property
    def api_base(self) -> str:
        return self.endpoint.api_base

    @property
    def api_key(self) -> str:
        return "local-no-key"


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[tuple[float, float]]]:
    """The stand-in server; yields (start, end) of every request it served."""
    served: list[tuple[float, float]] = []
    lock = threading.Lock()

    def respond(body: dict[str, Any], n: int) -> Reply:
        started = time.monotonic()
        time.sleep(0.1)
        with lock:
            served.append((started, time.monotonic()))
        return Reply("Paris.")

    monkeypatch.chdir(tmp_path)
    with FakeEndpoint(responder=respond) as ep:
        StandIn.endpoint = ep
        monkeypatch.setattr("evalrunner.endpoints._local_model.LocalModelServer", StandIn)
        yield served


def test_runs_against_the_embedded_model_go_as_many_at_a_time_as_it_has_slots(
    tmp_path: Path, local: list[tuple[float, float]]
) -> None:
    scenario = {"id": "s", "agent": "runner_agents:plain_agent", "input": "Capital of France?"}
    write_suite(tmp_path, "lm", [scenario], models=[], runs=6, concurrency=4)
    result = CliRunner().invoke(
        main,
        ["run", "--suite", "lm", "--suites-dir", str(tmp_path), "--out", "out", "--no-history"],
        env={"EVALRUNNER_MODEL": None},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[:2] == [
        "starting local model (the embedded SmolLM2-135M) ...",
        "local model ready after 0.0 s",
    ]
    assert (
        "runs against local go 2 at a time (as many as it answers at once); "
        "concurrency 4 applies to the other models"
    ) in lines
    assert len(local) == 6
    assert most_in_flight(local) == 2, (
        "requests to the embedded model went more or fewer than its slots"
    )


def records(model: str, latency: float, n: int = 20) -> list[RunRecord]:
    return [
        RunRecord(
            run_id=f"s/{model}/{i}",
            suite="lm",
            scenario="s",
            model=model,
            index=i,
            outcome="passed",
            step_count=3,
            llm_calls=1,
            tools=["lookup_capital"],
            latency_s=latency * (1 + 0.01 * i),
        )
        for i in range(n)
    ]


def test_latency_against_the_embedded_model_is_not_compared() -> None:
    # Ten times slower: a real regression against a hosted model, machine noise on a local one.
    hosted = compare_records(records("openai/x", 1.0), records("openai/x", 10.0))
    assert [r.verdict for r in hosted if r.metric == "latency_s"] == ["regression"]
    on_local = compare_records(records("local", 1.0), records("local", 10.0))
    assert on_local and not [r for r in on_local if r.metric == "latency_s"]
