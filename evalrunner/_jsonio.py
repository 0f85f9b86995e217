"""Reading and writing the JSON files evalrunner owns: canonical, atomic, redacted.

Every file we write goes through :func:`write_json` so that it is canonical
(sorted keys, trailing newline; 2-space indent for the files people review and
edit, one line for a night's run files), written atomically (a killed
process leaves either the old file or the new one, never half of one) and
scrubbed of secrets.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from evalrunner._redact import redact
from evalrunner._version import __version__
from evalrunner.errors import EvalrunnerError, FileFormatError, NewerFormat


def dumps(obj: Any) -> str:
    """The canonical pretty form used for goldens, scripts, baselines and results."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def canonical(obj: Any) -> str:
    """Compact canonical JSON, for hashing and sorting."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_TEMP_NAMES = itertools.count()
"""Numbers the temp files of :func:`write_text_atomic` within this process (its pid names it)."""


def json_in(value: Any, otherwise: Any = None) -> Any:
    """An attribute or argument that may hold JSON text, parsed: a value that is not text
    as it is, text that is not JSON as ``otherwise`` (trace attributes are written so)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return otherwise


def write_text_atomic(path: Path, text: str, *, sync: bool = True) -> None:
    """Write via a temp file in the same directory and rename over the target.

    ``sync``: on disk before the rename (fsync). ``False`` for files written by the hundred
    whose writer flushes them together later (:func:`flush_to_disk`): the rename still
    makes the file whole or absent for any reader, and a process that dies leaves it to
    the kernel, which writes it out; only a power cut before that flush can lose it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp"
        try:
            # 0o666 less the process's umask, as for any new file. Reading the umask means
            # setting it, and while it is set to anything else another thread's new files
            # (an agent's, the history's) would get that mask.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:  # left by an earlier process with the same pid
            continue
        except OSError as exc:
            raise _about(exc, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename == str(tmp):
            raise _about(exc, path) from None
        raise


def flush_to_disk(directory: Path) -> None:
    """Put the files under ``directory``, written with ``sync=False``, on disk: one
    ``sync`` where the system has it (one journal commit, where an fsync a file costs one
    apiece), else an fsync of each file."""
    if hasattr(os, "sync"):
        os.sync()
        return
    for path in directory.rglob("*"):  # pragma: no cover - platforms without sync(2)
        if path.is_file():
            fd = os.open(path, os.O_RDWR)  # Windows commits only a handle open for writing
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _about(exc: OSError, path: Path) -> OSError:
    """``exc`` naming the file being written rather than its temp file, which the user
    never sees (and which is gone by the time they read the message)."""
    return OSError(exc.errno, exc.strerror, str(path))


M = TypeVar("M", bound=BaseModel)


def pydantic_message(error: Mapping[str, Any]) -> str:
    """A pydantic error's message without the kind pydantic prefixes our validators' own
    messages with ("Value error, "): the reader needs the message."""
    return str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")


def validate_model(model: type[M], data: Any, where: object, fix: str = "", prefix: str = "") -> M:
    """Validate ``data`` as ``model``; the first problem becomes one line naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = prefix + ".".join(str(p) for p in err["loc"])
        msg = pydantic_message(err)
        said = f"{field}: {msg}" if field else msg
        raise FileFormatError(f"{where}: {said}" + (f"; {fix}" if fix else "")) from None


def load_model(
    path: Path,
    model: type[M],
    *,
    what: str,
    version: int | tuple[int, ...] | None,
    fix: str,
    version_optional: bool = False,
) -> M:
    """Read a versioned JSON file we own into its pydantic model, or fail with one line and the fix.

    ``version``: the format version, or the versions, this release reads (the newest last).
    """
    data = read_json(path, what, fix)
    if not isinstance(data, dict):
        raise FileFormatError(f"{path}: expected a JSON object; {fix}")
    found = data.get("format_version")
    versions = (version,) if isinstance(version, int) else version
    if versions is not None and found not in versions and not (version_optional and found is None):
        _refuse_version(data, path, what, versions, fix)
    return validate_model(model, data, path, fix)


def _refuse_version(
    data: dict[str, Any], path: Path, what: str, versions: tuple[int, ...], fix: str
) -> NoReturn:
    """Refuse a file whose format_version this release does not read, saying why."""
    found = data.get("format_version")
    if isinstance(found, int) and not isinstance(found, bool) and found > max(versions):
        # Not ``fix``: regenerating it would overwrite what a newer release wrote.
        writer = data.get("evalrunner_version")
        by = f", written by evalrunner {writer}" if isinstance(writer, str) else ""
        raise NewerFormat(
            f"{path}: {what} format_version {found} is newer than this evalrunner "
            f"({__version__}) reads (up to {max(versions)}{by}); upgrade evalrunner to read it"
        )
    if isinstance(found, str) and found.strip().isdigit():
        raise FileFormatError(
            f"{path}: {what} format_version is the text {found!r}; write it as the "
            f"number {found.strip()}, without quotes"
        )
    raise FileFormatError(
        f"{path}: {what} format_version {found!r} is not supported "
        f"(expected {_either(versions)}); {fix}"
    )


