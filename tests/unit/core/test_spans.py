"""Tool executions read from the agent's own OpenTelemetry spans while a run is captured:
each execute_tool span joins the call it ran (a tool that raised marked failed), in the
capture it ended in, never another run's. tests/integration/test_otel.py does the same
with pydantic-ai's own instrumentation through the capture proxy."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import litellm
import pytest
from scripted import ScriptedTransport

from evalrunner.core._normalize import normalize
from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.core._scope import run_captured
from evalrunner.core._spans import ToolExecution, read_tool_spans, with_tool_executions

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the `frameworks` extra")


@pytest.fixture(scope="module")
def tracer() -> Any:
    """A tracer on an SDK provider of its own (as an agent's instrumentation holds one)."""
    provider = sdk.TracerProvider()
    read_tool_spans(provider)
    read_tool_spans(provider)  # idempotent: one processor, each span handed over once
    return provider.get_tracer("an-instrumented-agent")


def _agent(tracer: Any, call: str, country: str) -> Any:
    """A litellm agent whose tool runs inside an execute_tool span, as GenAI
    instrumentations emit them; the tool raises for a country it does not know."""

    def agent() -> str:
        first = litellm.completion(model="m", messages=[{"role": "user", "content": country}])
        (asked,) = first.choices[0].message.tool_calls
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": asked.id,
        }
        try:
            with tracer.start_as_current_span("execute_tool lookup", attributes=attributes) as span:
                if country != "France":
                    raise LookupError(f"no country called {country}")
                span.set_attribute("gen_ai.tool.call.result", "Paris")
        except LookupError:
            pass  # the agent carries on; only its span says the tool failed
        return "done"

    transport = ScriptedTransport(
        ResponseRecord(
            tool_calls=[ToolCallRecord(id=call, name="lookup", arguments="{}")],
            finish_reason="tool_calls",
        )
    )
    return lambda: run_captured(agent, transport=transport)


def _results(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for s in trajectory["steps"] for r in (s.get("observation") or {}).get("results", [])]


def test_a_tool_span_that_ended_in_error_marks_its_call_failed_in_the_capture(tracer: Any) -> None:
    failed = _agent(tracer, "c1", "Atlantis")()
    for result in _results(failed.trajectory):
        assert result["extra"].pop("duration_s") >= 0  # every tool span is timed
    assert _results(failed.trajectory) == [
        {
            "source_call_id": "c1",
            "content": "LookupError: no country called Atlantis",
            "extra": {"error": True},
        }
    ]
    worked = _agent(tracer, "c1", "France")()
    assert _results(normalize(worked.trajectory)) == [
        {"source_call_id": "call_1", "content": "Paris"}
    ]


def test_a_tool_span_s_duration_is_its_result_s_and_no_golden_holds_it(tracer: Any) -> None:
    """Live mode reads how long each tool ran (tool_latency_s); a golden, normalised, reads
    as one recorded before tools were timed, so it still matches its replays."""
    from evalrunner.core._shape import tool_latency

    worked = _agent(tracer, "c1", "France")()
    (result,) = _results(worked.trajectory)
    assert result["extra"].keys() == {"duration_s"}
    assert tool_latency(worked.trajectory) == result["extra"]["duration_s"] > 0
    normalized = normalize(worked.trajectory)
    assert "duration_s" not in json.dumps(normalized)
    assert normalize(normalized) == normalized
    assert tool_latency(normalized) is None  # read before normalising, or not at all
    failed = normalize(_agent(tracer, "c1", "Atlantis")().trajectory)
    assert _results(failed)[0]["extra"] == {"error": True}


def test_concurrent_runs_each_get_only_their_own_tool_spans(tracer: Any) -> None:
    runs = [_agent(tracer, f"c{i}", "Atlantis" if i % 2 else "France") for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda run: run(), runs))
    for i, res in enumerate(done):
        (result,) = _results(res.trajectory)
        assert result["source_call_id"] == f"c{i}"
        assert bool((result.get("extra") or {}).get("error")) is bool(i % 2)


