"""The sentinel's pieces that need no endpoint: its line, and the cause it adds (its share of a
night's calls: tests/unit/night/test_sentinel.py)."""

from __future__ import annotations

from evalrunner.baseline._divergence import divergence
from evalrunner.baseline._explain import Explanation
from evalrunner.core._actions import Action
from evalrunner.night._sentinel import SentinelResult
from evalrunner.suite._record import CellKey

from .conftest import dataset_baseline

CELL = CellKey("s", "m")
SENT = {"messages": [{"role": "user", "content": "Where is a?"}]}
"""A first request as the runs kept it."""


def test_the_sentinel_line_counts_answers_and_names_unreachable_calls_apart() -> None:
    moved = SentinelResult(
        CELL,
        {"lookup": 54, "(answer)": 6},
        {"lookup": 9, "(answer)": 9},
        ["Timeout: slow"],
        0.001,
        0.05,
    )
    assert moved.changed
    assert moved.line() == (
        "sentinel: the baseline's first request sent 19 times (1 unreachable: Timeout: slow): "
        "first action lookup 54/60 -> 9/18 ((answer) 9/18), p=0.001 (alpha 0.05): "
        "the model answers it otherwise"
    )
    assert moved.change() == "first action lookup 54/60 -> 9/18 ((answer) 9/18), p=0.001"
    same = SentinelResult(CELL, {"lookup": 60}, {"lookup": 20}, [], 1.0, 0.05)
    assert not same.changed and same.change() is None and same.line().endswith(": no change")


def test_a_sentinel_change_is_the_model_cause_unless_the_request_changed() -> None:
    first = divergence([[Action("a", "x", "y")]] * 20, [[]] * 20, 0.05)
    moved = SentinelResult(CELL, {"a": 20}, {"a": 3, "(answer)": 17}, [], 1e-06, 0.05)
    why = Explanation(divergence=first, sentinel=moved)
    assert why.line() == (
        "cause: model (the baseline's first request sent again: first action a 20/20 -> 3/20 "
        "((answer) 17/20), p=1e-06)"
    )
    why.request = ["system prompt, 1 line"]
    assert why.line() == "cause: request changed (system prompt, 1 line)"


def test_a_sentinel_that_saw_no_change_leaves_a_first_action_divergence_unexplained() -> None:
    first = divergence([[Action("a", "x", "y")]] * 20, [[]] * 20, 0.05)
    assert Explanation(divergence=first).line().startswith("cause: model (same first request")
    same = SentinelResult(CELL, {"a": 20}, {"a": 20}, [], 1.0, 0.05)
    why = Explanation(divergence=first, sentinel=same)
    assert why.line().startswith("cause: unexplained (runs diverge at the first action")


def test_a_dataset_sentinel_compares_with_the_runs_of_the_row_it_sends_again() -> None:
    # Row 'a' always looks up first, row 'b' always answers: the sentinel sends row a's
    # request, so only row a's runs say what the model did with it.
    baseline = dataset_baseline(["a", "b"] * 5, lambda row: row == "a", sent=SENT, sent_row="a")
    assert baseline.first_actions() == ["lookup"] * 5
    # Outside datasets, every traced run.
    night = baseline.nights[0]
    assert night.traces is not None
    night.traces = night.traces.model_copy(update={"sent_row": None})
    assert sorted(baseline.first_actions()) == ["(answer)"] * 5 + ["lookup"] * 5
    assert "sent_row" not in night.traces.model_dump()


def test_the_sentinel_counts_whole_first_responses_where_the_baseline_kept_them() -> None:
    from evalrunner.core._response import ResponseRecord, ToolCallRecord
    from evalrunner.night._sentinel import _action

    two = ResponseRecord(
        tool_calls=[ToolCallRecord(id=f"c{i}", name="lookup", arguments="{}") for i in (1, 2)],
        finish_reason="tool_calls",
    )
    assert _action(two, whole=True) == "lookup + lookup"
    assert _action(two, whole=False) == "lookup"  # against a baseline from before format 3
    assert _action(ResponseRecord(content="Paris."), whole=True) == "(answer)"
    kept = dataset_baseline(["a", "b", "c"], lambda row: row != "c")
    assert kept.first_moves() is None  # its traces predate first_response
    for run in kept.traced[0].runs:
        run.first_response = len(run.actions)
    assert kept.first_moves() == ["lookup", "lookup", "(answer)"]
