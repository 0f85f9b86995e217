"""What a report asks for (suites, models, a window) that the history lacks, in words:
an empty report would read as "no runs", so each is an error that says what is there."""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Sequence

from evalrunner._next import NextStep
from evalrunner.history._store import History, Source
from evalrunner.report._select import _NEVER, RECORD_COLUMNS, _bound, when


def _not_in(kind: str, name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"no history of {kind} {name!r}; {hint}{kind}s there: {', '.join(known) or 'none'}"


def _outside(wanted: Sequence[Source], since: str | None, until: str | None) -> str | None:
    """What a window holding none of ``wanted``'s nights misses, in words; None if it holds one."""
    low = _bound(since, until=False) if since else _NEVER
    high = _bound(until, until=True) if until else None
    if any(_within(when(s.created_at), low, high) for s in wanted):
        return None
    # A mistyped date (2027 for 2026) would otherwise be an empty report, and exit 0.
    first, last = min(s.created_at for s in wanted), max(s.created_at for s in wanted)
    given = (("--since", since), ("--until", until))
    window = " ".join(f"{name} {value}" for name, value in given if value)
    return (
        f"no night in the window {window}: its {len(wanted)} night(s) ran from {first} "
        f"to {last}; widen the window"
    )


def _within(moment: _dt.datetime, low: _dt.datetime, high: _dt.datetime | None) -> bool:
    return low <= moment and (high is None or moment < high)


def missing(
    history: History,
    suites: Sequence[str] = (),
    models: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
) -> str | None:
    """What a report asks for (``suites``, ``models``, the window) that ``history`` lacks, in words.

    None when everything asked for is there, so an empty report is never written silently.
    """
    said = _nothing_read(history) or _suites_missing(history, suites)
    if said is not None:
        return said
    wanted = [s for s in history.sources if not suites or s.suite in suites]
    if since or until:
        outside = _outside(wanted, since, until)
        if outside is not None:
            return outside
    return _models_missing(wanted, models) if models else None


def _nothing_read(history: History) -> str | None:
    if history.sources:
        return None
    if history.skipped:
        # Not "holds none": the files are there, and the fix is theirs (the lines above).
        return (
            f"holds no readable history file: {len(history.skipped)} could not be read "
            "(each named above); move them aside and run the report again"
        )
    return f"holds no history files (<suite>/*.parquet, written by '{NextStep('run')}')"


def _suites_missing(history: History, suites: Sequence[str]) -> str | None:
    known_suites = sorted({s.suite for s in history.sources})
    for suite in suites:
        if suite not in known_suites:
            return _not_in("suite", suite, known_suites)
    return None


def _models_missing(wanted: Sequence[Source], models: Sequence[str]) -> str | None:
    known: set[str] = set()
    for source in wanted:
        source.preload("records", RECORD_COLUMNS)  # what the report reads next, in one go
        source.release()
        known.update(source.column("records", "model"))
    known_models = sorted(known)
    for model in models:
        if model not in known_models:
            return _not_in("model", model, known_models)
    return None