def _either(versions: tuple[int, ...]) -> str:
    """``1``, ``1 or 2``, ``1, 2 or 3``."""
    names = list(map(str, versions))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def write_json(path: Path, obj: Any, *, compact: bool = False, sync: bool = True) -> None:
    """Redact secrets, then write ``obj`` canonically and atomically.

    ``compact``: on one line (sorted keys still), for files a program reads and nobody
    reviews: a night's run files, where the indented form costs six times the CPU
    (the standard library indents in Python, not C) for every run. ``sync``: see
    :func:`write_text_atomic`.
    """
    text = canonical(redact(obj)) + "\n" if compact else dumps(redact(obj))
    write_text_atomic(path, text, sync=sync)


class JsonLines(list[Any]):
    """The documents of a JSON-lines file, one a line (:func:`read_json` with ``lines``)."""


def read_json(
    path: Path, what: str = "file", fix: str = "", *, merged: bool = True, lines: bool = False
) -> Any:
    """Load JSON, turning every failure into one line that names the file.

    ``fix``: what to do about a file that is not valid JSON (cut short, edited).
    ``merged``: see :func:`parse_json`. ``lines``: a file of one JSON document a line (two
    or more) is read as their :class:`JsonLines`; a file that is neither reports its first
    error as one document.
    """
    _regular(path, what)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileFormatError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise FileFormatError(f"{path}: cannot read {what}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise FileFormatError(
            f"{path}: {what} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8 JSON"
        ) from None
    try:
        return parse_json(text, path, fix=fix, merged=merged)
    except FileFormatError:
        found = _json_lines(text, path, merged) if lines else None
        if found is None:
            raise
        return found


def _json_lines(text: str, path: Path, merged: bool) -> JsonLines | None:
    """``text`` as one JSON document a line, or None where it is not two or more of them."""
    rows = [row for row in text.splitlines() if row.strip()]
    if len(rows) < 2:
        return None
    try:
        return JsonLines(parse_json(row, path, merged=merged) for row in rows)
    except FileFormatError:
        return None


def _regular(path: Path, what: str) -> None:
    """Refuse what is not a regular file before reading it: a FIFO waits for a writer
    forever, /dev/zero never ends (issue 53: show and diff hung or ran out of memory)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileFormatError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise FileFormatError(f"{path}: cannot read {what}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe, a device)"
        raise FileFormatError(f"{path}: {what} is {kind}; give a JSON file")


def parse_json(
    text: str | bytes,
    where: object,
    error: type[EvalrunnerError] = FileFormatError,
    fix: str = "",
    *,
    merged: bool = True,
) -> Any:
    """``json.loads``, with a decoding failure as one line naming ``where``, line and column
    (and ``fix``, when given).

    ``merged``: the file may have been through a merge, so a key given twice is refused.
    ``False`` for files only evalrunner writes and nobody commits (a night's run files):
    the check runs Python for every object and doubles the time to read them.
    """
    if isinstance(text, str):
        # A byte-order mark, as some Windows editors save UTF-8: json refuses it in a str
        # ("decode using utf-8-sig"), a Python hint, for a file that is fine.
        text = text.removeprefix("\ufeff")
    try:
        return json.loads(text, object_pairs_hook=_one_value_a_key if merged else None)
    except _DuplicateKey as dup:
        raise error(
            f"{where}: the key {dup.key!r} appears twice in one object, so one of its values "
            "would be dropped without a word (a merge that kept both sides?); keep one"
            + (f", or {fix}" if fix else "")
        ) from None
    except UnicodeDecodeError as exc:  # bytes in another encoding
        raise error(
            f"{where}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8 JSON"
        ) from None
    except json.JSONDecodeError as exc:
        raise error(_not_json(text, exc, where, fix)) from None
    except RecursionError:
        raise error(
            f"{where}: JSON nested more than about {sys.getrecursionlimit()} levels deep: "
            "more than Python reads, and more than any trajectory needs"
        ) from None
    except ValueError as exc:  # a number too long to convert (Python's 4,300-digit limit)
        raise error(f"{where}: not JSON evalrunner can read: {exc}") from None


def _not_json(text: str | bytes, exc: json.JSONDecodeError, where: object, fix: str) -> str:
    """Why ``text`` is not JSON, in a line: a Git LFS pointer, git's conflict markers, or
    where json stopped."""
    decoded = text if isinstance(text, str) else text.decode(errors="replace")
    if decoded.startswith(_LFS_POINTER):
        return (
            f"{where}: is a Git LFS pointer, not the file itself; fetch it "
            "(git lfs pull), then run again"
        )
    marker = _CONFLICT_MARKER.search(decoded)
    if marker is not None:
        line = marker.string.count("\n", 0, marker.start()) + 1
        return (
            f"{where}: holds git merge conflict markers ({marker.group(1)} at line {line}); "
            "resolve the conflict in the file (keep one side whole: each side is a file "
            "evalrunner wrote), then run again"
        )
    # json's "Unterminated string starting at" (and "... character ... at") leave the
    # position out of msg: it is the line and column said first.
    what = exc.msg[:-3] + " there" if exc.msg.endswith(" at") else exc.msg
    return f"{where}: not valid JSON at line {exc.lineno} column {exc.colno}: {what}" + (
        f"; {fix}" if fix else ""
    )


_LFS_POINTER = "version https://git-lfs.github.com/spec/"
"""How a Git LFS pointer file starts (a repository that keeps goldens or history in LFS,
checked out without ``git lfs pull``)."""
_CONFLICT_MARKER = re.compile(r"^(<{7}|={7}|>{7})(?: |$)", re.M)
"""A line git writes into a file it could not merge."""


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _one_value_a_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object, refusing a key given twice: ``json`` keeps the last value silently, so a
    golden with two ``final_answer`` fields reads as one thing in review and tests another."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj
