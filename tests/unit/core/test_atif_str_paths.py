"""``load_trajectory`` takes a path given as ``str`` as well as ``Path``: a str is
JSON text only if it starts with ``{`` and names no existing file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrunner.core import load_trajectory
from evalrunner.errors import TrajectoryError

DATA = Path(__file__).parent / "data"
# The fixture read here marks copied context and is read alone: that warning is not the point.
pytestmark = pytest.mark.filterwarnings("ignore:.*is_copied_context")


def test_a_str_path_loads_like_a_path(monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / "continuation.json"
    assert load_trajectory(str(path), strict=True) == load_trajectory(path, strict=True)
    monkeypatch.chdir(DATA)
    assert load_trajectory("continuation.json", strict=True) == load_trajectory(path, strict=True)


def test_json_text_in_a_str_still_loads() -> None:
    text = json.dumps(
        {
            "schema_version": "ATIF-v1.7",
            "session_id": "s",
            "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "agent", "message": "done"}],
        }
    )
    assert load_trajectory("\n  " + text, strict=True) == json.loads(text)


def test_an_existing_file_whose_name_starts_with_a_brace_is_a_path(tmp_path: Path) -> None:
    path = tmp_path / "{run}.json"
    path.write_text((DATA / "continuation.json").read_text())
    assert load_trajectory(str(path))["agent"]["name"] == "shell-agent"


@pytest.mark.parametrize("source", ["path/to/file.json", "[]", "null", "traj.json\n"])
def test_a_missing_str_path_is_one_line_naming_it(source: str) -> None:
    with pytest.raises(TrajectoryError) as info:
        load_trajectory(source)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(source.strip() if source.isprintable() else repr(source))
    assert "no such file" in message


def test_a_very_long_str_is_shortened_in_the_message() -> None:
    with pytest.raises(TrajectoryError) as info:
        load_trajectory("x" * 5000)
    assert len(str(info.value)) < 400 and "4800 more characters" in str(info.value)


@pytest.mark.parametrize("source", ["", "   \n"])
def test_empty_text_is_one_line(source: str) -> None:
    with pytest.raises(TrajectoryError, match=r"^trajectory: empty text; expected ATIF JSON"):
        load_trajectory(source)


def test_a_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError) as info:
        load_trajectory(str(tmp_path))
    assert str(info.value).startswith(str(tmp_path)) and "\n" not in str(info.value)
