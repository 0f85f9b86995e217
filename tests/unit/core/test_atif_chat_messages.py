"""A step message written as the chat messages it came from
(``[{"role": ..., "content": ...}]``, as one real exporter writes) is repaired
leniently, with a TrajectoryWarning: text is joined, ATIF content parts kept.
Anything without an obvious repair stays an error."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalrunner.core._atif import TrajectoryWarning, load, validate
from evalrunner.errors import TrajectoryError

FIXTURE = Path(__file__).parent / "data" / "chat_message_steps.json"


def fixture() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    return doc


def load_warning(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = load(doc)
    assert all(issubclass(w.category, TrajectoryWarning) for w in caught)
    return out, [str(w.message) for w in caught]


def test_chat_messages_are_joined_leniently_with_a_warning_per_step() -> None:
    out, caught = load_warning(fixture())
    steps = out["steps"]
    assert steps[0]["message"] == "You are a careful research assistant."
    assert steps[1]["message"] == [
        {"type": "text", "text": "What is on this chart?"},
        {"type": "image", "source": {"media_type": "image/png", "path": "images/chart.png"}},
    ]
    # The assistant message that only called tools (content null) adds nothing.
    assert steps[2]["message"] == "Rainfall by month;\n\nJuly is the wettest."
    assert caught == [
        "trajectory: $.steps[0].message: 1 chat message(s) (system) joined into one text",
        "trajectory: $.steps[1].message: 1 chat message(s) (user) joined into content parts",
        "trajectory: $.steps[2].message: 3 chat message(s) (assistant) joined into one text",
    ]
    validate(out)


def test_the_input_is_not_changed_and_strict_mode_rejects_it() -> None:
    original = fixture()
    before = copy.deepcopy(original)
    with pytest.warns(TrajectoryWarning):
        load(original)
    assert original == before
    with pytest.raises(TrajectoryError, match=r"which lenient loading joins\)$"):
        load(original, strict=True)


def test_chat_messages_in_a_subagent_are_repaired_too() -> None:
    parent = fixture()
    sub = fixture()
    sub["trajectory_id"] = "sub"
    parent["subagent_trajectories"] = [sub]
    out, caught = load_warning(parent)
    assert out["subagent_trajectories"][0]["steps"][0]["message"].startswith("You are")
    assert sum("$.subagent_trajectories[0].steps" in c for c in caught) == 3


@pytest.mark.parametrize(
    "message",
    [
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}}]}],
        [{"role": "assistant", "content": "x", "tool_calls": []}],  # would lose the calls
        [{"role": "user", "content": {"text": "x"}}],
        [{"role": "user"}],
    ],
)
def test_chat_messages_without_an_obvious_repair_stay_errors(message: Any) -> None:
    doc = fixture()
    doc["steps"][1]["message"] = message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrajectoryWarning)
        with pytest.raises(TrajectoryError, match=r"^trajectory: \$\.steps\[1\]\.message"):
            load(doc)
