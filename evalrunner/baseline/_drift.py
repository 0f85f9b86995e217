"""Request drift and tool drift: what changed in the first request tonight's runs sent (system
prompt, first user message, tool definitions, sampling parameters) against the baseline's most
sent one, and the tools that answer otherwise tonight for arguments they always answered the
same way in the baseline.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalrunner._jsonio import canonical
from evalrunner.core._actions import (
    PARAMETERS,
    Action,
)

__all__ = [
    "most_sent",
    "parameter_changes",
    "request_changes",
    "tool_changes",
]


def tool_changes(
    baseline: Sequence[Sequence[Action]], tonight: Sequence[Sequence[Action]]
) -> tuple[list[str], list[str]]:
    """Tools that answered one same way (at least twice) for some arguments in the baseline
    and otherwise in most of tonight's calls with those arguments: those whose answer
    changed, and those that gave none (the call was made, no result came back: the tool
    was not run, which is not its output changing)."""
    before, now = _answers(baseline), _answers(tonight)
    changed: set[str] = set()
    silent: set[str] = set()
    for key, seen in before.items():
        if key not in now or len(seen) != 1 or sum(seen.values()) < 2:
            continue
        (answer,) = seen
        moved = _moved(answer, now[key])
        if moved is not None:
            (silent if moved else changed).add(key[0])
    return sorted(changed), sorted(silent)


def _answers(runs: Sequence[Sequence[Action]]) -> dict[tuple[str, str], Counter[str | None]]:
    """Per (tool, arguments): how often each answer came back (None: none)."""
    seen: dict[tuple[str, str], Counter[str | None]] = {}
    for run in runs:
        for a in run:
            seen.setdefault((a.tool, a.args), Counter())[a.observation] += 1
    return seen


def _moved(answer: str | None, tonight: Counter[str | None]) -> bool | None:
    """Whether most of tonight's calls left the baseline's one ``answer``: None if not;
    True if at least half of them got no result at all; False if another answer."""
    total = sum(tonight.values())
    if answer is None or tonight[answer] * 2 >= total:
        return None
    return tonight[None] * 2 >= total


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


def _definition_change(before: str, after: str) -> str:
    old, new = json.loads(before), json.loads(after)
    old_f, new_f = old.get("function", old), new.get("function", new)
    parts = [
        what
        for what, key in (("schema", "parameters"), ("description", "description"))
        if old_f.get(key) != new_f.get(key)
    ]
    return " and ".join(parts) or "definition"


def request_changes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """What changed from the ``before`` request view to ``after``, one short item each, and a
    unified diff of the system prompt and user message where they changed."""
    changes: list[str] = []
    diff: list[str] = []
    for key, what in (("system", "system prompt"), ("user", "first user message")):
        if before[key] != after[key]:
            body = list(
                difflib.unified_diff(
                    _lines(before[key]),
                    _lines(after[key]),
                    f"baseline {what}",
                    f"tonight {what}",
                    n=0,
                    lineterm="",
                )
            )
            changed = _changed_lines(body[2:])
            changes.append(f"{what}, {changed} line{'s' if changed != 1 else ''}")
            diff.extend(body)
    return changes + _tools_changed(before["tools"], after["tools"]), diff


def _changed_lines(hunks: Sequence[str]) -> int:
    """Lines a diff's hunks changed: the more of those removed and those added, at least 1."""
    removed = sum(1 for x in hunks if x.startswith("-"))
    added = sum(1 for x in hunks if x.startswith("+"))
    return max(removed, added, 1)


def _tools_changed(old_tools: Mapping[str, str], new_tools: Mapping[str, str]) -> list[str]:
    """The tool definitions removed, added or changed, by name."""
    changes = []
    for name in sorted(set(old_tools) | set(new_tools)):
        if name not in new_tools:
            changes.append(f"tool '{name}' removed")
        elif name not in old_tools:
            changes.append(f"tool '{name}' added")
        elif old_tools[name] != new_tools[name]:
            changes.append(f"tool '{name}' {_definition_change(old_tools[name], new_tools[name])}")
    return changes


def most_sent(requests: Iterable[tuple[Mapping[str, Any], int]]) -> dict[str, Any]:
    """The request sent most, from (request, how many runs sent it) pairs."""
    counts: Counter[str] = Counter()
    for request, runs in requests:
        counts[canonical(request)] += runs
    found: dict[str, Any] = json.loads(counts.most_common(1)[0][0])
    return found


def parameter_changes(before: Mapping[str, Any], tonight: Sequence[Mapping[str, Any]]) -> list[str]:
    """Parameters the first request most of tonight's runs sent set otherwise than the baseline's."""
    if not tonight:
        return []
    modal = most_sent((t, 1) for t in tonight)
    return [
        f"{key} {json.dumps(before.get(key))} -> {json.dumps(modal.get(key))}"
        for key in PARAMETERS  # not in a trajectory: compared from the requests themselves
        if before.get(key) != modal.get(key)
    ]
