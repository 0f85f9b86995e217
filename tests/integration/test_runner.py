"""The live runner end to end against a fault-injecting endpoint.

A suite mixing healthy, wrong, weak, failing-endpoint, flaky, fault-swallowing
and crashing scenarios runs concurrently; every planned run must end with
exactly one outcome (none lost, none counted twice), endpoint faults must
never pass for behaviour, and the ``evalrunner run`` exit code must follow
from the outcomes.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Fault, Reply
from night_cli import cli, summary_table
from runner_agents import FAKE_KEY, fake_pool, write_suite
from suite_runs import run_suite

from evalrunner.errors import ConfigError, FileFormatError
from evalrunner.live._driver import RunReport
from evalrunner.live._results import ResultsDir, load_records
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import OUTCOMES, RunRecord
from evalrunner.suite._settings import Suite

SLUG = "openai_fake"  # model_slug("openai/fake")

# scenario id -> (agent, the outcome every run of it must have)
MIXED: dict[str, tuple[str, str]] = {
    "pass": ("tool_agent", "passed"),
    "apass": ("atool_agent", "passed"),
    "fail": ("tool_agent", "failed"),
    "skip": ("tool_agent", "skipped"),
    "down": ("tool_agent", "infra_error"),
    "limited": ("atool_agent", "infra_error"),
    "flaky": ("nonce_agent", "passed"),
    "swallow": ("catching_agent", "infra_error"),
    "crash": ("crashing_agent", "crashed"),
}


def scenario(sid: str, agent: str) -> dict[str, Any]:
    return {
        "id": sid,
        "agent": f"runner_agents:{agent}",
        "input": f"[{sid}] What is the capital of France?",
        "tools": ["lookup_capital"],
        "checks": {"answer_contains": ["Paris"]},
    }


def mixed_responder() -> Any:
    """Answers by the scenario tag in the user message; 'flaky' fails each run's first try."""
    tries: Counter[str] = Counter()
    lock = threading.Lock()

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        tag = re.match(r"\[(\w+)\]", user).group(1)  # type: ignore[union-attr]
        has_tool_result = any(m["role"] == "tool" for m in messages)
        if tag in ("pass", "apass"):
            if not has_tool_result:
                return Reply(None, tool_calls=[("lookup_capital", '{"country": "France"}')])
            return Reply("The capital of France is Paris.")
        if tag == "fail":
            return Reply("Lyon.")
        if tag == "skip":
            return Reply("  ")
        if tag == "down":
            return Fault("503")
        if tag == "limited":
            return Fault("429", retry_after=0.01)
        if tag == "swallow":
            return Fault("reset")
        if tag == "flaky":
            system = messages[0]["content"]
            with lock:
                tries[system] += 1
                first = tries[system] == 1
            return Fault("500") if first else Reply("Paris.")
        return Reply("Paris.")  # crash: the agent raises after this answer

    return respond


def planned_ids(scenarios: list[str], runs: int) -> set[str]:
    return {f"{sid}/{SLUG}/{i}" for sid in scenarios for i in range(runs)}


def check_results_dir(out: Path, expected: set[str]) -> list[RunRecord]:
    """Exactly one run file per planned run, each with one outcome, and a finished manifest."""
    results = ResultsDir(out)
    files = results.run_files()
    records = [results.read_run(p)[0] for p in files]
    ids = [r.run_id for r in records]
    assert len(files) == len(expected), f"{len(files)} run files for {len(expected)} planned runs"
    assert len(set(ids)) == len(ids), "a run id appears twice"
    assert set(ids) == expected
    for path, record in zip(files, records, strict=True):
        assert path == results.run_path(record.run_id)
        assert record.outcome in OUTCOMES
    manifest = results.read_manifest()
    assert manifest.status == "finished" and manifest.ended_at is not None
    return records


def run(
    suite: Suite | Path,
    out: Path,
    ep: FakeEndpoint,
    progress: io.StringIO | None = None,
    **options: Any,
) -> RunReport:
    """run_suite against the fake endpoint, progress lines into `progress`."""
    return asyncio.run(
        run_suite(
            suite if isinstance(suite, Suite) else load_suite(suite),
            out=out,
            pool=fake_pool(ep.api_base),
            progress_stream=progress or io.StringIO(),
            **options,
        )
    )


# ------------------------------------------------------------------------- run_suite


