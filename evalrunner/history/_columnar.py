"""One history entry as one Parquet file: its lists of records as columns, the rest as JSON.

The columns are derived from the pydantic models, not listed here: every field
of :class:`~evalrunner.history._store.HistoryEntry` that is a list of models
(``records``, ``verdicts``, and whatever list of models a later version adds)
becomes a table of its own, one row group each, its fields the columns
(``records.outcome``, ``verdicts.p``, ...). A field of plain type (text,
integer, number, boolean, optional or not) is a native column, an interval a column
of two numbers; anything else nested (lists, dicts, models) is a JSON text column,
named in the file's metadata. Every other field of the entry (manifest, baseline summaries, the
typical trajectories) is one JSON document in a one-row ``entry`` row group. Rows a
reader asks for by themselves (a night's flagged results) may be written a second
time, in a row group of their own after the tables' (their places in the metadata).

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
from collections.abc import Collection, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    NamedTuple,
    TypeVar,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ValidationError

from evalrunner._version import __version__
from evalrunner.errors import FileFormatError, NewerFormat
from evalrunner.history._rows import field_default, is_pair, plain_kind, rows_of
from evalrunner.history._values import (
    Words,
    _floats_of,
    _index_array,
    _values,
    arrow_pairs,
    compact,
    few_words,
    float_array,
    pair_array,
    parsed,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    FloatArray = npt.NDArray[np.float64]

COLUMNAR_FORMAT_VERSION = 5
"""History format version of Parquet entries (1: one JSON document per night).

