"""Datasets: one scenario, many inputs, read from a JSONL or CSV file next to the suite.

A scenario with ``dataset: questions.jsonl`` runs once per row (``runs`` times
per row): its ``input`` and its text checks are templates over the row's
fields (``"What is the capital of {country}?"``, ``answer_contains:
["{capital}"]``). Every problem is found when the suite loads, as one line
naming the data file, its line and the row.

Rows keep their ids across nights, so a night's runs can be paired with the
baseline's row by row. ``rows: K`` (or ``--rows K``) runs a stable subset: the
K rows first in the order of a hash of their ids, the same K every night,
whatever order the file lists them in.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.errors import ConfigError

__all__ = [
    "DATA_SUFFIXES",
    "DataRow",
    "Dataset",
    "fill",
    "read_dataset",
    "read_datasets",
    "template_fields",
]

DATA_SUFFIXES = (".jsonl", ".csv")
ID_FIELD = "id"
_ROW_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_FIELD_RE = re.compile(r"\{([A-Za-z_]\w*)\}")
Scalar = str | int | float | bool | None


class DataRow(BaseModel):
    """One input of a dataset scenario."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="The row's id: its 'id' field, else 'row-<n>' (n from 1).")
    fields: dict[str, Scalar] = Field(description="The row's fields, as the file gives them.")
    line: int = Field(description="1-based line of the row in its file, for messages.")


class Dataset(BaseModel):
    """A dataset file as read: its rows in file order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="The file as the suite names it.")
    rows: tuple[DataRow, ...] = Field(description="Every row, in file order.")

    @property
    def digest(self) -> str:
        """A hash of every row's id and fields (not their lines, nor their order): the
        scenario's fingerprint takes it, so editing the data makes an old baseline a
        mismatch and reordering the file does not."""
        payload = [[row.id, row.fields] for row in sorted(self.rows, key=lambda r: r.id)]
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def subset(self, limit: int | None) -> tuple[DataRow, ...]:
        """The rows a night runs, in id order (so run ``i``'s row does not depend on the
        file's order): all, or the ``limit`` first by a hash of their ids."""
        rows = self.rows
        if limit is not None and limit < len(rows):
            rows = tuple(sorted(rows, key=lambda r: hashlib.sha256(r.id.encode()).hexdigest()))
            rows = rows[:limit]
        return tuple(sorted(rows, key=lambda r: r.id))


def read_datasets(
    base: Path, pattern: str, needed: Mapping[str, str], checks: Mapping[str, str] = {}
) -> Dataset:
    """The rows of ``pattern`` under ``base``: one file, or every file a glob matches (in
    name order, ids unique across them). ``checks``: see :func:`read_dataset`."""
    shown = os.path.normpath(os.path.join(os.fspath(base), pattern))
    if not any(c in pattern for c in "*?["):
        return read_dataset(base / pattern, shown, needed, checks)
    files = sorted(p for p in base.glob(pattern) if p.is_file())
    if not files:
        raise ConfigError(f"{shown}: no file matches (a dataset is relative to its suite file)")
    rows: list[DataRow] = []
    first: dict[str, str] = {}
    for file in files:
        named = os.path.normpath(os.path.join(os.fspath(base), os.fspath(file.relative_to(base))))
        for row in read_dataset(file, named, needed, checks).rows:
            where = f"{named}:{row.line}"
            if row.id in first:
                raise ConfigError(
                    f"{where}: duplicate row id {row.id!r} (also {first[row.id]}); ids must be "
                    "unique across the files of a dataset"
                )
            first[row.id] = where
            rows.append(row)
    return Dataset(path=shown, rows=tuple(rows))


def template_fields(text: str) -> list[str]:
    """The row fields ``text`` names as ``{field}``, in order of appearance."""
    return list(dict.fromkeys(_FIELD_RE.findall(text)))


def fill(text: str, row: Mapping[str, Scalar], *, regex: bool = False) -> str:
    """``text`` with each ``{field}`` replaced by the row's value (escaped in a regex).

    Only ``{name}`` with a name the row has is replaced, so a regex's ``{3}`` or
    ``{2,5}`` stays as written.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in row:
            return match.group(0)
        shown = "" if row[name] is None else str(row[name])
        return re.escape(shown) if regex else shown

    return _FIELD_RE.sub(value, text)


def read_dataset(
    file: Path, shown: str, needed: Mapping[str, str], checks: Mapping[str, str] = {}
) -> Dataset:
    """Read ``file`` (shown in messages as ``shown``); ``needed`` maps each field the
    scenario's templates use to where it is used, ``checks`` each text check's place to its
    template (a row must not fill one with empty text). Every problem is a one-line
    ConfigError naming ``shown``, the line and the row."""
    text = _read_text(file, shown)
    raw = list(_jsonl(text, shown) if file.suffix == ".jsonl" else _csv(text, shown))
    if not raw:
        raise ConfigError(f"{shown}: has no rows; give one input per line")
    rows = _with_ids(raw, shown)
    for row in rows:
        _has_needed_fields(row, needed, shown)
        _no_empty_checks(row, checks, shown)
    return Dataset(path=shown, rows=tuple(rows))


def _read_text(file: Path, shown: str) -> str:
    """A dataset file's text; a file of another kind, or one that cannot be read, refused."""
    if file.suffix not in DATA_SUFFIXES:
        raise ConfigError(
            f"{shown}: a dataset must be a .jsonl or .csv file (one row per input), "
            f"not {file.suffix or 'a file without a suffix'}"
        )
    try:
        return file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            f"{shown}: no such file (a dataset is relative to its suite file)"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"{shown}: is a directory, not a dataset file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror}") from None