def test_a_proxied_trajectory_gets_each_execution_joined_to_its_call() -> None:
    trajectory: dict[str, Any] = {
        "steps": [
            {
                "source": "agent",
                "tool_calls": [{"tool_call_id": "a"}, {"tool_call_id": "b"}],
                "observation": {"results": [{"source_call_id": "a", "content": "retry: no"}]},
            }
        ]
    }
    with_tool_executions(
        trajectory,
        [
            ToolExecution("a", "lookup", "ModelRetry: no", error=True),
            # The run ended before the model saw this result: the span still has it.
            ToolExecution("b", "lookup", "Paris", error=False, duration_s=0.25),
            # A tool the agent ran by itself, not asked for by the model.
            ToolExecution(None, "audit", "ok", error=False, duration_s=0.75),
        ],
    )
    assert trajectory["steps"][0]["observation"]["results"] == [
        {"source_call_id": "a", "content": "retry: no", "extra": {"error": True}},
        {"source_call_id": "b", "content": "Paris", "extra": {"duration_s": 0.25}},
    ]
    assert trajectory["extra"]["tool_executions"] == [
        {"name": "audit", "content": "ok", "error": False, "duration_s": 0.75}
    ]
    # Joined again (spans in process and exported to the proxy): nothing listed is lost.
    with_tool_executions(trajectory, [ToolExecution(None, "notify", "sent", error=False)])
    assert [e["name"] for e in trajectory["extra"]["tool_executions"]] == ["audit", "notify"]


def test_a_run_s_tool_errors_count_failed_results_sub_agents_and_tools_run_alone() -> None:
    from evalrunner.core._shape import tool_errors

    def step(*results: dict[str, Any], copied: bool = False) -> dict[str, Any]:
        return {
            "source": "agent",
            "is_copied_context": copied,
            "observation": {"results": list(results)},
        }

    failed = {"source_call_id": "c1", "content": "boom", "extra": {"error": True}}
    fine = {"source_call_id": "c2", "content": "ok"}
    trajectory = {
        "steps": [step(failed, fine), step(failed, copied=True)],  # copied context is no work
        "extra": {"tool_executions": [{"name": "audit", "error": True}, {"name": "log"}]},
        "subagent_trajectories": [{"steps": [step(failed)]}],
    }
    assert tool_errors(trajectory) == 3
    assert tool_errors({"steps": [step(fine)]}) == 0


def test_an_execution_that_names_no_call_joins_the_first_unanswered_call_of_its_tool() -> None:
    from evalrunner.core._spans import pick_call

    calls = [
        {"tool_call_id": "a", "function_name": "lookup", "arguments": {"country": "France"}},
        {"tool_call_id": "b", "function_name": "search", "arguments": {"q": "x"}},
        {"tool_call_id": "c", "function_name": "lookup", "arguments": {"country": "Spain"}},
        {"tool_call_id": "d", "function_name": "lookup", "arguments": {"country": "Spain"}},
    ]
    taken: set[str] = set()
    # The same arguments first (as JSON text, as a span gives them), then any of the tool.
    assert pick_call(calls, "lookup", '{"country": "Spain"}', taken) == "c"
    assert pick_call(calls, "lookup", '{"country": "Spain"}', taken) == "d"
    assert pick_call(calls, "lookup", "not json", taken) == "a"
    assert pick_call(calls, "lookup", None, taken) is None  # every lookup answered
    assert pick_call(calls, "other", None, taken) is None
    assert taken == {"a", "c", "d"}


def test_a_run_s_tool_latency_is_seconds_per_timed_execution_sub_agents_and_alone_included() -> (
    None
):
    from evalrunner.core._shape import tool_latency

    def step(*seconds: float | None, copied: bool = False) -> dict[str, Any]:
        results = [
            {"content": "ok", **({} if s is None else {"extra": {"duration_s": s}})}
            for s in seconds
        ]
        return {"source": "agent", "is_copied_context": copied, "observation": {"results": results}}

    trajectory = {
        "steps": [step(1.0, None), step(50.0, copied=True)],  # copied context is no work
        "extra": {"tool_executions": [{"name": "audit", "duration_s": 2.0}, {"name": "log"}]},
        "subagent_trajectories": [{"steps": [step(3.0)]}],
    }
    assert tool_latency(trajectory) == 2.0  # (1 + 2 + 3) / 3 timed executions
    assert tool_latency({"steps": [step(None)]}) is None  # untimed: no value, not zero
    assert tool_latency({"steps": [step(-1.0), step(float("nan"))]}) is None


def test_a_run_s_tools_alone_are_its_executions_of_no_call_sub_agents_included() -> None:
    from evalrunner.core._shape import tools_alone

    trajectory = {
        "steps": [],
        "extra": {"tool_executions": [{"name": "audit"}, {"content": "no name"}]},
        "subagent_trajectories": [{"steps": [], "extra": {"tool_executions": [{"name": "log"}]}}],
    }
    assert tools_alone(trajectory) == ["audit", "log"]  # a tool with no name is none to count
    assert tools_alone({"steps": []}) == []
