"""A hand-edited golden is refused in one line naming the field to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrunner.errors import FileFormatError
from evalrunner.frozen._golden import Golden

EXAMPLE = Path(__file__).resolve().parents[3] / "suites" / "goldens" / "example"


def test_a_step_source_edited_out_of_atif_is_named_not_the_summary_it_upset(
    tmp_path: Path,
) -> None:
    # Before: "shape.steps is [...] but the golden's trajectory gives [['robot', 0], ...]",
    # which sent the reader to the summary; the field to fix is the step's source.
    data = json.loads((EXAMPLE / "direct_answer.json").read_text())
    data["trajectory"]["steps"][0]["source"] = "robot"
    path = tmp_path / "direct_answer.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FileFormatError) as info:
        Golden.load(path)
    assert str(info.value) == (
        f"{path}: trajectory: $.steps[0].source: Input should be 'system', 'user' or 'agent'; "
        "regenerate it with --golden-update"
    )
