"""A loopback sink: TCP and UDP listeners on 127.0.0.1 that keep every byte they get.

What an attacker's exfiltration endpoint would be, on loopback: tests point a
replayed agent at it and check that nothing arrived. The TCP side answers each
HTTP request with a small keep-alive 200, so an HTTP client can connect (and
pool the connection) before a replay starts.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"


class LoopbackSink:
    """``with LoopbackSink() as sink``: ``sink.tcp`` / ``sink.udp`` are (host, port)."""

    def __init__(self) -> None:
        self._tcp = socket.create_server(("127.0.0.1", 0))
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", 0))
        self.tcp: tuple[str, int] = self._tcp.getsockname()[:2]
        self.udp: tuple[str, int] = self._udp.getsockname()[:2]
        self._lock = threading.Lock()
        self._received: list[bytes] = []
        self._connections = 0
        self._closing = False
        self._threads = [
            threading.Thread(target=self._accept, daemon=True, name="sink-tcp"),
            threading.Thread(target=self._datagrams, daemon=True, name="sink-udp"),
        ]

    def __enter__(self) -> LoopbackSink:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True
        self._tcp.close()
        self._udp.close()

    @property
    def url(self) -> str:
        return f"http://{self.tcp[0]}:{self.tcp[1]}/exfiltrate"

    def mark(self, settle: float = 0.3) -> tuple[int, int]:
        """(connections, messages) so far, once in-flight ones landed; for :meth:`since`."""
        time.sleep(settle)
        with self._lock:
            return self._connections, len(self._received)

    def since(self, mark: tuple[int, int], settle: float = 0.3) -> tuple[int, list[bytes]]:
        """Connections and data that arrived after ``mark`` (after letting in-flight bytes land)."""
        time.sleep(settle)
        with self._lock:
            return self._connections - mark[0], self._received[mark[1] :]

    def _accept(self) -> None:
        while not self._closing:
            try:
                conn, _ = self._tcp.accept()
            except OSError:
                return
            with self._lock:
                self._connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                with self._lock:
                    self._received.append(data)
                if b"\r\n\r\n" in data:
                    conn.sendall(_OK)

    def _datagrams(self) -> None:
        while not self._closing:
            try:
                data, _ = self._udp.recvfrom(65536)
            except OSError:
                return
            with self._lock:
                self._received.append(data)
