"""``evalrunner show`` and ``evalrunner diff`` read ATIF files from any producer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalrunner.cli import main


def atif(*tools: str, tokens: Any = 10) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"source": "user", "message": "Capital of France?"}]
    for i, tool in enumerate(tools):
        steps.append(
            {
                "source": "agent",
                "message": "",
                "model_name": "m",
                "tool_calls": [{"tool_call_id": f"c{i}", "function_name": tool, "arguments": {}}],
                "observation": {"results": [{"source_call_id": f"c{i}", "content": "Paris"}]},
                "metrics": {"prompt_tokens": tokens, "completion_tokens": 2},
            }
        )
    steps.append({"source": "agent", "message": "Paris", "model_name": "m"})
    return {
        "schema_version": "ATIF-v1.8",
        "session_id": "s-1",
        "agent": {"name": "other-tool", "version": "1"},
        "steps": [{"step_id": i, **s} for i, s in enumerate(steps, start=1)],
    }


def write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def test_show_prints_what_the_run_did(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["show", write(tmp_path / "a.json", atif("lookup"))])
    assert result.exit_code == 0, result.output
    assert "tool calls  1  lookup" in result.output
    assert "answer      'Paris'" in result.output


def test_diff_exits_1_naming_the_change_and_0_when_the_behaviour_is_the_same(
    tmp_path: Path,
) -> None:
    one = write(tmp_path / "one.json", atif("lookup"))
    two = write(tmp_path / "two.json", atif("lookup", "lookup"))
    changed = CliRunner().invoke(main, ["diff", one, two])
    assert changed.exit_code == 1
    assert "tools: (lookup,) -> (lookup, lookup)" in changed.output
    assert "--- golden" in changed.output
    same = CliRunner().invoke(main, ["diff", one, write(tmp_path / "copy.json", atif("lookup"))])
    assert same.exit_code == 0 and "no behavioural change" in same.output


def test_a_repaired_deviation_is_a_warning_and_a_bad_file_one_line_exit_2(
    tmp_path: Path,
) -> None:
    text_tokens = write(tmp_path / "t.json", atif("lookup", tokens="12"))
    shown = CliRunner().invoke(main, ["show", text_tokens])
    assert shown.exit_code == 0
    assert "warning: " in shown.output and "number written as text '12'" in shown.output
    strict = CliRunner().invoke(main, ["show", "--strict", text_tokens])
    assert strict.exit_code == 2 and strict.output.startswith("error: ")
    utf16 = tmp_path / "u.json"
    utf16.write_bytes(json.dumps(atif()).encode("utf-16"))
    bad = CliRunner().invoke(main, ["show", str(utf16)])
    assert bad.exit_code == 2
    assert bad.output.count("\n") == 1 and "is not UTF-8 text" in bad.output


def test_show_and_diff_read_evalrunner_s_own_goldens_and_run_files(tmp_path: Path) -> None:
    # Before: "$.agent: Field required" for a golden, "$.schema_version" for a run file.
    golden = write(
        tmp_path / "golden.json",
        {"format_version": 1, "schema_version": "ATIF-v1.8", "shape": {}, "trajectory": atif()},
    )
    run_file = write(
        tmp_path / "run.json",
        {"format_version": 1, "record": {}, "trajectory": atif("lookup")},
    )
    shown = CliRunner().invoke(main, ["show", run_file])
    assert shown.exit_code == 0, shown.output
    assert "tool calls  1  lookup" in shown.output
    changed = CliRunner().invoke(main, ["diff", golden, run_file])
    assert changed.exit_code == 1, changed.output
    assert "tools: () -> (lookup,)" in changed.output


def test_a_golden_without_its_trajectory_is_named_by_that_field(tmp_path: Path) -> None:
    # Before: "$.agent: Field required", read as a trajectory, where pytest and validate
    # said "trajectory: Field required".
    golden = write(
        tmp_path / "golden.json", {"format_version": 1, "schema_version": "ATIF-v1.8", "shape": {}}
    )
    shown = CliRunner().invoke(main, ["show", golden])
    assert shown.exit_code == 2, shown.output
    assert shown.output.strip() == (
        f"error: {golden}: trajectory: Field required; regenerate the golden with "
        "--golden-update (a run file: run the night again)"
    )


def test_show_of_a_run_file_says_how_the_run_ended_not_crashed_for_an_endpoint_failure(
    tmp_path: Path,
) -> None:
    # Before: "crashed     yes" for a run whose endpoint failed (an infra_error, no crash).
    doc = atif()
    doc["steps"] = doc["steps"][:1]
    doc["extra"] = {"error": "InternalServerError (HTTP 503)"}
    record = {"outcome": "infra_error", "reason": "InternalServerError (HTTP 503)"}
    run_file = write(
        tmp_path / "run.json", {"format_version": 1, "record": record, "trajectory": doc}
    )
    shown = CliRunner().invoke(main, ["show", run_file])
    assert shown.exit_code == 0, shown.output
    assert "outcome     infra_error (InternalServerError (HTTP 503))" in shown.output.splitlines()
    assert "crashed" not in shown.output


def test_a_recording_given_to_show_or_diff_names_its_golden_beside_it(tmp_path: Path) -> None:
    # It said "$.schema_version: Field required", as if a trajectory were broken; then it
    # pointed at "its .golden.json beside it", a name no golden has (a review).
    golden = write(tmp_path / "t.json", {"format_version": 1, "trajectory": atif()})
    recordings = [
        write(tmp_path / "t.proxy.json", {"format_version": 1, "run_id": "r", "calls": []}),
        write(tmp_path / "t.llm.json", {"format_version": 2, "entries": []}),
    ]
    trajectory = write(tmp_path / "a.json", atif("lookup"))
    for recording in recordings:
        for args in (["show", recording], ["diff", trajectory, recording]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 2, result.output
            assert result.stderr.strip() == (
                f"error: {recording}: a recording of model calls, not a trajectory; its "
                f"golden is t.json beside it: evalrunner show {golden}"
            )
    judge = write(tmp_path / "t.judge.json", {"format_version": 1, "model": "m", "answers": []})
    result = CliRunner().invoke(main, ["show", judge])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {judge}: a recording of a judge's grades, not a trajectory; its golden is "
        f"t.json beside it: evalrunner show {golden}"
    )


def test_a_recording_without_its_golden_says_which_golden_is_missing(tmp_path: Path) -> None:
    recording = write(tmp_path / "test_japan.llm.json", {"format_version": 2, "entries": []})
    result = CliRunner().invoke(main, ["show", recording])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {recording}: a recording of model calls, not a trajectory; its golden would "
        f"be test_japan.json beside it, which is not there (pytest --golden-update writes it)"
    )


def test_a_results_manifest_given_to_show_points_at_its_run_files_and_the_night_commands(
    tmp_path: Path,
) -> None:
    # It said "$.schema_version: Field required", as if a trajectory were broken (a review).
    results = tmp_path / "int1"
    run_file = results / "runs" / "greets" / "openai_fake" / "0.json"
    run_file.parent.mkdir(parents=True)
    write(run_file, {"format_version": 1, "record": {}, "trajectory": atif()})
    manifest = {
        "format_version": 2,
        "suite": "demo",
        "models": ["openai/fake"],
        "runs": {"greets": 1},
        "scenarios": {"greets": "f"},
        "run_ids": ["greets/openai_fake/0"],
        "started_at": "2026-01-01T00:00:00Z",
        "evalrunner_version": "0.1.0",
    }
    shown = write(results / "manifest.json", manifest)
    for args in (["show", shown], ["diff", shown, str(run_file)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f"error: {shown}: a results directory's manifest, not a trajectory; show and diff "
            f"read its run files (e.g. {run_file}); for the night as a whole: evalrunner "
            f"explain --suite demo --results {results}, or evalrunner compare <reference "
            f"results> {results}"
        )
    assert CliRunner().invoke(main, ["show", str(run_file)]).exit_code == 0


def test_a_history_file_given_to_show_points_at_evalrunner_report(tmp_path: Path) -> None:
    # It said "trajectory is not UTF-8 text (byte 0xca at offset 7); save it as UTF-8
    # JSON" of a Parquet file (a review).
    history = tmp_path / "reports" / "history"
    (history / "team").mkdir(parents=True)
    for name in ("20260101T000000Z-0a1b2c3d.parquet", "20250101T000000Z-0a1b2c3d.json.gz"):
        path = history / "team" / name
        path.write_bytes(
            b"PAR1\x15\x04\x15\xca\x01\x00" if name.endswith("parquet") else b"\x1f\x8b"
        )
        result = CliRunner().invoke(main, ["show", str(path)])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f"error: {path}: a run history file, not a trajectory; read the history with "
            f"evalrunner report --history {history}"
        )


def test_a_suite_file_given_to_show_points_at_validate(tmp_path: Path) -> None:
    # It said "not valid JSON at line 1 column 1: Expecting value".
    suite = tmp_path / "suites" / "agent.yaml"
    suite.parent.mkdir()
    suite.write_text("format_version: 1\nname: agent\nscenarios: []\n")
    result = CliRunner().invoke(main, ["show", str(suite)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {suite}: a YAML file (a suite?), not a trajectory; check a suite with "
        "evalrunner validate; show and diff read ATIF trajectories, goldens and results' run "
        "files"
    )


def test_show_of_a_baseline_file_shows_its_typical_run(tmp_path: Path) -> None:
    # It said "$.schema_version: Field required", as if a trajectory were broken.
    baseline = {"format_version": 3, "nights": [], "fingerprint": "f", "typical": atif("lookup")}
    shown = CliRunner().invoke(main, ["show", write(tmp_path / "b.json", baseline)])
    assert shown.exit_code == 0, shown.output
    assert "tool calls  1  lookup" in shown.output
    bare = write(tmp_path / "old.json", {**baseline, "typical": None})
    result = CliRunner().invoke(main, ["show", bare])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {bare}: a baseline file without a typical run's trajectory; show and diff "
        "read ATIF trajectories, goldens and results' run files"
    )


def test_show_counts_runs_of_a_tool_and_says_which_calls_the_sub_agents_made(
    tmp_path: Path,
) -> None:
    # Before: one 2,000-character line for 300 calls, and a count (sub-agents' calls
    # included) beside a list of the agent's own calls only.
    doc = atif(*["lookup"] * 300, "write")
    sub = atif("search", "search")
    sub["trajectory_id"] = "sub-1"
    doc["subagent_trajectories"] = [sub]
    doc["steps"][-1]["observation"] = {
        "results": [{"subagent_trajectory_ref": [{"trajectory_id": "sub-1"}]}]
    }
    result = CliRunner().invoke(main, ["show", write(tmp_path / "a.json", doc)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("tool calls"))
    assert line == "tool calls  303  lookup x300 > write  (+2 by sub-agents)"


def test_a_model_s_terminal_escapes_are_shown_not_obeyed(tmp_path: Path) -> None:
    """A tool name the model chose with a terminal's escape sequence in it (clear the
    screen, retitle the window) was printed raw by show and diff (issue 53, row 9)."""
    hostile = "look\x1b[2J\x1b]0;pwned\x07up"
    one = write(tmp_path / "one.json", atif("lookup"))
    two = write(tmp_path / "two.json", atif(hostile))
    for args in (["show", two], ["diff", one, two]):
        result = CliRunner().invoke(main, args)
        assert "\x1b" not in result.output and "\x07" not in result.output, args
        assert "look\\x1b[2J\\x1b]0;pwned\\x07up" in result.output, args
