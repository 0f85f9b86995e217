"""OpenInference traces in (issue 56): an agent instrumented with Arize's OpenInference
packages (the OpenAI client's instrumentor, the tracer's tool and agent decorators), its
spans exported with OpenTelemetry's OTLP encoder, read as the same steps as a GenAI trace,
a tool that raised included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalrunner.cli._main import main
from evalrunner.core._atif import load
from evalrunner.core._shape import shape, tool_errors

pytest.importorskip("openinference.instrumentation.openai", reason="the `frameworks` extra")
sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the `frameworks` extra")
encoder = pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.common.trace_encoder", reason="the `frameworks` extra"
)


@pytest.fixture
def traced() -> Iterator[tuple[Any, Any, Any]]:
    """The OpenAI client instrumented by OpenInference for this test only, and a tracer
    whose decorators make its tool and agent spans; the spans kept in memory."""
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter, OITracer(provider.get_tracer(__name__), config=TraceConfig()), provider
    finally:
        instrumentor.uninstrument()


def _run_agent(tracer: Any, api_base: str | None, task: str) -> str:
    """A hand-written tool loop on the OpenAI client (the command agent's, in process):
    ``lookup`` raises for a country it does not know, and the agent tells the model so."""
    import openai
    from openinference_command_agent import tool_loop

    client = openai.OpenAI(base_url=api_base, api_key="sk-test") if api_base else openai.OpenAI()
    return tool_loop(tracer, client, task)


def _export(exporter: Any, path: Path) -> Path:
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(encoder.encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps(doc), encoding="utf-8")
    exporter.clear()
    return path


def _trace(traced: tuple[Any, Any, Any], path: Path, task: str) -> Path:
    from fake_endpoint import FakeEndpoint
    from sdk_agents import content_responder

    exporter, tracer, _ = traced
    with FakeEndpoint(responder=content_responder) as ep:
        _run_agent(tracer, ep.api_base, task)
    return _export(exporter, path)


def test_an_openinference_trace_reads_as_the_agent_s_trajectory(
    traced: tuple[Any, Any, Any], tmp_path: Path
) -> None:
    traj = load(_trace(traced, tmp_path / "trace.json", "Capitals of: France, Atlantis"))
    assert traj["agent"]["name"] == "capitals"
    assert [s["source"] for s in traj["steps"]] == ["system", "user", "agent", "agent"]
    calls, answer = traj["steps"][2], traj["steps"][3]
    assert [c["arguments"] for c in calls["tool_calls"]] == [
        {"country": "France"},
        {"country": "Atlantis"},
    ]
    # The tool spans name no call: each joins the call of its tool and arguments.
    ids = [c["tool_call_id"] for c in calls["tool_calls"]]
    results = calls["observation"]["results"]
    assert [r["source_call_id"] for r in results] == ids
    assert results[0]["content"] == "Paris" and "error" not in results[0].get("extra", {})
    assert results[1]["content"] == "ValueError: no country called Atlantis"
    assert results[1]["extra"]["error"] is True
    assert answer["message"].startswith("Capitals: Paris")
    sh = shape(traj)
    assert (sh.llm_calls, sh.tools, sh.crashed, tool_errors(traj)) == (
        2,
        ("lookup", "lookup"),
        False,
        1,
    )
    assert sh.prompt_tokens > 0 and sh.completion_tokens > 0
    # What no step holds stays, by span name; the request and response bodies (their ids
    # differ every run) and the flattened messages do not.
    kept = traj["extra"]["otel"]
    assert kept["ChatCompletion"][0]["llm.system"] == "openai"
    assert not any(
        k.startswith(("input.", "output.", "llm.input_messages")) for k in kept["lookup"][0]
    )
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "trace.json")])
    assert shown.exit_code == 0, shown.output
    assert "lookup" in shown.output and "Capitals: Paris" in shown.output
    assert "tool calls  2  lookup x2  (1 failed)" in shown.output


def test_two_openinference_traces_diff_as_behaviour(
    traced: tuple[Any, Any, Any], tmp_path: Path
) -> None:
    before = _trace(traced, tmp_path / "before.json", "Capitals of: France")
    after = _trace(traced, tmp_path / "after.json", "Capitals of: France, Atlantis")
    same = CliRunner().invoke(main, ["diff", str(before), str(before)])
    assert same.exit_code == 0, same.output
    changed = CliRunner().invoke(main, ["diff", str(before), str(after)])
    assert changed.exit_code == 1, changed.output
    assert "lookup" in changed.output


def test_a_proxied_agent_s_openinference_tool_spans_mark_its_failed_tool_in_its_golden(
    traced: tuple[Any, Any, Any], tmp_path: Path
) -> None:
    # Captured through the proxy, the agent's own tool spans are read as they end; they
    # name no call, so each joins the call of its tool and arguments.
    from fake_endpoint import FakeEndpoint
    from sdk_agents import content_responder

    from evalrunner import read_tool_spans
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.frozen._proxied import call_with_env, run_frozen_proxied

    _, tracer, provider = traced
    read_tool_spans(provider)
    golden = tmp_path / "capitals.json"

    def frozen(mode: str, api_base: str = "http://127.0.0.1:9") -> Any:
        def endpoint() -> Endpoint:
            return Endpoint(label="openai/fake", model="openai/fake", api_base=api_base)

        agent = call_with_env(_run_agent, tracer, None, "Capitals of: Atlantis, France")
        return run_frozen_proxied(agent, golden_path=golden, mode=mode, endpoint=endpoint)  # type: ignore[arg-type]

    with FakeEndpoint(responder=content_responder) as ep:
        recorded = frozen("record", ep.api_base)
    assert recorded.ok, recorded.message
    doc = json.loads(golden.read_text(encoding="utf-8"))
    [step] = [s for s in doc.get("trajectory", doc)["steps"] if s.get("tool_calls")]
    calls = {c["tool_call_id"]: c["arguments"]["country"] for c in step["tool_calls"]}
    failed = [
        calls[r["source_call_id"]]
        for r in step["observation"]["results"]
        if (r.get("extra") or {}).get("error")
    ]
    assert failed == ["Atlantis"]
    assert "tool_executions" not in doc.get("trajectory", doc).get("extra", {})
    replayed = frozen("check")  # offline: the spans say the same again
    assert replayed.ok, replayed.message


# -- the OpenAI Agents SDK, through OpenInference's instrumentor of it -----------------


@pytest.fixture
def agents_sdk() -> Iterator[Any]:
    """The OpenAI Agents SDK's runs as OpenInference spans, kept in memory for this test
    only (its own trace processors, which export to OpenAI's backend, removed; its tracing,
    which the test run switches off as evalrunner does for the agents it runs, on)."""
    pytest.importorskip("agents", reason="the `frameworks` extra")
    oi = pytest.importorskip(
        "openinference.instrumentation.openai_agents", reason="the `frameworks` extra"
    )
    from agents import set_trace_processors, set_tracing_disabled
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    set_trace_processors([])  # no export over the network
    set_tracing_disabled(False)
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = oi.OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()
        set_tracing_disabled(True)


def _agents_sdk_trace(exporter: Any, path: Path, task: str) -> Path:
    """An Agents SDK agent with a ``lookup`` tool that raises for a country it does not
    know, on the SDK's Chat Completions model against a loopback endpoint."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from fake_endpoint import FakeEndpoint
    from openai import AsyncOpenAI
    from sdk_agents import content_responder

    @function_tool  # type: ignore[misc]
    def lookup(country: str) -> str:
        """Capital of a country."""
        if country != "France":
            raise ValueError(f"no country called {country}")
        return "Paris"

    with FakeEndpoint(responder=content_responder) as ep:
        client = AsyncOpenAI(base_url=ep.api_base, api_key="sk-test")
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
        agent = Agent(name="capitals", instructions="Use the tools.", tools=[lookup], model=model)
        Runner.run_sync(agent, task)
    return _export(exporter, path)


def test_an_openai_agents_sdk_run_reads_as_its_agent_s_trajectory(
    agents_sdk: Any, tmp_path: Path
) -> None:
    trace = _agents_sdk_trace(agents_sdk, tmp_path / "trace.json", "Capitals of: France, Atlantis")
    traj = load(trace)
    # The SDK's "Agent workflow" around the agent is not read as an agent of its own.
    assert traj["agent"]["name"] == "capitals" and not traj.get("subagent_trajectories")
    sh = shape(traj)
    assert (sh.llm_calls, sh.tools, sh.crashed, tool_errors(traj)) == (
        2,
        ("lookup", "lookup"),
        False,
        1,
    )
    [calls] = [s for s in traj["steps"] if s.get("tool_calls")]
    failed = [r for r in calls["observation"]["results"] if (r.get("extra") or {}).get("error")]
    assert [r["source_call_id"] for r in failed] == [calls["tool_calls"][1]["tool_call_id"]]
    # The same run again, against a server on another port: the same behaviour.
    again = _agents_sdk_trace(agents_sdk, tmp_path / "again.json", "Capitals of: France, Atlantis")
    same = CliRunner().invoke(main, ["diff", str(trace), str(again)])
    assert same.exit_code == 0, same.output


def test_a_command_agent_s_openinference_spans_exported_to_the_proxy_mark_its_failed_tool(
    tmp_path: Path,
) -> None:
    """Over the wire: OpenInference's spans, sent to the capture proxy's OTLP receiver by
    a command agent, join the proxy's trajectory as a GenAI agent's do; the golden marks
    the lookup that raised, and replays offline."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the `frameworks` extra")
    import sys

    from command_goldens import recorded_and_replayed
    from paths import REPO

    from evalrunner.frozen._proxied import command_agent

    script = str(REPO / "tests" / "support" / "openinference_command_agent.py")
    agent = command_agent([sys.executable, script, "Capitals of: France, Atlantis"])
    golden = tmp_path / "capitals.json"
    recorded, replayed = recorded_and_replayed(agent, golden)
    assert recorded.ok, recorded.message
    steps = json.loads(golden.read_text(encoding="utf-8"))["trajectory"]["steps"]
    results = [r for s in steps for r in (s.get("observation") or {}).get("results") or []]
    failed = [r["content"] for r in results if (r.get("extra") or {}).get("error")]
    assert failed == ["error: no country called Atlantis"]  # what the model was sent, marked
    assert replayed.ok, replayed.message  # offline: the spans come to the replaying proxy alike
