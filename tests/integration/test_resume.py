"""A results directory survives ``kill -9`` and ``--resume`` finishes it exactly.

A real ``evalrunner run`` process is killed mid-way; ``--resume`` on the same
``--out`` must end with the same run ids an uninterrupted run produces, none
twice, none missing, the runs finished before the kill untouched. Resuming a
directory whose suite changed, or running into one without ``--resume``, is
refused with exit 2 and changes nothing.
"""

from __future__ import annotations

import asyncio
import io
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint
from night_process import (
    RUNS,
    SCENARIOS,
    error_line,
    evalrunner,
    interrupt_later,
    planned,
    respond,
    start,
    stop,
    suite_file,
    wait_for_runs,
)
from runner_agents import fake_pool
from suite_runs import run_suite

from evalrunner.errors import ConfigError
from evalrunner.live._results import ResultsDir
from evalrunner.suite._loader import load_suite


def snapshot(root: Path) -> dict[Path, bytes]:
    """Every file's bytes, but the lock file's: it holds the pid of the last process that
    locked the directory, which a refused process may be (it locks before it checks)."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def killed_after(ep: FakeEndpoint, tmp_path: Path, out: Path, runs: int) -> None:
    """A night of the resumable suite into ``out``, killed (-9) once ``runs`` are done."""
    proc = start(ep, tmp_path, "--suite", "resumable", "--out", str(out))
    wait_for_runs(proc, out, runs)
    stop(proc, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL


def test_resume_after_kill_9_finishes_exactly_the_planned_runs(tmp_path: Path) -> None:
    suite_file(tmp_path)
    out = tmp_path / "out"
    results = ResultsDir(out)
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        killed_after(ep, tmp_path, out, 4)

        before = {p: p.read_bytes() for p in results.run_files()}
        assert 4 <= len(before) < len(planned()), "the kill came too late to test anything"
        assert results.read_manifest().status == "running"  # killed: nobody wrote 'interrupted'
        # Every file on disk is a whole, readable run (atomic writes).
        assert all(rid in planned() for rid in (r.run_id for r in results.records()))

        time.sleep(0.2)  # let the endpoint finish reading whatever the killed process had sent
        requests_before = len(ep.requests)
        resumed = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out), "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resumed: {len(before)} runs were already done" in resumed.stderr
        assert "ended without closing it" in resumed.stderr  # killed: said on resume
        # Only the missing runs went back to the model (two calls each).
        assert len(ep.requests) - requests_before == 2 * (len(planned()) - len(before))

    files = results.run_files()
    records = [results.read_run(p)[0] for p in files]
    ids = [r.run_id for r in records]
    assert len(ids) == len(set(ids)) == len(planned()) and set(ids) == planned()
    assert all(r.outcome == "passed" for r in records)
    for path, data in before.items():  # runs finished before the kill were not redone
        assert path.read_bytes() == data
    manifest = results.read_manifest()
    assert (manifest.status, manifest.invocations) == ("finished", 2)
    assert manifest.runs == {sid: RUNS for sid in SCENARIOS}

    # The same suite uninterrupted: the same runs with the same outcomes and shapes.
    with FakeEndpoint(responder=respond) as ep:
        report = asyncio.run(
            run_suite(
                load_suite(tmp_path / "resumable.yaml"),
                out=tmp_path / "ref",
                pool=fake_pool(ep.api_base),
                progress_stream=io.StringIO(),
            )
        )

    def key(r: Any) -> tuple[Any, ...]:
        return (r.run_id, r.outcome, r.tools, r.final_answer, r.step_count, r.llm_calls)

    assert sorted(map(key, records)) == sorted(map(key, report.records))


def test_resume_refuses_a_changed_suite_and_a_plain_run_refuses_an_existing_dir(
    tmp_path: Path,
) -> None:
    suite_file(tmp_path)
    out = tmp_path / "out"
    with FakeEndpoint(responder=respond) as ep:
        asyncio.run(
            run_suite(
                load_suite(tmp_path / "resumable.yaml"),
                out=out,
                runs=2,
                pool=fake_pool(ep.api_base),
                progress_stream=io.StringIO(),
            )
        )
        before = snapshot(out)

        # Same suite, plain run into the same directory: refused, nothing overwritten.
        again = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out))
        assert again.returncode == 2
        assert (
            again.stderr.strip()
            .splitlines()[-1]
            .startswith(f"error: {out} already holds results; pass --resume")
        )

        # The task changed: --resume would mix two experiments in one directory.
        suite_file(tmp_path, task="Capital of Peru?")
        changed = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out), "--resume")
        assert changed.returncode == 2
        error = changed.stderr.strip().splitlines()[-1]
        assert error.startswith("error: ") and "fingerprint" in error and "'capital'" in error

        # Resuming a directory that was never started.
        missing = evalrunner(
            ep, tmp_path, "--suite", "resumable", "--out", str(tmp_path / "none"), "--resume"
        )
        assert missing.returncode == 2 and "nothing to resume" in missing.stderr
        assert not (tmp_path / "none").exists()
        requests = len(ep.requests)
    assert snapshot(out) == before
    assert requests == 3 * 2 * 2  # only the first run's calls ever reached the model


def test_resume_of_a_finished_dir_runs_nothing_and_a_different_plan_is_refused(
    tmp_path: Path,
) -> None:
    # Before issue 10 `--resume --runs 3` extended a 2-run directory; now --resume
    # continues the manifest's plan and a conflicting option is an error.
    suite = load_suite(suite_file(tmp_path))
    out = tmp_path / "out"
    with FakeEndpoint(responder=respond) as ep:
        pool = fake_pool(ep.api_base)
        asyncio.run(run_suite(suite, out=out, runs=2, pool=pool, progress_stream=io.StringIO()))
        calls = len(ep.requests)
        report = asyncio.run(
            run_suite(suite, out=out, resume=True, pool=pool, progress_stream=io.StringIO())
        )
        assert len(ep.requests) == calls and report.resumed_skipped == 6
        assert sorted(r.run_id for r in report.records) == sorted(
            f"{s}/openai_fake/{i}" for s in SCENARIOS for i in range(2)
        )
        before = snapshot(out)
        with pytest.raises(ConfigError, match=r"--runs 3 conflicts with the plan"):
            asyncio.run(
                run_suite(
                    suite, out=out, runs=3, resume=True, pool=pool, progress_stream=io.StringIO()
                )
            )
        assert len(ep.requests) == calls
    assert snapshot(out) == before
    manifest = ResultsDir(out).read_manifest()
    assert (manifest.invocations, manifest.status, manifest.runs) == (
        2,
        "finished",
        {s: 2 for s in SCENARIOS},
    )
    assert len(ResultsDir(out).run_files()) == 6


# ------------------------------------------------- --resume continues the plan (item 10)


def test_resume_continues_the_plan_it_was_started_with(tmp_path: Path) -> None:
    # A 6-run single-scenario night, killed; the printed resume command carries neither
    # --runs nor --scenario. It used to replan: 8 runs of all 3 scenarios, "finished".
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        proc, out = interrupt_later(ep, tmp_path, "--runs", "6", "--scenario", "capital")
        plan = ("--suite", "resumable", "--out", str(out))
        stop(proc, signal.SIGKILL)
        for option in (("--runs", "8"), ("--scenario", "plain"), ("--model", "openai/other")):
            refused = evalrunner(ep, tmp_path, *plan, "--resume", *option)
            assert refused.returncode == 2, refused.stderr
            error = error_line(refused.stderr)
            assert f"{option[0]} {option[1]} conflicts with the plan" in error, error
        resumed = evalrunner(ep, tmp_path, *plan, "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        again = evalrunner(ep, tmp_path, *plan, "--resume", "--runs", "6", "--scenario", "capital")
        assert again.returncode == 0, again.stderr[-3000:]  # the same plan, said again: fine
    results = ResultsDir(out)
    assert {r.run_id for r in results.records()} == planned(("capital",), 6)
    assert len(results.run_files()) == 6
    manifest = results.read_manifest()
    assert (manifest.status, manifest.runs, list(manifest.scenarios)) == (
        "finished",
        {"capital": 6},
        ["capital"],
    )


# ----------------------------------------------------- SIGTERM is Ctrl-C (item 14)


def test_sigterm_stops_the_night_like_ctrl_c(tmp_path: Path) -> None:
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        proc, out = interrupt_later(ep, tmp_path)
        _, stderr = stop(proc, signal.SIGTERM)
        assert proc.returncode == 143, stderr[-3000:]
        assert (
            "terminated (SIGTERM); finished runs are saved. Resume with:\n"
            f"  evalrunner run --suite resumable --out {out} --resume"
        ) in stderr
        assert "Traceback" not in stderr
        results = ResultsDir(out)
        assert results.read_manifest().status == "interrupted"
        done = len(results.records())
        resumed = evalrunner(ep, tmp_path, "--suite", "resumable", "--out", str(out), "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resumed: {done} runs were already done" in resumed.stderr
        assert "ended without closing it" not in resumed.stderr  # it closed as interrupted
    assert {r.run_id for r in results.records()} == planned()


def test_the_resume_command_keeps_where_the_night_s_files_go(tmp_path: Path) -> None:
    # Before: "evalrunner run --suite resumable --out OUT --resume" for a night started with
    # --no-history, and running it appended the night to the history (a review).
    import shlex
    import subprocess

    from night_process import EVALRUNNER
    from runner_agents import fake_env

    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        proc, out = interrupt_later(ep, tmp_path, "--no-history", "--baselines", "mine")
        _, stderr = stop(proc, signal.SIGTERM)
        assert proc.returncode == 143, stderr[-3000:]
        lines = stderr.splitlines()
        command = lines[
            lines.index("terminated (SIGTERM); finished runs are saved. Resume with:") + 1
        ]
        assert command.strip() == shlex.join(
            [
                "evalrunner",
                *("run", "--suite", "resumable", "--out", str(out), "--resume"),
                *("--baselines", "mine", "--no-history", "--suites-dir", str(tmp_path)),
            ]
        )
        argv = [EVALRUNNER, *shlex.split(command)[1:]]
        done = subprocess.run(
            argv, cwd=tmp_path, env=fake_env(ep.api_base), capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    assert not (tmp_path / "reports").exists()  # no history written
    assert {r.run_id for r in ResultsDir(out).records()} == planned()


def test_a_damaged_run_file_names_the_fix_and_the_fix_finishes_the_night(tmp_path: Path) -> None:
    # Before: one line naming the file and the JSON error, and no way on.
    suite_file(tmp_path)
    out = tmp_path / "out"
    results = ResultsDir(out)
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        killed_after(ep, tmp_path, out, 2)
        damaged = results.run_files()[0]
        damaged.write_text(damaged.read_text()[:100])  # cut short
        args = ("--suite", "resumable", "--out", str(out), "--resume")
        refused = evalrunner(ep, tmp_path, *args)
        assert refused.returncode == 2, refused.stderr[-3000:]
        line = error_line(refused.stderr)
        assert line.startswith(f"error: {damaged}: not valid JSON at line 1 column ")
        assert line.endswith(
            "; restore it from its copy, or delete it and finish the night with evalrunner run "
            f"--suite resumable --suites-dir {tmp_path} --out {out} --resume, which runs that run "
            "again"
        )
        damaged.unlink()
        resumed = evalrunner(ep, tmp_path, *args)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert {r.run_id for r in results.records()} == planned()
