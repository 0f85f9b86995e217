"""Every way around the replay's network block that reached a loopback sink is closed:
the C socket class, UDP, a connection opened before the replay (plain, pooled by
requests, or turned into TLS), a child process and a forked child. Nothing arrives
at the sink, and the frozen run fails naming what was tried."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import network_agents as agents
import pytest
import requests
from loopback_sink import LoopbackSink

from evalrunner.frozen._run import FrozenOutcome, run_frozen


@pytest.fixture
def sink() -> Iterator[LoopbackSink]:
    with LoopbackSink() as s:
        yield s


def _replayed(
    golden: Path, sink: LoopbackSink, agent: Callable[..., Any], *args: Any
) -> FrozenOutcome:
    """Check ``agent`` against the golden; nothing may have reached the sink meanwhile."""
    mark = sink.mark()
    outcome = run_frozen(agent, *args, golden_path=golden, mode="check")
    assert sink.since(mark) == (0, []), "the sink was reached during the replay"
    assert not outcome.ok
    assert outcome.message.startswith("NetworkBlocked: the replayed run reached for the network")
    return outcome


def test_c_level_socket_connect(one_answer_golden: Path, sink: LoopbackSink) -> None:
    outcome = _replayed(one_answer_golden, sink, agents.c_level_connect, sink.tcp)
    assert f"127.0.0.1:{sink.tcp[1]} [connect (audit hook" in outcome.message


def test_udp_sendto(one_answer_golden: Path, sink: LoopbackSink) -> None:
    outcome = _replayed(one_answer_golden, sink, agents.udp_send, sink.udp)
    assert f"127.0.0.1:{sink.udp[1]} [datagram send" in outcome.message


def test_a_socket_connected_before_the_replay(one_answer_golden: Path, sink: LoopbackSink) -> None:
    with socket.create_connection(sink.tcp) as sock:
        outcome = _replayed(one_answer_golden, sink, agents.reuses_connection, sock)
    assert f"127.0.0.1:{sink.tcp[1]} [send on a socket connected before the replay]" in (
        outcome.message
    )


def test_a_requests_session_connected_before_the_replay(
    one_answer_golden: Path, sink: LoopbackSink
) -> None:
    with requests.Session() as session:
        assert session.get(sink.url, timeout=2).text == "ok"  # pooled, kept alive
        outcome = _replayed(one_answer_golden, sink, agents.reuses_session, session, sink.url)
    assert f"127.0.0.1:{sink.tcp[1]} [send on a socket connected before the replay]" in (
        outcome.message
    )


def test_tls_over_a_socket_connected_before_the_replay(
    one_answer_golden: Path, sink: LoopbackSink
) -> None:
    with socket.create_connection(sink.tcp) as sock:
        outcome = _replayed(one_answer_golden, sink, agents.tls_over_connection, sock)
    assert "[TLS send on a socket connected before the replay]" in outcome.message


def test_a_python_child_process(one_answer_golden: Path, sink: LoopbackSink) -> None:
    command = agents.python_child(sink.url)
    outcome = _replayed(one_answer_golden, sink, agents.child_process, command)
    assert f"GET {sink.url} [HTTP request of a child process" in outcome.message


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_curl_child_process(one_answer_golden: Path, sink: LoopbackSink) -> None:
    command = ["curl", "-s", "--max-time", "5", sink.url]
    outcome = _replayed(one_answer_golden, sink, agents.child_process, command)
    assert f"GET {sink.url} [HTTP request of a child process" in outcome.message


def test_a_child_process_given_its_own_environment(
    one_answer_golden: Path, sink: LoopbackSink
) -> None:
    outcome = _replayed(one_answer_golden, sink, agents.child_with_direct_line, sink.url)
    assert f"GET {sink.url} [HTTP request of a child process" in outcome.message


def test_a_forked_child(one_answer_golden: Path, sink: LoopbackSink) -> None:
    outcome = _replayed(one_answer_golden, sink, agents.forked_child, sink.tcp)
    assert f"127.0.0.1:{sink.tcp[1]} [connect (audit hook" in outcome.message
    assert "in a forked child process" in outcome.message
