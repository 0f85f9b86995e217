"""Run history: one immutable file per `evalrunner run`, never rewritten.

Files are named ``<root>/<suite>/<UTC time>-<random>.parquet`` (columnar, see
``_columnar``; older histories' ``.json.gz`` files, gzipped JSON, still read), so
concurrent writers (several CI machines) and git merges cannot conflict. ``root`` is a
local path (default ``reports/history``) or any fsspec URL (``s3://bucket/h``,
``gs://...``, ``memory://...``) so a team can share one history.

An entry is typed all the way down: run records, metric results, the results
directory's manifest, and cells keyed by :class:`~evalrunner.suite._record.CellKey`
(written to JSON as its ``'scenario|model'`` token), so readers never pick
through dicts.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import secrets
import warnings
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner._jsonio import canonical, parse_json, validate_model
from evalrunner._next import NextStep
from evalrunner._redact import redact
from evalrunner.errors import ConfigError, FileFormatError, SkippedHistoryFile
from evalrunner.history._columnar import ColumnarFile, to_parquet
from evalrunner.history._entry import HISTORY_FORMAT_VERSION, Cell, HistoryEntry
from evalrunner.history._location import is_local, open_root, remote
from evalrunner.history._values import Words, float_array, pair_array
from evalrunner.stats._evidence_state import EvidenceState
from evalrunner.stats._metric_result import FLAGGED
from evalrunner.suite._record import CellKey

if TYPE_CHECKING:
    import pandas as pd

    from evalrunner.history._values import FloatArray

DEFAULT_ROOT = "reports/history"


def _upgrade(data: object, where: str) -> object:
    """Bring older formats up to the current one (none older exist yet)."""
    version = data.get("format_version") if isinstance(data, dict) else None
    if version == HISTORY_FORMAT_VERSION:
        return data
    raise FileFormatError(
        f"{where}: unsupported history format_version {version!r} (this evalrunner reads {HISTORY_FORMAT_VERSION}); "
        "upgrade evalrunner, or move the file aside if it is not a history file"
    )


def _parse(text: bytes, where: str) -> HistoryEntry:
    try:  # pydantic parses the JSON itself: about 30 % faster than json.loads, then validating
        entry = HistoryEntry.model_validate_json(text)
        if entry.format_version == HISTORY_FORMAT_VERSION:
            return entry
    except ValidationError:
        pass
    # The slow path says what is wrong in one line: the JSON, the format version, or the first bad field.
    return validate_model(HistoryEntry, _upgrade(parse_json(text, where), where), where)


def exists(root: str) -> bool:
    """Whether a history location exists (a path that is not there, mistyped, does not)."""
    fs, base = open_root(root)
    with remote(root, "read"):
        return bool(fs.exists(base))


def check_readable(root: str) -> None:
    """A history location that is there must be a directory: a file given by mistake would
    read as a history of no nights. ConfigError if not."""
    fs, base = open_root(root)
    with remote(root, "read"):
        if fs.exists(base) and not fs.isdir(base):
            raise ConfigError(
                f"history location {root!r} is a file, not a directory; pass --history with "
                f"the location '{NextStep('run')}' wrote to (default {DEFAULT_ROOT})"
            )


def check_writable(root: str) -> None:
    """A history location must be (or become) writable; ConfigError if not.

    Checked before a night's runs, so the history append at the end cannot fail
    for a reason known at the start. A local path is checked as a directory and
    leaves none behind; a remote location (fsspec URL) gets a small probe file,
    written and removed again.
    """
    from pathlib import Path

    from evalrunner.live._results import make_writable_dir, remove_dirs

    fs, base = open_root(root)
    if is_local(fs):
        created = make_writable_dir(
            Path(base), what="history location", fix="pass another --history, or --no-history"
        )
        remove_dirs(created)
        return
    probe = f"{base.rstrip('/')}/.evalrunner-probe-{secrets.token_hex(4)}"
    with remote(root, "written"):
        fs.makedirs(base, exist_ok=True)
        with fs.open(probe, "wb") as fh:
            fh.write(b"")
    # Writing is what the night needs. A store that lets us write but not delete (some
    # bucket policies) keeps an empty probe, which no reader of the history lists.
    with contextlib.suppress(Exception):
        fs.rm(probe)


def _stamp(created_at: str) -> str:
    return created_at.replace(":", "").replace("-", "")


def parquet_night(data: dict[str, Any], keys: dict[str, str]) -> bytes:
    """A validated, JSON-mode entry dump as the Parquet file :func:`append` writes (its
    ``keys``: the suite, night, start and outage texts of the file's metadata)."""
    return to_parquet(HistoryEntry, data, keys, apart={"verdicts": _flagged(data)})


def _flagged(data: dict[str, Any]) -> list[int]:
    """The places of a night's flagged results, written apart in its file for the report's
    flag tables (a year of them read 150 nights' results whole for 600 rows); none when
    they are more than a tenth of the night's results, which are then read whole anyway."""
    verdicts = data.get("verdicts") or []
    flagged = [i for i, v in enumerate(verdicts) if v.get("verdict") in FLAGGED]
    return flagged if len(flagged) * 10 <= len(verdicts) else []


def append(entry: HistoryEntry, root: str = DEFAULT_ROOT, *, parquet: bool = True) -> str:
    """Write ``entry`` as a new file under ``root``; return its URL/path.

    Parquet (see :mod:`evalrunner.history._columnar`) unless ``parquet`` is false
    (the version 1 format: one gzipped JSON document, for readers that predate Parquet).
    The entry is validated again after redaction, so nothing unreadable is written.
    """
    fs, base = open_root(root)
    data = validate_model(
        HistoryEntry, redact(entry.model_dump(mode="json")), f"history entry of {entry.suite}"
    ).model_dump(mode="json")
    name = f"{_stamp(entry.created_at)}-{secrets.token_hex(4)}"
    if parquet:
        path = f"{base.rstrip('/')}/{entry.suite}/{name}.parquet"
        keys = {
            "suite": entry.suite,
            "created_at": entry.created_at,
            "started_at": entry.manifest.started_at,
            "outage": "true" if entry.outage else "false",
        }
        payload = parquet_night(data, keys)
    else:
        path = f"{base.rstrip('/')}/{entry.suite}/{name}.json.gz"
        payload = gzip.compress(canonical(data).encode(), mtime=0)
    fs.makedirs(f"{base.rstrip('/')}/{entry.suite}", exist_ok=True)
    tmp = path + ".tmp"
    try:
        with fs.open(tmp, "wb") as fh:
            fh.write(payload)
        fs.mv(tmp, path)
    except BaseException:
        # A full disk, a lost connection, an interrupt: no half-written file stays
        # behind for a later reader to trip on.
        with contextlib.suppress(Exception):
            if fs.exists(tmp):
                fs.rm(tmp)
        raise
    return path if "://" not in root else f"{root.split('://', 1)[0]}://{path}"


class Source(Protocol):
    """One history entry as the report reads it: its head at once, its tables on demand.

    ``suite``, ``created_at``, ``started_at`` (the manifest's) and ``outage`` are known
    without parsing anything else; ``head`` is the entry without its tables (``records``
    and ``verdicts`` may be empty); :meth:`column` gives one field of a table's
    rows (:meth:`preload` reads several at once), :meth:`rows` the rows
    themselves, :meth:`entry` the whole entry. :meth:`texts` is :meth:`column`
    where a JSON field may stay JSON text (``_columnar.parsed`` parses it later).
    """

    @property
    def suite(self) -> str: ...

    @property
    def created_at(self) -> str: ...

    @property
    def started_at(self) -> str: ...

    @property
    def outage(self) -> bool:
        """The night was an outage (known without parsing the head where the file says)."""
        ...

    @property
    def head(self) -> HistoryEntry: ...

    def preload(self, table: str, fields: Sequence[str], pairs: Collection[str] = ()) -> None:
        """Read these fields ahead (``pairs``: intervals, to be read with :meth:`pairs`)."""

    def release(self) -> None:
        """Done reading for now: let go of what opening the file took (it reopens if read)."""

    def column(self, table: str, field: str) -> list[Any]: ...

    def words(self, table: str, field: str) -> Words:
        """A text field as codes into its distinct values (:class:`Words`)."""

    def floats(self, table: str, field: str) -> FloatArray:
        """A number field as a float array (missing: NaN)."""

    def pairs(self, table: str, field: str, rows: Sequence[int] | None = None) -> FloatArray:
        """An interval field as an (n, 2) float array (missing: NaN, NaN); ``rows``: only
        those rows'."""

    def rows(self, table: str, indices: Sequence[int] | None = None) -> list[Any]: ...

    def entry(self) -> HistoryEntry: ...

    def evidence(self) -> dict[CellKey, EvidenceState]:
        """The cells' evidence after this night, read without the rest of the head."""


class _EvidenceOnly(BaseModel):
    """A head's evidence alone: parsed from a head, the rest of it is skipped unbuilt."""

    model_config = ConfigDict(extra="ignore")

    evidence: dict[Cell, EvidenceState] = Field(default_factory=dict)


class InMemory:
    """An entry already built (written tonight, or read from a JSON file) as a :class:`Source`."""

    def __init__(self, entry: HistoryEntry) -> None:
        self.head = entry
        self.suite, self.created_at = entry.suite, entry.created_at
        self.started_at = entry.manifest.started_at
        self.outage = entry.outage

    def preload(self, table: str, fields: Sequence[str], pairs: Collection[str] = ()) -> None:
        pass

    def release(self) -> None:
        pass

    def column(self, table: str, field: str) -> list[Any]:
        return [getattr(row, field) for row in getattr(self.head, table)]

    def words(self, table: str, field: str) -> Words:
        return Words.of(self.column(table, field))

    def floats(self, table: str, field: str) -> FloatArray:
        return float_array(self.column(table, field))

    def pairs(self, table: str, field: str, rows: Sequence[int] | None = None) -> FloatArray:
        column = self.column(table, field)
        return pair_array(column if rows is None else [column[i] for i in rows])

    def rows(self, table: str, indices: Sequence[int] | None = None) -> list[Any]:
        items: list[Any] = getattr(self.head, table)
        return list(items) if indices is None else [items[i] for i in indices]

    def entry(self) -> HistoryEntry:
        return self.head

    def evidence(self) -> dict[CellKey, EvidenceState]:
        return self.head.evidence


_KEYS = ("suite", "created_at", "started_at")
"""The head's texts a Parquet file carries in its metadata: all a night needs to be placed."""


class InParquet:
    """A Parquet history file as a :class:`Source`: its head parsed only when asked for."""

    def __init__(self, raw: bytes | str, where: str) -> None:
        self.file = ColumnarFile(HistoryEntry, raw, where)
        keys = self.file.keys
        if all(isinstance(keys.get(k), str) for k in _KEYS):
            self.suite, self.created_at = keys["suite"], keys["created_at"]
            self.started_at = keys["started_at"]
        else:  # written before the metadata carried them
            head = self.file.head
            self.suite, self.created_at = head.suite, head.created_at
            self.started_at = head.manifest.started_at

    @property
    def head(self) -> HistoryEntry:
        return self.file.head

    @property
    def outage(self) -> bool:
        """Whether the night was an outage, from the metadata where it carries it (a report
        asks of every night, and a head takes milliseconds to parse)."""
        said = self.file.keys.get("outage")
        return said == "true" if isinstance(said, str) else self.head.outage

    def preload(self, table: str, fields: Sequence[str], pairs: Collection[str] = ()) -> None:
        self.file.preload(table, fields, pairs)

    def release(self) -> None:
        self.file.release()

    def column(self, table: str, field: str) -> list[Any]:
        return self.file.column(table, field)

    def words(self, table: str, field: str) -> Words:
        return self.file.words(table, field)

    def floats(self, table: str, field: str) -> FloatArray:
        return self.file.floats(table, field)

    def pairs(self, table: str, field: str, rows: Sequence[int] | None = None) -> FloatArray:
        return self.file.pairs(table, field, rows)

    def rows(self, table: str, indices: Sequence[int] | None = None) -> list[Any]:
        return self.file.rows(table, indices)

    def entry(self) -> HistoryEntry:
        return self.file.entry()

    def evidence(self) -> dict[CellKey, EvidenceState]:
        if "head" in self.file.__dict__:  # parsed already: nothing to read
            return self.head.evidence
        return self.file.head_as(_EvidenceOnly).evidence


class History:
    """Loaded history: its entries, and two flat tables built from them on first use.

    ``History(entries)`` holds entries already built; :func:`load_history` holds
    its files opened (``sources``), so a report reads of each night only the
    columns it needs and builds full records only for the nights it shows in full.
    ``entries`` builds every entry on first use. ``runs`` (one row per run) and
    ``verdicts`` (one row per metric result and night) are for analysis in
    pandas. Both carry ``suite`` and ``created_at`` (the night) columns.
    """

    def __init__(
        self, entries: Sequence[HistoryEntry] = (), *, sources: Sequence[Source] | None = None
    ) -> None:
        self.sources: list[Source] = (
            [InMemory(e) for e in entries] if sources is None else list(sources)
        )
        self.skipped: list[str] = []
        """History files that could not be read and were left out, one line each."""
        self.location: str | None = None
        """Where :func:`load_history` read it from (for messages)."""
        if sources is None:
            self.__dict__["entries"] = list(entries)

    @functools.cached_property
    def entries(self) -> list[HistoryEntry]:
        return [s.entry() for s in self.sources]

    @functools.cached_property
    def runs(self) -> pd.DataFrame:
        import pandas as pd

        rows, seen = [], set()
        for e in self.entries:  # a run counts once (see report._select: resumed directories)
            for r in e.records:
                key = (e.suite, e.manifest.started_at, r.run_id)
                if key not in seen:
                    seen.add(key)
                    rows.append({**r.model_dump(mode="python"), "created_at": e.created_at})
        return pd.DataFrame(rows)

    @functools.cached_property
    def verdicts(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(
            [
                {**v.model_dump(mode="python"), "suite": e.suite, "created_at": e.created_at}
                for e in self.entries
                for v in e.verdicts
            ]
        )


def _night_of(path: str) -> str:
    """The 'YYYYMMDDTHHMMSS' stamp a file name starts with ('' if it has none)."""
    return path.rsplit("/", 1)[-1].split("-", 1)[0]


def _open(fs: Any, path: str) -> Source:
    """A history file as a :class:`Source`: Parquet opened (its tables read on demand), JSON parsed."""
    try:
        if path.endswith(".parquet") and is_local(fs):
            return InParquet(path, path)  # read in the parts a reader asks for
        with fs.open(path, "rb") as fh:
            raw = fh.read()
        if path.endswith(".parquet"):
            return InParquet(raw, path)
        text = gzip.decompress(raw) if path.endswith(".gz") else raw
    except (OSError, EOFError) as exc:
        raise FileFormatError(f"{path}: unreadable history file ({exc}); move it aside") from None
    return InMemory(_parse(text, path))


def _paths(fs: Any, base: str, suites: list[str] | None, since: str | None) -> list[str]:
    """History files under ``base`` of ``suites``, minus those named for a night before ``since``."""
    top = base.rstrip("/")
    dirs = [f"{top}/{s}" for s in suites] if suites else [f"{top}/*"]
    paths = [p for d in dirs for x in ("json", "json.gz", "parquet") for p in fs.glob(f"{d}/*.{x}")]
    floor = _stamp(since) if since else ""
    return sorted(p for p in paths if not _named_before(p, floor))


def _named_before(path: str, floor: str) -> bool:
    """Whether a file's name says it is of a night before ``floor`` (a stamp; '' is none)."""
    night = _night_of(path)
    return bool(floor) and night[:8].isdigit() and night < floor


def read_entries(
    root: str = DEFAULT_ROOT, *, suites: list[str] | None = None, since: str | None = None
) -> list[HistoryEntry]:
    """Every entry under ``root`` (of ``suites``, written at or after ``since``), oldest first."""
    return [s.entry() for s in open_sources(root, suites=suites, since=since)]


def open_sources(
    root: str = DEFAULT_ROOT, *, suites: list[str] | None = None, since: str | None = None
) -> list[Source]:
    """Every entry under ``root`` (of ``suites``, written at or after ``since``) opened, oldest first.

    Files are chosen by their names (``<suite>/<stamp>-...``) before any is opened,
    so a report of one suite or the last month reads only those nights.
    """
    if not exists(root):
        return []
    fs, base = open_root(root)
    with remote(root, "read"):
        paths = _paths(fs, base, suites, since)
    sources = []
    # A year of JSON nights is ~500,000 records and results, none in a reference cycle:
    # the cyclic collector, run again and again over them while they load, would take
    # longer than loading them (~40 % of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path in paths:
            try:
                source = _open(fs, path)
            except FileFormatError as exc:
                # One bad file must not stop every later night, plan and report: leave it
                # out, say so, and let the user move it aside at leisure.
                warnings.warn(f"{exc.args[0]} (left out)", SkippedHistoryFile, stacklevel=2)
                continue
            if (not suites or source.suite in suites) and (not since or source.created_at >= since):
                sources.append(source)
    finally:
        if collecting:
            gc.enable()
    return sorted(sources, key=lambda s: s.created_at)


def evidence_so_far(
    root: str, suite: str, cells: Collection[CellKey] | None = None
) -> dict[CellKey, EvidenceState]:
    """Each cell of ``suite``'s evidence in the history at ``root`` (none without a history).

    Read newest night first, and only each night's evidence: with ``cells`` (those the
    caller needs), reading stops once each has been found, so a night reads one file of a
    year's history, not every head (12 s at 800 cells a night, ``bench_report.py --scale``).
    """
    if not exists(root):
        return {}
    fs, base = open_root(root)
    with remote(root, "read"):
        paths = _paths(fs, base, [suite], None)
    wanted = set(cells) if cells is not None else None
    found: dict[CellKey, EvidenceState] = {}
    # Newest first: files are named by their night.
    for path in reversed(paths):
        for cell, state in _evidence_in(fs, path, suite).items():
            found.setdefault(cell, state)
        if wanted is not None and wanted <= found.keys():
            break
    return found


def _evidence_in(fs: Any, path: str, suite: str) -> dict[CellKey, EvidenceState]:
    """The evidence one file holds for ``suite`` (none from a file it cannot read, said)."""
    try:
        source = _open(fs, path)
        return source.evidence() if source.suite == suite else {}
    except FileFormatError as exc:
        # A head damaged inside a file whose footer is whole is found only here: left
        # out as a file that cannot be opened is, not a stop of every later night.
        warnings.warn(f"{exc.args[0]} (left out)", SkippedHistoryFile, stacklevel=3)
        return {}


def load_history(
    root: str = DEFAULT_ROOT, *, suites: list[str] | None = None, since: str | None = None
) -> History:
    """The history under ``root``: its entries, oldest first (see :class:`History`).

    Files that could not be read are warned about and listed in ``History.skipped``.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SkippedHistoryFile)
        sources = open_sources(root, suites=suites, since=since)
    skipped = [str(w.message) for w in caught if issubclass(w.category, SkippedHistoryFile)]
    for w in caught:  # said again to whoever listens (the CLI prints them)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    history = History(sources=sources)
    history.skipped, history.location = skipped, root
    return history
