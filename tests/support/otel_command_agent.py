"""A command agent that exports its own OpenTelemetry spans over OTLP/HTTP, configured
by the environment alone (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, as a team's deployed
agent is): pydantic-ai on its OpenAI model, a ``lookup`` tool that refuses a country it
does not know (pydantic-ai sends the model a retry). Prints ``{"final_answer": ...}``.

    python otel_command_agent.py "Capitals of: France, Atlantis"
    python otel_command_agent.py "Capitals of: France, Atlantis" --no-spans  # exports none
"""

from __future__ import annotations

import json
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent, InstrumentationSettings, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def main(task: str, export: bool = True) -> str:
    provider = TracerProvider()
    if export:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    agent: Agent[None, str] = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider()))

    @agent.tool_plain
    def lookup(country: str) -> str:
        if country != "France":
            raise ModelRetry(f"no country called {country}")
        return "Paris"

    try:
        return agent.run_sync(task).output
    finally:
        provider.shutdown()  # the spans leave before the process does


if __name__ == "__main__":
    print(json.dumps({"final_answer": main(sys.argv[1], "--no-spans" not in sys.argv[2:])}))
