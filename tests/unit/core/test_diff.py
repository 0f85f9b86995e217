"""Diffs name the behavioural change: structural deltas first, content hash last,
and nothing that did not change."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from evalrunner.core._diff import Delta, diff, render, summary
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape


def _agent(
    message: str,
    calls: Sequence[tuple[str, dict[str, Any], str]] = (),
    prompt: int = 50,
    completion: int = 5,
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "source": "agent",
        "message": message,
        "model_name": "gpt-4o-mini",
        "llm_call_count": 1,
        "metrics": {"prompt_tokens": prompt, "completion_tokens": completion},
    }
    if calls:
        step["tool_calls"] = [
            {"tool_call_id": f"id-{name}-{i}", "function_name": name, "arguments": args}
            for i, (name, args, _) in enumerate(calls)
        ]
        step["observation"] = {
            "results": [
                {"source_call_id": f"id-{name}-{i}", "content": out}
                for i, (name, _, out) in enumerate(calls)
            ]
        }
    return step


def trajectory(steps: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    """A captured-looking trajectory from steps (ids, timestamps filled in), normalised."""
    numbered = [
        {"step_id": i, "timestamp": f"2025-01-01T00:00:{i:02d}Z", **s}
        for i, s in enumerate(steps, start=1)
    ]
    traj = {
        "schema_version": "ATIF-v1.8",
        "session_id": "s-1",
        "trajectory_id": "t-1",
        "agent": {"name": "ref", "version": "0", "model_name": "gpt-4o-mini"},
        "steps": numbered,
        **top,
    }
    return normalize(traj)


SYSTEM = {"source": "system", "message": "You are a helpful assistant."}
USER = {"source": "user", "message": "What is the capital of France?"}
LOOKUP = _agent("", [("lookup_capital", {"country": "France"}, "Paris")], prompt=80, completion=9)
ANSWER = _agent("Paris.", prompt=95, completion=3)
REMINDER = {"source": "user", "message": "Reminder: answer in one word."}


def base() -> dict[str, Any]:
    return trajectory([SYSTEM, USER, LOOKUP, ANSWER])


def fields(deltas: list[Delta]) -> list[str]:
    return [d.field for d in deltas]


def test_identical_runs_have_no_deltas() -> None:
    assert diff(base(), base()) == []
    assert summary([]) == "no behavioural change"


def test_one_extra_user_step_is_a_step_count_delta_and_nothing_spurious() -> None:
    golden, actual = base(), trajectory([SYSTEM, USER, LOOKUP, REMINDER, ANSWER])
    deltas = diff(golden, actual)
    assert fields(deltas) == ["step_count", "steps", "content_hash"]
    assert str(deltas[0]) == "step_count: 4 -> 5"
    assert str(deltas[1]) == (
        "steps: ((system, 0), (user, 0), (agent, 1), (agent, 1)) -> "
        "((system, 0), (user, 0), (agent, 1), (user, 0), (agent, 1))"
    )
    assert deltas[-1].field == "content_hash"


def test_one_extra_model_call_adds_the_derived_deltas_only() -> None:
    retry = _agent("Let me double-check.", prompt=90, completion=4)
    golden, actual = base(), trajectory([SYSTEM, USER, LOOKUP, retry, ANSWER])
    deltas = diff(golden, actual)
    assert fields(deltas) == [
        "step_count",
        "steps",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "content_hash",
    ]
    assert [str(d) for d in deltas[:1] + deltas[2:5]] == [
        "step_count: 4 -> 5",
        "llm_calls: 2 -> 3",
        "prompt_tokens: 175 -> 265",
        "completion_tokens: 12 -> 16",
    ]
    # Live mode ignores wording but still sees the structure.
    assert fields(diff(golden, actual, compare_content=False, token_tolerance=1.0)) == [
        "step_count",
        "steps",
        "llm_calls",
    ]


def test_an_extra_tool_call_names_the_tools() -> None:
    twice = _agent(
        "",
        [
            ("lookup_capital", {"country": "France"}, "Paris"),
            ("lookup_capital", {"country": "france"}, "Paris"),
        ],
        prompt=80,
        completion=9,
    )
    deltas = diff(base(), trajectory([SYSTEM, USER, twice, ANSWER]))
    assert fields(deltas) == ["tools", "tool_calls", "content_hash"]
    assert str(deltas[0]) == "tools: (lookup_capital,) -> (lookup_capital, lookup_capital)"


def test_same_structure_different_content_is_a_content_hash_delta_only() -> None:
    golden = base()
    cases = {
        "tool output": ("steps", 2, "observation", "results", 0, "content"),
        "tool argument": ("steps", 2, "tool_calls", 0, "arguments", "country"),
        "system prompt": ("steps", 0, "message"),
        "question": ("steps", 1, "message"),
    }
    for what, path in cases.items():
        actual = copy.deepcopy(golden)
        target: Any = actual
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = "something else"
        deltas = diff(golden, actual)
        assert fields(deltas) == ["content_hash"], what
        assert shape(golden).model_copy(update={"content_hash": ""}) == shape(actual).model_copy(
            update={"content_hash": ""}
        )


def test_a_moved_answer_is_named_before_the_hash() -> None:
    actual = base()
    actual["steps"][-1]["message"] = "Lyon."
    deltas = diff(base(), actual)
    assert fields(deltas) == ["final_answer", "content_hash"]
    assert str(deltas[0]) == "final_answer: 'Paris.' -> 'Lyon.'"
    assert fields(diff(base(), actual, compare_content=False)) == []


def test_crash_and_subagent_changes_are_named() -> None:
    crashed = trajectory(
        [SYSTEM, USER, LOOKUP, ANSWER],
        extra={"crashed": True, "exception": {"type": "ValueError", "message": "x"}},
    )
    assert fields(diff(base(), crashed)) == ["crashed", "content_hash"]

    def sub(tool: str) -> dict[str, Any]:
        return {
            "schema_version": "ATIF-v1.8",
            "trajectory_id": "sub-a",
            "agent": {"name": "worker", "version": "0"},
            "steps": [
                {"step_id": 1, **USER},
                {"step_id": 2, **_agent("", [(tool, {}, "ok")], prompt=10, completion=1)},
            ],
        }

    def with_sub(tool: str) -> dict[str, Any]:
        return trajectory([SYSTEM, USER, LOOKUP, ANSWER], subagent_trajectories=[sub(tool)])

    deltas = diff(with_sub("lookup_capital"), with_sub("web_search"))
    assert fields(deltas) == ["subagent_tools", "content_hash"]
    assert str(deltas[0]) == "subagent_tools: ((lookup_capital,),) -> ((web_search,),)"
    assert fields(diff(base(), with_sub("lookup_capital"))) == [
        "subagent_count",
        "subagent_tools",
        "llm_calls",
        "tool_calls",
        "prompt_tokens",
        "completion_tokens",
        "content_hash",
    ]
    # A sub-agent that raised while the agent carried on (asyncio.gather with
    # return_exceptions): before, only content_hash moved.
    failed = with_sub("lookup_capital")
    failed["subagent_trajectories"][0]["extra"] = {"crashed": True}
    deltas = diff(with_sub("lookup_capital"), failed)
    assert fields(deltas) == ["subagents_crashed", "content_hash"]
    assert str(deltas[0]) == "subagents_crashed: 0 -> 1"


def test_token_tolerance_is_relative() -> None:
    actual = base()
    actual["steps"][2]["metrics"]["prompt_tokens"] += 8  # 175 -> 183: +4.6%
    assert fields(diff(base(), actual, token_tolerance=0.05)) == ["content_hash"]
    assert fields(diff(base(), actual, token_tolerance=0.04)) == ["prompt_tokens", "content_hash"]


def test_render_shows_deltas_then_a_unified_diff() -> None:
    golden, actual = base(), trajectory([SYSTEM, USER, LOOKUP, REMINDER, ANSWER])
    deltas = diff(golden, actual)
    text = render(golden, actual, deltas)
    lines = text.splitlines()
    assert lines[0] == "Behaviour changed:"
    assert lines[1:4] == ["  step_count: 4 -> 5", f"  {deltas[1]}", f"  {deltas[2]}"]
    assert (
        lines.index("--- golden") > 3 and lines.index("+++ actual") == lines.index("--- golden") + 1
    )
    # The cause is visible: the new user message is an added line.
    assert '+      "message": "Reminder: answer in one word.",' in lines
    assert summary(deltas).startswith("step_count: 4 -> 5, steps: ")


def test_render_caps_long_diffs() -> None:
    golden = base()
    actual = copy.deepcopy(golden)
    actual["steps"][0]["message"] = "\n".join(f"line {i}" for i in range(50))
    text = render(golden, actual, diff(golden, actual), max_lines=5)
    assert text.splitlines()[-1].endswith("more diff lines")


def test_a_changed_hash_says_where_the_trajectories_first_differ() -> None:
    # Before: "content_hash: 'a…' -> 'b…'", the line pytest's short summary shows, named
    # nothing a reader could act on (a review).
    actual = base()
    actual["steps"][2]["tool_calls"][0]["arguments"] = {"country": "Peru"}
    deltas = diff(base(), actual)
    assert fields(deltas) == ["content_hash"]
    line = summary(deltas, base(), actual)
    assert line.startswith("content_hash: '")
    assert line.endswith(
        '(first difference: $.steps[2].tool_calls[0].arguments.country: "France" -> "Peru")'
    )
    assert summary(deltas) == str(deltas[0])  # without the trajectories, as before


def test_a_changed_sub_agent_is_diffed_against_itself_not_its_neighbour() -> None:
    # Sorted by content, worker "apple" changed to "zebra" moves past worker "mango". Paired
    # by position, the diff showed two changed workers (apple -> mango, mango -> zebra).
    def worker(country: str, n: int) -> dict[str, Any]:
        return {
            "schema_version": "ATIF-v1.8",
            "trajectory_id": f"sub-{n}",
            "agent": {"name": "worker", "version": "0"},
            "steps": [
                {"step_id": 1, **USER},
                {"step_id": 2, **_agent("", [("lookup", {"q": country}, "ok")])},
            ],
        }

    def run(*countries: str) -> dict[str, Any]:
        subs = [worker(c, i) for i, c in enumerate(countries)]
        return normalize(trajectory([SYSTEM, USER, LOOKUP, ANSWER], subagent_trajectories=subs))

    golden, actual = run("apple", "mango"), run("zebra", "mango")
    text = render(golden, actual, diff(golden, actual))
    changed = [line for line in text.splitlines() if line.startswith(("-", "+")) and '"q"' in line]
    assert changed == ['-                "q": "apple"', '+                "q": "zebra"'], text
    assert "$.subagent_trajectories[0] (now [1])" in text