def _has_needed_fields(row: DataRow, needed: Mapping[str, str], shown: str) -> None:
    """Every field the scenario's templates use is in the row."""
    for name, used_by in needed.items():
        if name not in row.fields:
            have = ", ".join(sorted(row.fields)) or "none"
            raise ConfigError(
                f"{shown}:{row.line}: row {row.id!r} has no field {name!r} (used by "
                f"{used_by}); add it to every row or change the template (its fields: {have})"
            )


def _no_empty_checks(row: DataRow, checks: Mapping[str, str], shown: str) -> None:
    """A check filled with empty text decides nothing: every answer contains "" and an empty
    pattern matches anything. Written in a suite that is refused; from a row's empty or
    null field it would pass (or fail) every run of the row without a word."""
    for where, template in checks.items():
        names = template_fields(template)
        if names and not fill(template, row.fields).strip():
            empty = ", ".join(repr(n) for n in names)
            raise ConfigError(
                f"{shown}:{row.line}: row {row.id!r}: field {empty} is empty, so {where} "
                f"({template!r}) becomes empty text, which every answer matches; give the row "
                "a value, or move it to a scenario without that check"
            )


def _jsonl(text: str, shown: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{shown}:{n}: not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ConfigError(
                f"{shown}:{n}: each line must be a JSON object of fields, got {type(value).__name__}"
            )
        for key, item in value.items():
            if not isinstance(item, Scalar):  # type: ignore[arg-type]
                raise ConfigError(
                    f"{shown}:{n}: field {key!r} is a {type(item).__name__}; a row's fields must "
                    "be strings, numbers, booleans or null (put structured data in a string)"
                )
        yield n, value


def _csv(text: str, shown: str) -> Iterable[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            return
        names = _column_names(header, shown)
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(names):
                raise ConfigError(
                    f"{shown}:{line}: {len(values)} values for {len(names)} columns "
                    f"({', '.join(names)}); quote values that contain commas"
                )
            yield line, dict(zip(names, values, strict=True))
    except csv.Error as exc:
        raise ConfigError(f"{shown}:{reader.line_num}: invalid CSV: {exc}") from None


def _column_names(header: list[str], shown: str) -> list[str]:
    """A CSV header's column names; a blank or repeated name refused."""
    names = [h.strip() for h in header]
    blank = [i + 1 for i, h in enumerate(names) if not h]
    if blank:
        raise ConfigError(f"{shown}:1: column {blank[0]} has no name; name every column")
    twice = sorted({h for h in names if names.count(h) > 1})
    if twice:
        raise ConfigError(f"{shown}:1: column {twice[0]!r} is named twice; rename one")
    return names


def _with_ids(raw: Sequence[tuple[int, dict[str, Any]]], shown: str) -> list[DataRow]:
    with_id = [n for n, fields in raw if ID_FIELD in fields]
    if with_id and len(with_id) != len(raw):
        missing = next(n for n, fields in raw if ID_FIELD not in fields)
        raise ConfigError(
            f"{shown}:{missing}: this row has no {ID_FIELD!r} field but others do; give every "
            "row an id, or none (rows are then 'row-1', 'row-2', ...)"
        )
    rows: list[DataRow] = []
    first: dict[str, int] = {}
    for i, (n, fields) in enumerate(raw, start=1):
        row_id = str(fields[ID_FIELD]) if with_id else f"row-{i}"
        _check_row_id(row_id, first, f"{shown}:{n}")
        first[row_id] = n
        rows.append(DataRow(id=row_id, fields=fields, line=n))
    return rows


def _check_row_id(row_id: str, first: Mapping[str, int], where: str) -> None:
    """A row id usable in test and file names, and not one an earlier row has (``first``)."""
    if not _ROW_ID_RE.fullmatch(row_id):
        raise ConfigError(
            f"{where}: row id {row_id!r} is not usable in test names and file names: "
            "use letters, digits, '_', '.' and '-', starting with a letter or digit"
        )
    if row_id in first:
        raise ConfigError(
            f"{where}: duplicate row id {row_id!r} (also line {first[row_id]}); "
            "ids must be unique within a dataset"
        )
