"""Talking to the embedded model server from tests: litellm calls, owners, process checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from typing import Any

from evalrunner.endpoints._local_model import LocalModelServer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_capital",
            "description": "Get the capital city of a country.",
            "parameters": {
                "type": "object",
                "properties": {"country": {"type": "string"}},
                "required": ["country"],
            },
        },
    }
]
# chatml-function-calling renders the tool list only inside a system message.
TOOL_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant with tools."},
    {"role": "user", "content": "What is the capital of Japan? Use the tool."},
]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.1)
    return gone(pid)


def complete(server: LocalModelServer, **kwargs: Any) -> Any:
    import litellm

    litellm.suppress_debug_info = True
    return litellm.completion(
        model=server.model,
        api_base=server.api_base,
        api_key=server.api_key,
        num_retries=0,
        timeout=120,
        temperature=0.8,
        **kwargs,
    )


def run_owner(code: str) -> subprocess.Popen[str]:
    """Start a Python process that owns a server and prints the server's pid."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
