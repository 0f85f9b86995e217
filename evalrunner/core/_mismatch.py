"""Which recorded call answers a replayed request, and why none does: the fields that differ.

Both replay paths (in process, ``frozen._replay``; through the capture proxy,
``proxy._recording``) hold a :class:`RequestBook` over their recorded requests'
views (``_request_key.matching_view``) and so match by the same request key and
explain a miss in the same words, as a :class:`~evalrunner.errors.RequestMismatch`.
Model calls and messages are both counted from 1. Each difference names its
field (``system message``, ``tools``, ``tool_choice``, ``message 3 (tool)``...);
long strings are diffed by word, or by line when they span lines, so a one-word
change in a 4 KB one-line system prompt shows as that word with a little context.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalrunner._jsonio import canonical
from evalrunner.core._request_key import request_key
from evalrunner.errors import RequestMismatch

_SHORT = 120  # strings up to this long are shown whole
_CONTEXT = 6  # words of context around a changed run
_MAX_HUNKS = 3
_MAX_LINES = 12


def _clip(text: str, limit: int = _SHORT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: Any) -> str:
    if value is None:
        return "(not sent)"
    return repr(_clip(value)) if isinstance(value, str) else _clip(canonical(value))


def _words(words: Sequence[str], limit: int = 20) -> str:
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]) + f" …(+{len(words) - limit} words)"


def word_diff(old: str, new: str) -> str:
    """``…context [-removed-] {+added+} context…`` for the first few changed runs."""
    a, b = old.split(), new.split()
    if a == b:
        return "whitespace differs only"
    hunks = []
    ops = [
        op
        for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    for _tag, i1, i2, j1, j2 in ops[:_MAX_HUNKS]:
        before = a[max(0, i1 - _CONTEXT) : i1]
        after = a[i2 : i2 + _CONTEXT]
        change = []
        if i2 > i1:
            change.append(f"[-{_words(a[i1:i2])}-]")
        if j2 > j1:
            change.append(f"{{+{_words(b[j1:j2])}+}}")
        lead = "…" if i1 > _CONTEXT else ""
        tail = "…" if i2 + _CONTEXT < len(a) else ""
        hunks.append(lead + " ".join([*before, *change, *after]) + tail)
    more = f" (and {len(ops) - _MAX_HUNKS} more changes)" if len(ops) > _MAX_HUNKS else ""
    return "; ".join(hunks) + more


def line_diff(old: str, new: str) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1))[2:]
    shown = [_clip(line, 200) for line in lines[:_MAX_LINES]]
    if len(lines) > _MAX_LINES:
        shown.append(f"… ({len(lines) - _MAX_LINES} more diff lines)")
    return "\n    " + "\n    ".join(shown)


def text_diff(old: Any, new: Any) -> str:
    if not (isinstance(old, str) and isinstance(new, str)):
        old, new = canonical(old), canonical(new)
    if len(old) <= _SHORT and len(new) <= _SHORT and "\n" not in old + new:
        return f"recorded {old!r}, now {new!r}"
    if "\n" in old or "\n" in new:
        return line_diff(old, new)
    return word_diff(old, new)


def _label(index: int, message: Mapping[str, Any]) -> str:
    """``index`` counts from 0; the label from 1, like model calls."""
    role = message.get("role")
    if index == 0 and role in ("system", "developer"):
        return "system message"
    return f"message {index + 1} ({role})"


def _message_diff(index: int, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    label = _label(index, new)
    if old.get("role") != new.get("role"):
        return [f"{label}: role: recorded {old.get('role')!r}, now {new.get('role')!r}"]
    out = []
    for key in sorted((set(old) | set(new)) - {"role"}):
        if old.get(key) != new.get(key):
            what = label if key == "content" else f"{label} {key}"
            out.append(f"{what}: {text_diff(old.get(key), new.get(key))}")
    return out


def _messages_diff(old: Sequence[Any], new: Sequence[Any]) -> list[str]:
    out = []
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            out.extend(_message_diff(i, a, b))
        if len(out) >= 4:
            return [*out, "… (more messages differ)"]
    if len(old) != len(new):
        longer, extra = (new, "now has") if len(new) > len(old) else (old, "had")
        first = len(min(old, new, key=len))
        what = _label(first, longer[first])
        out.append(
            f"message count: recorded {len(old)}, now {len(new)} (the request {extra} "
            f"{abs(len(new) - len(old))} more, from {what}: {_show(longer[first].get('content'))!s})"
        )
    return out


def _tools_diff(old: Sequence[Any], new: Sequence[Any]) -> list[str]:
    def by_name(tools: Sequence[Any]) -> dict[str, Any]:
        return {str((t.get("function") or {}).get("name")): t.get("function") for t in tools}

    a, b = by_name(old), by_name(new)
    out = []
    if set(a) != set(b):
        added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
        out.append(f"tools: added {added or 'none'}, removed {removed or 'none'}")
    for name in sorted(set(a) & set(b)):
        for key in sorted(set(a[name]) | set(b[name])):
            if a[name].get(key) != b[name].get(key):
                out.append(
                    f"tools: {name!r} {key}: {text_diff(a[name].get(key), b[name].get(key))}"
                )
    if not out and old != new:
        out.append("tools: same tools in another order")
    return out


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Every field of the two request views that differs, each as one readable line."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key == "messages":
            out.extend(_messages_diff(a or [], b or []))
        elif key == "tools":
            out.extend(_tools_diff(a or [], b or []))
        else:
            out.append(f"{key}: recorded {_show(a)}, now {_show(b)}")
    return out


def _similarity(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[int, int, int]:
    a, b = old.get("messages") or [], new.get("messages") or []
    same_messages = sum(1 for x, y in zip(a, b, strict=False) if x == y)
    same_fields = sum(
        1 for k in set(old) | set(new) if k != "messages" and old.get(k) == new.get(k)
    )
    return same_messages, same_fields, -abs(len(a) - len(b))


def nearest(
    new: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]], used: Sequence[bool]
) -> int:
    """Index of the recorded view closest to ``new``: unused first, then most alike."""
    return max(
        range(len(recorded)),
        key=lambda i: (not used[i], *_similarity(recorded[i], new), -i),
    )


def recorded_label(number: int, messages: int, last_user: str | None) -> str:
    """How a recorded call is named in a mismatch: its number (from 1) and what it asked."""
    text = last_user or ""
    preview = text if len(text) <= 60 else text[:59] + "…"
    return f"recorded call {number} ({messages} messages, last user message {preview!r})"


def view_label(number: int, view: Mapping[str, Any]) -> str:
    """:func:`recorded_label` read off a request view."""
    messages = view.get("messages") or []
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    content = (last_user or {}).get("content")
    text = content if isinstance(content, str) or content is None else canonical(content)
    return recorded_label(number, len(messages), text)


@dataclass(frozen=True)
class Recorded:
    """One recorded call, as replay matches and names it."""

    view: Mapping[str, Any] | None
    """Its request view; None where the recording kept none (script format 1)."""
    request_key: str
    """What a request must hash to (recorded as ``fingerprint``); "" for a hand-written
    entry, which matches by order."""
    label: str
    """``recorded call N (...)``, see :func:`recorded_label`."""


class RequestBook:
    """The recorded calls of one run, each answering the first request with its request key.

    Thread-safe: concurrent sub-agents share one book. ``redo`` is the command
    that re-records, for the messages; ``missing`` says the file does not exist.
    """

    def __init__(
        self, recorded: Sequence[Recorded], source: str, redo: str, *, missing: bool = False
    ) -> None:
        self.recorded = list(recorded)
        self.used = [False] * len(self.recorded)
        self.source = source
        self.redo = redo
        self.missing = missing
        self.lock = threading.Lock()
        self.stand_ins: dict[int, int] = {}
        """Recorded call (index) -> the model call (from 1) it answered in place of its own
        request, where a non-strict replay served it to a request that matched nothing."""

    def take(self, fp: str) -> int | None:
        """The first unused call with request key ``fp``, marked used; the caller holds the lock."""
        for i, rec in enumerate(self.recorded):
            if not self.used[i] and rec.request_key and rec.request_key == fp:
                self.used[i] = True
                return i
        return None

    def miss(self, n: int, view: Mapping[str, Any], fp: str | None = None) -> RequestMismatch:
        """Why model call ``n`` (from 1) has no recorded answer; the caller holds the lock."""
        fp = request_key(view) if fp is None else fp
        head = f"replay: model call {n} has no recorded response in {self.source}"
        redo = f"If the agent changed on purpose, re-record: {self.redo}"
        return RequestMismatch(f"{head}{self._reason(view, fp)}{redo}")

    def _reason(self, view: Mapping[str, Any], fp: str) -> str:
        if self.missing:
            return ": the file does not exist. Record the run first. "
        if not self.recorded:
            return ": nothing was recorded for this run. "
        same = [i for i, r in enumerate(self.recorded) if r.request_key == fp]
        if same:
            return self._answered(same)
        views = [r.view for r in self.recorded]
        if None in views:
            return self._unnamed()
        return self._nearest(view, [v or {} for v in views])

    def _answered(self, same: list[int]) -> str:
        """Why a recorded request (at ``same``) has no answer left: lent, or all used."""
        lent = [self.stand_ins[i] for i in same if i in self.stand_ins]
        if lent:
            return (
                f": it is {self.recorded[same[0]].label}'s request, whose answer was served to "
                f"model call {lent[0]} in its place (that call matches no recorded one): the "
                "agent now makes a call the recording does not hold, before this one. "
            )
        return (
            f": it repeats {self.recorded[same[0]].label}, whose {len(same)} recorded answer(s) are all "
            "used: the agent now makes this request more often than when recorded. "
        )

    def _unnamed(self) -> str:
        unused = [r.label for r, used in zip(self.recorded, self.used, strict=True) if not used]
        return (
            f". The next unused one is {unused[0] if unused else 'none'}; the recording is of an "
            "older format that kept no request, so the fields that differ cannot be named. "
        )

    def _nearest(self, view: Mapping[str, Any], views: Sequence[Mapping[str, Any]]) -> str:
        best = nearest(view, views, self.used)
        state = "already used" if self.used[best] else "unused"
        found = differences(views[best], view)
        if not found:
            # The stored request is this one; its request key is not: a merge or an edit
            # changed one line of the entry without the other.
            return (
                f": {self.recorded[best].label} stores this very request, but a fingerprint "
                "that is not its own (the recording was merged or edited by hand). "
            )
        lines = [f". Nearest: {self.recorded[best].label}, {state}; it differs in:"]
        lines += [f"  - {d}" for d in found]
        return "\n".join(lines) + "\n"

    def unused(self) -> list[int]:
        with self.lock:
            return [i for i, used in enumerate(self.used) if not used]
