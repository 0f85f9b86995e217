"""An OTLP export that is not what it says is one clear line, and a count nobody can read
is not a reason to refuse the trace (issue 56)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalrunner.core._atif import load
from evalrunner.errors import TrajectoryError


def _export(attributes: list[dict[str, Any]]) -> dict[str, Any]:
    span = {"spanId": "00000000000000aa", "name": "chat", "attributes": attributes}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


CHAT: dict[str, Any] = {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}


def test_a_malformed_export_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_export([CHAT, {"value": {"stringValue": "no key"}}])))
    with pytest.raises(TrajectoryError, match=r"trace\.json: not an OTLP JSON trace export"):
        load(path)


def test_an_unreadable_token_count_is_left_at_zero() -> None:
    tokens: dict[str, Any] = {"key": "gen_ai.usage.input_tokens", "value": {"stringValue": "lots"}}
    traj = load(_export([CHAT, tokens]))
    assert traj["steps"][-1]["metrics"]["prompt_tokens"] == 0
