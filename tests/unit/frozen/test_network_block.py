"""No network during replay: sockets and DNS raise NetworkBlocked inside the guard (and
work again after it), and an agent that reaches for the network fails its frozen run."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from agents_for_tests import ask, opens_socket
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.core._response import ResponseRecord
from evalrunner.errors import NetworkBlocked
from evalrunner.frozen._golden import script_path_for
from evalrunner.frozen._network import block_network
from evalrunner.frozen._run import run_frozen
from evalrunner.frozen._script import responses_from


def test_block_network_blocks_sockets_and_dns_and_restores_them() -> None:
    with FakeEndpoint([Reply("after")]) as ep:
        with block_network():
            with pytest.raises(NetworkBlocked, match="network access during replay"):
                socket.create_connection(("127.0.0.1", ep.port), timeout=1)
            with pytest.raises(NetworkBlocked):
                socket.getaddrinfo("example.com", 443)
            with block_network():  # nested guards keep blocking
                pass
            with pytest.raises(NetworkBlocked):
                socket.socket().connect_ex(("127.0.0.1", ep.port))
        assert ask(ep.api_base) == "after"  # restored


def test_an_agent_opening_a_socket_during_replay_fails_its_frozen_run(tmp_path: Path) -> None:
    golden = tmp_path / "g.json"
    responses_from([ResponseRecord(content="hello", model="fake")]).save(script_path_for(golden))
    assert run_frozen(ask, None, golden_path=golden, mode="update").ok

    res_ok = run_frozen(ask, None, golden_path=golden, mode="check")
    assert res_ok.ok, res_ok.message
    outcome = run_frozen(opens_socket, None, golden_path=golden, mode="check")
    assert not outcome.ok
    assert outcome.message.startswith(
        "NetworkBlocked: the replayed run reached for the network 1 time(s)"
    )
    assert "127.0.0.1:9 [DNS lookup (audit hook)]" in outcome.message
