"""Live mode: execute a suite's planned runs against live endpoints.

run -> trajectory -> normalised -> shape -> outcome -> run file, one run at a
time under bounded asyncio concurrency. Which runs to make is the planner's
business (:mod:`evalrunner.live._plan`); this module only executes its
batches. Results land on disk as each run finishes; :func:`run_suite` returns
the records for the statistics.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evalrunner._clock import iso_now
from evalrunner._redact import redact_text
from evalrunner.core._normalize import normalize
from evalrunner.core._scope import CaptureResult, arun_captured
from evalrunner.core._shape import shape
from evalrunner.errors import ConfigError
from evalrunner.live._classify import classify
from evalrunner.live._context import RunContext
from evalrunner.live._endpoints import EndpointPool
from evalrunner.live._plan import (
    Adaptive,
    AdaptivePlanner,
    FixedPlanner,
    Job,
    Planner,
    ScenarioPlan,
    choose,
)
from evalrunner.live._record import RunRecord
from evalrunner.live._results import Manifest, ResultsDir
from evalrunner.live._settings import Suite

__all__ = ["Progress", "RunReport", "run_suite"]

WRITERS = 4
"""Threads writing run files; a write (fsync included) takes milliseconds."""


@dataclass
class RunReport:
    """What one ``run_suite`` call produced."""

    out: Path
    records: list[RunRecord]
    crashes: list[tuple[str, str]] = field(default_factory=list)  # (run id, traceback)
    resumed_skipped: int = 0
    adaptive_saved: int = 0
    adaptive_notes: list[str] = field(default_factory=list)


class Progress:
    """Runs done/total, outcomes and an ETA: one live line on a TTY, plain lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()

    def _eta(self) -> str:
        if not self.done:
            return "?"
        remaining = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{remaining:.0f}s"

    def update(self, record: RunRecord) -> None:
        self.done += 1
        self.counts[record.outcome] += 1
        c = self.counts
        status = (
            f"[{self.done}/{self.total}] passed {c['passed']} failed {c['failed']} skipped {c['skipped']} "
            f"infra {c['infra_error']} crashed {c['crashed']} eta {self._eta()}"
        )
        if self.tty:
            self.stream.write("\r" + status + " " * 4)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            reason = f" ({record.reason[:80]})" if record.reason else ""
            self.stream.write(f"{status} | {record.run_id}: {record.outcome}{reason}\n")
        self.stream.flush()


def _record(job: Job, res: CaptureResult, started: str, latency: float) -> RunRecord:
    """The run's record: its normalised shape and its one outcome."""
    sc, ep = job.scenario, job.endpoint
    sh = shape(normalize(res.trajectory, sc.normalize_config()))
    output = getattr(res.output, "answer", res.output)
    answer = output if isinstance(output, str) or output is None else sh.final_answer
    tools = list(sh.tools) + [t for sub in sh.subagent_tools for t in sub]
    timed_out = (
        sc.timeout_s
        if isinstance(res.error, TimeoutError) and not (res.infra and res.infra.faults)
        else None
    )
    outcome = classify(
        trajectory=res.trajectory,
        final_answer=answer,
        tools=tools,
        offered_tools=sc.tools,
        checks=sc.checks,
        skip_rules=sc.skip_rules,
        error=res.error,
        infra_error=res.infra.final_error if res.infra else None,
        timed_out=timed_out,
    )
    return RunRecord(
        run_id=job.run_id,
        suite=sc.suite,
        scenario=sc.id,
        model=ep.label,
        index=job.index,
        outcome=outcome.outcome,
        # Exception messages can echo a credential; the reason is shown and written.
        reason=redact_text(outcome.reason) if outcome.reason else None,
        step_count=sh.step_count,
        llm_calls=sh.llm_calls,
        tool_calls=sh.tool_calls,
        tools=tools,
        subagent_count=sh.subagent_count,
        crashed=res.error is not None and outcome.outcome == "crashed",
        prompt_tokens=sh.prompt_tokens,
        completion_tokens=sh.completion_tokens,
        final_answer=answer,
        content_hash=sh.content_hash,
        latency_s=round(latency, 3),
        attempts=res.infra.max_attempts_used if res.infra else 1,
        started_at=started,
        checks=outcome.checks,
    )


class _Executor:
    """Runs jobs, at most `limit` at a time, in thread pools it owns and shuts down.

    Sync agents run in a pool of `limit` workers (a shared default pool of
    cores + 4 would quietly cap concurrency on small machines). Run files are
    written in a pool of their own: off the event loop, because the atomic
    write (fsync included) takes milliseconds during which no async agent would
    make progress; and not among the agents, whose workers timed-out sync
    agents may still hold.
    """

    def __init__(self, results: ResultsDir, progress: Progress, limit: int) -> None:
        self.results = results
        self.progress = progress
        self.semaphore = asyncio.Semaphore(limit)
        self.agents = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="evalrunner-agent")
        self.writer = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="evalrunner-write")

    def close(self) -> None:
        # Every write of a finished run is on disk before the manifest says so.
        self.writer.shutdown(wait=True)
        # A timed-out sync agent cannot be stopped; its thread ends on its own
        # (the interpreter waits for it at exit) and its late calls land nowhere.
        self.agents.shutdown(wait=False, cancel_futures=True)

    async def run(self, job: Job) -> tuple[RunRecord, str | None]:
        """One run, recorded and written; the traceback too if it crashed."""
        async with self.semaphore:
            sc = job.scenario
            started = iso_now()
            t0 = time.monotonic()
            res = await arun_captured(
                sc.load_agent(),
                sc.input,
                RunContext.for_scenario(sc, job.endpoint),
                name=sc.id,
                retry=sc.retry,
                timeout=sc.timeout_s,
                executor=self.agents,
            )
            record = _record(job, res, started, time.monotonic() - t0)
            await asyncio.get_running_loop().run_in_executor(
                self.writer, self.results.write_run, record, res.trajectory
            )
            self.progress.update(record)
            return record, (res.traceback if record.outcome == "crashed" else None)


