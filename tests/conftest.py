"""Shared test setup. Test agents live in agents_for_tests.py, not here: whatever
surrounds an agent can leak into its prompt."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator

import pytest
from paths import git_status

from evalrunner._litellm import prepare as prepare_litellm

# Before any test module imports litellm (subprocesses inherit the environment).
prepare_litellm()
# Test runs write nothing into the working tree, bytecode caches included
# (subprocesses inherit the variable; this process stops writing from here on).
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
sys.dont_write_bytecode = True
# A run started in the background by a non-interactive shell (`cmd &`, cron wrappers)
# inherits SIGINT ignored, and so would every process the tests start: the Ctrl-C tests
# would find their children deaf to it. A handled signal is reset to the default on exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _worktree_untouched() -> Iterator[None]:
    """Tests write only under tmp_path: fail the session if the checkout changed.

    Set EVALRUNNER_SKIP_WORKTREE_CHECK=1 when editing files while the tests run.
    """
    if os.environ.get("EVALRUNNER_SKIP_WORKTREE_CHECK"):
        yield
        return
    before = git_status()
    yield
    after = git_status()
    if before is None or after is None:
        return
    if after != before:
        old, new = set(before.splitlines()), set(after.splitlines())
        changes = [f"  + {line}" for line in sorted(new - old)] + [
            f"  - {line}" for line in sorted(old - new)
        ]
        pytest.fail(
            "the test session changed the working tree (tests must write only under tmp_path):\n"
            + "\n".join(changes),
            pytrace=False,
        )
