"""Attributing a change: the divergence point, tool drift, request drift, the cause line."""

from __future__ import annotations

import json

from evalrunner.baseline._divergence import divergence
from evalrunner.baseline._drift import tool_changes
from evalrunner.baseline._explain import NONE_FOUND, Explanation, explain_runs
from evalrunner.baseline._file import Baseline
from evalrunner.baseline._moves import answers_moved
from evalrunner.baseline._traces import FirstRequest, RunTrace
from evalrunner.core._actions import Action
from evalrunner.suite._record import RunRecord

from .conftest import baseline_of, dataset_baseline, passed_records, record


def _run(*tools: str, answer: str = "a") -> list[Action]:
    return [Action(t, "args", answer) for t in tools]


def test_the_divergence_is_the_first_action_whose_next_choice_moved() -> None:
    base = [_run("search", "read")] * 18 + [_run("search")] * 2
    tonight = [_run("search")] * 14 + [_run("search", "read")] * 6
    found = divergence(base, tonight, 0.05)
    assert found is not None
    assert (found.depth, found.after) == (2, ("search",))
    assert found.line().startswith("after search: baseline read 18/20, tonight read 6/20")


def test_identical_paths_do_not_diverge_whatever_their_steps() -> None:
    # Action by action, not step by step: runs whose trajectories hold extra message
    # steps give the same actions, and a small wobble is not significant.
    base = [_run("search", "read")] * 18 + [_run("search")] * 2
    tonight = [_run("search", "read")] * 17 + [_run("search")] * 3
    assert divergence(base, tonight, 0.05) is None


def test_a_tool_is_named_only_when_it_answered_one_way_before_and_otherwise_now() -> None:
    base = [_run("lookup", answer="Paris")] * 5 + [_run("clock", answer=f"t{i}") for i in range(5)]
    tonight = [_run("lookup", answer="Lyon")] * 5 + [
        _run("clock", answer=f"u{i}") for i in range(5)
    ]
    # clock answered differently every time before: nothing to tell from it.
    assert tool_changes(base, tonight) == (["lookup"], [])
    assert tool_changes(base, base) == ([], [])


def test_a_tool_called_with_no_result_coming_back_is_named_as_not_run_not_as_changed() -> None:
    """The agent stopped running its tool: the calls are made, no observation follows. That
    read "output changed for the same arguments" above a diff showing the result missing."""
    base = [_run("lookup", answer="Paris")] * 5
    tonight = [[Action("lookup", "args", None)]] * 4 + [_run("lookup", answer="Paris")]
    assert tool_changes(base, tonight) == ([], ["lookup"])
    said = Explanation(silent_tools=["lookup"]).line()
    assert said == "cause: tool 'lookup' called but no result came back (the tool did not run)"


def _request(system: str, tools: dict[str, object]) -> FirstRequest:
    return FirstRequest(
        system=system,
        user="q",
        tools={k: json.dumps(v, sort_keys=True) for k, v in tools.items()},
        runs=3,
    )


def test_request_drift_names_the_prompt_lines_and_each_tool_change() -> None:
    search = {"function": {"name": "search", "description": "d", "parameters": {"a": 1}}}
    read = {"function": {"name": "read", "description": "r", "parameters": {}}}
    before = _request("one\ntwo\nthree", {"search": search, "read": read})
    tonight = {
        "agent": {
            "tool_definitions": [
                {"function": {"name": "search", "description": "new", "parameters": {"a": 1}}},
                {"function": {"name": "write", "parameters": {}}},
            ]
        },
        "steps": [
            {"source": "system", "message": "one\n2\n3"},
            {"source": "user", "message": "q"},
        ],
    }
    why = explain_runs([before], [], [tonight])
    assert why.request == [
        "system prompt, 2 lines",
        "tool 'read' removed",
        "tool 'search' description",
        "tool 'write' added",
    ]
    assert "+2" in why.request_diff and "-two" in why.request_diff


