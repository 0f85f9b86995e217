"""A trajectory and its continuation (``continued_trajectory_ref``) made one document:
steps numbered on, sub-agents kept, final totals counted once. Pure: the files are read
by the loader in ``_atif``."""

from __future__ import annotations

import math
from typing import Any

TOTALS = (
    "total_prompt_tokens",
    "total_completion_tokens",
    "total_cached_tokens",
    "total_cost_usd",
    "total_steps",
)
# The per-step count each token and cost total sums.
_STEP_COUNTS = {
    "total_prompt_tokens": "prompt_tokens",
    "total_completion_tokens": "completion_tokens",
    "total_cached_tokens": "cached_tokens",
    "total_cost_usd": "cost_usd",
}


def append(doc: dict[str, Any], rest: dict[str, Any]) -> None:
    """``rest`` (the continuation) appended to ``doc`` in place."""
    for step in rest.get("steps") or []:
        doc["steps"].append({**step, "step_id": len(doc["steps"]) + 1})
    doc.setdefault("subagent_trajectories", []).extend(rest.get("subagent_trajectories") or [])
    if not doc["subagent_trajectories"]:
        del doc["subagent_trajectories"]
    _add_totals(doc, rest.get("final_metrics"), rest.get("steps") or [])
    doc.pop("continued_trajectory_ref", None)
    if "continued_trajectory_ref" in rest:
        doc["continued_trajectory_ref"] = rest["continued_trajectory_ref"]


def _add_totals(doc: dict[str, Any], theirs: Any, rest_steps: list[Any]) -> None:
    """A continuation's final totals added to the document's (or taken, if it has none).
    Some producers write a continuation's totals as running totals that already hold the
    parent's; where its own steps show that, they are taken as they are, so nothing is
    counted twice."""
    if not isinstance(theirs, dict):
        return
    mine = doc.get("final_metrics")
    if not isinstance(mine, dict) or _running_totals(mine, theirs, rest_steps):
        doc["final_metrics"] = dict(theirs)
        return
    for key in TOTALS:
        if _number(mine.get(key)) and _number(theirs.get(key)):
            mine[key] += theirs[key]


def _running_totals(mine: dict[str, Any], theirs: dict[str, Any], steps: list[Any]) -> bool:
    """Whether the continuation's totals are the parent's plus its own steps' (a running
    total), read from the token and cost totals its own steps carry; only where every
    readable total says so (otherwise they are added, each file's totals its own)."""
    own = [s for s in steps if isinstance(s, dict) and s.get("is_copied_context") is not True]
    readings = {_reading(mine.get(t), theirs.get(t), own, c) for t, c in _STEP_COUNTS.items()}
    return readings - {None} == {"running"}


def _reading(before: Any, after: Any, own: list[dict[str, Any]], count: str) -> str | None:
    """What one total says: "running" (parent's plus own), "own", "neither", or None
    where it cannot tell (a total or every step's count missing, or a parent of 0)."""
    work = _own_work(own, count)
    if work is None or not (_number(before) and _number(after)) or before == 0:
        return None
    if math.isclose(after, before + work, rel_tol=1e-6):
        return "running"
    return "own" if math.isclose(after, work, rel_tol=1e-6) else "neither"


def _own_work(own: list[dict[str, Any]], count: str) -> float | None:
    """The sum of one count over the steps that carry it (None where none does)."""
    metrics = [s.get("metrics") for s in own]
    numbers = [m[count] for m in metrics if isinstance(m, dict) and _number(m.get(count))]
    return sum(numbers) if numbers else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
