"""The one clock: UTC, ISO 8601 with a 'Z', so every file and report sorts and reads alike."""

from __future__ import annotations

import datetime as _dt
import time


def now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def iso_now(*, precise: bool = False) -> str:
    """'2026-11-30T02:00:00Z' (seconds), or with microseconds for trajectory step timestamps."""
    return now().isoformat(timespec="microseconds" if precise else "seconds").replace("+00:00", "Z")


def stamp() -> str:
    """'20261130T020000Z': for directory and file names."""
    return now().strftime("%Y%m%dT%H%M%SZ")


def parse(text: str) -> _dt.datetime:
    """An ISO 8601 time as an aware UTC datetime (naive times are taken as UTC); ValueError if not one."""
    value = _dt.datetime.fromisoformat(text.strip())
    return value if value.tzinfo else value.replace(tzinfo=_dt.UTC)


def past_this_second() -> None:
    """Return once the clock reads a later second than it did when called.

    Starts are kept to the second, and a night is known by its start and its runs: two
    nights of a deterministic agent run back to back inside one second would read as one.
    """
    began = iso_now()
    while iso_now() == began:
        time.sleep(0.02)
