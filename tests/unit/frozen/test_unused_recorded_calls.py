"""A recording with calls the replay never used is reported (how many, and which), and
fails the run under --golden-strict; a recording without its entries is a malformed
file, not an agent that makes too many calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents_for_tests import ask

from evalrunner.core._response import ResponseRecord, ToolCallRecord
from evalrunner.errors import FileFormatError
from evalrunner.frozen._golden import script_path_for
from evalrunner.frozen._replay import Recorder
from evalrunner.frozen._run import run_frozen


def _with_extra_calls(golden: Path) -> None:
    """Two more entries in the recording than the agent asks for."""
    recorder = Recorder()
    recorder.add(
        {"messages": [{"role": "user", "content": "Follow-up: and Japan?"}]},
        ResponseRecord(tool_calls=[ToolCallRecord(id="c1", name="lookup", arguments="{}")]),
    )
    recorder.add({"messages": []}, ResponseRecord(content="Tokyo, I think."))
    path = script_path_for(golden)
    data = json.loads(path.read_text())
    data["entries"] += recorder.script.model_dump(mode="json", exclude_none=True)["entries"]
    path.write_text(json.dumps(data))


def test_unused_recorded_calls_are_reported(one_answer_golden: Path) -> None:
    _with_extra_calls(one_answer_golden)
    outcome = run_frozen(ask, None, golden_path=one_answer_golden, mode="check")
    assert outcome.ok, outcome.message
    assert outcome.unused_recorded == [
        "entries[1] (recorded after 1 messages, last user message 'Follow-up: and Japan?'; "
        "called lookup)",
        "entries[2] (recorded after 0 messages, last user message None; answered 'Tokyo, I think.')",
    ]
    script = script_path_for(one_answer_golden)
    assert outcome.message.startswith(
        f"2 recorded model call(s) of {script} were not used (the agent now makes fewer calls, "
        "or the recording holds extra ones):\n  entries[1] "
    )
    assert "(--golden-strict fails on this)" in outcome.message
    assert outcome.message.endswith("re-record with:\n  pytest --golden-record")


def test_unused_recorded_calls_fail_under_strict(one_answer_golden: Path) -> None:
    _with_extra_calls(one_answer_golden)
    check = run_frozen(ask, None, golden_path=one_answer_golden, mode="check", strict=True)
    assert not check.ok
    assert "2 recorded model call(s)" in check.message and "entries[2]" in check.message
    before = one_answer_golden.read_bytes()
    update = run_frozen(ask, None, golden_path=one_answer_golden, mode="update", strict=True)
    assert not update.ok and "2 recorded model call(s)" in update.message
    assert one_answer_golden.read_bytes() == before  # nothing rewritten


def test_a_recording_without_entries_is_malformed(one_answer_golden: Path) -> None:
    script = script_path_for(one_answer_golden)
    script.write_text('{"format_version": 1}')
    with pytest.raises(FileFormatError) as info:
        run_frozen(
            ask,
            None,
            golden_path=one_answer_golden,
            mode="check",
            record_cmd='pytest --golden-record "test_x.py::test_y"',
        )
    assert str(info.value) == (
        f"{script}: entries: Field required; malformed recording; re-record it with: "
        'pytest --golden-record "test_x.py::test_y"'
    )
