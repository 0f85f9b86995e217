"""OpenTelemetry GenAI spans in, ATIF out (issue 56, the "from files" way in): a pydantic-ai
agent's own instrumentation, exported with OpenTelemetry's OTLP encoder as a collector
receives it, read by ``evalrunner show`` and ``diff`` as the agent's trajectory, a tool that
raised included (the capture proxy cannot see a tool at all)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalrunner.cli._main import main
from evalrunner.core._atif import load
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape, tool_latency
from evalrunner.errors import TrajectoryError

pydantic_ai = pytest.importorskip("pydantic_ai", reason="the `frameworks` extra")
sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the `frameworks` extra")
encoder = pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.common.trace_encoder", reason="the `frameworks` extra"
)


@pytest.fixture
def spans() -> Iterator[Any]:
    """pydantic-ai's instrumentation, its spans kept in memory for this test only."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent, InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporter.provider = provider  # type: ignore[attr-defined]  # for reading spans in capture
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    try:
        yield exporter
    finally:
        Agent.instrument_all(False)


def _agent(lookup_answer: str, *, break_tool: bool) -> Any:
    """A capital lookup agent on a scripted model (no network): it calls ``lookup``, and
    ``broken`` too when asked to, then answers with what ``lookup`` said."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list[Any], info: Any) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(f"The capital is {returned[0].content}.")])
        calls = [ToolCallPart("lookup", {"country": "France"})]
        return ModelResponse(parts=calls + ([ToolCallPart("broken", {})] if break_tool else []))

    agent = Agent(FunctionModel(model), name="capitals", system_prompt="Use the tools.")

    @agent.tool_plain
    def lookup(country: str) -> str:
        return lookup_answer

    @agent.tool_plain
    def broken() -> str:
        raise RuntimeError("the atlas is offline")

    return agent


def _export(exporter: Any, path: Path) -> Path:
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(encoder.encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps(doc), encoding="utf-8")
    exporter.clear()
    return path


def test_an_agent_s_own_spans_read_as_its_trajectory(spans: Any, tmp_path: Path) -> None:
    assert _agent("Paris", break_tool=False).run_sync("Capital of France?").output == (
        "The capital is Paris."
    )
    traj = load(_export(spans, tmp_path / "trace.json"))
    assert [s["source"] for s in traj["steps"]] == ["system", "user", "agent", "agent"]
    first = traj["steps"][2]
    assert [c["function_name"] for c in first["tool_calls"]] == ["lookup"]
    assert first["observation"]["results"][0]["content"] == "Paris"
    assert traj["steps"][3]["message"] == "The capital is Paris."
    sh = shape(traj)
    assert (sh.llm_calls, sh.tools, sh.crashed) == (2, ("lookup",), False)
    assert (tool_latency(traj) or 0) > 0  # the tool span's own duration
    assert sh.prompt_tokens > 0 and traj["agent"]["name"] == "capitals"
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "trace.json")])
    assert shown.exit_code == 0, shown.output
    assert "lookup" in shown.output and "The capital is Paris." in shown.output


def test_a_tool_that_raised_is_a_tool_error_in_the_trajectory(spans: Any, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="the atlas is offline"):
        _agent("Paris", break_tool=True).run_sync("Capital of France?")
    traj = load(_export(spans, tmp_path / "trace.json"))
    results = traj["steps"][2]["observation"]["results"]
    assert results[1]["content"] == "RuntimeError: the atlas is offline"
    assert results[1]["extra"]["error"] is True
    assert traj["extra"]["crashed"] is True  # the agent run itself ended in that error


def test_a_json_lines_export_reads_as_one_trace(spans: Any, tmp_path: Path) -> None:
    """The OpenTelemetry Collector's file exporter writes one export per line."""
    _agent("Paris", break_tool=False).run_sync("Capital of France?")
    whole = load(_export(spans, tmp_path / "whole.json"))
    doc = json.loads((tmp_path / "whole.json").read_text(encoding="utf-8"))
    [resource] = doc["resourceSpans"]
    [scope] = resource["scopeSpans"]
    lines = [
        {"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]}
        for span in scope["spans"]
    ]
    assert len(lines) > 2
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    (tmp_path / "lines.jsonl").write_text(text, encoding="utf-8")
    assert normalize(load(tmp_path / "lines.jsonl")) == normalize(whole)
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "lines.jsonl")])
    assert shown.exit_code == 0, shown.output
    assert "The capital is Paris." in shown.output
    same = CliRunner().invoke(
        main, ["diff", str(tmp_path / "whole.json"), str(tmp_path / "lines.jsonl")]
    )
    assert same.exit_code == 0, same.output
    (tmp_path / "other.jsonl").write_text('{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"other\.jsonl: one JSON document a line, not all"):
        load(tmp_path / "other.jsonl")
    (tmp_path / "broken.jsonl").write_text(text + "{not json\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"broken\.jsonl: not valid JSON at line 2 column 1"):
        load(tmp_path / "broken.jsonl")  # not an export per line: its first error, as JSON


def test_two_exports_diff_as_behaviour(spans: Any, tmp_path: Path) -> None:
    _agent("Paris", break_tool=False).run_sync("Capital of France?")
    before = _export(spans, tmp_path / "before.json")
    with pytest.raises(RuntimeError):
        _agent("Paris", break_tool=True).run_sync("Capital of France?")
    after = _export(spans, tmp_path / "after.json")
    said = CliRunner().invoke(main, ["diff", str(before), str(after)])
    assert said.exit_code == 1, said.output
    assert "tools: (lookup,) -> (lookup, broken)" in said.output
    assert "crashed: False -> True" in said.output


def test_a_trace_with_no_genai_span_is_refused_naming_what_to_export(tmp_path: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("web").start_as_current_span("GET /health"):
        pass
    path = tmp_path / "web.json"
    path.write_text(json.dumps(MessageToDict(encoder.encode_spans(exporter.get_finished_spans()))))
    with pytest.raises(TrajectoryError, match="an OpenTelemetry trace with no GenAI span"):
        load(path)


def test_an_agent_run_inside_a_tool_is_a_sub_agent_linked_from_that_call(
    spans: Any, tmp_path: Path
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    inner = _agent("Paris", break_tool=False)

    def model(messages: list[Any], info: Any) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(f"Delegated: {returned[0].content}")])
        return ModelResponse(parts=[ToolCallPart("ask_geographer", {"question": "France?"})])

    outer = Agent(FunctionModel(model), name="planner")

    @outer.tool_plain
    async def ask_geographer(question: str) -> str:
        return str((await inner.run(question)).output)

    assert outer.run_sync("Capital of France?").output == "Delegated: The capital is Paris."
    traj = load(_export(spans, tmp_path / "trace.json"))
    assert traj["agent"]["name"] == "planner"
    (sub,) = traj["subagent_trajectories"]
    assert sub["agent"]["name"] == "capitals"
    call = traj["steps"][1]["tool_calls"][0]
    (result,) = traj["steps"][1]["observation"]["results"]
    assert result["source_call_id"] == call["tool_call_id"]
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": sub["trajectory_id"]}]
    sh = shape(traj)
    assert (sh.subagent_count, sh.tools, sh.subagent_tools) == (
        1,
        ("ask_geographer",),
        (("lookup",),),
    )


# -- in process: the agent's own spans read while its run is captured -------------------


def _atlas_agent(task: str) -> str:
    """pydantic-ai on its OpenAI model (reached through the capture proxy): ``lookup``
    refuses a country it does not know, which pydantic-ai sends the model to retry."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    agent: Any = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider()))

    @agent.tool_plain  # type: ignore[untyped-decorator]
    def lookup(country: str) -> str:
        if country != "France":
            raise ModelRetry(f"no country called {country}")
        return "Paris"

    return str(agent.run_sync(task).output)


def _failed(golden: Path) -> list[str]:
    """The contents of the tool results a golden marks as failed."""
    doc = json.loads(golden.read_text(encoding="utf-8"))
    steps = doc.get("trajectory", doc)["steps"]
    results = [r for s in steps for r in (s.get("observation") or {}).get("results") or []]
    return [r["content"] for r in results if (r.get("extra") or {}).get("error")]


def test_a_proxied_agent_s_tool_that_raised_is_a_tool_error_in_its_golden(
    spans: Any, tmp_path: Path
) -> None:
    from fake_endpoint import FakeEndpoint
    from sdk_agents import content_responder

    from evalrunner import read_tool_spans
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.frozen._proxied import call_with_env, run_frozen_proxied

    def frozen(golden: Path, mode: str, api_base: str = "http://127.0.0.1:9") -> Any:
        def endpoint() -> Endpoint:
            return Endpoint(label="openai/fake", model="openai/fake", api_base=api_base)

        agent = call_with_env(_atlas_agent, "Capitals of: France, Atlantis")
        return run_frozen_proxied(agent, golden_path=golden, mode=mode, endpoint=endpoint)  # type: ignore[arg-type]

    with FakeEndpoint(responder=content_responder) as ep:
        # Not yet reading the instrumentation's spans: the proxy sees the retry prompt the
        # model was sent, and nothing says a tool failed.
        assert frozen(tmp_path / "proxy_only.json", "record", ep.api_base).ok
        read_tool_spans(spans.provider)
        assert frozen(tmp_path / "capitals.json", "record", ep.api_base).ok
    assert _failed(tmp_path / "proxy_only.json") == []
    (failed,) = _failed(tmp_path / "capitals.json")
    assert "no country called Atlantis" in failed
    # Replayed offline, the spans say the same: the golden holds, run after run.
    for _ in range(2):
        outcome = frozen(tmp_path / "capitals.json", "check")
        assert outcome.ok, outcome.message


def test_an_agent_captured_by_its_spans_and_by_the_proxy_has_one_shape(
    spans: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same agent, task and model, captured once by the proxy (its spans not read) and
    # once from its own instrumentation alone: where both can see, the shapes agree; the
    # tool that raised is seen by the spans only (the proxy sees the retry prompt).
    from fake_endpoint import FakeEndpoint
    from sdk_agents import content_responder

    from evalrunner.core._normalize import normalize
    from evalrunner.core._shape import tool_errors
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.frozen._proxied import call_with_env, run_frozen_proxied

    task, golden = "Capitals of: France, Atlantis", tmp_path / "capitals.json"
    with FakeEndpoint(responder=content_responder) as ep:

        def endpoint() -> Endpoint:
            return Endpoint(label="openai/fake", model="openai/fake", api_base=ep.api_base)

        agent = call_with_env(_atlas_agent, task)
        proxied = run_frozen_proxied(agent, golden_path=golden, mode="record", endpoint=endpoint)  # type: ignore[arg-type]
        assert proxied.ok, proxied.message
        spans.clear()
        monkeypatch.setenv("OPENAI_BASE_URL", ep.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        _atlas_agent(task)
        spanned = normalize(load(_export(spans, tmp_path / "trace.json")))
    doc = json.loads(golden.read_text(encoding="utf-8"))
    seen_by_proxy = doc.get("trajectory", doc)
    by_spans, by_proxy = shape(spanned), shape(seen_by_proxy)
    assert by_spans.tools == ("lookup", "lookup") and by_spans.llm_calls == 2
    both_see = by_spans.model_dump(exclude={"content_hash"})
    assert both_see == by_proxy.model_dump(exclude={"content_hash"})
    assert (tool_errors(spanned), tool_errors(seen_by_proxy)) == (1, 0)


# -- over the wire: a command agent's spans, exported to the capture proxy -------------


def test_a_command_agent_s_exported_spans_mark_its_failed_tool_in_its_golden(
    tmp_path: Path,
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the `frameworks` extra")
    import sys

    from command_goldens import recorded_and_replayed
    from paths import REPO

    from evalrunner.frozen._proxied import command_agent

    script = str(REPO / "tests" / "support" / "otel_command_agent.py")
    agent = command_agent([sys.executable, script, "Capitals of: France, Atlantis"])
    golden = tmp_path / "capitals.json"
    recorded, replayed = recorded_and_replayed(agent, golden)
    assert recorded.ok, recorded.message
    (failed,) = _failed(golden)
    assert "no country called Atlantis" in failed
    assert replayed.ok, replayed.message  # offline: the spans come to the replaying proxy alike


def test_a_trace_export_the_proxy_cannot_read_fails_the_run_naming_it(tmp_path: Path) -> None:
    import urllib.request

    from evalrunner.proxy._server import ProxyServer

    with ProxyServer("replay", tmp_path) as server:
        env = server.run_env("r1")
        request = urllib.request.Request(
            env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
            data=b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": 7}]}]}]}',
            headers={"content-type": "application/json", "authorization": "Bearer x"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(request, timeout=10)
        assert refused.value.code == 400
        result = server.finish_run("r1")
    assert result.refusals and "trace export" in result.refusals[0]


def test_a_live_night_of_a_command_agent_sees_its_failed_tool_through_its_spans(
    tmp_path: Path,
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the `frameworks` extra")
    import asyncio
    import sys

    from fake_endpoint import FakeEndpoint
    from paths import REPO
    from runner_agents import fake_pool, write_suite
    from sdk_agents import content_responder
    from suite_runs import run_suite

    from evalrunner.suite._loader import load_suite
    from evalrunner.suite._record import RunRecord

    script = str(REPO / "tests" / "support" / "otel_command_agent.py")

    def night(name: str, task: str, *flags: str) -> list[RunRecord]:
        scenario = {
            "id": "capitals",
            "command": [sys.executable, script, "{task}", *flags],
            "input": task,
            "checks": {"all_tools_succeeded": True},
        }
        suite = load_suite(write_suite(tmp_path / name, "otel", [scenario], runs=2, timeout_s=60))
        with FakeEndpoint(responder=content_responder) as ep:
            report = asyncio.run(
                run_suite(suite, out=tmp_path / name / "out", pool=fake_pool(ep.api_base))
            )
        return report.records

    def seen(records: list[RunRecord]) -> list[tuple[str, int | None]]:
        return [(str(r.outcome), r.tool_errors) for r in records]

    known = night("known", "Capitals of: France")
    assert seen(known) == [("passed", 0)] * 2
    failed = night("unknown", "Capitals of: France, Atlantis")
    assert seen(failed) == [("failed", 1)] * 2
    assert all("all_tools_succeeded" in (r.reason or "") for r in failed)
    # The proxy alone sees the retry prompt as an ordinary result: nothing failed, nothing timed.
    unseen = night("unseen", "Capitals of: France, Atlantis", "--no-spans")
    assert seen(unseen) == [("passed", 0)] * 2
    assert [r.tool_latency_s for r in unseen] == [None, None]
    # How long the tool ran is its span's: a lookup that sleeps 0.2 s reads at least that.
    assert [(r.tools, r.tools_alone) for r in known] == [(["lookup"], [])] * 2
    audited = night("audited", "Capitals of: France", "--audit")
    assert [(r.tools, r.tools_alone) for r in audited] == [(["lookup"], ["audit"])] * 2
    slow = night("slow", "Capitals of: France", "--tool-seconds", "0.2")
    assert all(
        0 <= (r.tool_latency_s or -1) < 0.2 <= (s.tool_latency_s or 0)
        for r, s in zip(known, slow, strict=True)
    )


# -- from files: a command that writes its own trace as its run's trajectory -----------


def _write_trace_scenario(script: str, *flags: str, task: str) -> dict[str, Any]:
    import sys

    return {
        "id": "capitals",
        "command": [sys.executable, script, "{task}", "--write-trace", *flags],
        "input": task,
        "trajectory_file": True,
        "checks": {"answer_contains": ["Paris"]},
    }


def test_a_live_night_reads_each_run_from_the_trace_its_command_wrote(tmp_path: Path) -> None:
    import asyncio

    from fake_endpoint import FakeEndpoint
    from paths import REPO
    from runner_agents import fake_pool, write_suite
    from sdk_agents import content_responder
    from suite_runs import run_suite

    from evalrunner.live._results import ResultsDir
    from evalrunner.suite._loader import load_suite
    from evalrunner.suite._record import RunRecord

    script = str(REPO / "tests" / "support" / "otel_command_agent.py")

    def night(name: str, *flags: str) -> list[RunRecord]:
        scenario = _write_trace_scenario(script, *flags, task="Capitals of: France, Atlantis")
        suite = load_suite(write_suite(tmp_path / name, "otel", [scenario], runs=2, timeout_s=60))
        with FakeEndpoint(responder=content_responder) as ep:
            report = asyncio.run(
                run_suite(suite, out=tmp_path / name / "out", pool=fake_pool(ep.api_base))
            )
        return report.records

    written = night("written")
    # The trace alone says the lookup failed once and how long it took (no span was sent
    # to the proxy); the answer is the trace's last message (the command printed none).
    assert [(str(r.outcome), r.tool_errors) for r in written] == [("passed", 1)] * 2
    assert all(r.tool_latency_s is not None and r.final_answer for r in written)
    assert all(r.tools == ["lookup", "lookup"] for r in written)
    results = ResultsDir(tmp_path / "written" / "out")
    trajectory = results.read_run(results.run_files()[0])[1]
    assert "otel" in trajectory["extra"]  # the span reader's, not the proxy's trajectory
    # A command that was to write its trajectory and wrote none crashed, saying so.
    none = night("none", "--no-spans")
    assert [str(r.outcome) for r in none] == ["crashed"] * 2
    assert all(
        "wrote no trajectory to $EVALRUNNER_TRAJECTORY_FILE" in (r.reason or "") for r in none
    )


def test_a_golden_of_a_command_that_writes_its_trace_records_and_replays(tmp_path: Path) -> None:
    import sys

    from command_goldens import recorded_and_replayed
    from paths import REPO

    from evalrunner.frozen._proxied import command_agent, run_frozen_proxied

    script = str(REPO / "tests" / "support" / "otel_command_agent.py")
    argv = [sys.executable, script, "Capitals of: France, Atlantis", "--write-trace"]
    golden = tmp_path / "capitals.json"
    recorded, replayed = recorded_and_replayed(command_agent(argv, trajectory_file=True), golden)
    assert recorded.ok, recorded.message
    (failed,) = _failed(golden)
    assert "no country called Atlantis" in failed
    assert "otel" in json.loads(golden.read_text())["trajectory"]["extra"]
    assert replayed.ok, replayed.message  # offline: the command writes the same trace again
    broken = command_agent([*argv, "--no-spans"], trajectory_file=True)
    said = run_frozen_proxied(broken, golden_path=golden, mode="check")
    assert not said.ok and "wrote no trajectory to $EVALRUNNER_TRAJECTORY_FILE" in said.message
