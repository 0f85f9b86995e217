"""A behaviour-change message stays readable whatever the size of the run: long
sequences are summarised in the deltas, every line is capped (around the place
that differs), a removed step is one hunk rather than a renumbering of every
later step, and step changes come before schema changes, each block with its
own quota of lines. (Speed is measured by benchmarks/bench_diff.py, not here.)"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from evalrunner.core._bounded_text import LINE_WIDTH
from evalrunner.core._diff import Delta, diff, render, summary
from evalrunner.core._normalize import normalize

TOOLS = ("search", "read_file", "run_tests")


def raw(n_turns: int, *, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A raw capture: system, user, then agent turns each calling a tool (provider
    call ids, which normalisation renumbers run-wide), then the answer."""
    steps: list[dict[str, Any]] = [
        {"source": "system", "message": "You fix failing tests."},
        {"source": "user", "message": "Fix test_parser."},
    ]
    for t in range(n_turns):
        call = f"toolu_{t:04x}"
        steps.append(
            {
                "source": "agent",
                "message": f"Turn {t}.",
                "llm_call_count": 1,
                "tool_calls": [
                    {
                        "tool_call_id": call,
                        "function_name": TOOLS[t % 3],
                        "arguments": {"n": t},
                    }
                ],
                "observation": {"results": [{"source_call_id": call, "content": f"out {t}"}]},
                "metrics": {"prompt_tokens": 100 + t, "completion_tokens": 5},
            }
        )
    steps.append({"source": "agent", "message": "Fixed.", "llm_call_count": 1})
    agent: dict[str, Any] = {"name": "fixer", "version": "1"}
    if tools is not None:
        agent["tool_definitions"] = tools
    return {"schema_version": "ATIF-v1.8", "agent": agent, "steps": steps}


def numbered(traj: dict[str, Any]) -> dict[str, Any]:
    for i, step in enumerate(traj["steps"], start=1):
        step["step_id"] = i
    return normalize(traj)


def without_step(traj: dict[str, Any], index: int) -> dict[str, Any]:
    out = copy.deepcopy(traj)
    del out["steps"][index]
    return out


def hunks(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("@@ ")]


def assert_capped(text: str) -> None:
    assert max(len(line) for line in text.splitlines()) <= LINE_WIDTH


