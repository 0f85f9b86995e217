"""The replay's network block leaves the rest of the test process alone: threads that
were running before it (pytest's, a debugger's, a fixture's server and the threads it
starts per request) keep their loopback connections, and everything the guard changed
(socket methods, Thread.start, the proxy environment, the proxy's thread) is undone
after it."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agents_for_tests import ask
from fake_endpoint import FakeEndpoint

from evalrunner.frozen._network import block_network
from evalrunner.frozen._run import run_frozen


def test_threads_of_the_harness_keep_their_loopback(one_answer_golden: Path) -> None:
    """A server thread started before the replay (a fixture's) still answers, and a
    thread started before it (pytest's, a debugger's) still reaches loopback."""
    results: list[str] = []
    go = threading.Event()

    def harness_client(port: int) -> None:
        go.wait(10)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
            results.append(sock.recv(12).decode())

    with FakeEndpoint() as ep:
        client = threading.Thread(target=harness_client, args=(ep.port,))
        client.start()

        def agent() -> str | None:
            go.set()
            client.join()
            return ask(None)

        outcome = run_frozen(agent, golden_path=one_answer_golden, mode="check")
    assert outcome.ok, outcome.message
    assert results == ["HTTP/1.1 200"]


def test_the_guard_restores_what_it_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "internal.example")
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    before = {
        "send": socket.socket.__dict__.get("send"),
        "sendall": socket.socket.__dict__.get("sendall"),
        "tls": ssl.SSLSocket.__dict__.get("sendall"),
        "start": threading.Thread.__dict__.get("start"),
    }
    with block_network():
        subprocess.run([sys.executable, "-c", "pass"], check=True)  # a child: proxy env set
        assert os.environ["HTTP_PROXY"].startswith("http://127.0.0.1:")
        assert "NO_PROXY" not in os.environ
    assert os.environ["NO_PROXY"] == "internal.example"
    assert "HTTP_PROXY" not in os.environ
    after = {
        "send": socket.socket.__dict__.get("send"),
        "sendall": socket.socket.__dict__.get("sendall"),
        "tls": ssl.SSLSocket.__dict__.get("sendall"),
        "start": threading.Thread.__dict__.get("start"),
    }
    assert after == before
    assert "evalrunner-refusing-proxy" not in [t.name for t in threading.enumerate()]


def test_a_run_without_child_processes_leaves_the_proxy_environment_alone(
    one_answer_golden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    seen: list[str | None] = []

    def agent() -> str | None:
        seen.append(os.environ.get("NO_PROXY"))
        return ask(None)

    assert run_frozen(agent, golden_path=one_answer_golden, mode="check").ok
    assert seen == ["127.0.0.1"]


def test_a_thread_running_before_the_replay_is_still_kept_off_the_network(
    one_answer_golden: Path,
) -> None:
    """Loopback only: a pool thread the agent reuses cannot reach out either."""
    go, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def pooled_worker() -> None:
        go.wait(10)
        try:
            socket.getaddrinfo("example.com", 443)
        except BaseException as exc:
            errors.append(exc)
        done.set()

    worker = threading.Thread(target=pooled_worker, name="pool-1")
    worker.start()

    def agent() -> str | None:
        go.set()
        done.wait(10)
        return ask(None)

    outcome = run_frozen(agent, golden_path=one_answer_golden, mode="check")
    worker.join()
    assert [type(e).__name__ for e in errors] == ["NetworkBlocked"]
    assert not outcome.ok
    assert "example.com:443 [DNS lookup (audit hook)], in thread pool-1 (running before the" in (
        outcome.message
    )


TELEMETRY_LIB = '''
import socket
import threading

ready, go, done = threading.Event(), threading.Event(), threading.Event()


class Reporter(threading.Thread):
    """Sends a usage event when told, as a framework's telemetry thread does."""

    def run(self):
        ready.set()
        go.wait(10)
        try:
            socket.getaddrinfo("telemetry.example.com", 443)
        except Exception:
            pass  # telemetry never lets its failure reach the user
        done.set()
'''


def test_a_library_s_own_thread_from_before_the_replay_is_blocked_and_said_not_failed(
    one_answer_golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A framework's telemetry thread, started while an earlier test ran, reached out during
    a later test's replay and failed that test, blamed on it (issue 53, row 20). Blocked
    still, it is now named as the library's own thread in a warning, and the run passes."""
    from evalrunner.frozen import _network

    site = tmp_path / "site-packages"
    (site / "telemetry_lib").mkdir(parents=True)
    (site / "telemetry_lib" / "__init__.py").write_text(TELEMETRY_LIB)
    monkeypatch.syspath_prepend(str(site))
    # The temp folder stands for where installed packages live.
    monkeypatch.setattr(_network, "_THIRD_PARTY_DIRS", (str(site.resolve()),))
    monkeypatch.setattr(_network, "_LIBRARY_DIRS", (*_network._LIBRARY_DIRS, str(site.resolve())))
    import telemetry_lib  # type: ignore[import-not-found]

    reporter = telemetry_lib.Reporter(name="reporter", daemon=True)
    reporter.start()
    telemetry_lib.ready.wait(10)

    def agent() -> str | None:
        telemetry_lib.go.set()
        telemetry_lib.done.wait(10)
        return ask(None)

    with pytest.warns(_network.BackgroundNetworkWarning) as said:
        outcome = run_frozen(agent, golden_path=one_answer_golden, mode="check")
    reporter.join(10)
    assert outcome.ok, outcome.message
    (warning,) = [str(w.message) for w in said]
    assert warning.startswith(
        "blocked during replay, and not this run's doing: telemetry.example.com:443 [DNS lookup "
        "(audit hook)], in thread reporter (running before the replay began, telemetry_lib's "
        "own thread)"
    )


def test_the_known_telemetry_switches_are_set_for_the_test_session() -> None:
    # Set by the plugin before the test modules (and their frameworks) were imported.
    assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "False"
    assert os.environ["OPENAI_AGENTS_DISABLE_TRACING"] == "1"
