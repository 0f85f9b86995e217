"""A command agent instrumented by OpenInference (the OpenAI client's instrumentor and the
tracer's tool and agent decorators), exporting its spans over OTLP/HTTP as configured by
the environment (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``): a hand-written tool loop whose
``lookup`` raises for a country it does not know, the agent telling the model so
(:func:`tool_loop`, which tests/integration/test_openinference.py runs in process). Its
tool spans name no call (OpenInference's do not): the receiver joins each to the call of
its tool and arguments. Prints ``{"final_answer": ...}``.

    python openinference_command_agent.py "Capitals of: France, Atlantis"
"""

from __future__ import annotations

import json
import sys
from typing import Any

_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
        },
    }
]


def tool_loop(tracer: Any, client: Any, task: str) -> str:
    """The agent: OpenAI's chat API in a loop with ``lookup``, its tool and its run traced
    by ``tracer`` (an OpenInference ``OITracer``)."""

    @tracer.tool  # type: ignore[untyped-decorator]
    def lookup(country: str) -> str:
        """Capital of a country."""
        if country != "France":
            raise ValueError(f"no country called {country}")
        return "Paris"

    @tracer.agent(name="capitals")  # type: ignore[untyped-decorator]
    def agent(task: str) -> str:
        messages: list[Any] = [
            {"role": "system", "content": "Use the tools."},
            {"role": "user", "content": task},
        ]
        while True:
            reply = (
                client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=_TOOLS)
                .choices[0]
                .message
            )
            if not reply.tool_calls:
                return str(reply.content)
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                arguments = json.loads(call.function.arguments)
                try:
                    said = lookup(**arguments)
                except ValueError as exc:
                    said = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": said})

    return str(agent(task))


def main(task: str) -> str:
    import openai
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = OITracer(provider.get_tracer(__name__), config=TraceConfig())
    try:  # OPENAI_BASE_URL and OPENAI_API_KEY: the capture proxy's
        return tool_loop(tracer, openai.OpenAI(), task)
    finally:
        provider.shutdown()  # the spans leave before the process does


if __name__ == "__main__":
    print(json.dumps({"final_answer": main(sys.argv[1])}))
