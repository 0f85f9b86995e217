"""One history entry as one Parquet file: its lists of records as columns, the rest as JSON.

The columns are derived from the pydantic models, not listed here: every field
of :class:`~evalrunner.history._store.HistoryEntry` that is a list of models
(``records``, ``verdicts``, and whatever list of models a later version adds)
becomes a table of its own, one row group each, its fields the columns
(``records.outcome``, ``verdicts.p``, ...). A field of plain type (text,
integer, number, boolean, optional or not) is a native column; anything nested
(lists, dicts, intervals, models) is a JSON text column, named in the file's
metadata. Every other field of the entry (manifest, baseline summaries, the
typical trajectories) is one JSON document in a one-row ``entry`` row group.

So a field added to a record or a verdict flows through without this module
changing, a reader asks for the row groups and columns it needs, and Parquet's
compression (zstd) keeps a year of a 50-scenario suite far under 100 MB.
Validation happens before writing; a reader checks the format version and the
layout, and turns a damaged file into one line.
"""

from __future__ import annotations

import functools
import io
import json
import typing
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, TypeAdapter

from evalrunner.errors import FileFormatError

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNAR_FORMAT_VERSION = 2
"""History format version of Parquet entries (1: one JSON document per night)."""
META_KEY = b"evalrunner.history"
ENTRY = "entry"
"""The row group holding every field that is not a list of models, as one JSON document."""

Row = dict[str, Any]
M = TypeVar("M", bound=BaseModel)


