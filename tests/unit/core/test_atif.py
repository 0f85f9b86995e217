"""Loading ATIF documents from other tools: lenient with a warning, strict on request,
and a broken document is one TrajectoryError line naming the JSON path, never a
traceback of another type."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalrunner.core._atif import TrajectoryWarning, load, validate
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape
from evalrunner.errors import TrajectoryError


def clean() -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.8",
        "session_id": "sess-1",
        "agent": {"name": "other-tool", "version": "2.1", "model_name": "claude-sonnet"},
        "steps": [
            {
                "step_id": 1,
                "timestamp": "2025-03-01T10:00:00Z",
                "source": "user",
                "message": "Capital of France?",
            },
            {
                "step_id": 2,
                "timestamp": "2025-03-01T10:00:02Z",
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {
                        "tool_call_id": "toolu_01",
                        "function_name": "lookup",
                        "arguments": {"country": "France"},
                    }
                ],
                "observation": {"results": [{"source_call_id": "toolu_01", "content": "Paris"}]},
                "metrics": {"prompt_tokens": 40, "completion_tokens": 8},
            },
            {"step_id": 3, "source": "agent", "message": "Paris."},
        ],
    }


def messy(version: Any) -> dict[str, Any]:
    """What other producers write: old or bare versions, arguments as JSON text,
    object observation content, step-level usage."""
    doc = clean()
    doc["schema_version"] = version
    step = doc["steps"][1]
    step["tool_calls"][0]["arguments"] = '{"country": "France"}'
    step["observation"]["results"][0]["content"] = {"capital": "Paris", "source": "atlas"}
    step["usage"] = step.pop("metrics") | {"total_tokens": 48}
    return doc


def _load_collecting(doc: Any, **kwargs: Any) -> tuple[dict[str, Any], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = load(doc, **kwargs)
    assert all(issubclass(w.category, TrajectoryWarning) for w in caught)
    return out, [str(w.message) for w in caught]


def test_a_clean_document_loads_strictly_without_warnings() -> None:
    doc, caught = _load_collecting(clean(), strict=True)
    assert caught == [] and doc == clean()


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("ATIF-v1.2", "ATIF-v1.2"),
        ("ATIF-v1.3", "ATIF-v1.3"),
        ("1.4", "ATIF-v1.4"),
        ("v1.5", "ATIF-v1.5"),
        ("ATIF-v1.6", "ATIF-v1.6"),
        ("atif-v1.7", "ATIF-v1.7"),
        ("ATIF-v1.8", "ATIF-v1.8"),
        (1.4, "ATIF-v1.4"),
    ],
)
def test_messy_documents_load_leniently_with_a_warning_per_repair(
    version: Any, expected: str
) -> None:
    doc, caught = _load_collecting(messy(version))
    assert doc["schema_version"] == expected
    step = doc["steps"][1]
    assert step["tool_calls"][0]["arguments"] == {"country": "France"}
    assert json.loads(step["observation"]["results"][0]["content"]) == {
        "capital": "Paris",
        "source": "atlas",
    }
    assert step["metrics"] == {"prompt_tokens": 40, "completion_tokens": 8} and "usage" not in step
    repairs = [
        "trajectory: $.steps[1].usage: non-standard step-level 'usage' read as 'metrics'",
        "trajectory: $.steps[1].tool_calls[0].arguments: JSON string parsed into an object",
        "trajectory: $.steps[1].observation.results[0].content: object content serialised to a JSON string",
    ]
    if version != expected:
        repairs.insert(0, f"trajectory: $.schema_version: {version!r} read as {expected!r}")
    assert caught == repairs
    validate(doc)  # the repaired document is valid ATIF


@pytest.mark.parametrize("version", ["ATIF-v1.2", "ATIF-v1.8"])
def test_strict_mode_rejects_messy_documents(version: str) -> None:
    with pytest.raises(TrajectoryError) as info:
        load(messy(version), strict=True)
    assert (
        str(info.value)
        == "trajectory: $.steps[1].tool_calls[0].arguments: Input should be a valid dictionary"
    )


def test_strict_mode_rejects_odd_version_tags_also_in_subagents() -> None:
    with pytest.raises(TrajectoryError) as info:
        load(messy("1.4"), strict=True)
    assert (
        str(info.value)
        == "trajectory: $.schema_version: '1.4' is not a version tag; expected 'ATIF-v1.4'"
    )
    doc = clean()
    doc["subagent_trajectories"] = [
        {
            "schema_version": "ATIF-v1.9",
            "trajectory_id": "s",
            "agent": {"name": "s", "version": "1"},
            "steps": [],
        }
    ]
    for strict in (False, True):
        with pytest.raises(TrajectoryError) as info:
            load(doc, strict=strict)
        assert str(info.value) == (
            "trajectory: $.subagent_trajectories[0].schema_version: 'ATIF-v1.9' is not a supported ATIF version "
            "(ATIF-v1.2 to ATIF-v1.8)"
        )
    doc["subagent_trajectories"][0]["schema_version"] = "1.7"
    with pytest.warns(
        TrajectoryWarning,
        match=r"\$\.subagent_trajectories\[0\]\.schema_version: '1\.7' read as 'ATIF-v1\.7'",
    ):
        assert load(doc)["subagent_trajectories"][0]["schema_version"] == "ATIF-v1.7"


def test_messy_input_is_not_modified_and_normalises_like_the_clean_one() -> None:
    original = messy("1.4")
    before = copy.deepcopy(original)
    with pytest.warns(TrajectoryWarning):
        loaded = load(original)
    assert original == before
    norm = normalize(loaded)
    assert normalize(norm) == norm
    assert norm["steps"][1]["tool_calls"][0]["tool_call_id"] == "call_1"
    assert norm["steps"][1]["observation"]["results"][0]["source_call_id"] == "call_1"
    # Same behaviour as the clean document, apart from the version and the
    # content that really is different (object vs string observation).
    assert shape(norm).model_dump(exclude={"content_hash"}) == shape(normalize(clean())).model_dump(
        exclude={"content_hash"}
    )
    # And the unrepaired document normalises without error too.
    assert normalize(normalize(before)) == normalize(before)


def test_load_from_path_text_and_model(tmp_path: Path) -> None:
    from atif import Trajectory

    path = tmp_path / "t.json"
    path.write_text(json.dumps(clean()))
    assert load(path, strict=True) == clean()
    assert load(json.dumps(clean()), strict=True) == clean()
    assert load(Trajectory.model_validate(clean()), strict=True) == clean()
    with pytest.raises(TrajectoryError, match=r"t\.json: \$\.steps\[2\]\.source"):
        bad = clean()
        bad["steps"][2]["source"] = "robot"
        path.write_text(json.dumps(bad))
        load(path)


def _broken(edit: str) -> dict[str, Any]:
    doc = clean()
    if edit == "step_id":
        doc["steps"][2]["step_id"] = 5
    elif edit == "agent":
        del doc["agent"]
    elif edit == "join":
        doc["steps"][1]["observation"]["results"][0]["source_call_id"] = "toolu_99"
    elif edit == "version":
        doc["schema_version"] = "ATIF-v2.0"
    elif edit == "steps":
        doc["steps"] = "none"
    elif edit == "tool_calls_number":
        doc["steps"][1]["tool_calls"] = 3
    elif edit == "results_number":
        doc["steps"][1]["observation"]["results"] = True
    elif edit == "user_tool_calls":
        doc["steps"][0]["tool_calls"] = []
    elif edit == "subagent_without_id":
        doc["subagent_trajectories"] = [
            {"schema_version": "ATIF-v1.8", "agent": {"name": "s", "version": "1"}, "steps": []}
        ]
    elif edit == "timestamp":
        doc["steps"][0]["timestamp"] = "yesterday"
    return doc


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            "step_id",
            "trajectory: $: steps[2].step_id=5 is not sequential; expected 3.",
        ),
        ("agent", "trajectory: $.agent: Field required"),
        (
            "join",
            "trajectory: $.steps[1]: observation.results[*].source_call_id='toolu_99' does not match any tool_call in step 2.",
        ),
        (
            "version",
            "trajectory: $.schema_version: 'ATIF-v2.0' is not a supported ATIF version (ATIF-v1.2 to ATIF-v1.8)",
        ),
        ("steps", "trajectory: $.steps: Input should be a valid list"),
        ("tool_calls_number", "trajectory: $.steps[1].tool_calls: Input should be a valid list"),
        (
            "results_number",
            "trajectory: $.steps[1].observation.results: Input should be a valid list",
        ),
        (
            "subagent_without_id",
            "trajectory: $: subagent_trajectories[0] must set `trajectory_id` when embedded in a parent trajectory.",
        ),
        (
            "timestamp",
            "trajectory: $.steps[0].timestamp: timestamp must be ISO 8601, got 'yesterday'",
        ),
    ],
)
def test_broken_documents_are_one_line_naming_the_path(edit: str, expected: str) -> None:
    for strict in (False, True):
        with pytest.raises(TrajectoryError) as info:
            load(_broken(edit), strict=strict)
        assert str(info.value) == expected


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def test_any_odd_value_anywhere_is_a_trajectory_error_or_loads() -> None:
    """Put odd values at every position of a messy document: each load either
    succeeds or raises TrajectoryError with one line; nothing else escapes."""
    template = messy("1.4")
    template["subagent_trajectories"] = [
        {
            "schema_version": "1.6",
            "trajectory_id": "sub",
            "agent": {"name": "s", "version": "1"},
            "steps": [{"step_id": 1, "source": "user", "message": "x"}],
        }
    ]
    odd_values: list[Any] = [7, -1.5, True, None, "x", [], {}, [3], {"a": []}]
    seen = 0
    for path in _paths(template):
        for value in odd_values:
            doc = copy.deepcopy(template)
            target = doc
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            for strict in (False, True):
                seen += 1
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", TrajectoryWarning)
                        load(doc, strict=strict)
                except TrajectoryError as exc:
                    assert "\n" not in str(exc) and str(exc).startswith("trajectory: "), (
                        path,
                        value,
                    )
    assert seen > 500
    for source in ["{", "[]", "null", "", 3, None, b"{}", ["x"]]:
        with pytest.raises(TrajectoryError) as info:
            load(source)
        assert "\n" not in str(info.value)
    with pytest.raises(
        TrajectoryError, match=r"^/nonexistent/trajectory\.json: trajectory not found$"
    ):
        load(Path("/nonexistent/trajectory.json"))
