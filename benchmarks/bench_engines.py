"""The embedded model on two engines, side by side: does a prebuilt one hold?

Issue 20 asked whether a prebuilt llama.cpp engine could replace
llama-cpp-python (which compiles for ~5 minutes on install). This serves the
same SmolLM2-135M GGUF with our LocalModelServer (llama-cpp-python,
``chatml-function-calling``) and with xllamacpp's native server (a manylinux
wheel, no compile), and sends both the same tool-calling requests the
example suite's agents send, ``tool_choice="auto"``, several seeds.

    python -m venv /tmp/xv && /tmp/xv/bin/pip install xllamacpp
    PYTHONPATH=. .venv/bin/python benchmarks/bench_engines.py --xllamacpp-python /tmp/xv/bin/python

It prints, per engine: the share of answers that were tool calls, mean latency,
and the prompt size the server reported (tools rendered or not).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from typing import Any

from evalrunner.endpoints._local_model import LocalModelServer, find_gguf

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_capital",
            "description": "Look up the capital city of a country.",
            "parameters": {
                "type": "object",
                "properties": {"country": {"type": "string"}},
                "required": ["country"],
            },
        },
    }
]
TASK = "What is the capital of France? Use the lookup_capital tool."

# Hermes-style template: tools rendered in the system turn, calls as <tool_call> JSON,
# which llama.cpp's server parses. SmolLM2's own template renders no tools at all.
HERMES = """\
{%- if tools %}<|im_start|>system
You may call functions. Available tools: <tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Return each call as <tool_call>{"name": <name>, "arguments": <args>}</tool_call><|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

XSERVER = textwrap.dedent(
    """
    import sys, time, xllamacpp as x
    p = x.CommonParams()
    p.model.path, p.use_jinja, p.n_ctx, p.port = sys.argv[1], True, 4096, int(sys.argv[2])
    p.chat_template = sys.argv[3]
    s = x.Server(p)
    print("ready", flush=True)
    time.sleep(3600)
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ask(api_base: str, seed: int) -> tuple[bool, float, int]:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": TASK}],
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": 0.8,
        "seed": seed,
        "max_tokens": 256,
    }
    request = urllib.request.Request(
        f"{api_base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer: dict[str, Any] = json.load(reply)
    took = time.perf_counter() - start
    called = bool(answer["choices"][0]["message"].get("tool_calls"))
    return called, took, int(answer.get("usage", {}).get("prompt_tokens", 0))


def _measure(name: str, api_base: str, seeds: int) -> None:
    _ask(api_base, 999)  # warm-up
    results = [_ask(api_base, seed) for seed in range(seeds)]
    calls = sum(r[0] for r in results)
    latency = sum(r[1] for r in results) / len(results)
    prompt = max(r[2] for r in results)
    print(
        f"{name:<34} tool calls {calls}/{seeds}  mean latency {latency:.2f} s  "
        f"prompt {prompt} tokens"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--xllamacpp-python", help="a Python with xllamacpp installed")
    args = parser.parse_args()
    with LocalModelServer() as server:
        _measure("llama-cpp-python (chatml-fc)", server.api_base, args.seeds)
    if not args.xllamacpp_python:
        print("xllamacpp: skipped (pass --xllamacpp-python)")
        return
    for label, template in (("xllamacpp (model's template)", ""), ("xllamacpp (Hermes)", HERMES)):
        port = _free_port()
        argv = [args.xllamacpp_python, "-c", XSERVER, str(find_gguf()), str(port), template]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            _measure(label, f"http://127.0.0.1:{port}/v1", args.seeds)
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
