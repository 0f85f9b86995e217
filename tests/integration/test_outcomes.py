"""Every live run gets exactly one outcome, for the right reason, end to end.

Real runs (suite in tmp_path -> runner -> capture -> litellm -> FakeEndpoint)
whose scripted answers produce each skip reason and each infrastructure fault.
The rules themselves, on hand-written trajectories: tests/unit/live/test_classify.py.
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import pytest
import runner_agents
from fake_endpoint import FakeEndpoint, Fault, Reply
from runner_agents import fake_pool, write_suite
from suite_runs import run_suite

from evalrunner.live._driver import RunReport
from evalrunner.live._results import ResultsDir
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import RunRecord
from evalrunner.suite._schema import SKIP_CLASSES

TASK = "What is the capital of France? Use the lookup_capital tool."
PATTERN = r"^(?![\s\S]*functions\.\w+:)"  # the example suite's invalid_output_pattern
ALL_OFF = {name: False for name in SKIP_CLASSES}


# ------------------------------------------------------------- real runs via the runner


def run_one(
    tmp_path: Path,
    ep: FakeEndpoint,
    agent: str,
    *,
    tools: tuple[str, ...] = ("lookup_capital",),
    checks: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[RunRecord, dict[str, Any], RunReport]:
    """One run of a one-scenario suite through run_suite; the record, its trajectory, the report."""
    scenario = {
        "id": "s",
        "agent": f"runner_agents:{agent}",
        "input": TASK,
        "tools": list(tools),
        "checks": checks if checks is not None else {"answer_contains": ["Paris"]},
    }
    path = write_suite(tmp_path / "suites", "cls", [scenario], **settings)
    out = tmp_path / "out"
    report = asyncio.run(
        run_suite(
            load_suite(path), out=out, pool=fake_pool(ep.api_base), progress_stream=io.StringIO()
        )
    )
    assert len(report.records) == 1
    results = ResultsDir(out)
    assert [p.name for p in results.run_files()] == ["0.json"]
    record, trajectory = results.read_run(results.run_files()[0])
    assert record == report.records[0]
    return record, trajectory, report


def lookup(country: str = "France", args: str | None = None) -> Reply:
    return Reply(None, tool_calls=[("lookup_capital", args or f'{{"country": "{country}"}}')])


SKIP_SCRIPTS: dict[str, tuple[list[Reply], dict[str, Any]]] = {
    "malformed_tool_arguments": ([lookup(args='{"country": "Fra'), Reply("Paris.")], {}),
    "unknown_tool": (
        [Reply(None, tool_calls=[("get_weather", '{"city": "Paris"}')]), Reply("Paris.")],
        {},
    ),
    "empty_output": ([Reply("   ")], {}),
    "truncated_output": (
        [lookup(), Reply("The capital of France is Par", finish_reason="length")],
        {},
    ),
    "invalid_output": ([Reply('functions.lookup_capital: {"country": "France"} Paris')], {}),
    # The model calls tools on every turn and never answers within max_turns.
    "no_final_answer": ([lookup()] * 3, {"max_turns": 3}),
}


def test_skip_scripts_cover_every_skip_class() -> None:
    assert set(SKIP_SCRIPTS) == set(SKIP_CLASSES)


@pytest.mark.parametrize("agent", ["tool_agent", "atool_agent"])
@pytest.mark.parametrize("klass", SKIP_CLASSES)
def test_scripted_weak_output_is_skipped_with_its_reason(
    tmp_path: Path, klass: str, agent: str
) -> None:
    script, settings = SKIP_SCRIPTS[klass]
    with FakeEndpoint(script, default=Fault("500", message="script overrun")) as ep:
        record, trajectory, _ = run_one(
            tmp_path, ep, agent, skip_rules={"invalid_output_pattern": PATTERN}, **settings
        )
        assert len(ep.requests) == len(script)
    assert (record.outcome, record.reason) == ("skipped", klass)
    assert record.checks == {}  # skipped runs are not checked
    assert record.llm_calls == len(script) and record.attempts == 1
    assert sum(s.get("llm_call_count", 0) for s in trajectory["steps"]) == len(script)


@pytest.mark.parametrize("klass", SKIP_CLASSES)
def test_scripted_weak_output_fails_when_its_skip_rule_is_off(tmp_path: Path, klass: str) -> None:
    script, settings = SKIP_SCRIPTS[klass]
    rules = {**ALL_OFF, "invalid_output_pattern": PATTERN}
    with FakeEndpoint(script, default=Fault("500", message="script overrun")) as ep:
        record, _, _ = run_one(tmp_path, ep, "tool_agent", skip_rules=rules, **settings)
    assert record.outcome == "failed"
    assert record.reason is not None and record.reason.split("; ")[0] == klass
    assert record.checks  # failed runs carry their checks


def test_a_good_run_passes_and_a_wrong_answer_fails(tmp_path: Path) -> None:
    checks = {
        "answer_contains": ["Paris"],
        "tools_used": ["lookup_capital"],
        "all_tools_succeeded": True,
    }
    with FakeEndpoint([lookup(), Reply("The capital of France is Paris.")]) as ep:
        record, _, _ = run_one(tmp_path / "a", ep, "tool_agent", checks=checks)
    assert (record.outcome, record.reason) == ("passed", None)
    assert record.checks == {
        "answer_contains:Paris": True,
        "tools_used:lookup_capital": True,
        "all_tools_succeeded": True,
    }
    assert (record.tools, record.llm_calls, record.tool_calls) == (["lookup_capital"], 2, 1)
    with FakeEndpoint([lookup("Peru"), Reply("It is Lima.")]) as ep:
        record, _, _ = run_one(tmp_path / "b", ep, "tool_agent", checks=checks)
    assert (record.outcome, record.reason) == ("failed", "answer_contains:Paris")


# ------------------------------------------------------------------ infrastructure faults

# (fault kind, agent, exception litellm raises for it)
FAULTS = [
    ("429", "timed_agent", "RateLimitError"),
    ("500", "timed_agent", "InternalServerError"),
    ("503", "timed_agent", "ServiceUnavailableError"),
    ("slow", "timed_agent", "Timeout"),
    ("reset", "timed_agent", "InternalServerError"),
    ("malformed", "timed_agent", "InternalServerError"),
    ("truncated_stream", "timed_agent", "InternalServerError"),
    ("500", "stream_agent", "InternalServerError"),
    ("malformed", "stream_agent", "MidStreamFallbackError"),
    ("truncated_stream", "stream_agent", "MidStreamFallbackError"),
    ("truncated_stream", "sync_stream_agent", "MidStreamFallbackError"),
]


def fault(kind: str) -> Fault:
    # "slow" answers after 1.2 s; timed_agent gives up after CALL_TIMEOUT_S (0.5 s).
    return (
        Fault(kind, seconds=1.2)
        if kind == "slow"
        else Fault(kind, retry_after=0.01 if kind == "429" else None)
    )


@pytest.mark.parametrize(("kind", "agent", "exc"), FAULTS, ids=[f"{k}-{a}" for k, a, _ in FAULTS])
def test_a_fault_that_outlasts_the_retries_is_infra_error(
    tmp_path: Path, kind: str, agent: str, exc: str
) -> None:
    with FakeEndpoint([fault(kind)] * 3, default=Reply("Paris.")) as ep:
        record, _, report = run_one(tmp_path, ep, agent, timeout_s=5)
        # Three attempts are ours; the SDK's own hidden retries would show as more hits.
        assert ep.hits["POST /v1/chat/completions"] == 3
    assert record.outcome == "infra_error", record.reason
    assert record.reason is not None and record.reason.startswith(f"{exc} ("), record.reason
    assert record.attempts == 3
    assert record.checks == {} and not record.crashed and report.crashes == []
    assert record.llm_calls == 0  # no model answer made it into the trajectory


@pytest.mark.parametrize(("kind", "agent", "exc"), FAULTS, ids=[f"{k}-{a}" for k, a, _ in FAULTS])
def test_a_fault_then_success_within_the_budget_passes(
    tmp_path: Path, kind: str, agent: str, exc: str
) -> None:
    with FakeEndpoint([fault(kind), fault(kind), Reply("Paris.")]) as ep:
        record, trajectory, _ = run_one(tmp_path, ep, agent, timeout_s=5)
        assert ep.hits["POST /v1/chat/completions"] == 3
    assert (record.outcome, record.reason) == ("passed", None)
    assert record.attempts == 3 and record.final_answer == "Paris."
    # The failed attempts leave no trace in the trajectory: one model call, one agent step.
    assert record.llm_calls == 1
    assert [s["source"] for s in trajectory["steps"]] == ["system", "user", "agent"]


@pytest.mark.parametrize(
    ("asked", "cap", "low", "high"),
    [(0.4, 0.6, 0.4, 0.6), (30, 0.3, 0.3, 2.0)],
    ids=["honoured", "capped"],
)
def test_retry_after_is_honoured_up_to_max_backoff(
    tmp_path: Path, asked: float, cap: float, low: float, high: float
) -> None:
    arrivals: list[float] = []

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        arrivals.append(time.monotonic())
        return Fault("429", retry_after=asked) if n == 0 else Reply("Paris.")

    retry = {"max_attempts": 2, "backoff_s": 0.01, "max_backoff_s": cap}
    with FakeEndpoint(responder=respond) as ep:
        record, _, _ = run_one(tmp_path, ep, "timed_agent", retry=retry)
    assert (record.outcome, record.attempts) == ("passed", 2)
    # Our own backoff would be <= 10 ms: the wait is the server's, capped by max_backoff_s.
    assert low <= arrivals[1] - arrivals[0] < high


@pytest.mark.parametrize("agent", ["timed_agent", "atool_agent"])
def test_the_time_a_retried_fault_took_is_not_the_run_s_latency(tmp_path: Path, agent: str) -> None:
    # An attempt that hung until its 0.3 s timeout, then 0.4 s of backoff: the endpoint's
    # fault, and it was counted as the agent's latency (a review's night flagged a
    # latency_s REGRESSION x4 from retried 500s).
    retry = {
        "max_attempts": 2,
        "backoff_s": 0.4,
        "max_backoff_s": 0.4,
        "jitter": False,
        "request_timeout_s": 0.3,
    }
    with FakeEndpoint([Fault("slow", seconds=2)], default=Reply("Paris.")) as ep:
        record, _, _ = run_one(tmp_path, ep, agent, retry=retry)
    assert (record.outcome, record.attempts) == ("passed", 2), record.reason
    assert record.latency_s < 0.4, record.latency_s


def test_retries_off_means_one_attempt(tmp_path: Path) -> None:
    with FakeEndpoint([Fault("503"), Reply("Paris.")]) as ep:
        record, _, _ = run_one(tmp_path, ep, "timed_agent", retry={"max_attempts": 1})
        assert ep.hits["POST /v1/chat/completions"] == 1
    assert record.outcome == "infra_error" and record.attempts == 1


@pytest.mark.parametrize("agent", ["atool_agent", "tool_agent"])
def test_a_run_past_its_timeout_is_infra_error(tmp_path: Path, agent: str) -> None:
    # No per-call timeout in the reference agent: the run's timeout_s stops it.
    with FakeEndpoint([Fault("slow", seconds=1.2)], default=Reply("Paris.")) as ep:
        record, _, report = run_one(tmp_path, ep, agent, timeout_s=0.4)
    assert (record.outcome, record.reason) == ("infra_error", "run timed out after 0.4 s")
    assert record.latency_s < 1.0 and report.crashes == []


@pytest.mark.parametrize("agent", ["looping_agent", "alooping_agent"])
def test_a_run_held_past_its_timeout_by_the_agent_s_own_code_is_crashed(
    tmp_path: Path, agent: str
) -> None:
    # The model answered; then the agent's loop never ended. Its timeout is its own,
    # not the endpoint's: crashed, never infra_error (which a night counts as an outage).
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        record, _, report = run_one(tmp_path, ep, agent, timeout_s=0.4)
    assert (record.outcome, record.reason) == (
        "crashed",
        "timed out in the agent after 0.4 s (no model call was under way)",
    )
    assert record.llm_calls == 1
    [(_, shown)] = report.crashes
    if agent == "looping_agent":
        # Where the sync agent was, not evalrunner's own TimeoutError (before: _scope.py's
        # frames and "raise TimeoutError from exc_val", without the agent's, a review).
        lines = shown.splitlines()
        assert lines[0] == "the agent was still running, here, when the run timed out after 0.4 s:"
        assert "in looping_agent" in lines[1] and "time.sleep(0.01)" in lines[-1]
        assert "_scope.py" not in shown and "TimeoutError" not in shown
    else:  # an async agent's cancellation passes through its own frames
        assert "in alooping_agent" in shown


@pytest.mark.parametrize(
    ("agent", "kind"),
    [
        ("catching_agent", "503"),
        ("catching_agent", "slow"),
        ("catching_stream_agent", "truncated_stream"),
    ],
)
def test_an_agent_that_swallows_the_fault_is_still_infra_error(
    tmp_path: Path, agent: str, kind: str
) -> None:
    # The agent answers with an apology, which would otherwise fail (or pass) its checks.
    with FakeEndpoint([fault(kind)] * 3) as ep:
        record, _, _ = run_one(
            tmp_path, ep, agent, checks={"answer_not_contains": ["Paris"]}, timeout_s=5
        )
    assert record.outcome == "infra_error", record.reason
    assert record.final_answer == runner_agents.APOLOGY
    assert record.checks == {}


def test_a_swallowed_fault_that_a_retry_fixes_is_not_an_infra_error(tmp_path: Path) -> None:
    with FakeEndpoint([Fault("503"), Reply("Paris.")]) as ep:
        record, _, _ = run_one(tmp_path, ep, "catching_agent")
    assert (record.outcome, record.attempts, record.final_answer) == ("passed", 2, "Paris.")


def test_agent_code_raising_is_crashed_with_its_traceback(tmp_path: Path) -> None:
    with FakeEndpoint([Reply("Paris.")]) as ep:
        record, trajectory, report = run_one(tmp_path, ep, "crashing_agent")
    assert record.outcome == "crashed" and record.crashed
    assert record.reason is not None and record.reason.startswith("ValueError: tool exploded")
    assert record.checks == {}
    [(rid, tb)] = report.crashes
    assert rid == record.run_id
    assert (
        tb.startswith("Traceback")
        and "runner_agents.py" in tb
        and "ValueError: tool exploded" in tb
    )
    # The trajectory is kept: the model call before the crash, and the crash itself.
    assert record.llm_calls == 1
    assert trajectory["extra"]["crashed"] is True
    assert trajectory["extra"]["exception"]["type"] == "ValueError"


def test_a_client_error_is_not_retried_and_not_infra(tmp_path: Path) -> None:
    # 400 says the request was wrong: the agent's doing, so a crash, and retrying cannot help.
    with FakeEndpoint([Fault("400", message="messages: invalid role"), Reply("Paris.")]) as ep:
        record, _, report = run_one(tmp_path, ep, "timed_agent")
        assert ep.hits["POST /v1/chat/completions"] == 1
    assert record.outcome == "crashed" and record.attempts == 1
    assert record.reason is not None and "BadRequestError" in record.reason
    assert len(report.crashes) == 1


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        ("401", "check the model's API key"),
        ("403", "check that the API key may use this model"),
        ("404", "check the model name and api_base"),
    ],
)
@pytest.mark.parametrize("agent", ["timed_agent", "atool_agent", "catching_agent"])
def test_an_endpoint_that_refuses_the_call_is_infra_error_not_retried_and_says_what_to_check(
    tmp_path: Path, agent: str, status: str, hint: str
) -> None:
    # A rotated key or a renamed deployment: no model answered. It was `crashed` (and
    # flagged as a regression on every scenario, with advice to accept it as the baseline).
    with FakeEndpoint(default=Fault(status, message="no such key or model")) as ep:
        record, _, report = run_one(tmp_path, ep, agent)
        assert ep.hits["POST /v1/chat/completions"] == 1  # another attempt gets the same answer
    assert (record.outcome, record.attempts, report.crashes) == ("infra_error", 1, [])
    assert record.reason is not None and f"(HTTP {status})" in record.reason
    assert f"({hint}; the endpoint refused the call, no model answered)" in record.reason


# ---------------------------------------------- endpoint faults are never behaviour (issue 10)


@pytest.mark.parametrize("agent", ["tool_agent", "atool_agent"])
def test_a_response_without_a_choice_is_infra_error_not_a_crash(tmp_path: Path, agent: str) -> None:
    # The reference agent reads choices[0]: a 200 with no choice used to crash it.
    with FakeEndpoint(default=Fault("empty_choices")) as ep:
        record, _, report = run_one(tmp_path / "down", ep, agent)
        assert ep.hits["POST /v1/chat/completions"] == 3  # retried like any fault
    assert (record.outcome, record.attempts, report.crashes) == ("infra_error", 3, [])
    assert record.reason is not None and record.reason.startswith("NoUsableChoice")
    with FakeEndpoint([Fault("empty_choices"), lookup()], default=Reply("Paris.")) as ep:
        record, _, _ = run_one(tmp_path / "flaky", ep, agent)
    assert (record.outcome, record.attempts) == ("passed", 2)


@pytest.mark.parametrize("agent", ["tool_agent", "atool_agent"])
def test_a_hung_request_is_retried_within_the_run(tmp_path: Path, agent: str) -> None:
    # The reference agent sets no timeout (litellm's default is 6,000 s): the policy's
    # request_timeout_s abandons the hung attempt and the retry answers.
    retry = {"max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05, "request_timeout_s": 1}
    with FakeEndpoint([Fault("hang"), lookup()], default=Reply("Paris.")) as ep:
        record, _, _ = run_one(tmp_path, ep, agent, retry=retry, timeout_s=10)
    assert (record.outcome, record.attempts) == ("passed", 2)


def test_an_infra_reason_names_the_status_the_endpoint_and_the_message(tmp_path: Path) -> None:
    with FakeEndpoint(default=Fault("503", message="upstream overloaded, try later")) as ep:
        record, _, _ = run_one(tmp_path / "503", ep, "tool_agent")
        api_base = ep.api_base
    assert record.reason == (
        f"ServiceUnavailableError (HTTP 503) from openai/fake at {api_base}: "
        "upstream overloaded, try later"
    )
    # A run whose retries outlast its timeout says what it was retrying (once: "TimeoutError").
    # 3 s, not 1: on a loaded machine a 1 s run could time out before its first request.
    slow_retries = {"max_attempts": 100, "backoff_s": 0.2, "max_backoff_s": 0.2}
    with FakeEndpoint(default=Fault("500", message="disk full")) as ep:
        record, _, _ = run_one(tmp_path / "slow", ep, "tool_agent", retry=slow_retries, timeout_s=3)
        api_base = ep.api_base
    assert record.outcome == "infra_error", record.reason
    assert record.reason == (
        "run timed out after 3 s; last endpoint fault: "
        f"InternalServerError (HTTP 500) from openai/fake at {api_base}: disk full"
    )
