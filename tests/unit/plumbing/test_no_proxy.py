"""One rule for keeping calls to loopback off a machine's HTTP(S)_PROXY."""

from __future__ import annotations

import os

import pytest

from evalrunner._net import no_proxy
from evalrunner.endpoints._endpoints import loopback_without_proxy


def test_both_spellings_get_loopback_and_what_they_held_stays() -> None:
    env = {"NO_PROXY": "corp.example, .internal", "PATH": "/bin"}
    assert no_proxy(env) == {
        "NO_PROXY": "corp.example,.internal,127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    assert env == {"NO_PROXY": "corp.example, .internal", "PATH": "/bin"}  # not changed


def test_entries_are_compared_as_a_list_not_as_a_substring() -> None:
    # "10.127.0.1" holds "127.0.0.1" as a substring, and listed no loopback at all.
    env = {"NO_PROXY": "10.127.0.1", "no_proxy": "LOCALHOST,127.0.0.1"}
    assert no_proxy(env) == {
        "NO_PROXY": "10.127.0.1,127.0.0.1,localhost",
        "no_proxy": "LOCALHOST,127.0.0.1",
    }


def test_the_hosts_are_the_callers() -> None:
    assert no_proxy({}, ("::1", "localhost")) == {
        "NO_PROXY": "::1,localhost",
        "no_proxy": "::1,localhost",
    }


def test_the_embedded_server_sets_both_spellings_in_its_own_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_PROXY", "10.127.0.1")
    monkeypatch.delenv("no_proxy", raising=False)
    loopback_without_proxy()
    assert os.environ["NO_PROXY"] == "10.127.0.1,127.0.0.1,localhost"
    assert os.environ["no_proxy"] == "127.0.0.1,localhost"
