"""Steps marked ``is_copied_context`` are context copied from an earlier trajectory
(the history a summarisation sub-agent starts from, a continuation's carried-over
turns): the shape counts them as steps but not as model calls, tool calls,
tokens, tool sequence or final answer.

The fixtures in ``data/`` are shaped like harbor's summarisation sub-agent and
linear-history continuation files (ATIF v1.7)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalrunner.core._atif import TrajectoryWarning, load, validate
from evalrunner.core._diff import diff
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape

DATA = Path(__file__).parent / "data"


def fixture(name: str) -> dict[str, Any]:
    """A fixture as its parent's loader hands it on: a copy whose marks are confirmed (read
    alone, a file's copied steps count as work; tests/unit/core/test_atif_linked_files.py)."""
    doc: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    validate(doc, name)
    return doc


def test_copied_context_steps_are_not_counted_as_work() -> None:
    summary = shape(normalize(fixture("summarisation_subagent")))
    # Steps 1-3 are copied (two of them with tool calls, one with metrics); 4-5 are new.
    assert summary.llm_calls == 1 and summary.tool_calls == 0 and summary.tools == ()
    assert (summary.prompt_tokens, summary.completion_tokens) == (500, 40)
    assert summary.final_answer == "Summary: created scratch/; greeting.txt is still to be written."

    continued = shape(normalize(fixture("continuation")))
    assert continued.llm_calls == 2 and continued.tool_calls == 1
    assert continued.tools == ("bash_command",)
    assert (continued.prompt_tokens, continued.completion_tokens) == (1460, 42)
    assert continued.final_answer == "The file is written; the task is complete."


def test_copied_context_counts_in_step_count_and_is_marked_in_steps() -> None:
    doc = normalize(fixture("summarisation_subagent"))
    summary = shape(doc)
    # A reader of the golden counts every step in the file: the step ids run on.
    assert summary.step_count == len(doc["steps"]) == 5
    assert summary.steps == (
        ("copied:user", 0),
        ("copied:agent", 0),
        ("copied:agent", 0),
        ("user", 0),
        ("agent", 1),
    )
    assert sum(count for _, count in summary.steps) == summary.llm_calls


def test_a_summarisation_subagent_adds_only_its_new_work_to_the_parent() -> None:
    parent = fixture("continuation")
    sub = fixture("summarisation_subagent")
    sub["trajectory_id"] = "summary-1"
    parent["subagent_trajectories"] = [sub]
    parent["steps"][3]["observation"]["results"].append(
        {"subagent_trajectory_ref": [{"trajectory_id": "summary-1"}]}
    )
    # Read alone, the parent's own copied steps copy nothing read here and count (said in a
    # warning); the sub-agent's copies of its parent's history do not.
    with pytest.warns(TrajectoryWarning, match=r"\$\.steps: 3 step\(s\) are marked"):
        whole = shape(normalize(load(parent, strict=True)))
    assert whole.subagent_count == 1
    assert whole.subagent_tools == ((),)
    assert whole.llm_calls == 3 + 1 and whole.tool_calls == 1
    assert (whole.prompt_tokens, whole.completion_tokens) == (1580 + 500, 51 + 40)


def test_a_trajectory_of_only_copied_agent_steps_has_no_final_answer() -> None:
    doc = fixture("summarisation_subagent")
    doc["steps"] = doc["steps"][:3]
    assert shape(normalize(doc)).final_answer is None


def test_more_copied_context_is_a_step_change_not_more_work() -> None:
    short = fixture("continuation")
    longer = copy.deepcopy(short)
    extra = copy.deepcopy(longer["steps"][2])  # one more copied agent turn, with metrics
    longer["steps"].insert(2, extra)
    for i, step in enumerate(longer["steps"], start=1):
        step["step_id"] = i
    deltas = diff(normalize(short), normalize(longer))
    assert [d.field for d in deltas] == ["step_count", "steps", "content_hash"]
