"""The script file (``<name>.llm.json``): a stable, pretty round trip, and one clear
line for every malformed file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrunner.core._response import ResponseRecord
from evalrunner.errors import FileFormatError
from evalrunner.frozen._replay import Recorder
from evalrunner.frozen._script import Script


def _script(question: str, answer: str) -> Script:
    recorder = Recorder()
    recorder.add(
        {"model": "openai/fake", "messages": [{"role": "user", "content": question}]},
        ResponseRecord(content=answer),
    )
    return recorder.script


def test_script_round_trip_and_malformed_scripts(tmp_path: Path) -> None:
    path = tmp_path / "x.llm.json"
    script = _script("q1", "a1")
    script.save(path)
    assert Script.load(path) == script
    text = path.read_text()
    assert text.endswith("}\n") and '  "entries": [' in text  # pretty, sorted, stable

    path.write_text('{"entries": [', encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        Script.load(path)
    assert str(info.value) == (
        f"{path}: not valid JSON at line 1 column 14: Expecting value; "
        "malformed recording; re-record it with: pytest --golden-record"
    )
    path.write_text('{"format_version": 9, "entries": []}', encoding="utf-8")
    with pytest.raises(FileFormatError, match="format_version 9 is newer than this evalrunner"):
        Script.load(path)
    path.write_text(
        '{"entries": [{"request": {}, "response": {"finish_reason": "stop"}}]}', encoding="utf-8"
    )
    with pytest.raises(FileFormatError) as info:
        Script.load(path)
    assert "\n" not in str(info.value) and "entries.0.request.fingerprint" in str(info.value)


def test_a_re_record_of_the_same_calls_writes_the_same_file_whatever_ids_the_provider_gave(
    tmp_path: Path,
) -> None:
    """Provider tool-call ids change every call; kept as they came, each re-record churned
    them all in review (issue 53, row 19)."""
    from evalrunner.core._response import ToolCallRecord

    def recorded(ids: tuple[str, str]) -> Script:
        recorder = Recorder()
        for n, call_id in enumerate(ids):
            recorder.add(
                {"model": "openai/fake", "messages": [{"role": "user", "content": f"q{n}"}]},
                ResponseRecord(
                    tool_calls=[ToolCallRecord(id=call_id, name="lookup", arguments="{}")],
                    finish_reason="tool_calls",
                ),
            )
        return recorder.script

    first, second = tmp_path / "a.llm.json", tmp_path / "b.llm.json"
    recorded(("call__0_lookup_cmpl-3782ba8e", "call__0_lookup_cmpl-99")).save(first)
    recorded(("call_Zx81", "call_Qq02")).save(second)
    assert first.read_bytes() == second.read_bytes()
    ids = [c.id for e in Script.load(first).entries for c in e.response.tool_calls]  # type: ignore[union-attr]
    assert ids == ["call_1", "call_2"]


CUT = "the recording was cut or edited"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"response": None}, f"has neither its response nor its error: {CUT}"),
        ({}, f"has neither its response nor its error: {CUT}"),
        (
            {"response": {}},
            f"response has no finish_reason, which every recorded answer has: {CUT}",
        ),
        (
            {"response": {"finish_reason": "stop"}, "error": {"type": "E", "message": "m"}},
            "has both a response and an error: the recording was edited",
        ),
    ],
    ids=["null", "absent", "empty", "both"],
)
def test_a_recorded_call_without_its_answer_is_a_malformed_recording_not_an_empty_reply(
    tmp_path: Path, entry: dict[str, object], said: str
) -> None:
    # Replayed, such a call was an empty answer: the test failed as a change of behaviour
    # and --golden-update would have written the empty run into the golden.
    path = tmp_path / "x.llm.json"
    _script("q1", "a1").save(path)
    data = json.loads(path.read_text())
    data["entries"][0] = {"request": data["entries"][0]["request"], **entry}
    path.write_text(json.dumps(data))
    with pytest.raises(FileFormatError) as info:
        Script.load(path)
    fix = "malformed recording; re-record it with: pytest --golden-record"
    assert str(info.value) == f"{path}: entries.0: {said}; {fix}"