def table_fields(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The fields of ``model`` that are lists of models: each becomes a table."""
    out = {}
    for name, info in model.model_fields.items():
        args = get_args(info.annotation)
        if get_origin(info.annotation) is list and args and _is_model(args[0]):
            out[name] = args[0]
    return out


def _is_model(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _plain(annotation: object) -> str | None:
    """The Arrow type name of a plain field (``Optional`` unwrapped), or None if nested."""
    if get_origin(annotation) in (typing.Union, UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return _plain(rest[0]) if len(rest) == 1 else None
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        return "string" if all(isinstance(v, str) for v in values) else None
    kinds: dict[object, str] = {str: "string", bool: "bool", int: "int64", float: "float64"}
    return kinds.get(annotation)


def _schema(model: type[BaseModel], prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(column, arrow type) for each field of ``model``; and which of them hold JSON."""
    columns, json_columns = [], []
    for name, info in model.model_fields.items():
        kind = _plain(info.annotation)
        if kind is None:
            kind = "string"
            json_columns.append(name)
        columns.append((f"{prefix}.{name}", kind))
    return columns, json_columns


def _arrow(kind: str) -> pa.DataType:
    import pyarrow as pa

    return {
        "string": pa.string(),
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "float64": pa.float64(),
    }[kind]


def to_parquet(
    entry_model: type[BaseModel], data: Mapping[str, Any], keys: Mapping[str, str] | None = None
) -> bytes:
    """One validated, JSON-mode entry dump as Parquet bytes (see the module docs).

    ``keys`` (a few short texts of the head, e.g. the suite and the night) go into
    the file's metadata, so a reader that needs only those skips parsing the head.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = table_fields(entry_model)
    layout: dict[str, Any] = {"format_version": COLUMNAR_FORMAT_VERSION, "tables": {}}
    if keys:
        layout["keys"] = dict(keys)
    fields: list[tuple[str, str]] = [(f"{ENTRY}.json", "string")]
    for name, model in tables.items():
        typed, as_json = _schema(model, name)
        fields += typed
        layout["tables"][name] = {"json_columns": as_json}
    schema = pa.schema(
        [(col, _arrow(kind)) for col, kind in fields], metadata={META_KEY: json.dumps(layout)}
    )
    # The head is the entry with its tables empty: valid on its own, so it is read in one call.
    head = {k: ([] if k in tables else v) for k, v in data.items()}
    groups: list[tuple[str, dict[str, list[Any]]]] = [
        (ENTRY, {f"{ENTRY}.json": [json.dumps(head, separators=(",", ":"), sort_keys=True)]})
    ]
    for name in tables:
        encoded = set(layout["tables"][name]["json_columns"])
        rows: list[Row] = list(data.get(name) or [])
        # A row may leave out a field at its default (a record without scores is written
        # as before they existed); its column holds the default, which reads back the same.
        defaults = {
            field: info.get_default(call_default_factory=True)
            for field, info in tables[name].model_fields.items()
        }
        groups.append(
            (
                name,
                {
                    f"{name}.{field}": [
                        json.dumps(r.get(field, default), separators=(",", ":"), sort_keys=True)
                        if field in encoded
                        else r.get(field, default)
                        for r in rows
                    ]
                    for field, default in defaults.items()
                },
            )
        )
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for _name, columns in groups:
            length = len(next(iter(columns.values()))) if columns else 0
            full = {col: columns.get(col, [None] * length) for col, _ in fields}
            writer.write_table(pa.table(full, schema=schema), row_group_size=max(length, 1))
    return sink.getvalue()


def _unreadable(where: str, exc: BaseException) -> FileFormatError:
    text = " ".join(str(exc).split())[:200]
    return FileFormatError(f"{where}: unreadable history file ({text}); move it aside")


def read_parquet(entry_model: type[M], raw: bytes, where: str) -> M:
    """The entry a Parquet history file holds, every row of every table built.

    The rows were validated when written, so they are not validated again (that
    is what made a year of JSON history take 24 s to load): plain columns are
    taken as Arrow gives them, JSON columns are parsed and typed column by column.
    """
    return ColumnarFile(entry_model, raw, where).entry()


class ColumnarFile(Generic[M]):
    """One Parquet history file, opened: its head at once, columns and rows on demand.

    Opening checks the format version and the layout; a damaged file is one
    FileFormatError, then or on a later read. A report over a year of nights
    reads a few columns of each night (:meth:`column`) and builds rows
    (:meth:`rows`) only for the nights and results it shows in full.
    """

    def __init__(self, entry_model: type[M], raw: bytes, where: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.where = where
        self.tables = table_fields(entry_model)
        try:
            self._pf = pq.ParquetFile(io.BytesIO(raw))
            schema = self._pf.schema_arrow
            meta = schema.metadata or {}
            layout = json.loads(meta[META_KEY]) if META_KEY in meta else None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _unreadable(where, exc) from None
        if not isinstance(layout, dict):
            layout = {}
        version = layout.get("format_version")
        if version != COLUMNAR_FORMAT_VERSION:
            raise FileFormatError(
                f"{where}: unsupported history format_version {version!r} (this evalrunner reads "
                f"{COLUMNAR_FORMAT_VERSION} in Parquet files); upgrade evalrunner, or move the file aside"
            )
        stored: dict[str, Any] = layout.get("tables", {})
        if self._pf.num_row_groups != 1 + len(stored) or not set(stored) <= set(self.tables):
            raise _unreadable(
                where,
                ValueError(f"tables {sorted(stored)} in {self._pf.num_row_groups} row groups"),
            )
        self._model = entry_model
        self._groups = {name: i for i, name in enumerate(stored, start=1)}
        self._names = set(schema.names)
        self._cache: dict[tuple[str, str], list[Any]] = {}
        self._texts: dict[tuple[str, str], list[str]] = {}  # JSON columns not parsed yet
        keys = layout.get("keys")
        self.keys: dict[str, str] = keys if isinstance(keys, dict) else {}
        """The head's texts written to the metadata (empty in files written before them)."""

    @functools.cached_property
    def head(self) -> M:
        """The entry without its tables' rows, parsed on first use."""
        import pyarrow as pa

        try:
            [head] = self._pf.read_row_group(0, columns=[f"{ENTRY}.json"]).column(0).to_pylist()
            return self._model.model_validate_json(head)
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
            raise _unreadable(self.where, exc) from None

    def entry(self) -> M:
        """The whole entry: the head with every table's rows."""
        entry = self.head.model_copy()
        for name in self._groups:
            entry.__dict__[name] = self.rows(name)
        return entry

    def column(self, table: str, field: str) -> list[Any]:
        """One field of a table's rows as Python values (JSON ones parsed, not typed)."""
        if (table, field) not in self._cache:
            self.preload(table, [field])
        if (table, field) in self._texts:
            self._cache[(table, field)] = parsed(self._texts.pop((table, field)))
        return self._cache[(table, field)]

    def texts(self, table: str, field: str) -> list[Any]:
        """Like :meth:`column`, but a JSON field as its JSON texts, for :func:`parsed` later."""
        if (table, field) not in self._cache:
            self.preload(table, [field])
        return self._texts.get((table, field), self._cache[(table, field)])

    def preload(self, table: str, fields: Sequence[str]) -> None:
        """Read these fields of a table in one go (one call per column costs ~1 ms)."""
        import pyarrow as pa

        model = self.tables[table]
        group = self._groups.get(table)
        fields = [f for f in fields if (table, f) not in self._cache]
        if group is None:
            self._cache.update({(table, f): [] for f in fields})
            return
        names = {f: f"{table}.{f}" for f in fields if f"{table}.{f}" in self._names}
        try:
            read = self._pf.read_row_group(group, columns=list(names.values())) if names else None
            for f in fields:
                if f not in names:  # a field this file predates: its default, as validation gives
                    length = self._pf.metadata.row_group(group).num_rows
                    default = model.model_fields[f].get_default(call_default_factory=True)
                    self._cache[(table, f)] = [default] * length
                    continue
                assert read is not None
                column = read.column(names[f])
                if _plain(model.model_fields[f].annotation) is not None:
                    self._cache[(table, f)] = _pylist(column)
                else:  # parsed when first asked for: a report parses few of them
                    self._cache[(table, f)] = []
                    self._texts[(table, f)] = _pylist(column)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _unreadable(self.where, exc) from None

    def rows(self, table: str, indices: Sequence[int] | None = None) -> list[BaseModel]:
        """A table's rows (those at ``indices``, in that order) as model instances."""
        import pyarrow as pa

        if table not in self._groups:
            return []
        try:
            return _rows(self._pf, self._groups[table], table, self.tables[table], indices)
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
            raise _unreadable(self.where, exc) from None


def parsed(values: list[Any]) -> list[Any]:
    """The JSON texts among ``values`` parsed (intervals quickly); other values, parsed already, kept.

    For fields whose parsed values are never text (intervals, lists, dicts).
    """
    at = [i for i, v in enumerate(values) if isinstance(v, str)]
    if not at:
        return values
    texts = [values[i] for i in at]
    done = _pairs(texts)
    if done is None:
        done = json.loads("[" + ",".join(texts) + "]")
    if len(at) == len(values):
        return done
    out = list(values)
    for i, value in zip(at, done, strict=True):
        out[i] = value
    return out


def _pairs(texts: list[str]) -> list[Any] | None:
    """A JSON column of number pairs or nulls ('[0.1,0.2]', 'null': intervals) as pairs, or
    None when it holds anything else: json.loads of a year of intervals takes seconds."""
    inner = []
    for text in texts:
        if text == "null":
            inner.append("nan,nan")
        elif text[:1] == "[" and text[-1:] == "]":
            inner.append(text[1:-1])
        else:
            return None
    numbers = ",".join(inner).split(",") if inner else []
    if len(numbers) != 2 * len(texts):
        return None
    try:
        flat = [float(x) for x in numbers]  # JSON's NaN and Infinity read as json.loads reads them
    except ValueError:
        return None
    pairs: list[Any] = list(zip(flat[0::2], flat[1::2], strict=True))
    for i, text in enumerate(texts):
        if text == "null":
            pairs[i] = None
    return pairs


@functools.cache
def _column_adapter(model: type[BaseModel], field: str) -> TypeAdapter[list[Any]]:
    item: Any = model.model_fields[field].annotation
    return TypeAdapter(list[item])


_SHARED_FROM = 64
"""Text columns at least this long are read with one object per distinct value."""


def _shared_strings(column: Any) -> list[Any] | None:
    """A text column of few distinct values (scenario, model, metric, verdict, ...) as a list
    whose equal values are one object: a year of verdicts holds 300,000 of each, and a
    string object apiece was a fifth of the report's memory. None when most values differ
    (run ids, reasons): those are read as before."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    words = encoded.dictionary.to_pylist()
    if len(words) * 4 > len(column):
        return None
    words.append(None)  # index -1: a null
    indices = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return [words[i] for i in indices.tolist()]


def _pylist(column: Any) -> list[Any]:
    """A column as Python values, through numpy: Arrow's own to_pylist costs ~1 µs a value."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_string(column.type) and len(column) >= _SHARED_FROM:
        shared = _shared_strings(column)
        if shared is not None:
            return shared
    if column.null_count == 0 or pa.types.is_string(column.type):
        return list(column.to_numpy(zero_copy_only=False).tolist())
    if not pa.types.is_floating(column.type):
        return list(column.to_pylist())  # integers with nulls would come back as floats
    values = list(column.to_numpy(zero_copy_only=False).tolist())
    for i in np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False)):
        values[i] = None
    return values


