#!/bin/bash
# Issue 56 from outside the repository: the built wheel in a fresh virtualenv, a temp
# project, a scrubbed environment (env -i). A `command:` agent (pydantic-ai exporting its
# own spans over OTLP/HTTP, tests/support/otel_command_agent.py) runs three nights against
# a loopback model (tests/support/fake_endpoint.py), they become its baseline, then its
# lookup tool is changed to raise: the fourth night's records hold one tool error a run and
# `tool_error_rate` reads REGRESSION, while every run still passes (the model API alone
# shows nothing wrong). A fifth night mends the tool and makes it 0.2 s slower: its
# `tool_latency_s` reads REGRESSION. Last, a suite whose command writes its own trace to
# $EVALRUNNER_TRAJECTORY_FILE (`trajectory_file: true`, no span sent to the proxy): its
# records hold the tool errors and durations read from that file. Needs pip (network or a
# warm cache); about three minutes.
#
#     bash benchmarks/outside_tool_errors.sh [WORKDIR]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d /tmp/outside-tool-errors.XXXX)}
mkdir -p "$WORK" && cd "$WORK" || exit 2
rm -rf dist venv proj
"$REPO/.venv/bin/pip" wheel -q --no-deps "$REPO" -w dist >/dev/null 2>&1 || exit 2
python3 -m venv venv && venv/bin/pip install -q "$(ls dist/*.whl)[frameworks,proxy]" >pip.log 2>&1 || exit 2
cp "$REPO/tests/support/fake_endpoint.py" .
cat > server.py <<'PY'
import json, sys, time
from fake_endpoint import FakeEndpoint, Reply
def responder(body, n):  # asked with tools: look up each country named; given results: answer
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return Reply("Capitals: " + ", ".join(str(m["content"]) for m in messages if m.get("role") == "tool"))
    text = str(last.get("content"))
    if body.get("tools") and ":" in text:
        return Reply(None, tool_calls=[("lookup", json.dumps({"country": c.strip()})) for c in text.split(":", 1)[1].split(",")])
    return Reply(f"echo: {text}")
with FakeEndpoint(responder=responder) as ep:
    print(ep.api_base, flush=True)
    time.sleep(600)
PY
mkdir -p proj/suites && cp "$REPO/tests/support/otel_command_agent.py" proj/agent.py
cat > proj/suites/otel.yaml <<YAML
format_version: 1
name: otel
models: [openai/gpt-4o-mini]
runs: 12
concurrency: 4
timeout_s: 60
scenarios:
  - id: capitals
    command: [$WORK/venv/bin/python, agent.py, "{task}"]
    input: "Capitals of: France"
YAML
venv/bin/python server.py >server.url & SERVER=$!
trap 'kill $SERVER' EXIT
sleep 2
run() { (cd proj && env -i PATH=/usr/bin:/bin HOME="$WORK/home" EVALRUNNER_API_BASE="$(head -1 ../server.url)" \
  OPENAI_API_KEY=sk-none "$WORK/venv/bin/evalrunner" "$@"); }
for n in 1 2 3; do run run --suite otel --out "results/n$n" --no-compare >"night$n.log" 2>&1 || exit 1; done
run baseline --suite otel --from results/n1 --from results/n2 --from results/n3 >baseline.log 2>&1 || exit 1
sed -i 's/if country != "France":/if country != "Spain":  # the change: the tool breaks/' proj/agent.py
run run --suite otel --out results/n4 >night4.log 2>&1
echo "night 4 exit $?"
echo "baseline nights' records:"; grep -oh '"tool_errors":[0-9]*' proj/results/n1/runs/*/*/*.json | sort | uniq -c
echo "night 4's records:"; grep -oh '"tool_errors":[0-9]*' proj/results/n4/runs/*/*/*.json | sort | uniq -c
grep -h "tool_error_rate\|^night:" night4.log
sed -i 's/if country != "Spain":  # the change: the tool breaks/if country != "France":/; s/time.sleep(slow)/time.sleep(0.2)/' proj/agent.py
run run --suite otel --out results/n5 >night5.log 2>&1
echo "night 5 (the lookup mended, 0.2 s slower) exit $?"
grep -h "tool_latency_s\|^night:" night5.log
cat > proj/suites/written.yaml <<YAML
format_version: 1
name: written
models: [openai/gpt-4o-mini]
runs: 4
timeout_s: 60
scenarios:
  - id: capitals
    command: [$WORK/venv/bin/python, agent.py, "{task}", --write-trace]
    trajectory_file: true
    input: "Capitals of: France, Atlantis"
YAML
run run --suite written --out results/w1 --no-compare >written.log 2>&1
echo "written night exit $?"; tail -1 written.log
echo "its records:"; grep -oh '"outcome":"[a-z]*"\|"tool_errors":[0-9]*\|"tool_latency_s":[0-9.e-]*' proj/results/w1/runs/*/*/*.json | sort | uniq -c | sort -rn | head -4
