"""Reading rendered reports back in tests, and what they should say according to the entries."""

from __future__ import annotations

import re

from evalrunner.history._store import History
from evalrunner.report._verdicts import VERDICT_ORDER
from evalrunner.stats._metric_result import MetricResult

EVIL_MODEL = 'evil|<script>window.__pwned=1</script>"&\x07'
"""A model name that lands in attributes, headers and table cells: markup, quote, ampersand, a control character."""


def latest_gating(history: History) -> dict[tuple[str, str], list[MetricResult]]:
    """(scenario, model) -> gating results of its latest night, straight from the entries."""
    latest: dict[tuple[str, str], tuple[str, list[MetricResult]]] = {}
    for entry in history.entries:
        rows: dict[tuple[str, str], list[MetricResult]] = {}
        for v in entry.verdicts:
            if v.gating:
                rows.setdefault((v.scenario, v.model), []).append(v)
        for key, found in rows.items():
            if key not in latest or entry.created_at > latest[key][0]:
                latest[key] = (entry.created_at, found)
    return {key: found for key, (_, found) in latest.items()}


def worst(rows: list[MetricResult]) -> str:
    return min((str(r.verdict) for r in rows), key=VERDICT_ORDER.index)


def cells(page: str) -> dict[tuple[str, str], str]:
    """(scenario, model) -> the overview cell's verdict class, via the cell's link to its section."""
    anchors = dict(
        (m.group(2), m.group(1))
        for m in re.finditer(r'<a class="cell (\w+)" href="#([\w-]+)">', page)
    )
    keys = {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(
            r'<details class="key \w+" id="([\w-]+)"[^>]*>\s*<summary>.*?<span class="scn">(.*?)</span> '
            r'<span class="mdl">(.*?)</span>',
            page,
            re.S,
        )
    }
    return {keys[anchor]: verdict for anchor, verdict in anchors.items()}