5: intervals (a result's ``effect_ci``, ``night_ci``, ...) are columns of two numbers, not
JSON texts: a year of an organisation's trend charts read and parsed them in a third of
the time (``benchmarks/bench_report.py``); and a night's flagged results are written
apart too (``to_parquet``'s ``apart``), so the report's flag tables read them alone. A release that reads only 4 would take them for
texts; given 5, it leaves the file out with a warning that says to upgrade.

4: an entry says why each cell it ran but did not compare was not (``not_compared``).

3 holds what 2 held, and the fields 2's files gained later without a new number (the
evidence's ``last_failed``): a release that reads only 2 failed on those fields and
stopped its report; given 3, it leaves the file out with a warning that says to upgrade.
A change to what an entry holds takes a new number (tests/meta/test_file_formats.py)."""
READS = (2, 3, 4, 5)
"""The Parquet history formats this release reads (their columns are the same; up to 4
intervals are JSON texts)."""
META_KEY = b"evalrunner.history"
ENTRY = "entry"
"""The row group holding every field that is not a list of models, as one JSON document."""

Row = dict[str, Any]
M = TypeVar("M", bound=BaseModel)
N = TypeVar("N", bound=BaseModel)


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


def _schema(model: type[BaseModel], prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(column, arrow type) for each field of ``model``; and which of them hold JSON."""
    columns, json_columns = [], []
    for name, info in model.model_fields.items():
        kind = plain_kind(info.annotation)
        if kind is None and is_pair(info.annotation):
            kind = "pair"
        elif kind is None:
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
        "pair": pa.list_(pa.float64(), 2),
    }[kind]


def to_parquet(
    entry_model: type[BaseModel],
    data: Mapping[str, Any],
    keys: Mapping[str, str] | None = None,
    apart: Mapping[str, Sequence[int]] | None = None,
) -> bytes:
    """One validated, JSON-mode entry dump as Parquet bytes (see the module docs).

    ``keys`` (a few short texts of the head, e.g. the suite and the night) go into
    the file's metadata, so a reader that needs only those skips parsing the head.
    ``apart``: rows of a table (by place) written a second time in a row group of their
    own, after the tables, so a reader that builds only those reads a few rows instead
    of the table (the report's flag tables: a night's flagged results).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = table_fields(entry_model)
    layout, fields = _layout(tables, keys)
    kept_apart = {
        name: sorted(set(rows)) for name, rows in (apart or {}).items() if name in tables and rows
    }
    if kept_apart:
        layout["apart"] = kept_apart
    schema = pa.schema(
        [(col, _arrow(kind)) for col, kind in fields], metadata={META_KEY: json.dumps(layout)}
    )
    groups = _row_groups(tables, layout, data, kept_apart)
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for columns in groups:
            length = len(next(iter(columns.values()))) if columns else 0
            full = {col: columns.get(col, [None] * length) for col, _ in fields}
            writer.write_table(pa.table(full, schema=schema), row_group_size=max(length, 1))
    return sink.getvalue()


def _row_groups(
    tables: Mapping[str, type[BaseModel]],
    layout: dict[str, Any],
    data: Mapping[str, Any],
    apart: Mapping[str, list[int]],
) -> list[dict[str, list[Any]]]:
    """The file's row groups as columns: the head, each table, then the rows written apart."""
    # The head is the entry with its tables empty: valid on its own, so it is read in one call.
    head = {k: ([] if k in tables else v) for k, v in data.items()}
    groups: list[dict[str, list[Any]]] = [
        {f"{ENTRY}.json": [json.dumps(head, separators=(",", ":"), sort_keys=True)]}
    ]
    chosen = [(name, None) for name in tables] + list(apart.items())
    for name, places in chosen:
        rows = list(data.get(name) or [])
        encoded = set(layout["tables"][name]["json_columns"])
        picked = rows if places is None else [rows[i] for i in places]
        groups.append(_table_columns(name, tables[name], picked, encoded))
    return groups


def _layout(
    tables: Mapping[str, type[BaseModel]], keys: Mapping[str, str] | None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The file's layout metadata and its columns (name, kind): the head's, then each table's."""
    layout: dict[str, Any] = {"format_version": COLUMNAR_FORMAT_VERSION, "tables": {}}
    if keys:
        layout["keys"] = dict(keys)
    fields: list[tuple[str, str]] = [(f"{ENTRY}.json", "string")]
    for name, model in tables.items():
        typed, as_json = _schema(model, name)
        fields += typed
        layout["tables"][name] = {"json_columns": as_json}
    return layout, fields


@functools.cache
def _text_columns(entry_model: type[BaseModel]) -> tuple[str, ...]:
    """The tables' plain text columns (scenario, model, metric, verdict, outcome, ...), read
    as Arrow dictionaries: Parquet stores them so, and decoded, a year of an organisation's
    nights held each value's text once per row (a tenth of the report's memory at 800 cells)."""
    out: list[str] = []
    for name, model in table_fields(entry_model).items():
        columns, as_json = _schema(model, name)
        json_columns = {f"{name}.{field}" for field in as_json}
        out += [col for col, kind in columns if kind == "string" and col not in json_columns]
    return tuple(out)


def _table_columns(
    name: str, model: type[BaseModel], rows: list[Row], encoded: set[str]
) -> dict[str, list[Any]]:
    """One table's rows as columns, the fields in ``encoded`` as JSON texts."""
    # A row may leave out a field at its default (a record without scores is written
    # as before they existed); its column holds the default, which reads back the same.
    defaults = {
        field: info.get_default(call_default_factory=True)
        for field, info in model.model_fields.items()
    }
    columns: dict[str, list[Any]] = {}
    for field, default in defaults.items():
        values = [r.get(field, default) for r in rows]
        if field in encoded:
            values = [json.dumps(v, separators=(",", ":"), sort_keys=True) for v in values]
        columns[f"{name}.{field}"] = values
    return columns


def _unreadable(where: str, exc: BaseException) -> FileFormatError:
    if isinstance(exc, ValidationError):  # its first error, not pydantic's whole report
        first = exc.errors(include_url=False)[0]
        exc = ValueError(first["msg"])
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

    The file's parsed footer is held only while it is read: ~0.3 MB a night that
    the allocator does not give back, 110 MB over a year of nights held at once,
    against ~0.4 ms to parse it again. :meth:`release` lets it go early. ``raw``
    is the file's bytes, or the path of a local file, which is then read only in
    the parts asked for (a year's files held whole were 35 MB).
    """

    def __init__(self, entry_model: type[M], raw: bytes | str, where: str) -> None:
        self.where = where
        self.tables = table_fields(entry_model)
        self._model = entry_model
        self._raw = raw
        self._open: Any = None
        schema, layout = self._schema_and_layout()
        _check_version(layout.get("format_version"), where)
        stored: dict[str, Any] = layout.get("tables", {})
        apart: dict[str, Any] = layout.get("apart", {})
        groups = self._pf.num_row_groups
        if groups != 1 + len(stored) + len(apart) or not set(stored) | set(apart) <= set(
            self.tables
        ):
            raise _unreadable(where, ValueError(f"tables {sorted(stored)} in {groups} row groups"))
        self._groups = {name: i for i, name in enumerate(stored, start=1)}
        self._lengths = [self._pf.metadata.row_group(i).num_rows for i in range(groups)]
        self._apart = _apart_groups(apart, self._groups, self._lengths, where)
        self._names = set(schema.names)
        self.release()
        self._arrow: dict[tuple[str, str], Any] = {}  # read, not converted yet
        self._cache: dict[tuple[str, str], list[Any] | Words] = {}
        keys = layout.get("keys")
        self.keys: dict[str, str] = keys if isinstance(keys, dict) else {}
        """The head's texts written to the metadata (empty in files written before them)."""

    def _schema_and_layout(self) -> tuple[Any, dict[str, Any]]:
        """The file's Arrow schema and the layout in its metadata (empty when it has none)."""
        import pyarrow as pa

        try:
            schema = self._pf.schema_arrow
            meta = schema.metadata or {}
            layout = json.loads(meta[META_KEY]) if META_KEY in meta else None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _unreadable(self.where, exc) from None
        return schema, layout if isinstance(layout, dict) else {}

    @property
    def _pf(self) -> Any:
        """The opened file (``pyarrow.parquet.ParquetFile``), opened again after a release."""
        if self._open is None:
            import pyarrow.parquet as pq

            raw = self._raw
            self._open = pq.ParquetFile(
                raw if isinstance(raw, str) else io.BytesIO(raw),
                read_dictionary=_text_columns(self._model),
            )
        return self._open

    def release(self) -> None:
        """Let the parsed footer go; the next read parses it again."""
        self._open = None

    @functools.cached_property
    def head(self) -> M:
        """The entry without its tables' rows, parsed on first use."""
        return self.head_as(self._model)

    def head_as(self, model: type[N]) -> N:
        """The head parsed as ``model``: a model of a few of its fields (unknown ones
        ignored) reads them without building the rest (a head holds every cell's baseline
        and typical trajectory)."""
        import pyarrow as pa

        try:
            [head] = self._pf.read_row_group(0, columns=[f"{ENTRY}.json"]).column(0).to_pylist()
            return model.model_validate_json(head)
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
            raise _unreadable(self.where, exc) from None

    def entry(self) -> M:
        """The whole entry: the head with every table's rows."""
        entry = self.head.model_copy()
        for name in self._groups:
            entry.__dict__[name] = self.rows(name)
        return entry

    def column(self, table: str, field: str) -> list[Any]:
        """One field of a table's rows as Python values (JSON ones parsed, not typed).
        Kept once read; a text column of few distinct values kept as :class:`Words` and
        its list made anew for each caller (who lets it go when done with it)."""
        key = (table, field)
        if key not in self._cache:
            read = self._read(table, field)
            if isinstance(read, _Pairs):  # preloaded as numbers only: its texts read again
                read = self._read(table, field)
            kept = read if isinstance(read, list) else compact(read)
            as_json = plain_kind(self.tables[table].model_fields[field].annotation) is None
            self._cache[key] = parsed(_listed(kept)) if as_json else kept
        return _listed(self._cache[key])

    def words(self, table: str, field: str) -> Words:
        """A text field as :class:`Words` (codes into its distinct values), kept once read."""
        key = (table, field)
        if key not in self._cache:
            self.column(table, field)
        kept = self._cache[key]
        return kept if isinstance(kept, Words) else Words.of(kept)

    def floats(self, table: str, field: str) -> FloatArray:
        """A number field as floats, a missing value as NaN: 8 bytes a row where Python
        floats in a list take 32 (a year's trend charts read five of them). Handed over,
        not kept: asked for again, it is read again."""
        key = (table, field)
        if key in self._cache:
            return float_array(_listed(self._cache[key]))
        read = self._read(table, field)
        if isinstance(read, _Pairs):
            raise TypeError(f"{table}.{field} holds intervals: read it with pairs()")
        return float_array(read) if isinstance(read, list) else _floats_of(read)

    def pairs(self, table: str, field: str, rows: Sequence[int] | None = None) -> FloatArray:
        """An interval field as an (n, 2) float array, a missing interval as NaN, NaN,
        parsed from its JSON texts without a Python object per interval. Handed over.
        ``rows``: only those rows' (the texts of the others are not parsed)."""
        key = (table, field)
        if key in self._cache:
            return _at(pair_array(_listed(self._cache[key])), rows)
        read = self._read(table, field)
        if isinstance(read, _Pairs):
            return _at(read.array, rows)
        if not isinstance(read, list):
            parsed_in_arrow = arrow_pairs(read if rows is None else read.take(_index_array(rows)))
            if parsed_in_arrow is not None:
                return parsed_in_arrow
        return _at(pair_array(_values(read)), rows)

    def _read(self, table: str, field: str) -> Any:
        """A preloaded field's Arrow column (or its defaults' list), handed over once."""
        key = (table, field)
        if key not in self._arrow:
            self.preload(table, [field])
        return self._arrow.pop(key)

    def preload(self, table: str, fields: Sequence[str], pairs: Collection[str] = ()) -> None:
        """Read these fields of a table in one go (one call per column costs ~1 ms); they are
        kept as Arrow columns until asked for as Python values, floats or pairs. The fields
        in ``pairs`` (intervals the reader will ask for with :meth:`pairs`) are kept parsed:
        16 bytes a row where their JSON texts took ~45, over every night a report reads."""
        import pyarrow as pa

        group = self._groups.get(table)
        known = self._cache.keys() | self._arrow.keys()
        fields = [f for f in fields if (table, f) not in known]
        if group is None:
            self._arrow.update({(table, f): [] for f in fields})
            return
        names = {f: f"{table}.{f}" for f in fields if f"{table}.{f}" in self._names}
        self._predated(table, group, set(fields) - set(names))
        if not names:
            return
        try:
            read = self._pf.read_row_group(group, columns=list(names.values()))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _unreadable(self.where, exc) from None
        for f, column in names.items():
            self._keep(table, f, _kept(read.column(column).combine_chunks(), f in pairs))

    def _keep(self, table: str, field: str, kept: Any) -> None:
        """Keep a column just read: a text column of few values as its codes at once (a byte
        or two a row, where Arrow's indices take four), any other as read."""
        is_plain = plain_kind(self.tables[table].model_fields[field].annotation)
        words = few_words(kept) if is_plain and not isinstance(kept, _Pairs) else None
        if words is None:
            self._arrow[(table, field)] = kept
        else:
            self._cache[(table, field)] = words

    def _predated(self, table: str, group: int, fields: set[str]) -> None:
        """Fields of a table this file predates: their defaults, as validation gives them."""
        model = self.tables[table]
        for f in fields:
            self._arrow[(table, f)] = [field_default(model, f)] * self._lengths[group]

    def rows(self, table: str, indices: Sequence[int] | None = None) -> list[BaseModel]:
        """A table's rows (those at ``indices``, in that order) as model instances."""
        import pyarrow as pa

        if table not in self._groups:
            return []
        group, at = self._groups[table], indices
        if indices is not None and table in self._apart:
            places = self._apart[table].places
            if all(i in places for i in indices):
                group, at = self._apart[table].group, [places[i] for i in indices]
        try:
            return rows_of(self._pf, group, table, self.tables[table], at)
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
            raise _unreadable(self.where, exc) from None


class _Apart(NamedTuple):
    """A table's rows written apart: their row group, and each one's place in it by its
    place in the table."""

    group: int
    places: dict[int, int]


def _apart_groups(
    apart: dict[str, Any], groups: dict[str, int], lengths: list[int], where: str
) -> dict[str, _Apart]:
    """The row groups after the tables', as :func:`to_parquet` wrote them, checked."""
    out = {}
    for k, (name, places) in enumerate(apart.items()):
        group = 1 + len(groups) + k
        fits = (
            name in groups
            and isinstance(places, list)
            and len(places) == lengths[group]
            and all(isinstance(i, int) and 0 <= i < lengths[groups[name]] for i in places)
        )
        if not fits:
            raise _unreadable(where, ValueError(f"rows apart of {name!r} do not fit the table"))
        out[name] = _Apart(group, {i: j for j, i in enumerate(places)})
    return out


def _at(array: FloatArray, rows: Sequence[int] | None) -> FloatArray:
    """``array``'s rows at ``rows`` (all of it for None)."""
    return array if rows is None else array[list(rows)]


def _listed(kept: list[Any] | Words) -> list[Any]:
    return kept.values() if isinstance(kept, Words) else kept


class _Pairs(NamedTuple):
    """An interval column preloaded as its (n, 2) float array."""

    array: FloatArray


def _kept(column: Any, as_pairs: bool) -> Any:
    """A column as a preload keeps it: Arrow, or an interval column parsed where it can be."""
    parsed_pairs = arrow_pairs(column) if as_pairs else None
    return column if parsed_pairs is None else _Pairs(parsed_pairs)


def _check_version(version: Any, where: str) -> None:
    """Refuse a file this release does not read: a newer one, or an unknown version."""
    if isinstance(version, int) and version > max(READS):
        # Not "move it aside": it is a night another machine's newer release wrote.
        raise NewerFormat(
            f"{where}: history format_version {version} is newer than this evalrunner "
            f"({__version__}) reads (up to {max(READS)}); upgrade evalrunner to read it"
        )
    if version not in READS:
        raise FileFormatError(
            f"{where}: unsupported history format_version {version!r} (this evalrunner reads "
            f"{' and '.join(map(str, READS))} in Parquet files); move the file aside"
        )