def test_mixed_faults_every_run_gets_exactly_one_outcome(tmp_path: Path) -> None:
    runs = 4
    # timeout_s 10: a loaded 2-core machine can take over FAST_SETTINGS' 2 s for a sync
    # agent's first litellm call in a fresh thread, which would be an infra_error.
    path = write_suite(
        tmp_path,
        "mixed",
        [scenario(s, a) for s, (a, _) in MIXED.items()],
        runs=runs,
        concurrency=8,
        timeout_s=10,
    )
    progress = io.StringIO()
    with FakeEndpoint(responder=mixed_responder(), latency=0.01) as ep:
        report = run(path, tmp_path / "out", ep, progress)
    expected = planned_ids(list(MIXED), runs)
    assert len(report.records) == len(expected) and {r.run_id for r in report.records} == expected
    records = check_results_dir(tmp_path / "out", expected)
    assert sorted(records, key=lambda r: r.run_id) == sorted(report.records, key=lambda r: r.run_id)

    by_scenario: dict[str, Counter[str]] = {}
    for r in records:
        by_scenario.setdefault(r.scenario, Counter())[r.outcome] += 1
    assert by_scenario == {sid: Counter({outcome: runs}) for sid, (_, outcome) in MIXED.items()}

    infra = [r for r in records if r.scenario in ("down", "limited", "swallow")]
    assert all(r.outcome == "infra_error" and r.attempts == 3 and r.checks == {} for r in infra)
    assert all(r.attempts == 2 for r in records if r.scenario == "flaky")
    assert all(
        r.attempts == 1 for r in records if r.scenario in ("pass", "apass", "fail", "skip", "crash")
    )
    assert {rid for rid, _ in report.crashes} == {
        r.run_id for r in records if r.scenario == "crash"
    }
    # One progress line per run, the last one complete.
    lines = progress.getvalue().splitlines()
    assert len(lines) == len(expected)
    assert lines[-1].startswith(
        f"[{len(expected)}/{len(expected)}] passed {3 * runs} failed {runs} skipped {runs} infra {3 * runs} crashed {runs}"
    )


def test_runs_overrides_and_scenario_filter_plan_exactly(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path, "plan", [scenario(s, MIXED[s][0]) for s in ("pass", "fail", "skip")], runs=5
    )
    with FakeEndpoint(responder=mixed_responder()) as ep:
        report = run(path, tmp_path / "out", ep, runs=2, scenario_ids=["fail", "skip"])
    expected = planned_ids(["fail", "skip"], 2)
    check_results_dir(tmp_path / "out", expected)
    assert Counter(r.outcome for r in report.records) == {"failed": 2, "skipped": 2}
    manifest = ResultsDir(tmp_path / "out").read_manifest()
    assert manifest.runs == {"fail": 2, "skip": 2} and manifest.models == ["openai/fake"]


def test_concurrency_is_bounded_and_used(tmp_path: Path) -> None:
    arrivals: list[float] = []
    lock = threading.Lock()
    latency = 0.3

    def respond(body: dict[str, Any], n: int) -> Reply:
        with lock:
            arrivals.append(time.monotonic())
        return Reply("Paris.")

    path = write_suite(
        tmp_path,
        "conc",
        [{"id": "one", "agent": "runner_agents:timed_agent", "input": "Capital of France?"}],
        runs=8,
        concurrency=3,
        timeout_s=5,
    )
    with FakeEndpoint(responder=respond, latency=latency) as ep:
        run(path, tmp_path / "out", ep)
    # Each request is in flight for at least `latency` after it arrives; a new run starts
    # only when one finished, so these lower-bound intervals never overlap more than 3 deep.
    overlap = max(sum(1 for b in arrivals if a <= b < a + latency) for a in arrivals)
    assert len(arrivals) == 8
    assert 2 <= overlap <= 3