def _manifest(suite: Suite, plans: list[ScenarioPlan], labels: list[str]) -> Manifest:
    from evalrunner import __version__

    return Manifest(
        suite=suite.name,
        models=labels,
        runs={p.scenario.id: p.scenario.runs for p in plans},
        scenarios={p.scenario.id: p.scenario.fingerprint for p in plans},
        started_at=iso_now(),
        evalrunner_version=__version__,
    )


def _check_resume(results: ResultsDir, fresh: Manifest) -> Manifest:
    old = results.read_manifest()
    if old.suite != fresh.suite:
        raise ConfigError(
            f"{results.manifest_path}: holds suite {old.suite!r}, not {fresh.suite!r}; pick another --out"
        )
    for sid, fp in fresh.scenarios.items():
        if sid in old.scenarios and old.scenarios[sid] != fp:
            raise ConfigError(
                f"{results.manifest_path}: scenario {sid!r} changed since this directory was started "
                "(configuration fingerprint differs); start a new --out instead of --resume"
            )
    return old.model_copy(
        update={
            "models": sorted(set(old.models) | set(fresh.models)),
            "runs": {**old.runs, **fresh.runs},
            "scenarios": {**old.scenarios, **fresh.scenarios},
            "status": "running",
            "ended_at": None,
            "invocations": old.invocations + 1,
        }
    )


def _open(out: Path, resume: bool) -> ResultsDir:
    results = ResultsDir(out)
    if results.manifest_path.exists() and not resume:
        raise ConfigError(
            f"{out} already holds results; pass --resume to finish it, or choose another --out"
        )
    if resume and not results.manifest_path.exists():
        raise ConfigError(f"{out}: nothing to resume (no manifest.json); run without --resume")
    return results


async def _execute(
    planner: Planner,
    executor: _Executor,
    previous: Sequence[RunRecord],
    report: RunReport,
) -> None:
    """Every batch the planner gives, minus the runs a resumed directory holds."""
    finished = {r.run_id: r for r in previous}
    batch = planner.next_batch([])
    while batch:
        todo = [job for job in batch if job.run_id not in finished]
        report.resumed_skipped += len(batch) - len(todo)
        executor.progress.total += len(todo)
        for done in asyncio.as_completed([executor.run(job) for job in todo]):
            record, tb = await done
            report.records.append(record)
            finished[record.run_id] = record
            if tb:
                report.crashes.append((record.run_id, tb))
        batch = planner.next_batch(list(finished.values()))


async def run_suite(
    suite: Suite,
    *,
    out: Path,
    runs: int | None = None,
    models: Sequence[str] = (),
    scenario_ids: Sequence[str] = (),
    concurrency: int | None = None,
    resume: bool = False,
    pool: EndpointPool,
    progress_stream: TextIO | None = None,
    adaptive: Adaptive | None = None,
) -> RunReport:
    """Run the suite; write each run to ``out`` as it finishes; return the records.

    The thread pools it needs are its own, shut down before it returns; the
    event loop's default executor is left alone.
    """
    plans = choose(suite, runs=runs, models=models, scenario_ids=scenario_ids)
    results = _open(out, resume)
    for plan in plans:
        plan.scenario.load_agent()  # a bad agent path fails now, not halfway through the night
    labels = list(dict.fromkeys(m for plan in plans for m in plan.models))
    # A model string is its endpoint's label, so the resume check needs no
    # endpoint (and starts no local server only to refuse).
    manifest = _manifest(suite, plans, labels)
    if resume:
        manifest = _check_resume(results, manifest)
    endpoints = {m: pool.resolve(m) for m in labels}
    previous = results.records() if resume else []
    results.write_manifest(manifest)

    planner: Planner = (
        FixedPlanner(plans, endpoints)
        if adaptive is None
        else AdaptivePlanner.of(plans, endpoints, adaptive)
    )
    limit = concurrency or suite.concurrency
    report = RunReport(out=out, records=[])
    executor = _Executor(results, Progress(0, progress_stream), limit)
    try:
        try:
            await _execute(planner, executor, previous, report)
        finally:
            executor.close()
    except BaseException:
        # Ctrl-C, cancellation or our own bug: finished runs are on disk; say so.
        results.write_manifest(
            manifest.model_copy(update={"status": "interrupted", "ended_at": iso_now()})
        )
        raise
    if isinstance(planner, AdaptivePlanner):
        report.adaptive_saved, report.adaptive_notes = planner.saved, planner.notes
    if resume:
        ids = {job.run_id for job in planner.planned}
        report.records = [r for r in results.records() if r.run_id in ids]
    results.write_manifest(
        manifest.model_copy(update={"status": "finished", "ended_at": iso_now()})
    )
    return report