def _rows(
    pf: Any, group: int, name: str, model: type[BaseModel], indices: Sequence[int] | None
) -> list[BaseModel]:
    """The rows of one table (those at ``indices``) as ``model`` instances, not validated again."""
    if indices is not None and not indices:
        return []  # (pyarrow cannot take an empty, hence untyped, list of indices)
    prefix = f"{name}."
    present = {c[len(prefix) :]: c for c in pf.schema_arrow.names if c.startswith(prefix)}
    fields = [f for f in model.model_fields if f in present]
    table = pf.read_row_group(group, columns=[present[f] for f in fields])
    if indices is not None:
        table = table.take(list(indices))
    values = []
    for field, column in zip(fields, table.columns, strict=True):
        if _plain(model.model_fields[field].annotation) is None:
            text = "[" + ",".join(_pylist(column)) + "]"
            values.append(_column_adapter(model, field).validate_json(text))
        else:
            values.append(_pylist(column))
    # A field this file predates gets its default, as validation would give it.
    defaults = {
        f: info.get_default(call_default_factory=True)
        for f, info in model.model_fields.items()
        if f not in present
    }
    out = []
    for row in zip(*values, strict=True):
        obj = model.__new__(model)
        state = dict(zip(fields, row, strict=True))
        state.update(defaults)
        object.__setattr__(obj, "__dict__", state)
        object.__setattr__(obj, "__pydantic_fields_set__", set(fields))
        object.__setattr__(obj, "__pydantic_extra__", None)
        object.__setattr__(obj, "__pydantic_private__", None)
        out.append(obj)
    return out
