#!/bin/bash
# Issue 56 from outside the repository: the built wheel in a fresh virtualenv, a temp
# project, a scrubbed environment (env -i). A tool loop on the OpenAI client, instrumented
# with OpenInference (openinference-instrumentation-openai, the tracer's tool and agent
# decorators), runs against a loopback model (tests/support/fake_endpoint.py) twice: once
# with a lookup that works, once with one that raises. Each run's spans are exported as
# OTLP JSON; `evalrunner show` reads the second as a trajectory with the failed tool
# marked, and `evalrunner diff` names the change. Needs pip (network or a warm cache).
#
#     bash benchmarks/outside_openinference.sh [WORKDIR]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d /tmp/outside-openinference.XXXX)}
mkdir -p "$WORK" && cd "$WORK" || exit 2
rm -rf dist venv proj
"$REPO/.venv/bin/pip" wheel -q --no-deps "$REPO" -w dist >/dev/null 2>&1 || exit 2
python3 -m venv venv && venv/bin/pip install -q "$(ls dist/*.whl)[frameworks]" >pip.log 2>&1 || exit 2
mkdir -p proj && cp "$REPO/tests/support/fake_endpoint.py" proj/
cat > proj/agent.py <<'PY'
import json, sys
from fake_endpoint import FakeEndpoint, Reply
from google.protobuf.json_format import MessageToDict
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import openai

KNOWN, OUT = sys.argv[1], sys.argv[2]
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
OpenAIInstrumentor().instrument(tracer_provider=provider)
tracer = OITracer(provider.get_tracer("agent"), config=TraceConfig())
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"country": {"type": "string"}}}}}]

def responder(body, n):  # asked with tools: look up each country named; given results: answer
    messages = body.get("messages") or []
    if messages[-1].get("role") == "tool":
        return Reply("Capitals: " + ", ".join(str(m["content"]) for m in messages if m.get("role") == "tool"))
    text = str(messages[-1].get("content"))
    return Reply(None, tool_calls=[("lookup", json.dumps({"country": c.strip()})) for c in text.split(":", 1)[1].split(",")])

@tracer.tool
def lookup(country: str) -> str:
    """Capital of a country."""
    if country != KNOWN:
        raise ValueError(f"no country called {country}")
    return "Paris"

@tracer.agent(name="capitals")
def agent(task: str, api_base: str) -> str:
    client = openai.OpenAI(base_url=api_base, api_key="sk-none")
    messages = [{"role": "user", "content": task}]
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
        if not reply.tool_calls:
            return reply.content
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls:
            try:
                said = lookup(**json.loads(call.function.arguments))
            except ValueError as exc:
                said = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": said})

with FakeEndpoint(responder=responder) as ep:
    print(agent("Capitals of: France", ep.api_base))
with open(OUT, "w") as fh:
    json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), fh)
PY
run() { (cd proj && env -i PATH=/usr/bin:/bin HOME="$WORK/home" "$WORK/venv/bin/$1" "${@:2}"); }
run python agent.py France before.json || exit 1
run python agent.py Spain after.json || exit 1  # the change: the tool breaks
echo "--- evalrunner show after.json"; run evalrunner show after.json; echo "exit $?"
echo "--- evalrunner diff before.json after.json"; run evalrunner diff before.json after.json; echo "exit $?"