def test_load_records_is_one_row_per_run_with_the_documented_columns(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path, "frame", [scenario(s, MIXED[s][0]) for s in ("pass", "skip", "down")], runs=3
    )
    with FakeEndpoint(responder=mixed_responder()) as ep:
        run(path, tmp_path / "out", ep)
    frame = load_records(tmp_path / "out")
    documented = [
        "run_id",
        "suite",
        "scenario",
        "model",
        "index",
        "row",
        "outcome",
        "reason",
        "step_count",
        "llm_calls",
        "tool_calls",
        "tools",
        "tools_alone",
        "subagent_count",
        "crashed",
        "prompt_tokens",
        "completion_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "judge_cost_usd",
        "tool_errors",
        "tool_latency_s",
        "final_answer",
        "content_hash",
        "latency_s",
        "attempts",
        "started_at",
        "checks",
        "scores",
        "judge_grades",
        "judge_agreed",
    ]
    assert list(frame.columns) == documented == list(RunRecord.model_fields)
    assert len(frame) == 9 and frame["run_id"].is_unique
    assert sorted(frame["run_id"]) == sorted(planned_ids(["pass", "skip", "down"], 3))
    assert frame.groupby("scenario")["outcome"].agg(lambda s: sorted(set(s))).to_dict() == {
        "down": ["infra_error"],
        "pass": ["passed"],
        "skip": ["skipped"],
    }
    row = frame[frame["scenario"] == "pass"].iloc[0]
    assert (
        row["tools"] == ["lookup_capital"]
        and row["llm_calls"] == 2
        and row["checks"] == {"answer_contains:Paris": True}
    )
    assert str(frame["latency_s"].dtype) == "float64" and str(frame["index"].dtype) == "int64"
    with pytest.raises(FileFormatError, match=r"no manifest\.json"):
        load_records(tmp_path / "nowhere")


def test_results_files_keep_no_api_key(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "key", [scenario("pass", "tool_agent")])
    with FakeEndpoint(responder=mixed_responder()) as ep:
        run(path, tmp_path / "out", ep)
        assert ep.requests  # the key was sent...
    for file in (tmp_path / "out").rglob("*.json"):  # ...and never written
        assert FAKE_KEY not in file.read_text()
    doc = json.loads(ResultsDir(tmp_path / "out").run_files()[0].read_text())
    assert doc["record"]["outcome"] == "passed" and doc["trajectory"]["steps"]


def test_an_existing_results_dir_is_refused_without_resume(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "again", [scenario("fail", "tool_agent")], runs=2)
    suite = load_suite(path)
    with FakeEndpoint(responder=mixed_responder()) as ep:
        run(suite, tmp_path / "out", ep)
        before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
        with pytest.raises(ConfigError, match="already holds results"):
            run(suite, tmp_path / "out", ep)
        with pytest.raises(ConfigError, match="nothing to resume"):
            asyncio.run(
                run_suite(suite, out=tmp_path / "fresh", resume=True, pool=fake_pool(ep.api_base))
            )
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before
    assert not (tmp_path / "fresh").exists()


# ---------------------------------------------------------------- the CLI's exit codes


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    # `run` keeps relative defaults (history, baselines): keep them under tmp_path.
    monkeypatch.chdir(tmp_path)
    with FakeEndpoint(responder=mixed_responder()) as ep:
        yield ep


