"""A frozen ``command:`` agent's output is read as a live run reads it."""

from __future__ import annotations

import sys

import pytest

from evalrunner.frozen._proxied import AgentFailed, command_agent
from evalrunner.suite._contract import final_answer

NOT_UTF8 = b'\xff\xfe\x00garbage {"final_answer": \n'


def test_stdout_that_is_not_utf8_is_the_answer_as_printed_not_a_decoding_error() -> None:
    # Live runs replace the bytes that are not UTF-8 and check what is left; the frozen
    # path raised UnicodeDecodeError from subprocess's own decoding.
    script = f"import sys; sys.stdout.buffer.write({NOT_UTF8!r})"
    answer = command_agent([sys.executable, "-c", script], timeout=60)({})
    assert answer == final_answer(NOT_UTF8.decode("utf-8", errors="replace"))
    assert answer is not None and answer.startswith("\ufffd\ufffd\x00garbage")


def test_stderr_that_is_not_utf8_is_shown_in_the_failure() -> None:
    script = f"import sys; sys.stderr.buffer.write({NOT_UTF8!r}); sys.exit(3)"
    with pytest.raises(AgentFailed, match=r"status 3; stderr: .*garbage"):
        command_agent([sys.executable, "-c", script], timeout=60)({})
