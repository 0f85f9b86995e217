"""A dataset of countries for the dataset-scenario tests, and the fake model that answers it.

``countries(n)`` writes rows ``c00``..``c<n-1>`` (country ``Country<i>``, capital
``Capital<i>``); the :class:`Capitals` responder answers each question with its row's
capital, except for the rows in ``wrong`` (it names another city) and adds a lookup
call first for the rows in ``detour``: a regression planted on chosen rows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_endpoint import Reply


def countries(n: int) -> list[dict[str, str]]:
    return [
        {"id": f"c{i:02d}", "country": f"Country{i}", "capital": f"Capital{i}"} for i in range(n)
    ]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@dataclass
class Capitals:
    """The fake endpoint's responder for 'What is the capital of Country<i>?'."""

    wrong: set[int] = field(default_factory=set)
    seen: list[str] = field(default_factory=list)

    def __call__(self, body: dict[str, Any], n: int) -> Reply:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        self.seen.append(user)
        found = re.search(r"Country(\d+)", user)
        i = int(found.group(1)) if found else -1
        city = "Nowhere" if i in self.wrong else f"Capital{i}"
        return Reply(f"The capital is {city}.")


def dataset_scenario(**extra: Any) -> dict[str, Any]:
    return {
        "id": "capitals",
        "agent": "runner_agents:plain_agent",
        "dataset": "capitals.jsonl",
        "input": "What is the capital of {country}?",
        "checks": {"answer_contains": ["{capital}"]},
        **extra,
    }
