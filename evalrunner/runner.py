"""Live mode: run every scenario of a suite N times against live endpoints.

run -> trajectory -> normalised -> shape -> outcome -> run file, one run at a
time under bounded asyncio concurrency. Results land on disk as each run
finishes; :func:`run_suite` returns the records for the statistics.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evalrunner.capture import arun_captured
from evalrunner.classify import classify
from evalrunner.context import RunContext
from evalrunner.endpoints import Endpoint, EndpointPool, requested_models
from evalrunner.errors import ConfigError
from evalrunner.normalize import normalize
from evalrunner.records import RunRecord
from evalrunner.results import Manifest, ResultsDir, run_id
from evalrunner.shape import shape
from evalrunner.suite import ResolvedScenario, Suite, scenario_fingerprint


def utcnow() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Job:
    scenario: ResolvedScenario
    endpoint: Endpoint
    index: int

    @property
    def run_id(self) -> str:
        return run_id(self.scenario.id, self.endpoint.label, self.index)


@dataclass
class RunReport:
    """What one ``run_suite`` call produced."""

    out: Path
    records: list[RunRecord]
    crashes: list[tuple[str, str]] = field(default_factory=list)  # (run id, traceback)
    interrupted: bool = False
    resumed_skipped: int = 0


class Progress:
    """Runs done/total, outcomes and an ETA: one live line on a TTY, plain lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, concurrency: int = 1) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.concurrency = max(1, concurrency)
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


def plan(
    suite: Suite,
    *,
    runs: int | None = None,
    models: Sequence[str] = (),
    scenario_ids: Sequence[str] = (),
) -> list[tuple[ResolvedScenario, list[str]]]:
    """The scenarios to run, each with its model strings, after CLI overrides."""
    known = [s.id for s in suite.scenarios]
    unknown = [s for s in scenario_ids if s not in known]
    if unknown:
        raise ConfigError(f"suite {suite.name!r} has no scenario {unknown[0]!r}; its scenarios: {', '.join(known)}")
    chosen = []
    for scenario in suite.scenarios:
        if scenario_ids and scenario.id not in scenario_ids:
            continue
        resolved = scenario.effective(suite)
        if runs is not None:
            resolved = resolved.model_copy(update={"runs": runs})
        chosen.append((resolved, requested_models(tuple(models), resolved.models)))
    return chosen


