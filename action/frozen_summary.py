"""The frozen subset's results as Markdown, from pytest's JUnit XML (the PR comment's body).

python action/frozen_summary.py evalrunner-out/frozen.xml > comment.md

The headline names what happened (a behaviour changed, a golden is missing, a test could
not run); each failure shows its whole message where the comment has room for it: pytest
keeps only the first 500 characters in the XML's ``message`` attribute, and the rest of a
behavioural delta in the element's text.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

MARKER = "<!-- evalrunner:frozen -->"
COMMENT_ROOM = 60_000  # GitHub refuses a comment over 65,536 characters
SHORTENED = "full report in element text]"  # pytest's note on a message it cut
# Words in our own failure messages, by what happened.
_KINDS = (
    ("If this change is intended", "behaviour changed"),
    ("no golden at", "missing golden"),
    ("no recorded model responses at", "missing golden"),
)


def _message(problem: ET.Element) -> str:
    """The failure's whole message: the attribute, or where pytest cut it, the exception
    lines of the element's text (pytest marks them with "E")."""
    message = problem.get("message") or ""
    text = problem.text or ""
    if message and not message.endswith(SHORTENED):
        return message.strip()
    raised = [
        line[4:] if line.startswith("E   ") else line[1:]
        for line in text.splitlines()
        if line.startswith("E")
    ]
    return ("\n".join(raised) or text or message).strip()


def _kind(problem: ET.Element, message: str) -> str:
    if problem.tag == "error":
        return "error"
    return next((kind for words, kind in _KINDS if words in message), "failed")


def _headline(kinds: Counter[str]) -> str:
    if not kinds:
        return "no behavioural change"
    if set(kinds) == {"behaviour changed"}:
        return "behaviour changed"
    return ", ".join(f"{kind}: {n}" for kind, n in kinds.most_common())


def summary(junit: Path) -> str:
    if not junit.is_file():
        return f"{MARKER}\n### evalrunner: frozen subset\n\npytest wrote no results ({junit}).\n"
    failed: list[tuple[str, str, str]] = []
    passed = skipped = 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
            message = _message(problem)
            failed.append((name, _kind(problem, message), message))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    lines = [
        MARKER,
        f"### evalrunner: frozen subset — {_headline(Counter(k for _, k, _ in failed))}",
        "",
        f"{passed} passed, {len(failed)} failed, {skipped} skipped.",
    ]
    room = COMMENT_ROOM // max(1, len(failed))
    for name, kind, message in failed:
        shown = message if len(message) <= room else message[:room] + "\n…"
        lines += [
            "",
            f"<details><summary><code>{name}</code>: {kind}</summary>",
            "",
            "```",
            shown,
            "```",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary(Path(sys.argv[1])))
