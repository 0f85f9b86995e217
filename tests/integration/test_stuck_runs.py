"""A run that is stuck never takes later runs down with it (issue 10, item 2).

A sync agent's thread cannot be stopped when its run times out. When it kept
its worker in a fixed pool, the next runs queued behind it and timed out
without sending a request: with concurrency 1, one hang voided every later
run. Now each sync agent has a thread of its own, the stuck run's slot is
free the moment it is recorded, and its hung request ends with the run.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import runner_agents
from fake_endpoint import FakeEndpoint, Fault, Reply
from runner_agents import one_scenario_night

from evalrunner.live._driver import RunReport

RUN_TIMEOUT = 3.0  # a first litellm call in a fresh thread can take over 1 s on a loaded machine
# The policy would wait 30 s for a byte: the run's timeout is what ends a hang here.
RETRY = {"max_attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.05, "request_timeout_s": 30}


def night(tmp_path: Path, ep: FakeEndpoint, agent: str, runs: int, concurrency: int) -> RunReport:
    return one_scenario_night(
        tmp_path, ep.api_base, agent, runs=runs, concurrency=concurrency, timeout_s=RUN_TIMEOUT
    )


@pytest.mark.parametrize("concurrency", [1, 2])
def test_hung_requests_void_only_their_own_runs(tmp_path: Path, concurrency: int) -> None:
    hung = concurrency  # as many hangs as slots: every slot is stuck at once
    lock = threading.Lock()

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        with lock:
            return Fault("hang") if n < hung else Reply("Paris.")

    with FakeEndpoint(responder=respond) as ep:
        report = night(tmp_path, ep, "plain_agent", runs=hung + 4, concurrency=concurrency)
        deadline = time.monotonic() + 5
        while ep.abandoned < hung and time.monotonic() < deadline:
            time.sleep(0.01)
        abandoned = list(ep.abandoned_after)
    outcomes = Counter(r.outcome for r in report.records)
    assert outcomes == {"infra_error": hung, "passed": 4}, [
        (r.run_id, r.outcome, r.reason) for r in report.records
    ]
    timed_out = [r for r in report.records if r.outcome == "infra_error"]
    # The attempt's own timeout is the run's remaining time, so on a loaded machine it may
    # fire a moment before the run's: the reason then names that last fault too.
    assert all(
        (r.reason or "").startswith(f"run timed out after {RUN_TIMEOUT:g} s") for r in timed_out
    ), [r.reason for r in timed_out]
    # The later runs were not slowed by the stuck ones, and the hung requests ended
    # with their runs rather than holding the endpoint.
    assert all(r.latency_s < RUN_TIMEOUT for r in report.records if r.outcome == "passed")
    assert len(abandoned) == hung and all(a < RUN_TIMEOUT + 1 for a in abandoned)


@pytest.fixture
def stuck_agent() -> Iterator[None]:
    runner_agents.STUCK.arm()
    yield
    runner_agents.STUCK.release()  # let the stuck thread finish


@pytest.mark.parametrize("concurrency", [1, 2])
def test_an_agent_stuck_in_its_own_code_holds_no_slot(
    tmp_path: Path, concurrency: int, stuck_agent: None
) -> None:
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        report = night(tmp_path, ep, "stuck_once_agent", runs=4, concurrency=concurrency)
    outcomes = Counter(r.outcome for r in report.records)
    # Stuck outside any model call: the agent held its run, so the timeout is a crash.
    assert outcomes == {"crashed": 1, "passed": 3}
    (stuck,) = [r for r in report.records if r.outcome == "crashed"]
    assert stuck.reason is not None and stuck.reason.startswith("timed out in the agent")
    assert all(r.latency_s < RUN_TIMEOUT for r in report.records if r.outcome == "passed")