def test_exit_0_with_failures_and_1_with_fail_on_failure(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    write_suite(
        tmp_path,
        "behaviour",
        [scenario(s, MIXED[s][0]) for s in ("pass", "fail", "skip", "down")],
        runs=2,
    )
    result = cli(endpoint, tmp_path, "--suite", "behaviour", "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    # The per-scenario table on stdout: one row per scenario with its counts.
    rows = summary_table(result.stdout)
    assert set(rows) == {"pass", "fail", "skip", "down"}
    assert rows["fail"][1:8] == ["openai/fake", "2", "0", "2", "0", "0", "0"]
    assert rows["down"][1:7] == ["openai/fake", "2", "0", "0", "0", "2"]
    check_results_dir(tmp_path / "a", planned_ids(["pass", "fail", "skip", "down"], 2))

    result = cli(
        endpoint,
        tmp_path,
        "--suite",
        "behaviour",
        "--out",
        str(tmp_path / "b"),
        "--fail-on-failure",
    )
    assert result.exit_code == 1, result.output
    # Said last (before: exit 1 with no line saying why).
    assert result.stderr.splitlines()[-1] == (
        "exit 1: 2 runs failed their checks (--fail-on-failure)"
    )
    assert "exit 1:" not in result.stdout
    # Infra errors and skips alone are not failures, even with --fail-on-failure.
    result = cli(
        endpoint,
        tmp_path,
        "--suite",
        "behaviour",
        "--scenario",
        "skip",
        "--scenario",
        "down",
        "--out",
        str(tmp_path / "c"),
        "--fail-on-failure",
    )
    assert result.exit_code == 0, result.output


def test_exit_1_with_crashes_and_the_traceback_on_stderr(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    write_suite(
        tmp_path,
        "crashy",
        [scenario("pass", "tool_agent"), scenario("crash", "crashing_agent")],
        runs=2,
    )
    result = cli(endpoint, tmp_path, "--suite", "crashy", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output
    assert result.stderr.count("CRASHED crash/openai_fake/") == 2
    assert "Traceback" in result.stderr and "ValueError: tool exploded" in result.stderr
    check_results_dir(tmp_path / "out", planned_ids(["pass", "crash"], 2))


def test_a_crash_traceback_on_stderr_shows_no_api_key(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    write_suite(tmp_path, "leaky", [scenario("crash", "leaky_crashing_agent")], runs=1)
    result = cli(endpoint, tmp_path, "--suite", "leaky", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output
    assert "RuntimeError: upstream refused key [REDACTED]" in result.stderr
    assert FAKE_KEY not in result.stderr


def test_exit_2_for_config_errors_with_one_line(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    write_suite(tmp_path, "ok", [scenario("pass", "tool_agent"), scenario("fail", "tool_agent")])
    result = cli(
        endpoint, tmp_path, "--suite", "ok", "--scenario", "nope", "--out", str(tmp_path / "out")
    )
    assert result.exit_code == 2
    assert (
        result.stderr.strip().splitlines()[-1]
        == "error: suite 'ok' has no scenario 'nope'; its scenarios: pass, fail"
    )
    assert not (tmp_path / "out").exists()

    (tmp_path / "broken.yaml").write_text(
        "format_version: 1\nname: broken\nruns: many\nscenarios: []\n"
    )
    result = cli(endpoint, tmp_path, "--suite", "broken", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "broken.yaml:3" in errors[0] and "runs" in errors[0]
    assert "Traceback" not in result.output

    result = cli(endpoint, tmp_path, "--suite", "ok", "--resume")  # --resume needs --out
    assert result.exit_code == 2 and "--out" in result.output
    result = cli(endpoint, tmp_path, "--suite", "ok", "--runs", "0")
    assert result.exit_code == 2
    assert endpoint.requests == []  # none of these reached a model


def _crashing_night(
    tmp_path: Path, endpoint: FakeEndpoint, agents: dict[str, str]
) -> tuple[Any, set[tuple[str, str, str | None]]]:
    """A night of these scenarios (id -> agent), 2 runs each, that some crash: its result,
    with every planned run on disk, and each run's (scenario, outcome, reason)."""
    write_suite(tmp_path, "crashes", [scenario(s, a) for s, a in agents.items()], runs=2)
    result = cli(endpoint, tmp_path, "--suite", "crashes", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output  # crashes, as any crashing agent's night
    check_results_dir(tmp_path / "out", planned_ids(list(agents), 2))
    records = [read(p) for p in sorted((tmp_path / "out" / "runs").rglob("*.json"))]
    return result, {(r["scenario"], r["outcome"], r["reason"]) for r in records}


def test_an_agent_that_calls_sys_exit_crashes_its_run_and_the_night_goes_on(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    # sys.exit(3) in agent code used to end the whole night as an "outage" (exit 3).
    agents = {"exit": "exiting_agent", "aexit": "aexiting_agent", "pass": "tool_agent"}
    result, found = _crashing_night(tmp_path, endpoint, agents)
    assert "never retrieved" not in result.stderr and "outage" not in result.stderr
    assert found == {
        ("exit", "crashed", "AgentExited: the agent called sys.exit(3)"),
        ("aexit", "crashed", "AgentExited: the agent called sys.exit('fatal: config missing')"),
        ("pass", "passed", None),
    }


def test_an_agent_s_own_keyboard_interrupt_or_cancel_crashes_its_run_and_the_night_goes_on(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    """An agent that raises KeyboardInterrupt, CancelledError or another BaseException of
    its own ended the night (a traceback, or exit 130), losing the healthy runs, and every
    --resume died on the same run (issue 53, row 2). Only a real Ctrl-C or SIGTERM, which
    the CLI's signal handler notes, stops a night."""
    agents = {
        "interrupt": "interrupting_agent",
        "ainterrupt": "ainterrupting_agent",
        "cancel": "cancelling_agent",
        "abort": "aborting_agent",
        "pass": "tool_agent",
    }
    _, found = _crashing_night(tmp_path, endpoint, agents)
    assert found == {
        (
            "interrupt",
            "crashed",
            "AgentStopped: the agent raised KeyboardInterrupt(the agent's own)",
        ),
        (
            "ainterrupt",
            "crashed",
            "AgentStopped: the agent raised KeyboardInterrupt(the agent's own)",
        ),
        ("cancel", "crashed", "AgentStopped: the agent raised CancelledError()"),
        ("abort", "crashed", "AgentStopped: the agent raised Abort(give up)"),
        ("pass", "passed", None),
    }


def test_a_run_whose_model_calls_went_past_capture_is_an_infra_error_naming_them(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    """A call through litellm's function bound before capture reached the endpoint and was
    in no step: the run's shape counted half its work as its behaviour (issue 53, row 19)."""
    agents = {"past": "past_capture_agent", "pass": "tool_agent"}
    write_suite(tmp_path, "past", [scenario(s, a) for s, a in agents.items()], runs=2)
    result = cli(endpoint, tmp_path, "--suite", "past", "--out", str(tmp_path / "out"))
    assert "Traceback" not in result.output
    check_results_dir(tmp_path / "out", planned_ids(list(agents), 2))
    records = [read(p) for p in sorted((tmp_path / "out" / "runs").rglob("*.json"))]
    found = {(r["scenario"], r["outcome"], r["reason"]) for r in records}
    assert found == {
        (
            "past",
            "infra_error",
            "capture saw 1 of the agent's 2 model calls; 1 went to the endpoint past it, "
            "through litellm's completion bound before capture (`from litellm import "
            "completion` at import). Call it through the module (litellm.completion(...)), or "
            "run the agent through the capture proxy (`evalrunner proxy`, docs/proxy.md)",
        ),
        ("pass", "passed", None),
    }


def test_an_async_agent_blocking_the_loop_times_out_alone_not_the_runs_beside_it(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    """One async agent's synchronous sleep held the shared event loop past every run's
    timeout, and the healthy runs beside it ended "timed out in the agent" (issue 53,
    row 6). The runs beside it are not charged for its stall."""
    agents = {"block": "blocking_agent", "wait": "patient_agent"}
    scenarios = [scenario(s, a) for s, a in agents.items()]
    write_suite(tmp_path, "stall", scenarios, runs=2, timeout_s=3)
    result = cli(endpoint, tmp_path, "--suite", "stall", "--out", str(tmp_path / "out"))
    records = [read(p) for p in sorted((tmp_path / "out" / "runs").rglob("*.json"))]
    found = {(r["scenario"], r["outcome"]) for r in records}
    assert found == {("block", "crashed"), ("wait", "passed")}, result.output
    blocked = [r["reason"] for r in records if r["scenario"] == "block"]
    assert all("timed out in the agent" in (why or "") for why in blocked), blocked


def test_an_agent_that_changes_directory_moves_none_of_the_night_s_files(
    tmp_path: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default relative --out and history, an agent's os.chdir put the run
    files, a second manifest and the history under its own directory, and left --out
    "running" with no runs, exit 0 (issue 53, row 4). The paths are fixed at the start."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("WANDER_TO", str(tmp_path / "workspace"))
    write_suite(project / "suites", "wander", [scenario("w", "wandering_agent")], runs=3)
    try:
        result = cli(endpoint, project / "suites", "--suite", "wander", "--out", "results/n1")
    finally:
        monkeypatch.chdir(project)  # the agent left the process elsewhere
    assert result.exit_code == 0, result.output
    manifest = json.loads((project / "results" / "n1" / "manifest.json").read_text())
    assert manifest["status"] == "finished"
    assert len(list((project / "results" / "n1" / "runs").rglob("*.json"))) == 3
    assert any((project / "reports").rglob("*")), "the history is where it was asked for"
    assert not any(p.is_file() for p in (tmp_path / "workspace").rglob("*"))


def read(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8"))["record"])


def test_a_disk_that_fills_mid_night_is_one_line_naming_the_file_and_how_to_resume(
    tmp_path: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from evalrunner import _jsonio
    from evalrunner.live import _results

    real = _jsonio.write_json
    written: list[Path] = []

    def fills_up(path: Path, obj: Any, **how: Any) -> None:
        if len(written) >= 3:  # the manifest and two runs fit
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        written.append(path)
        real(path, obj, **how)

    monkeypatch.setattr(_results, "write_json", fills_up)
    write_suite(tmp_path, "full", [scenario("pass", "tool_agent")], runs=6, concurrency=1)
    out = tmp_path / "out"
    result = cli(endpoint, tmp_path, "--suite", "full", "--out", str(out))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(f"error: cannot write {out}/")  # the file that did not fit
    assert "No space left on device" in lines[0]
    assert f"evalrunner run --suite full --out {out} --resume" in lines[0]
    monkeypatch.setattr(_results, "write_json", real)  # room again: the night finishes
    resumed = cli(endpoint, tmp_path, "--suite", "full", "--out", str(out), "--resume")
    assert resumed.exit_code == 0, resumed.output
    check_results_dir(out, planned_ids(["pass"], 6))
