"""The frozen subset's results as Markdown, from pytest's JUnit XML (the PR comment's body).

python action/frozen_summary.py evalrunner-out/frozen.xml > comment.md
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

MARKER = "<!-- evalrunner:frozen -->"
LIMIT = 4000  # characters of one failure's message: a comment has a size limit


def summary(junit: Path) -> str:
    if not junit.is_file():
        return f"{MARKER}\n### evalrunner: frozen subset\n\npytest wrote no results ({junit}).\n"
    cases = ET.parse(junit).getroot().iter("testcase")
    failed, passed, skipped = [], 0, 0
    for case in cases:
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
            failed.append((name, (problem.get("message") or problem.text or "").strip()))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    verdict = "behaviour changed" if failed else "no behavioural change"
    lines = [
        MARKER,
        f"### evalrunner: frozen subset — {verdict}",
        "",
        f"{passed} passed, {len(failed)} failed, {skipped} skipped.",
    ]
    for name, message in failed:
        shown = message if len(message) <= LIMIT else message[:LIMIT] + "\n…"
        lines += [
            "",
            f"<details><summary><code>{name}</code></summary>",
            "",
            "```",
            shown,
            "```",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary(Path(sys.argv[1])))
