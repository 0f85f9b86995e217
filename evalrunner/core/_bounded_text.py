"""Bounded text for diffs: no rendered line longer than :data:`LINE_WIDTH`.

A sequence too long for its line is summarised (run-length encoded, or its lengths and
the stretch that differs); a line is cut around the place that differs, with an
ellipsis and the number of characters cut; a removed diff line and the added one that
replaces it are cut around the same place.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ELLIPSIS", "LINE_WIDTH", "cap", "capped", "change", "common_ends", "prefix_len"]

LINE_WIDTH = 240
"""No rendered line (delta, summary item, diff line) is longer than this."""

_DELTA_WIDTH = LINE_WIDTH - 40  # room for the field name and the indent
ELLIPSIS = "…"


def _fmt(value: Any) -> str:
    if not isinstance(value, tuple):
        return repr(value) if isinstance(value, str) else str(value)
    nested = value and all(isinstance(v, tuple) for v in value)
    items = [_fmt(v) if nested else str(v) for v in value]
    return "(" + ", ".join(items) + ("," if len(value) == 1 else "") + ")"


def change(golden: Any, actual: Any) -> str:
    """``golden -> actual``, summarised when that does not fit on a line."""
    if isinstance(golden, tuple) and isinstance(actual, tuple):
        # Every item takes at least 3 characters: long tuples are not even formatted.
        if 3 * (len(golden) + len(actual)) <= _DELTA_WIDTH:
            full = f"{_fmt(golden)} -> {_fmt(actual)}"
            if len(full) <= _DELTA_WIDTH:
                return full
        return _sequence_change(golden, actual)
    if isinstance(golden, str) and isinstance(actual, str):
        full = f"{golden!r} -> {actual!r}"
        return full if len(full) <= _DELTA_WIDTH else _text_change(golden, actual)
    return f"{_fmt(golden)} -> {_fmt(actual)}"


def _item(value: Any) -> str:
    return _fmt(value) if isinstance(value, tuple) else str(value)


def _rle(items: Sequence[Any], limit: int = _DELTA_WIDTH) -> str:
    """``((agent, 1) x1996, (user, 0))``: runs of equal items counted; formatting
    stops (with an ellipsis) once ``limit`` characters are reached."""
    parts: list[str] = []
    size = i = 0
    while i < len(items) and size <= limit:
        n = 1
        while i + n < len(items) and items[i + n] == items[i]:
            n += 1
        parts.append(_item(items[i]) + (f" x{n}" if n > 1 else ""))
        size += len(parts[-1]) + 2
        i += n
    if i < len(items):
        parts.append(ELLIPSIS)
    return "(" + ", ".join(parts) + ("," if len(items) == 1 else "") + ")"


def common_ends(
    golden: Sequence[Any], actual: Sequence[Any], same: Callable[[Any, Any], bool] = operator.eq
) -> tuple[int, int]:
    """Lengths of the common prefix and (non-overlapping) common suffix."""
    shortest = min(len(golden), len(actual))
    start = 0
    while start < shortest and same(golden[start], actual[start]):
        start += 1
    end = 0
    while end < shortest - start and same(golden[-1 - end], actual[-1 - end]):
        end += 1
    return start, end


def prefix_len(golden: str, actual: str) -> int:
    """Length of the common prefix of two strings (by bisection: C-speed slice compares)."""
    lo, hi = 0, min(len(golden), len(actual))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if golden[:mid] == actual[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _sequence_change(golden: tuple[Any, ...], actual: tuple[Any, ...]) -> str:
    start, end = common_ends(golden, actual)

    def at(seq: tuple[Any, ...]) -> str:
        return _item(seq[start]) if start < len(seq) else "(end)"

    first = f"first difference at index {start}: {at(golden)} vs {at(actual)}"
    short = f"{_rle(golden)} -> {_rle(actual)}"
    if len(short) <= _DELTA_WIDTH and ELLIPSIS not in short:
        return f"{short}; {first}"
    g_mid, a_mid = golden[start : len(golden) - end], actual[start : len(actual) - end]
    return (
        f"{len(golden)} -> {len(actual)} items; {first}; "
        f"golden[{start}:{len(golden) - end}] {_rle(g_mid, _DELTA_WIDTH // 3)} -> "
        f"actual[{start}:{len(actual) - end}] {_rle(a_mid, _DELTA_WIDTH // 3)}"
    )


def _text_change(golden: str, actual: str) -> str:
    start = prefix_len(golden, actual)

    def excerpt(text: str) -> str:
        lo, hi = max(0, start - 30), start + 50
        inner = repr(text[lo:hi])
        return (
            (ELLIPSIS if lo else "")
            + inner
            + (ELLIPSIS if hi < len(text) else "")
            + f" ({len(text)} chars)"
        )

    return f"{excerpt(golden)} -> {excerpt(actual)}; first difference at character {start}"


def cap(line: str, width: int = LINE_WIDTH, focus: int = 0) -> str:
    """``line`` cut to about ``width`` characters: its start (a diff sign, indent and
    key) and, if ``focus`` (where it differs from its counterpart) lies further
    on, the part around it; an ellipsis and the count mark each cut."""
    if len(line) <= width:
        return line
    keep = width - 30  # room for the ellipses and the count
    if focus < keep * 2 // 3:
        return f"{line[:keep]}{ELLIPSIS} [{len(line) - keep} chars cut]"
    head = _CAP_HEAD
    start = min(focus - (keep - head) // 3, len(line) - (keep - head))
    window = line[start : start + keep - head]
    tail = ELLIPSIS if start + len(window) < len(line) else ""
    cut = len(line) - head - len(window)
    return f"{line[:head]}{ELLIPSIS}{window}{tail} [{cut} chars cut]"


_CAP_HEAD = 30  # the start of a cut line that is always kept


def capped(lines: list[str]) -> list[str]:
    """Cap diff lines; a removed line and the added line that replaces it are cut
    around the first character where they differ."""
    out = list(lines)
    i = 0
    while i < len(lines):
        minus = _run_end(lines, i, "-")
        if minus == i:  # not a removal run: plain cap
            out[i] = cap(lines[i])
            i += 1
            continue
        # Only after a removal: scanned for every line, an added block of n lines took
        # n^2 / 2 steps (2,000 items: 8.6 s; 8,000: 144 s; issue 53).
        plus = _run_end(lines, minus, "+")
        out[i:plus] = _capped_change(lines[i:minus], lines[minus:plus])
        i = plus
    return out


def _run_end(lines: list[str], start: int, sign: str) -> int:
    """Where the run of lines starting with ``sign`` that begins at ``start`` ends."""
    end = start
    while end < len(lines) and lines[end].startswith(sign):
        end += 1
    return end


def _capped_change(removed: list[str], added: list[str]) -> list[str]:
    """Removed lines, then added ones, each pair cut around where the two differ."""
    out_removed: list[str] = []
    out_added = [cap(line) for line in added]
    for k, line in enumerate(removed):
        focus = prefix_len(line, "-" + added[k][1:]) if k < len(added) else 0
        out_removed.append(cap(line, focus=focus))
        if k < len(added):
            out_added[k] = cap(added[k], focus=focus)
    return out_removed + out_added
