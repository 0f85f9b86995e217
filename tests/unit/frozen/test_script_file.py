"""The script file (``<name>.llm.json``): a stable, pretty round trip, and one clear
line for every malformed file."""

from __future__ import annotations

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
    assert str(info.value) == f"{path}: not valid JSON at line 1 column 14: Expecting value"
    path.write_text('{"format_version": 9, "entries": []}', encoding="utf-8")
    with pytest.raises(FileFormatError, match="format_version 9 is not supported"):
        Script.load(path)
    path.write_text('{"entries": [{"request": {}}]}', encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        Script.load(path)
    assert "\n" not in str(info.value) and "entries.0.request.fingerprint" in str(info.value)
