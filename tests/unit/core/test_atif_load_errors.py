"""A document that fails to load names the error that explains the failure:
for a union field (``message: str | list[ContentPart]``) the branch that got
furthest into the value, not pydantic's first branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalrunner.core._atif import TrajectoryWarning, load
from evalrunner.errors import TrajectoryError


def doc(*steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": i, **s} for i, s in enumerate(steps, start=1)],
    }


def error(document: dict[str, Any], *, strict: bool = False) -> str:
    with pytest.raises(TrajectoryError) as info:
        load(document, strict=strict)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_chat_messages_as_a_step_message_name_the_list_branch_and_the_repair() -> None:
    chat = doc({"source": "user", "message": [{"role": "user", "content": "Hi"}]})
    assert error(chat, strict=True) == (
        "trajectory: $.steps[0].message[0].type: Field required (and 2 more; "
        "reading $.steps[0].message as list[ContentPart]; it may be str or list[ContentPart]; "
        "it is a list of {role, content} chat messages, which lenient loading joins)"
    )


def test_a_bad_content_part_is_named_not_the_string_branch() -> None:
    # Without pydantic's "Value error, " before the message (a review saw it leak).
    text_without_text = doc({"source": "user", "message": [{"type": "text"}]})
    assert error(text_without_text) == (
        "trajectory: $.steps[0].message[0]: ContentPart of type 'text' requires "
        "`text` (reading $.steps[0].message as list[ContentPart]; it may be str or list[ContentPart])"
    )
    bmp = doc(
        {
            "source": "user",
            "message": [{"type": "image", "source": {"media_type": "image/bmp", "path": "a.bmp"}}],
        }
    )
    assert error(bmp).startswith(
        "trajectory: $.steps[0].message[0].source.media_type: Input should be 'image/jpeg', "
    )


def test_a_value_of_the_wrong_type_for_every_branch_says_what_is_expected() -> None:
    assert error(doc({"source": "user", "message": 7})) == (
        "trajectory: $.steps[0].message: expected str or list[ContentPart], got a number"
    )
    effort = doc({"source": "agent", "message": "", "reasoning_effort": ["high"]})
    assert error(effort) == (
        "trajectory: $.steps[0].reasoning_effort: expected str or float, got an array"
    )


def test_observation_content_errors_name_the_result() -> None:
    step = {
        "source": "agent",
        "message": "",
        "tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": {}}],
        "observation": {"results": [{"source_call_id": "c1", "content": [{"type": "audio"}]}]},
    }
    assert error(doc(step)).startswith(
        "trajectory: $.steps[0].observation.results[0].content[0]: "
        "ContentPart of type 'audio' requires `source`"
    )


def test_a_token_count_written_as_text_is_read_as_a_number_or_refused_when_strict() -> None:
    from evalrunner.core import shape

    text_count = doc(
        {"source": "user", "message": "hi"},
        {"source": "agent", "message": "hello", "metrics": {"prompt_tokens": "12"}},
    )
    assert error(text_count, strict=True) == (
        "trajectory: $.steps[1].metrics.prompt_tokens: a number written as text '12'"
    )
    with pytest.warns(TrajectoryWarning, match="number written as text '12' read as a number"):
        loaded = load(text_count)
    assert loaded["steps"][1]["metrics"]["prompt_tokens"] == 12
    assert shape(loaded).prompt_tokens == 12  # sums work on what was loaded


def test_a_file_that_is_not_utf_8_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "utf16.json"
    path.write_bytes('{"schema_version": "ATIF-v1.8"}'.encode("utf-16"))
    with pytest.raises(TrajectoryError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: trajectory is not UTF-8 text (byte 0xff at offset 0)")
    assert "\n" not in message


def test_a_file_holding_an_array_of_trajectories_says_so_and_how_to_load_them(
    tmp_path: Path,
) -> None:
    many = tmp_path / "many.json"
    many.write_text('[{"schema_version": "ATIF-v1.8"}, {"schema_version": "ATIF-v1.8"}]')
    with pytest.raises(TrajectoryError) as info:
        load(many)
    assert str(info.value) == (
        f"{many}: $: a JSON array of 2 trajectories, not one; load each element "
        "(load_trajectory(element)) or write one trajectory per file"
    )


def test_a_step_s_model_calls_written_as_text_are_read_as_a_number_or_refused_when_strict() -> None:
    """``llm_call_count: "2"`` passed --strict, then shape() failed summing it and `show`
    printed a traceback (issue 53, row 13)."""
    from evalrunner.core import shape

    text_calls = doc(
        {"source": "user", "message": "hi"},
        {"source": "agent", "message": "hello", "llm_call_count": "2"},
    )
    assert error(text_calls, strict=True) == (
        "trajectory: $.steps[1].llm_call_count: a number written as text '2'"
    )
    with pytest.warns(TrajectoryWarning, match="number written as text '2' read as a number"):
        loaded = load(text_calls)
    assert shape(loaded).llm_calls == 2
