"""The HTTP proxy child processes of a replayed run are pointed at: it refuses and records.

A child process is out of reach of the parent's audit hook, but most HTTP
clients (curl, wget, Python's urllib/requests/httpx, Node, Go) honour
``HTTP_PROXY``/``HTTPS_PROXY``. This listener answers every request with 403
and reports what was asked for (``GET http://host/path`` or ``CONNECT
host:443``). A forked child of the test process reports its own blocks here too
(its guards are copies that nobody reads), with one ``EVALRUNNER-BLOCK`` line.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable

Report = Callable[[str, str, str | None, str | None], None]

_REFUSAL = (
    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 61\r\n\r\n"
    b"evalrunner: network access during replay is blocked (proxy)\n\n"
)
_FORWARDED = "EVALRUNNER-BLOCK "
_LAYER = "HTTP request of a child process, through the replay's refusing proxy"


class RefusingProxy:
    """A loopback listener that refuses every request, from start to :meth:`close`."""

    def __init__(self, report: Report) -> None:
        self._report = report
        self._closing = False
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        host, port = self._sock.getsockname()
        self.address: tuple[str, int] = (host, port)
        self.thread = threading.Thread(
            target=self._serve, name="evalrunner-refusing-proxy", daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        """Stop listening; a child still running gets connection refused from now on."""
        self._closing = True
        # accept() does not return when another thread closes its socket: wake it.
        with contextlib.suppress(OSError), socket.create_connection(self.address, timeout=1):
            pass
        self.thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while True:
            conn, _ = self._sock.accept()
            if self._closing:
                conn.close()
                return
            with conn:
                conn.settimeout(2.0)
                with contextlib.suppress(OSError):  # a client that went away
                    self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        head = b""
        while not _complete(head):
            chunk = conn.recv(4096)
            if not chunk:
                break
            head += chunk
        first = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1").strip()
        if first.startswith(_FORWARDED):
            fields = json.loads(first[len(_FORWARDED) :])
            layer = f"{fields['layer']}, in a forked child process"
            self._report(layer, fields["target"], fields["where"], fields["via"])
            conn.sendall(b"ok\n")  # recorded: the child may exit
            return
        if first:
            method, _, rest = first.partition(" ")
            target = rest.rsplit(" ", 1)[0] if " HTTP/" in rest else rest
            via = "a model API" if _looks_like_model_call(target) else None
            self._report(_LAYER, f"{method} {target}", None, via)
        conn.sendall(_REFUSAL)

    def forward(self, layer: str, target: str, where: str | None, via: str | None) -> None:
        """From a forked child: hand a block to the parent's listener."""
        line = json.dumps({"layer": layer, "target": target, "where": where, "via": via})
        # No create_connection: its DNS lookup of the address would be blocked itself.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(self.address)
            sock.sendall(f"{_FORWARDED}{line}\n".encode())
            sock.recv(16)  # the parent has recorded it before this child goes on


def _complete(head: bytes) -> bool:
    """The request line and headers are in (or a forwarded block's line, or too much)."""
    if head.startswith(_FORWARDED.encode()):
        return b"\n" in head
    return b"\r\n\r\n" in head or len(head) >= 65536


_MODEL_PATHS = ("/chat/completions", "/completions", "/messages", "/responses", "/embeddings")
_MODEL_HOSTS = (
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.deepseek.com",
    "api.cohere.com",
    "api.cohere.ai",
    ".openai.azure.com",
)


def _looks_like_model_call(target: str) -> bool:
    path = target.split("?", 1)[0]
    return path.endswith(_MODEL_PATHS) or any(h in target for h in _MODEL_HOSTS)
