"""What `show`, `diff` and every reader of our files are given is read within bounds, and
anything else is one line naming the file (issue 53, row 10: a 200,000-deep nesting gave
a RecursionError traceback, /dev/zero ran out of memory, a FIFO hung for ever, and an
edited run file whose steps is a string gave `explain` a traceback)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalrunner._jsonio import read_json
from evalrunner.cli import main
from evalrunner.errors import FileFormatError
from evalrunner.live._results import RUN_FORMAT_VERSION, ResultsDir


def test_json_nested_beyond_reading_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(FileFormatError, match="nested more than about"):
        read_json(deep, "trajectory")
    shown = CliRunner().invoke(main, ["show", str(deep)])
    assert shown.exit_code == 2 and "Traceback" not in shown.output
    assert shown.output.count("\n") == 1


def test_a_number_too_long_to_convert_is_one_line(tmp_path: Path) -> None:
    long = tmp_path / "long.json"
    long.write_text('{"n": ' + "9" * 5000 + "}")
    with pytest.raises(FileFormatError, match="not JSON evalrunner can read"):
        read_json(long)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_pipe_or_a_device_is_refused_before_it_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        if not path.exists():
            continue
        with pytest.raises(FileFormatError, match="not a regular file"):
            read_json(path, "trajectory")
        shown = CliRunner().invoke(main, ["show", str(path)])
        assert shown.exit_code == 2 and "not a regular file" in shown.output
    with pytest.raises(FileFormatError, match="is a folder"):
        read_json(tmp_path, "trajectory")


def test_a_run_file_whose_steps_were_edited_is_refused_naming_the_field(tmp_path: Path) -> None:
    results = ResultsDir(tmp_path)
    run = tmp_path / "runs" / "s" / "m" / "0.json"
    run.parent.mkdir(parents=True)
    record = {
        "run_id": "s/m/0",
        "suite": "t",
        "scenario": "s",
        "model": "m",
        "index": 0,
        "outcome": "passed",
    }
    body = {"format_version": RUN_FORMAT_VERSION, "record": record}
    run.write_text(json.dumps({**body, "trajectory": {"steps": "oops"}}))
    with pytest.raises(FileFormatError, match=r"trajectory\.steps is not what evalrunner wrote"):
        results.read_run_file(run)
    run.write_text(json.dumps({**body, "trajectory": {"steps": [{"source": "user"}]}}))
    assert results.read_run_file(run)[1]["steps"] == [{"source": "user"}]


def test_a_git_lfs_pointer_is_named_as_one(tmp_path: Path) -> None:
    """A golden or history file kept in Git LFS and checked out without ``git lfs pull``
    said only "not valid JSON at line 1 column 1" (issue 53, row 16)."""
    pointer = tmp_path / "test_x.json"
    pointer.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 12345\n"
    )
    with pytest.raises(FileFormatError, match=r"is a Git LFS pointer.*git lfs pull"):
        read_json(pointer, "golden")
