"""A replay through the capture proxy may reach the proxy's own loopback port, and nothing
else: the allowance is exact (host and port), ends with the guard, and child processes
get NO_PROXY for it while every other request goes to the refusing proxy."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from fake_endpoint import FakeEndpoint, Reply

from evalrunner.errors import NetworkBlocked
from evalrunner.frozen._network import block_network


def test_only_the_allowed_loopback_port_is_reachable() -> None:
    with FakeEndpoint([Reply("a")]) as allowed, FakeEndpoint([Reply("b")]) as other:
        with block_network(allow=(("127.0.0.1", allowed.port),)) as guard:
            socket.create_connection(("127.0.0.1", allowed.port), timeout=1).close()
            with pytest.raises(NetworkBlocked):
                socket.create_connection(("127.0.0.1", other.port), timeout=1)
        assert len(guard.blocks) == 1 and str(other.port) in guard.blocks[0].target
        # The allowance ended with its guard.
        with block_network(), pytest.raises(NetworkBlocked):
            socket.create_connection(("127.0.0.1", allowed.port), timeout=1)


def test_non_loopback_addresses_cannot_be_allowed() -> None:
    assert block_network(allow=(("93.184.216.34", 443),)).allow == ()


def test_children_bypass_the_refusing_proxy_only_for_the_allowed_host() -> None:
    show = "import os; print(os.environ.get('NO_PROXY'), os.environ.get('HTTP_PROXY'))"
    with block_network(allow=(("127.0.0.1", 8787),)):
        out = subprocess.run(
            [sys.executable, "-c", show], env=dict(os.environ), capture_output=True, text=True
        ).stdout.split()
    assert out[0] == "127.0.0.1"
    assert out[1].startswith("http://127.0.0.1:")  # everything else: the refusing proxy


def test_children_given_an_env_of_bytes_get_the_refusing_proxy_in_bytes() -> None:
    # A user's own proxy in a bytes env is replaced, not joined by text keys of the same
    # names (a child sees the first of two, the user's).
    show = "import os; print(os.environ.get('NO_PROXY'), os.environ.get('HTTP_PROXY'))"
    env = {**os.environb, b"HTTP_PROXY": b"http://10.0.0.1:3128", b"NO_PROXY": b"*"}
    with block_network(allow=(("127.0.0.1", 8787),)):
        out = subprocess.run(
            [sys.executable, "-c", show], env=env, capture_output=True, text=True
        ).stdout.split()
    assert out[0] == "127.0.0.1"
    assert out[1].startswith("http://127.0.0.1:")
