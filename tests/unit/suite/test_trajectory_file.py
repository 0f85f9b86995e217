"""``trajectory_file: true`` (issue 56): the trajectory a command writes where
``$EVALRUNNER_TRAJECTORY_FILE`` says, read as ``show`` reads one, and what is wrong with it
said in one line naming the variable (the file itself is gone with its run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalrunner.suite._contract import (
    TRAJECTORY_FILE,
    NoTrajectoryWritten,
    trajectory_file,
    written_trajectory,
)

_ATIF = {
    "schema_version": "ATIF-v1.4",
    "session_id": "s",
    "agent": {"name": "capitals", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Capital of France?"},
        {"step_id": 2, "source": "agent", "message": "Paris."},
    ],
}


def test_a_fresh_file_for_each_run_gone_with_what_the_run_left() -> None:
    with trajectory_file(True) as first, trajectory_file(True) as second:
        assert first is not None and second is not None and first != second
        first.write_text(json.dumps(_ATIF), encoding="utf-8")
        assert written_trajectory(first)["steps"][1]["message"] == "Paris."
    assert not first.exists() and not first.parent.exists()
    with trajectory_file(False) as none:
        assert none is None


def test_no_file_written_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(NoTrajectoryWritten, match=rf"wrote no trajectory to \${TRAJECTORY_FILE}"):
        written_trajectory(tmp_path / "trajectory.json")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{not json", "not valid JSON at line 1"),
        ("[1, 2]", "expected"),
        ('{"resourceSpans": []}', "no GenAI span"),
        ("[" * 100_000, "nested"),
    ],
    ids=["not-json", "a-list", "no-genai-span", "deep"],
)
def test_a_file_that_cannot_be_read_is_one_line_naming_the_variable_not_the_path(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NoTrajectoryWritten) as raised:
        written_trajectory(path)
    message = str(raised.value)
    assert f"${TRAJECTORY_FILE}" in message and said in message
    assert str(tmp_path) not in message and "\n" not in message
    assert os.path.exists(path)  # read, never changed