def test_the_cause_line_never_guesses() -> None:
    assert Explanation().line() == NONE_FOUND
    deep = divergence([_run("a", "b")] * 20, [_run("a")] * 20, 0.05)
    assert deep is not None and deep.depth == 2
    # A divergence past the first action, with the request and tools unchanged: not the model.
    assert (
        Explanation(divergence=deep).line().startswith("cause: unexplained (runs diverge after a")
    )
    first = divergence([_run("a")] * 20, [_run()] * 20, 0.05)
    assert Explanation(divergence=first).line().startswith("cause: model (same first request;")
    both = Explanation(request=["system prompt, 1 line"], tools=["x"], divergence=first)
    assert both.line() == (
        "cause: request changed (system prompt, 1 line); tool 'x' output changed for the same arguments"
    )


def test_sampling_parameters_the_agent_sent_otherwise_are_a_request_change() -> None:
    # Not in a trajectory: compared from the first requests the run files keep.
    before = {"messages": [], "temperature": 0.0, "max_tokens": 64}
    tonight = [{"messages": [], "temperature": 0.7, "max_tokens": 64}] * 3
    why = explain_runs([], [], [], sent_before=before, sent_tonight=tonight)
    assert why.request == ["temperature 0.0 -> 0.7"]
    assert why.line() == "cause: request changed (temperature 0.0 -> 0.7)"
    assert explain_runs([], [], [], sent_before=before, sent_tonight=[before]).request == []


def test_a_dataset_night_on_some_rows_is_explained_against_those_rows_of_the_baseline() -> None:
    from evalrunner.baseline._explain import explain

    # Rows a* look something up first, rows b* answer at once; tonight runs the a rows only
    # (--rows), each doing what it always did.
    rows = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    baseline = dataset_baseline(rows * 2, lambda row: row.startswith("a"))
    step = {
        "steps": [
            {
                "source": "agent",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "lookup", "arguments": {"q": "x"}}
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": "y"}]},
            }
        ]
    }
    tonight = [step] * 20
    assert explain(baseline, tonight, rows=frozenset(rows[:10])).divergence is None
    # Against every row of the baseline the same night would look like a change.
    assert explain(baseline, tonight).divergence is not None


def _traced_baseline(first_response: int | None) -> Baseline:
    """Twenty runs that look up two countries one response at a time (first_response=1),
    as format 3 keeps them, or as a format-2 baseline did (None)."""
    records = passed_records([None] * 20)
    actions: list[tuple[str, str, str | None]] = [
        ("lookup", "fr", "paris"),
        ("lookup", "jp", "tokyo"),
    ]
    traces = [
        RunTrace(run_id=r.run_id, actions=actions, first_response=first_response) for r in records
    ]
    return baseline_of(records, traces)


def _parallel_run() -> dict[str, object]:
    """Both lookups in the first model response, then the answer."""
    calls = [
        {"tool_call_id": "c1", "function_name": "lookup", "arguments": {"country": "fr"}},
        {"tool_call_id": "c2", "function_name": "lookup", "arguments": {"country": "jp"}},
    ]
    results = [
        {"source_call_id": "c1", "content": "paris"},
        {"source_call_id": "c2", "content": "tokyo"},
    ]
    return {
        "steps": [
            {"source": "user", "message": "Capitals of: fr, jp"},
            {
                "source": "agent",
                "message": "",
                "tool_calls": calls,
                "observation": {"results": results},
            },
            {"source": "agent", "message": "Paris, Tokyo."},
        ]
    }


def test_a_model_that_starts_calling_tools_in_parallel_is_the_model_at_the_first_response() -> None:
    # The same tools in the same order, so the tool-call paths agree: it read "none found"
    # (or "unexplained"), though the first response, a function of the unchanged first
    # request alone, now makes two calls where it made one.
    from evalrunner.baseline._explain import explain

    why = explain(_traced_baseline(1), [_parallel_run()] * 20)
    assert why.divergence is not None and why.divergence.depth == 1
    assert why.line().startswith(
        "cause: model (same first request; at the first model response: baseline lookup 20/20, "
        "tonight lookup 0/20 and lookup + lookup 20/20 (p="
    ), why.line()
    # A baseline from before format 3 cannot tell: nothing is claimed.
    assert explain(_traced_baseline(None), [_parallel_run()] * 20).line() == NONE_FOUND


