"""One loopback rule for the network guard (connections) and the proxy (its bind address)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner._net import is_loopback
from evalrunner.errors import ConfigError
from evalrunner.frozen._network import _is_loopback
from evalrunner.proxy import ProxyServer


@pytest.mark.parametrize(
    "host",
    ["localhost", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1", "fe80::1%lo"],
)
def test_this_machine_s_own_addresses_are_loopback_both_ways(host: str) -> None:
    expected = host != "fe80::1%lo"  # link-local is another machine's reach, not loopback
    assert is_loopback(host) is expected
    assert is_loopback(host, listening=True) is expected


@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_the_any_address_reaches_loopback_but_listens_everywhere(host: str) -> None:
    assert is_loopback(host)  # connecting to it reaches this machine
    assert not is_loopback(host, listening=True)  # binding to it accepts every interface


@pytest.mark.parametrize("host", ["10.0.0.1", "::ffff:10.0.0.1", "example.com", "192.168.1.1"])
def test_other_addresses_are_not(host: str) -> None:
    assert not is_loopback(host) and not is_loopback(host, listening=True)


def test_the_network_guard_allows_what_the_rule_calls_loopback() -> None:
    for host in ("localhost", "0.0.0.0", "::", "::ffff:127.0.0.1"):
        assert _is_loopback((host, 80)), host
    assert not _is_loopback(("10.0.0.1", 80))


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_the_proxy_refuses_to_listen_on_every_interface_without_allow_remote(host: str) -> None:
    with pytest.raises(ConfigError, match="is not loopback: pass --allow-remote"):
        ProxyServer(mode="passthrough", host=host)


@pytest.mark.parametrize("host", ["localhost", "::ffff:127.0.0.1", "::1"])
def test_the_proxy_listens_on_loopback_without_allow_remote(host: str, tmp_path: Path) -> None:
    ProxyServer(mode="replay", directory=tmp_path, host=host)  # constructing binds nothing yet
