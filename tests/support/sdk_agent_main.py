"""A command agent on the official SDKs: ``python sdk_agent_main.py KIND TASK``.

What a user's Python agent script looks like: it reads the base URL and key
from the environment (as the SDKs do) and prints ``{"final_answer": ...}``.
Extra kinds misbehave on purpose for the runner's classification tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from sdk_agents import anthropic_agent, openai_agent, openai_agent_async

KINDS = {
    "openai": lambda task: openai_agent(os.environ, task),
    "openai-streamed": lambda task: openai_agent(os.environ, task, stream=True),
    "openai-async": lambda task: asyncio.run(openai_agent_async(os.environ, task)),
    "openai-async-streamed": lambda task: asyncio.run(
        openai_agent_async(os.environ, task, stream=True)
    ),
    "anthropic": lambda task: anthropic_agent(os.environ, task),
    "anthropic-streamed": lambda task: anthropic_agent(os.environ, task, stream=True),
}


def main(kind: str, task: str) -> int:
    if kind == "crash":
        openai_agent(os.environ, task)
        print("Traceback (most recent call last):\nValueError: the agent broke", file=sys.stderr)
        return 3
    if kind == "hang":
        openai_agent(os.environ, task)
        time.sleep(60)
    if kind == "no-calls":
        print("Paris, without asking anyone")
        return 0
    if kind == "echo-env":  # logs its configuration into the conversation, key and all
        task = f"{task} (search key {os.environ['SEARCH_API_KEY']})"
        kind = "openai"
    if kind == "plain-last-line":
        answer = openai_agent(os.environ, task)
        print("some log line")
        print(answer)
        return 0
    print("thinking...")
    print(json.dumps({"final_answer": KINDS[kind](task)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
