"""Goldens and recordings after a git merge: what a merge leaves behind is refused, by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalrunner.errors import FileFormatError
from evalrunner.frozen._golden import Golden
from evalrunner.frozen._script import Script

EXAMPLE = Path(__file__).resolve().parents[3] / "suites" / "goldens" / "example"


def test_a_golden_with_a_key_given_twice_is_refused_not_read_as_its_last_value(
    tmp_path: Path,
) -> None:
    # "Accept both" in a merge tool: a reviewer reads the first answer, json keeps the last.
    path = tmp_path / "direct_answer.json"
    text = (EXAMPLE / "direct_answer.json").read_text()
    assert text.count('"final_answer": ') == 1
    path.write_text(
        text.replace('"final_answer": ', '"final_answer": "London.",\n  "final_answer": ')
    )
    with pytest.raises(
        FileFormatError, match=r"the key 'final_answer' appears twice in one object"
    ):
        Golden.load(path)


@pytest.mark.parametrize("name", ["direct_answer.json", "direct_answer.llm.json"])
def test_conflict_markers_are_named_as_a_merge_to_resolve(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(EXAMPLE / name, path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(
        "".join([lines[0], "<<<<<<< HEAD\n", *lines[1:3], "=======\n", ">>>>>>> b\n", *lines[3:]])
    )
    load = Script.load if name.endswith(".llm.json") else Golden.load
    with pytest.raises(
        FileFormatError, match=rf"{name}: holds git merge conflict markers \(<<<<<<< at line 2\)"
    ):
        load(path)
