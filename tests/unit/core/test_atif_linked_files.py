"""Trajectories other tools spread over files load whole: sub-agents referenced by
``trajectory_path`` and a ``continued_trajectory_ref`` continuation are read from
beside the file; a link that cannot be followed is a warning, never silence. And
steps marked ``is_copied_context`` after a trajectory's own work began are said."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalrunner.core import load_trajectory, normalize, shape
from evalrunner.core._atif import TrajectoryWarning

DATA = Path(__file__).parent / "data"


def _traj(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": "s",
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": i + 1, **s} for i, s in enumerate(steps)],
        **extra,
    }


def _agent(text: str, **extra: Any) -> dict[str, Any]:
    return {"source": "agent", "message": text, "metrics": {"prompt_tokens": 10}, **extra}


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _load(path: Path) -> tuple[dict[str, Any], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = load_trajectory(path)
    return doc, [str(w.message) for w in caught if issubclass(w.category, TrajectoryWarning)]


def test_a_continuation_file_is_appended_and_its_copied_context_not_counted(
    tmp_path: Path,
) -> None:
    first = _traj(
        [{"source": "user", "message": "task"}, _agent("step one")],
        continued_trajectory_ref="part2.json",
        final_metrics={"total_prompt_tokens": 10},
    )
    _write(tmp_path / "part2.json", json.loads((DATA / "continuation.json").read_text()))
    doc, said = _load(_write(tmp_path / "part1.json", first))
    assert said == []
    assert [s["step_id"] for s in doc["steps"]] == list(range(1, 8))
    assert "continued_trajectory_ref" not in doc
    assert doc["final_metrics"]["total_prompt_tokens"] == 10 + 1460
    sh = shape(normalize(doc))
    # part1's agent step and part2's two own steps; part2's three copied steps are not work.
    assert sh.llm_calls == 3 and sh.tools == ("bash_command",)
    assert sh.prompt_tokens == 10 + 700 + 760


def test_a_continuation_whose_totals_already_hold_the_parent_s_is_not_counted_twice(
    tmp_path: Path,
) -> None:
    part2 = json.loads((DATA / "continuation.json").read_text())
    # A producer writing running totals: the parent's 10 and 5 plus its own 1460 and 42.
    part2["final_metrics"] = {"total_prompt_tokens": 1470, "total_completion_tokens": 47}
    _write(tmp_path / "part2.json", part2)
    first = _traj(
        [{"source": "user", "message": "task"}, _agent("step one")],
        continued_trajectory_ref="part2.json",
        final_metrics={"total_prompt_tokens": 10, "total_completion_tokens": 5},
    )
    doc, said = _load(_write(tmp_path / "part1.json", first))
    assert said == []
    assert doc["final_metrics"] == {"total_prompt_tokens": 1470, "total_completion_tokens": 47}


def test_a_sub_agent_in_its_own_file_is_read_in(tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    _write(tmp_path / "subs" / "child.json", _traj([_agent("child work")]))
    ref = {"trajectory_path": "subs/child.json", "session_id": "child-run"}
    parent = _traj(
        [
            _agent(
                "delegating",
                tool_calls=[{"tool_call_id": "c1", "function_name": "delegate", "arguments": {}}],
                observation={
                    "results": [{"source_call_id": "c1", "subagent_trajectory_ref": [ref]}]
                },
            )
        ]
    )
    doc, said = _load(_write(tmp_path / "parent.json", parent))
    assert said == []
    assert [s["steps"][0]["message"] for s in doc["subagent_trajectories"]] == ["child work"]
    assert shape(normalize(doc)).subagent_count == 1


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("missing.json", "no such file next to parent.json"),
        ("s3://bucket/x.json", "not a local file"),
        ("parent.json", "links back to a file already read"),
    ],
)
def test_a_link_that_cannot_be_followed_is_a_warning_naming_it(
    tmp_path: Path, where: str, said: str
) -> None:
    doc, warned = _load(
        _write(tmp_path / "parent.json", _traj([_agent("x")], continued_trajectory_ref=where))
    )
    assert len(doc["steps"]) == 1
    assert len(warned) == 1 and where in warned[0] and said in warned[0]
    assert "continued_trajectory_ref" in warned[0]


def test_copied_context_after_a_sub_agent_s_own_steps_began_is_a_warning() -> None:
    late = _traj([_agent("own"), _agent("copied?", is_copied_context=True)], trajectory_id="c")
    parent = _traj([_agent("x")], subagent_trajectories=[late])
    with pytest.warns(TrajectoryWarning, match=r"\.steps\[1\]: 1 step\(s\) marked is_copied"):
        load_trajectory(parent)


def test_steps_a_lone_trajectory_marks_as_copied_count_as_its_work_and_this_is_said() -> None:
    """A real 264-step run marked its first 229 steps is_copied_context with nothing they
    were copied from: every count lost most of the run's work, without a word (issue 53,
    row 14). Read alone, a continuation's copied prefix copies nothing read here either."""
    with pytest.warns(TrajectoryWarning) as caught:
        doc = load_trajectory(DATA / "continuation.json")
    (said,) = [str(w.message) for w in caught]
    assert "$.steps: 3 step(s) are marked is_copied_context" in said
    assert "counted as this run's work" in said
    sh = shape(normalize(doc))
    assert sh.llm_calls == 3 and sh.prompt_tokens == 120 + 700 + 760
    marked = _traj([_agent("early", is_copied_context=True), _agent("later")])
    with pytest.warns(TrajectoryWarning, match="1 step"):
        assert shape(normalize(load_trajectory(marked))).prompt_tokens == 20


def _delegating(ref: dict[str, Any]) -> dict[str, Any]:
    return _agent(
        "delegates",
        tool_calls=[{"tool_call_id": "c1", "function_name": "delegate", "arguments": {}}],
        observation={"results": [{"source_call_id": "c1", "subagent_trajectory_ref": [ref]}]},
    )


def test_a_sub_agent_reference_to_nothing_is_a_warning_naming_it() -> None:
    """A reference naming no embedded trajectory and no file was accepted in silence: the
    sub-agent's steps, calls and tokens were simply not counted (issue 53, row 16)."""
    dangling = _traj([_agent("x"), _delegating({"trajectory_id": "ghost"})])
    with pytest.warns(TrajectoryWarning) as caught:
        load_trajectory(dangling)
    (said,) = [str(w.message) for w in caught]
    assert "$.steps[1].observation.results[0].subagent_trajectory_ref[0]" in said
    assert (
        "sub-agent 'ghost' is neither in subagent_trajectories nor given a trajectory_path" in said
    )
    child = _traj([_agent("child work")], trajectory_id="ghost")
    whole = _traj(
        [_agent("x"), _delegating({"trajectory_id": "ghost"})], subagent_trajectories=[child]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_trajectory(whole)  # embedded: nothing to say