@pytest.mark.parametrize("turns", [6, 104, 1996])
def test_a_removed_step_is_one_hunk_and_every_line_is_capped(turns: int) -> None:
    before = raw(turns)
    golden, actual = numbered(copy.deepcopy(before)), numbered(without_step(before, 2 + turns // 2))
    text = render(golden, actual, diff(golden, actual))
    assert hunks(text) == [f"@@ $.steps[{2 + turns // 2}] removed -1,27 +0,0 @@"]
    assert f'-      "message": "Turn {turns // 2}.",' in text.splitlines()
    assert_capped(text)


def test_a_long_line_is_cut_around_the_change_with_the_count_cut() -> None:
    before = raw(3)
    words = " ".join(f"w{i}" for i in range(4000))
    before["steps"][0]["message"] = words
    after = copy.deepcopy(before)
    after["steps"][0]["message"] = words.replace(" w2500 ", " CHANGED ")
    golden, actual = numbered(before), numbered(after)
    text = render(golden, actual, diff(golden, actual))
    assert_capped(text)
    (removed,) = [line for line in text.splitlines() if line.startswith('-      "message"')]
    (added,) = [line for line in text.splitlines() if line.startswith('+      "message"')]
    assert removed.startswith('-      "message": "w0 w1') and " w2500 " in removed
    assert added.startswith('+      "message": "w0 w1') and " CHANGED " in added
    assert re.search(r"… \[\d+ chars cut\]$", removed)
    cut = int(re.findall(r"\[(\d+) chars cut\]", removed)[0])
    shown = len(removed) - len(f" [{cut} chars cut]") - 2  # two ellipses
    assert shown + cut == len(f'-      "message": "{words}",')


def test_long_sequences_in_deltas_are_summarised() -> None:
    before = raw(1996)
    golden, actual = numbered(copy.deepcopy(before)), numbered(without_step(before, 1000))
    deltas = {d.field: str(d) for d in diff(golden, actual)}
    assert deltas["step_count"] == "step_count: 1999 -> 1998"
    assert deltas["steps"] == (
        "steps: ((system, 0), (user, 0), (agent, 1) x1997) -> ((system, 0), (user, 0), "
        "(agent, 1) x1996); first difference at index 1998: (agent, 1) vs (end)"
    )
    assert deltas["tools"] == (
        "tools: 1996 -> 1995 items; first difference at index 998: run_tests vs search; "
        "golden[998:999] (run_tests,) -> actual[998:998] ()"
    )
    assert all(len(d) <= LINE_WIDTH for d in deltas.values())


def test_summary_is_bounded() -> None:
    before = raw(1996)
    before["steps"][-1]["message"] = "Fixed. " + "details " * 10_000
    golden, actual = numbered(copy.deepcopy(before)), numbered(without_step(before, 1000))
    actual["steps"][-1]["message"] = "Gave up. " + "details " * 10_000
    deltas = diff(golden, actual)
    assert len(summary(deltas)) <= len(deltas) * (LINE_WIDTH + 2)
    (answer,) = [str(d) for d in deltas if d.field == "final_answer"]
    assert answer.startswith("final_answer: 'Fixed. details") and "(80007 chars)" in answer
    assert answer.endswith("first difference at character 0")


def test_short_deltas_read_in_full() -> None:
    delta = Delta("tools", ("search", "read_file"), ("search",))
    assert str(delta) == "tools: (search, read_file) -> (search,)"
    assert str(Delta("final_answer", "Paris.", None)) == "final_answer: 'Paris.' -> None"


def big_tools(description: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"{description} {i}",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
        for i in range(60)
    ]


def test_step_changes_come_before_schema_changes_each_with_its_own_line_quota() -> None:
    before = raw(104, tools=big_tools("Old wording for tool"))
    after = without_step(before, 50)
    after["agent"]["tool_definitions"] = big_tools("New wording for tool")
    after["schema_version"] = "ATIF-v1.7"
    golden, actual = numbered(before), numbered(after)
    text = render(golden, actual, diff(golden, actual), max_lines=200)
    assert_capped(text)
    paths = [h.split()[1] for h in hunks(text)]
    assert paths[0] == "$.steps[50]"
    schema = paths.index("$.schema_version")
    assert paths[schema + 1 :] and all(
        p.startswith("$.agent.tool_definitions[") for p in paths[schema + 1 :]
    )
    tool_lines = text[text.index("@@ $.agent.tool_definitions[") :].splitlines()
    assert len(tool_lines) <= 200 // 4 + 2
    assert tool_lines[-1].endswith("more changed items in $.agent.tool_definitions not shown")


def test_many_changed_steps_share_the_line_quota_and_say_how_many_are_not_shown() -> None:
    before = raw(300)
    after = copy.deepcopy(before)
    for step in after["steps"][2:]:
        step["model_name"] = "other-model"
    golden, actual = numbered(before), numbered(after)
    text = render(golden, actual, diff(golden, actual), max_lines=50)
    lines = text[text.index("--- golden") :].splitlines()
    assert len(lines) <= 2 + 50 + 2
    assert re.fullmatch(r"\.\.\. \d+ more changed steps in \$\.steps not shown", lines[-1])


def test_subagent_steps_are_diffed_step_by_step_too() -> None:
    sub = raw(20)
    sub["trajectory_id"] = "worker"
    parent = raw(3)
    parent["subagent_trajectories"] = [sub]
    changed = copy.deepcopy(parent)
    changed["subagent_trajectories"][0] = without_step(sub, 7)
    for s in (parent, changed):
        s["subagent_trajectories"][0] = numbered(s["subagent_trajectories"][0])
        s["subagent_trajectories"][0]["trajectory_id"] = "worker"
    golden, actual = numbered(parent), numbered(changed)
    text = render(golden, actual, diff(golden, actual))
    assert hunks(text) == ["@@ $.subagent_trajectories[0].steps[7] removed -1,27 +0,0 @@"]


@pytest.mark.parametrize("changed", [1, 1000])
def test_a_thousand_changed_sub_agents_cost_the_lines_one_does(changed: int) -> None:
    def tree(word: str) -> dict[str, Any]:
        doc = normalize(raw(1))
        doc["subagent_trajectories"] = [
            {**normalize(raw(1)), "agent": {"name": f"worker-{i}", "extra": {"note": word}}}
            for i in range(changed)
        ]
        for sub in doc["subagent_trajectories"]:
            sub["steps"][-1]["message"] = word
        return doc

    text = render(tree("before"), tree("after"), [], max_lines=200)
    lines = text.splitlines()
    # The steps' line quota, then one block quota per kind of block, whatever the count.
    assert len(lines) <= 200 + 2 * 50 + 10, len(lines)
    if changed > 1:
        hidden = [line for line in lines if line.startswith("... ") and "not shown" in line]
        assert any("more changed steps in" in line and "places" in line for line in hidden)