async def _one(job: Job, results: ResultsDir, progress: Progress | None) -> tuple[RunRecord, str | None]:
    sc, ep = job.scenario, job.endpoint
    agent = sc.load_agent()
    ctx = RunContext(ep.model, ep.api_base, ep.api_key, sc.temperature, sc.max_turns, tuple(sc.tools))
    started = utcnow()
    t0 = time.monotonic()
    res = await arun_captured(agent, sc.input, ctx, name=sc.id, retry=sc.retry, timeout=sc.timeout_s)
    latency = time.monotonic() - t0
    normalized = normalize(res.trajectory, sc.normalize_config())
    sh = shape(normalized)
    output = getattr(res.output, "answer", res.output)
    answer = output if isinstance(output, str) or output is None else sh.final_answer
    tools = list(sh.tools) + [t for sub in sh.subagent_tools for t in sub]
    timed_out = sc.timeout_s if isinstance(res.error, TimeoutError) and not (res.infra and res.infra.faults) else None
    verdict = classify(
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
    record = RunRecord(
        run_id=job.run_id,
        suite=sc.suite,
        scenario=sc.id,
        model=ep.label,
        index=job.index,
        outcome=verdict.outcome,
        reason=verdict.reason,
        step_count=sh.step_count,
        llm_calls=sh.llm_calls,
        tool_calls=sh.tool_calls,
        tools=tools,
        subagent_count=sh.subagent_count,
        crashed=res.error is not None and verdict.outcome == "crashed",
        prompt_tokens=sh.prompt_tokens,
        completion_tokens=sh.completion_tokens,
        final_answer=answer,
        content_hash=sh.content_hash,
        latency_s=round(latency, 3),
        attempts=res.infra.max_attempts_used if res.infra else 1,
        started_at=started,
        checks=verdict.checks,
    )
    results.write_run(record, res.trajectory)
    if progress is not None:
        progress.update(record)
    return record, (res.traceback if verdict.outcome == "crashed" else None)


def _manifest(suite: Suite, chosen: list[tuple[ResolvedScenario, list[str]]], labels: list[str]) -> Manifest:
    from evalrunner import __version__

    return Manifest(
        suite=suite.name,
        models=labels,
        runs={sc.id: sc.runs for sc, _ in chosen},
        scenarios={sc.id: scenario_fingerprint(suite, sc) for sc, _ in chosen},
        started_at=utcnow(),
        evalrunner_version=__version__,
    )


def _check_resume(results: ResultsDir, fresh: Manifest) -> Manifest:
    old = results.read_manifest()
    if old.suite != fresh.suite:
        raise ConfigError(f"{results.manifest_path}: holds suite {old.suite!r}, not {fresh.suite!r}; pick another --out")
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
) -> RunReport:
    """Run the suite; write each run to ``out`` as it finishes; return the records."""
    chosen = plan(suite, runs=runs, models=models, scenario_ids=scenario_ids)
    results = ResultsDir(out)
    if results.manifest_path.exists() and not resume:
        raise ConfigError(f"{out} already holds results; pass --resume to finish it, or choose another --out")
    if resume and not results.manifest_path.exists():
        raise ConfigError(f"{out}: nothing to resume (no manifest.json); run without --resume")
    all_models = list(dict.fromkeys(m for _, ms in chosen for m in ms))
    endpoints = {m: pool.resolve(m) for m in all_models}
    manifest = _manifest(suite, chosen, [endpoints[m].label for m in all_models])
    if resume:
        manifest = _check_resume(results, manifest)
    done = results.done_ids() if resume else set()
    results.write_manifest(manifest)

    jobs = [
        Job(sc, endpoints[m], i) for sc, ms in chosen for m in ms for i in range(sc.runs)
    ]
    pending = [j for j in jobs if j.run_id not in done]
    limit = concurrency or suite.concurrency
    progress = Progress(len(pending), progress_stream, limit)
    report = RunReport(out=out, records=[], resumed_skipped=len(jobs) - len(pending))
    semaphore = asyncio.Semaphore(limit)
    loop = asyncio.get_running_loop()
    # Sync agents run in worker threads; the default pool (cores + 4) would
    # quietly cap concurrency on small machines.
    loop.set_default_executor(ThreadPoolExecutor(max_workers=limit))

    async def guarded(job: Job) -> tuple[RunRecord, str | None]:
        async with semaphore:
            return await _one(job, results, progress)

    try:
        for finished in asyncio.as_completed([guarded(j) for j in pending]):
            record, tb = await finished
            report.records.append(record)
            if tb:
                report.crashes.append((record.run_id, tb))
    except (asyncio.CancelledError, KeyboardInterrupt):
        report.interrupted = True
        results.write_manifest(manifest.model_copy(update={"status": "interrupted", "ended_at": utcnow()}))
        raise
    if resume:
        ids = {j.run_id for j in jobs}
        report.records = [r for r in results.records() if r.run_id in ids]
    results.write_manifest(manifest.model_copy(update={"status": "finished", "ended_at": utcnow()}))
    return report


def summary_rows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """Per scenario x model: counts by outcome, top skip reasons, means, modal tool sequence."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.scenario, r.model), []).append(r)
    rows = []
    for (scenario, model), rs in groups.items():
        outcomes = Counter(r.outcome for r in rs)
        skips = Counter(r.reason or "?" for r in rs if r.outcome == "skipped")
        valid = [r for r in rs if r.outcome != "infra_error"] or rs
        seqs = Counter(" > ".join(r.tools) or "(no tools)" for r in valid)
        rows.append(
            {
                "scenario": scenario,
                "model": model,
                "n": len(rs),
                "passed": outcomes["passed"],
                "failed": outcomes["failed"],
                "skipped": outcomes["skipped"],
                "skip_reasons": ", ".join(f"{k} x{v}" for k, v in skips.most_common(2)),
                "infra": outcomes["infra_error"],
                "crashed": outcomes["crashed"],
                "mean_steps": sum(r.step_count for r in valid) / len(valid),
                "mean_tokens": sum(r.prompt_tokens + r.completion_tokens for r in valid) / len(valid),
                "top_tools": seqs.most_common(1)[0][0],
            }
        )
    return sorted(rows, key=lambda row: (row["scenario"], row["model"]))


def format_table(rows: list[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain aligned text table."""
    def cell(v: Any) -> str:
        return f"{v:.1f}" if isinstance(v, float) else str(v)

    header = [title for _, title in columns]
    body = [[cell(row[key]) for key, _ in columns] for row in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)


SUMMARY_COLUMNS = (
    ("scenario", "scenario"),
    ("model", "model"),
    ("n", "N"),
    ("passed", "passed"),
    ("failed", "failed"),
    ("skipped", "skipped"),
    ("skip_reasons", "top skip reasons"),
    ("infra", "infra"),
    ("crashed", "crashed"),
    ("mean_steps", "steps"),
    ("mean_tokens", "tokens"),
    ("top_tools", "most common tools"),
)


