"""How evalrunner writes a file it owns: whole or not at all, with the process's own mode."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from evalrunner._jsonio import write_text_atomic


def test_a_written_file_gets_the_mode_any_new_file_of_the_process_would(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "a" / "report.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a" / "report.json").stat().st_mode) == 0o640
    assert (tmp_path / "a" / "report.json").read_text() == "{}\n"


def test_writing_leaves_the_process_umask_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run files are written on a thread of their own while agents' threads create files:
    # setting the umask to read it, even for a moment, gave their files that mask.
    def umask(mask: int) -> int:
        raise AssertionError(f"os.umask({mask:o}) called from {threading.current_thread().name}")

    monkeypatch.setattr(os, "umask", umask)
    write_text_atomic(tmp_path / "run.json", "{}\n")
    assert (tmp_path / "run.json").read_text() == "{}\n"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "golden.json"
    write_text_atomic(target, "old\n")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "new \ud800\n")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["golden.json"]


@pytest.mark.parametrize("fails", ["open", "fsync"])
def test_a_refused_write_names_the_file_not_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    # Before: "error: baselines/s/.a.json.24740.0.tmp: Read-only file system" (a review).
    import errno

    target = tmp_path / "a.json"
    if fails == "open":

        def refuse(path: object, *args: object) -> int:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

        monkeypatch.setattr(os, "open", refuse)
    else:
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            real_fsync(fd)
            tmp = next(p for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))

        monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError) as info:
        write_text_atomic(target, "{}\n")
    assert info.value.filename == str(target)
    assert info.value.errno in (errno.EROFS, errno.ENOSPC)
    assert list(tmp_path.iterdir()) == []