def _answered(answers: list[str], row: str | None = None) -> list[RunRecord]:
    return passed_records([row] * len(answers), answers)


def test_when_only_the_final_answers_moved_none_found_says_so() -> None:
    # Before: "cause: none found (...)" and nothing about the answers, which were what moved
    # (a black-box review: the success rate fell 30/30 -> 0/20 with the same tool use).
    moved = answers_moved(_answered(["CORRECT"] * 30), _answered(["wrong"] * 18 + ["CORRECT"] * 2))
    assert moved == "'CORRECT' 30/30 -> 2/20 (now 'wrong' 18/20)"
    assert Explanation(answers=moved).line() == (
        f"{NONE_FOUND}; what moved is the final answer: 'CORRECT' 30/30 -> 2/20 (now 'wrong' 18/20)"
    )
    # Answers that vary anyway, or a dataset's rows (an answer each), say nothing.
    assert answers_moved(_answered(["a", "b", "c"] * 10), _answered(["d"] * 20)) is None
    assert answers_moved(_answered(["x"] * 30, row="r1"), _answered(["y"] * 20, row="r1")) is None
    assert answers_moved(_answered(["x"] * 30), _answered(["x"] * 12 + ["y"] * 8)) is None


def _judged(verdicts: list[bool], answer: str = "Oslo", reason: str = "") -> list[RunRecord]:
    """Runs judged by ``code:city``, failing it with ``reason`` where the verdict is False,
    and by two checks that fail every run: one whose name ends as this one's, named before
    it, and one named after it (a run's reason joins them all)."""
    return [
        record(
            i,
            outcome="failed",
            reason="; ".join(
                ["no_final_answer", "code:by_city (other)"]
                + ([] if held else [f"code:city ({reason})"])
                + ["code:late"]
            ),
            final_answer=answer,
            checks={"code:by_city": False, "code:city": held, "code:late": False},
        )
        for i, held in enumerate(verdicts)
    ]


def test_a_check_that_moved_is_the_cause_only_when_nothing_the_agent_did_moved() -> None:
    from evalrunner.baseline._moves import checks_moved

    before = _judged([True] * 9)
    moved = checks_moved(before, _judged([False] * 9, reason="no city named (yet); see docs"))
    assert [m.check for m in moved] == ["code:city"]  # the others failed on both sides
    assert Explanation(checks=moved).line() == (
        'cause: check code:city: passed 9/9 in the baseline, 0/9 tonight ("no city named '
        "(yet); see docs\"); the agent's runs are as in the baseline, so the check itself may "
        "have changed"
    )
    # A cause the agent's runs show comes first: the check's verdicts follow from it.
    request = Explanation(request=["system prompt, 1 line"], checks=moved)
    assert request.line() == "cause: request changed (system prompt, 1 line)"
    # A run-to-run wobble of the check names nothing.
    assert checks_moved(before, _judged([True] * 8 + [False])) == []


def test_a_check_that_moved_with_other_answers_does_not_claim_the_runs_are_unchanged() -> None:
    # The attribution does not compare the answers' text: the check may read answers that
    # moved (an answer that varies every run escapes answers_moved).
    from evalrunner.baseline._moves import checks_moved

    moved = checks_moved(_judged([True] * 9, "Oslo"), _judged([False] * 9, "Bergen"))
    assert Explanation(checks=moved).line() == (
        "cause: check code:city: passed 9/9 in the baseline, 0/9 tonight; the first request, "
        "the tools' answers and the runs' actions are as in the baseline, so the check itself, "
        "or the final answers it reads, may have changed"
    )
