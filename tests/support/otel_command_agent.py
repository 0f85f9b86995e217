"""A command agent that exports its own OpenTelemetry spans over OTLP/HTTP, configured
by the environment alone (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, as a team's deployed
agent is): pydantic-ai on its OpenAI model, a ``lookup`` tool that refuses a country it
does not know (pydantic-ai sends the model a retry). Prints ``{"final_answer": ...}``.

    python otel_command_agent.py "Capitals of: France, Atlantis"
    python otel_command_agent.py "Capitals of: France, Atlantis" --no-spans  # exports none
    python otel_command_agent.py "Capitals of: France" --tool-seconds 0.2  # a slow lookup
    python otel_command_agent.py "Capitals of: France" --audit  # runs a tool of its own
    # its trace written as OTLP JSON to the file $EVALRUNNER_TRAJECTORY_FILE names, and
    # no answer printed (with --no-spans: no file written)
    python otel_command_agent.py "Capitals of: France" --write-trace
"""

from __future__ import annotations

import json
import os
import sys
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, InstrumentationSettings, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def main(task: str, flags: list[str]) -> str:
    provider = TracerProvider()
    kept = InMemorySpanExporter()
    if "--no-spans" in flags:
        pass
    elif "--write-trace" in flags:
        provider.add_span_processor(SimpleSpanProcessor(kept))
    else:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    agent: Agent[None, str] = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider()))
    slow = float(flags[flags.index("--tool-seconds") + 1]) if "--tool-seconds" in flags else 0.0

    @agent.tool_plain
    def lookup(country: str) -> str:
        time.sleep(slow)
        if country != "France":
            raise ModelRetry(f"no country called {country}")
        return "Paris"

    try:
        answer = agent.run_sync(task).output
        if "--audit" in flags:  # a tool the agent runs by itself, after its answer
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "audit"}
            with provider.get_tracer("agent").start_as_current_span("audit", attributes=attributes):
                pass
        return answer
    finally:
        provider.shutdown()  # the spans leave before the process does
        if kept.get_finished_spans():
            _write(kept)


def _write(kept: InMemorySpanExporter) -> None:
    """The spans as an OTLP JSON export (what a collector's file exporter holds)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(kept.get_finished_spans()))
    with open(os.environ["EVALRUNNER_TRAJECTORY_FILE"], "w", encoding="utf-8") as out:
        json.dump(doc, out)


if __name__ == "__main__":
    answer = main(sys.argv[1], sys.argv[2:])
    if "--write-trace" not in sys.argv:  # its trajectory, written, holds its answer
        print(json.dumps({"final_answer": answer}))
