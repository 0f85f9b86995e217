"""Agents that reach for the network during a replay, each a different way around capture.

Each makes its one recorded model call first (so its trajectory matches the
golden made by :func:`agents_for_tests.ask`), then tries to reach a loopback
sink; what they do with the error they get is the point of each.
"""

from __future__ import annotations

import _socket
import contextlib
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from agents_for_tests import ask

Address = tuple[str, int]


def swallowing(attempt: Callable[[], Any]) -> None:
    """What many agents do with a failing tool: catch everything and go on."""
    with contextlib.suppress(Exception):
        attempt()


def c_level_connect(address: Address) -> str | None:
    """Connects with the C socket class, under any monkeypatch of socket.socket."""
    answer = ask(None)
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    swallowing(lambda: sock.connect(address))
    sock.close()
    return answer


def udp_send(address: Address) -> str | None:
    """One datagram, no connection."""
    answer = ask(None)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        swallowing(lambda: sock.sendto(b"exfiltrated", address))
    return answer


def reuses_connection(sock: socket.socket) -> str | None:
    """Sends on a socket that was connected before the replay started."""
    answer = ask(None)
    swallowing(lambda: sock.sendall(b"exfiltrated over an old connection"))
    return answer


def reuses_session(session: Any, url: str) -> str | None:
    """A requests.Session whose pooled connection was opened before the replay."""
    answer = ask(None)
    swallowing(lambda: session.get(url, timeout=2))
    return answer


def tls_over_connection(sock: socket.socket) -> str | None:
    """Starts TLS on a socket connected before the replay (the handshake is a send)."""
    answer = ask(None)
    sock.settimeout(2)  # unguarded, the handshake would wait for the sink's answer
    context = ssl.create_default_context()
    swallowing(lambda: context.wrap_socket(sock, server_hostname="sink.test"))
    return answer


def in_a_thread(address: Address) -> str | None:
    """The error is raised in a worker thread; the agent never sees it."""
    answer = ask(None)
    worker = threading.Thread(
        target=lambda: socket.create_connection(address, timeout=2).close(), name="telemetry"
    )
    worker.start()
    worker.join()
    return answer


def child_process(command: list[str]) -> str | None:
    """Runs a child process that talks HTTP; whatever it exits with is ignored."""
    answer = ask(None)
    subprocess.run(command, capture_output=True, timeout=30, check=False)
    return answer


def child_with_direct_line(url: str) -> str | None:
    """Gives its child an environment of its own that asks for no proxy at all."""
    answer = ask(None)
    env = {**os.environ, "NO_PROXY": "*"}
    subprocess.run(python_child(url), env=env, capture_output=True, timeout=30, check=False)
    return answer


def python_child(url: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        f"import urllib.request; urllib.request.urlopen({url!r}, timeout=5)",
    ]


def forked_child(address: Address) -> str | None:
    """A forked copy of the test process connects (its guard is a copy nobody reads)."""
    answer = ask(None)
    pid = os.fork()
    if pid == 0:  # the child
        try:
            socket.socket().connect(address)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return answer


def unwrapped_litellm(api_base: str) -> str | None:
    """Calls the model through litellm's own function, as ``from litellm import
    completion`` taken before the wrap does: capture never sees the call."""
    from evalrunner.core._hook import original

    answer = ask(None)
    completion = original("completion")
    swallowing(
        lambda: completion(
            model="openai/fake",
            api_base=api_base,
            api_key="sk-fake-not-a-secret",
            messages=[{"role": "user", "content": "hi"}],
            num_retries=0,
            max_retries=0,
        )
    )
    return answer


def sdk_client(api_base: str) -> str | None:
    """Calls the model with the openai SDK directly."""
    import openai

    answer = ask(None)
    client = openai.OpenAI(base_url=api_base, api_key="sk-fake-not-a-secret", max_retries=0)
    swallowing(
        lambda: client.chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "hi"}]
        )
    )
    return answer
