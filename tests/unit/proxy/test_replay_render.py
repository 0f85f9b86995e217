"""Replay through the proxy renders recorded answers as plain JSON, without litellm: the
same JSON litellm's own objects gave (what agents were recorded and replayed against)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from evalrunner.core._response import (
    ResponseRecord,
    ToolCallRecord,
    Usage,
    response_from_record,
    stream_from_record,
)
from evalrunner.proxy._chat import chat_body, chat_chunks

CALL = ToolCallRecord(id="call_1", name="lookup", arguments='{"city": "Paris"}')
RECORDS = [
    ResponseRecord(content="Paris.", finish_reason="stop", usage=Usage(prompt_tokens=9, completion_tokens=2), model="m"),
    ResponseRecord(content=None, tool_calls=[CALL, CALL.model_copy(update={"id": "call_2"})], finish_reason="tool_calls", usage=Usage(prompt_tokens=3, completion_tokens=4)),
    ResponseRecord(content="", reasoning="thinking", finish_reason="length", usage=Usage(prompt_tokens=1, completion_tokens=0, cached_tokens=1), model="x/y"),
]  # fmt: skip


def _timeless(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "created"}


@pytest.mark.parametrize("rec", RECORDS)
def test_a_replayed_body_is_the_json_litellm_rendered(rec: ResponseRecord) -> None:
    expected = response_from_record(rec, 3).model_dump(exclude_none=True)
    assert _timeless(chat_body(rec, 3)) == _timeless(expected)


@pytest.mark.parametrize("rec", RECORDS)
def test_replayed_chunks_are_the_json_litellm_rendered(rec: ResponseRecord) -> None:
    expected = [c.model_dump(exclude_none=True) for c in stream_from_record(rec, 3)]
    assert [_timeless(c) for c in chat_chunks(rec, 3)] == [_timeless(c) for c in expected]


def test_rendering_a_replayed_answer_imports_no_litellm() -> None:
    code = (
        "import sys\n"
        "from evalrunner.core._response import ResponseRecord, Usage\n"
        "from evalrunner.proxy._chat import chat_body, chat_chunks\n"
        "rec = ResponseRecord(content='a', finish_reason='stop', usage=Usage())\n"
        "chat_body(rec, 1); chat_chunks(rec, 1)\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
