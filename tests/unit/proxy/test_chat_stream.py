"""Chat streams go out as OpenAI SSE; the usage chunk only when the agent asked."""

from __future__ import annotations

import json

from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.proxy._chat import chat_chunks, chat_stream
from evalrunner.proxy._upstream import record_from_chunks

RECORD = ResponseRecord(
    content="Hi.",
    tool_calls=[ToolCallRecord(id="c1", name="f", arguments='{"a": 1}')],
    finish_reason="tool_calls",
    usage=Usage(prompt_tokens=5, completion_tokens=2),
    model="m",
)


def _events(body: bytes) -> list[str]:
    return [line[6:] for line in body.decode().split("\n\n") if line.startswith("data: ")]


def test_usage_is_sent_only_when_asked_for() -> None:
    chunks = [*chat_chunks(RECORD, 1), {"id": "x", "choices": [], "usage": {"prompt_tokens": 5}}]
    quiet = _events(chat_stream(chunks, include_usage=False))
    assert quiet[-1] == "[DONE]"
    assert all("usage" not in json.loads(e) for e in quiet[:-1])
    loud = _events(chat_stream(chunks, include_usage=True))
    assert json.loads(loud[-2])["usage"] == {"prompt_tokens": 5}


def test_a_record_rendered_as_chunks_reassembles_to_itself() -> None:
    rebuilt = record_from_chunks(chat_chunks(RECORD, 1))
    assert rebuilt == RECORD
