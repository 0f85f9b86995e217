"""The docs' advice for a network namespace works: with loopback up, the proxied tests
pass and nothing beyond the machine can be reached (docs/frozen.md; issue 53, row 21:
the advice was `unshare -rn pytest`, under which every proxied and `command:` test
failed, loopback being down)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from paths import REPO

ADVICE = "ip link set lo up && {pytest}"


def _namespaces() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    try:
        probe = subprocess.run(
            ["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@pytest.mark.skipif(not _namespaces(), reason="unprivileged network namespaces not available")
def test_the_namespace_advice_keeps_loopback_for_the_proxied_tests() -> None:
    target = "tests/integration/test_proxy_auth.py::test_requests_without_the_bearer_token_get_401"
    pytest_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider {target}"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    ran = subprocess.run(
        ["unshare", "-rn", "sh", "-c", ADVICE.format(pytest=pytest_cmd)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "1 passed" in ran.stdout
    reach = subprocess.run(
        ["unshare", "-rn", "sh", "-c", "ip link set lo up && python3 -c \""
         "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\""],
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    assert reach.returncode != 0  # nothing beyond the machine
