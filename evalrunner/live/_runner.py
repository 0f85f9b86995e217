"""Live mode: execute a suite's planned runs against live endpoints.

run -> trajectory -> normalised -> shape -> outcome -> run file, one run at a
time under bounded asyncio concurrency. Which runs to make is the planner's
business (:mod:`evalrunner.live._schedule`); this module only executes its
batches. :func:`open_night` claims the results directory and settles the plan
(a resumed night continues its manifest's), checking everything that can be
checked before the first run; :func:`run_night` executes it. Results land on
disk as each run finishes; the records come back for the statistics.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TextIO, TypeVar

from evalrunner._clock import iso_now
from evalrunner._heap import heap_frozen
from evalrunner._redact import redact_text
from evalrunner.core._faults import InfraLog, describe
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._scope import CaptureResult, arun_captured
from evalrunner.endpoints._endpoints import (
    Endpoint,
    EndpointPool,
    Notify,
    ServeLocal,
    check_judge_models,
    check_model,
    check_requested_models,
)
from evalrunner.errors import ConfigError
from evalrunner.live._classify import classify, tools_disagreement
from evalrunner.live._command import CommandAgents
from evalrunner.live._limits import Limiter, LocalLimiter, gate_for
from evalrunner.live._outage import WORKER_LOST
from evalrunner.live._results import AdaptiveSettings, Manifest, ResultsDir, RunWriter, claim
from evalrunner.live._schedule import (
    Adaptive,
    AdaptivePlanner,
    AdaptiveSummary,
    FixedPlanner,
    Job,
    Planner,
    RunOptions,
    ScenarioPlan,
    adaptive_settings,
    choose,
    resumed,
    resumed_adaptive,
)
from evalrunner.suite._checks import Judged, judged
from evalrunner.suite._code_checks import CheckInput, CodeChecked, acode_checks
from evalrunner.suite._contract import RunContext
from evalrunner.suite._record import RunRecord, same_files
from evalrunner.suite._schema import JUDGE, RateLimit
from evalrunner.suite._settings import Suite

__all__ = [
    "JobExecutor",
    "JobResult",
    "LocalExecutor",
    "OpenNight",
    "Progress",
    "RunReport",
    "execute_job",
    "open_night",
    "run_night",
]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class RunReport:
    """What one :func:`run_night` call produced."""

    out: Path
    records: list[RunRecord]
    """The night's records: every finished run its manifest lists (resumed ones included)."""
    crashes: list[tuple[str, str]] = field(default_factory=list)  # (run id, traceback)
    resumed_skipped: int = 0
    resumed_unclosed: bool = False
    """A resumed directory's last process ended without closing it (killed, out of
    memory, stopped by a full disk, or an in-process agent that called ``os._exit``)."""
    adaptive: AdaptiveSummary | None = None
    adaptive_notes: list[str] = field(default_factory=list)
    broken_checks: dict[str, dict[str, int]] = field(default_factory=dict)
    """scenario -> check -> runs of this process on which it failed itself (those runs were
    judged without it)."""

    def __repr__(self) -> str:
        # Short: Python 3.11's asyncio.run formats the finished night's task, result and
        # all, twice (signal.getsignal on its SIGINT handler), and every record's repr cost
        # 0.06 ms of the night's CPU.
        return (
            f"RunReport(out={str(self.out)!r}, {len(self.records)} records, "
            f"{len(self.crashes)} crashes)"
        )


class Progress:
    """Runs done/total, outcomes and an ETA: one live line on a TTY, plain lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self.rate_wait_s = 0.0

    def _eta(self) -> str:
        if not self.done:
            return "?"
        remaining = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{remaining:.0f}s"

    def note(self, text: str) -> None:
        """A line about the night (not a run), once."""
        self.stream.write(("\n" if self.tty else "") + f"note: {text}\n")
        self.stream.flush()

    def update(self, record: RunRecord, rate_wait_s: float = 0.0) -> None:
        self.done += 1
        self.counts[record.outcome] += 1
        self.rate_wait_s += rate_wait_s
        c = self.counts
        # Time runs spent waiting for a shared rate limit: the night is provider-bound, not slow.
        waited = f" rate-limit wait {self.rate_wait_s:.0f}s" if self.rate_wait_s else ""
        status = (
            f"[{self.done}/{self.total}] passed {c['passed']} failed {c['failed']} skipped {c['skipped']} "
            f"infra {c['infra_error']} crashed {c['crashed']}{waited} eta {self._eta()}"
        )
        if self.tty:
            self.stream.write("\r" + status + " " * 4)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            reason = f" ({_clipped(record.reason)})" if record.reason else ""
            self.stream.write(f"{status} | {record.run_id}: {record.outcome}{reason}\n")
        self.stream.flush()


def _clipped(reason: str, width: int = 240) -> str:
    """``reason`` in about ``width`` characters, cut in the middle: its head says what failed
    and its tail (a refused call's hint) what to check."""
    if len(reason) <= width:
        return reason
    # The tail from its last parenthesis (the hint), if that is not over half the width.
    cut = reason.rfind(" (", len(reason) - width // 2)
    tail = reason[cut + 1 :] if cut > 0 else reason[-(width // 3) :]
    return f"{reason[: width - len(tail) - 3]} … {tail}"


def _record(
    job: Job,
    res: CaptureResult,
    started: str,
    latency: float,
    run: Judged,
    code: CodeChecked | None = None,
) -> RunRecord:
    """The run's record: its normalised shape and its one outcome."""
    sc, ep = job.scenario, job.endpoint
    sh, answer, tools = run.shape, run.answer, run.tools
    infra = res.infra
    reason: str | None = None
    if infra is not None and infra.final_error is not None:
        reason = infra.final_reason
    elif infra is not None and infra.faults:
        reason = infra.faults[-1]  # the last fault a timed-out run met
    outcome = classify(
        trajectory=res.trajectory,
        final_answer=answer,
        tools=tools,
        offered_tools=sc.tools,
        checks=sc.checks,
        skip_rules=sc.skip_rules,
        error=res.error,
        infra_error=infra.final_error if infra else None,
        timed_out=sc.timeout_s if res.timed_out else None,
        infra_reason=reason,
        model_calls=sh.llm_calls,
        in_agent_code=infra is not None and not infra.waiting_on_endpoint,
        code=code,
    )
    return RunRecord(
        run_id=job.run_id,
        suite=sc.suite,
        scenario=sc.id,
        model=ep.label,
        index=job.index,
        row=sc.row.id if sc.row is not None else None,
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
        attempts=infra.max_attempts_used if infra else 1,
        started_at=started,
        checks=outcome.checks,
        **(code or CodeChecked()).recorded(),
    )


class _AgentThreads(Executor):
    """Sync agents in daemon threads: an idle one takes the next run, and with none idle
    a new one starts for it.

    A sync agent that outlives its run's timeout cannot be stopped. In a fixed
    pool it would keep its worker, and with concurrency 1 or 2 the next runs
    would queue behind it and time out without sending a request. Here a stuck
    agent's thread is simply not idle: the next run gets another thread, it holds
    nothing a later run needs (the run's slot is the semaphore, released when the
    run is recorded), its calls end at the run's deadline and are refused after
    it, and as a daemon it cannot keep the process alive. Threads are reused
    rather than started per run: a start costs about 0.1 ms of CPU and blocks the
    event loop until the new thread first holds the GIL, which 32 busy agent
    threads make slow. A thread idle for ``IDLE_S`` ends.
    """

    IDLE_S = 10.0

    def __init__(self) -> None:
        self._numbers = itertools.count()
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        # One permit per thread that finished its run and waits for the next (as in
        # concurrent.futures.ThreadPoolExecutor): a submit that takes one needs no new thread.
        self._idle = threading.Semaphore(0)
        self._started = 0

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        self._work.put(work)
        if not self._idle.acquire(blocking=False):
            name = f"evalrunner-agent-{next(self._numbers)}"
            threading.Thread(target=self._serve, name=name, daemon=True).start()
            self._started += 1
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """End the threads once they are done with their runs (a process that runs night
        after night, a notebook, keeps none of them). ``wait`` is not honoured: a stuck
        agent's thread cannot be waited for."""
        for _ in range(self._started):
            self._work.put(None)

    def _serve(self) -> None:
        while True:
            try:
                work = self._work.get(timeout=self.IDLE_S)
            except queue.Empty:
                if self._idle.acquire(blocking=False):
                    return  # took back this thread's permit: no submit counts on it
                continue  # a submit took the permit: its run is on the way
            if work is None:
                return
            work()
            del work  # the run's objects are not kept alive while this thread waits
            self._idle.release()


@dataclass(frozen=True)
class JobResult:
    """What executing one job gives back: the driver writes it, as for every executor."""

    record: RunRecord
    trajectory: dict[str, Any]
    traceback: str | None = None
    """The crash's traceback, when the run crashed."""
    rate_wait_s: float = 0.0
    """Seconds the run's calls waited for a shared rate limit (not in its latency)."""
    first_request: dict[str, Any] | None = None
    """The agent's first model request, kept in the run file for the sentinel."""
    broken_checks: dict[str, str] = field(default_factory=dict)
    """Code checks that failed themselves on this run -> their traceback."""


def infra_run(job: Job, reason: str) -> JobResult:
    """The record of a job that reached no model, for a reason that is no run's own: a
    Ray worker lost, an endpoint down for the night (:class:`_Driver`)."""
    record = RunRecord(
        run_id=job.run_id,
        suite=job.scenario.suite,
        scenario=job.scenario.id,
        model=job.endpoint.label,
        index=job.index,
        row=job.scenario.row.id if job.scenario.row is not None else None,
        outcome="infra_error",
        reason=redact_text(reason),
        started_at=iso_now(),
    )
    return JobResult(record, {})


DOWN_AFTER = 10
"""Runs in a row that ended in infra_error (each after its retries) after which an
endpoint is taken as down for the rest of the night (at least twice the concurrency)."""


class JobExecutor(Protocol):
    """Where jobs run: this process (:class:`LocalExecutor`) or a Ray cluster.

    The driver (:func:`run_night`) plans, bounds the concurrency, writes every
    result and keeps the manifest; an executor only turns a job into a result.
    It never raises for a run that went wrong: that is the record's outcome.
    """

    async def execute(self, job: Job) -> JobResult:
        """Run ``job`` and return its record and trajectory."""
        ...

    def close(self) -> None:
        """Release what the executor holds (worker processes, threads)."""
        ...

    @property
    def serve_local(self) -> ServeLocal | None:
        """Where the embedded model is served for its runs; None: in this process."""
        ...

    def local_servers_died(self) -> list[str]:
        """A line for each embedded-model server this executor started that exited on its
        own during the night (a server in this process is the pool's to report)."""
        ...


async def execute_job(
    job: Job,
    agents: Executor,
    commands: CommandAgents,
    limiter: Limiter | None,
    limits: Mapping[str, RateLimit],
) -> JobResult:
    """One run, captured and classified (no file written): what every executor calls.

    ``commands`` runs scenarios given as ``command:`` under its capture proxy,
    whose retries and shared rate limit are those of in-process runs.
    """
    sc = job.scenario
    infra = InfraLog(sc.retry)
    gate = gate_for(limiter, limits, job.endpoint.label)
    transport = LiteLLMTransport(infra, gate)
    started = iso_now()
    t0 = time.monotonic()
    if sc.command is not None:
        res = await commands.run(job, gate)
        infra = res.infra or infra  # the proxy's log of the run's calls, waits included
    else:
        res = await arun_captured(
            sc.load_agent(),
            sc.input,
            RunContext.for_scenario(sc, job.endpoint),
            name=sc.id,
            transport=transport,
            timeout=sc.timeout_s,
            executor=agents,
        )
    # Waiting for the shared rate limit is the night's throughput, and failed attempts with
    # their backoff are the endpoint's faults: neither is the agent's latency.
    latency = max(0.0, time.monotonic() - t0 - infra.rate_wait_s - infra.retried_s)
    run = judged(res, sc.normalize_config())
    code = None
    finished = res.error is None and not res.timed_out
    if sc.checks.code and finished:
        context = RunContext.for_scenario(sc, job.endpoint)
        seen = CheckInput(
            run.answer, res.output, res.trajectory, run.tools, context, sc.id, sc.row_values
        )
        code = await acode_checks(sc.load_checks(), seen, sc.timeout_s)
    judge_fault = None
    if sc.checks.judge is not None and finished and run.answer is not None:
        code = code or CodeChecked()
        judge_fault = await _grade(job, run.answer, code, limiter, limits)
    record = _record(job, res, started, latency, run, code)
    if judge_fault is not None:
        # The answer could not be graded: nothing is known of the run's behaviour.
        record = record.model_copy(update={"outcome": "infra_error", "reason": judge_fault})
    # Every crashed run gets its section; a command agent that timed out has no traceback,
    # and its reason (where it stopped) is what there is to print.
    tb = (res.traceback or record.reason) if record.outcome == "crashed" else None
    return JobResult(
        record,
        res.trajectory,
        tb,
        round(infra.rate_wait_s, 3),
        res.first_request,
        code.broken if code is not None else {},
    )


async def _grade(
    job: Job,
    answer: str,
    out: CodeChecked,
    limiter: Limiter | None,
    limits: Mapping[str, RateLimit],
) -> str | None:
    """Grade ``answer`` with the scenario's judge into ``out``, under the night's retry policy
    and rate limits, outside the run's capture (the judge is never part of the agent's
    calls). The reason the run becomes infra_error when the judge's endpoint failed, or None."""
    from evalrunner.suite._judge import JudgeAnswerError, agrade, file_judgement, sent_through

    sc = job.scenario
    judge = sc.checks.judge
    assert judge is not None
    endpoint = job.judge or job.endpoint
    transport = LiteLLMTransport(InfraLog(sc.retry), gate_for(limiter, limits, endpoint.label))
    complete = sent_through(transport, endpoint.litellm_kwargs(), judge)
    try:
        file_judgement(out, await agrade(judge, sc.input, answer, complete))
    except JudgeAnswerError as exc:  # the judge's own failure: reported like a check's bug
        out.broken["judge"] = str(exc)
    except Exception as exc:  # the judge's endpoint: a fault, never the agent's failure
        return redact_text(f"judge {endpoint.label} unreachable: {describe(exc)}")
    return None


class LocalExecutor:
    """Runs jobs in this process's event loop (sync agents in threads of their own)."""

    def __init__(self, limits: Mapping[str, RateLimit] | None = None) -> None:
        self.limits = dict(limits or {})
        self.limiter = LocalLimiter(self.limits) if self.limits else None
        self.agents = _AgentThreads()
        self.commands = CommandAgents()  # scenarios with command:, through one capture proxy

    async def execute(self, job: Job) -> JobResult:
        return await execute_job(job, self.agents, self.commands, self.limiter, self.limits)

    def close(self) -> None:
        self.commands.close()
        self.agents.shutdown()

    @property
    def serve_local(self) -> ServeLocal | None:
        return None  # runs happen here, so the pool's own embedded server is theirs

    def local_servers_died(self) -> list[str]:
        return []


def check_named(name: str) -> str:
    """A check as a line names it: the judge, or ``code check NAME``."""
    return "the judge" if name == JUDGE else f"code check {name}"


class _Driver:
    """Hands jobs to an executor, at most `limit` at a time (fewer against an endpoint that
    serves fewer), and writes each result as it comes back.

    Run files are written on a thread of their own (:class:`RunWriter`): off the event
    loop, where a slow disk would hold up every async agent.
    """

    def __init__(
        self, results: ResultsDir, progress: Progress, limit: int, executor: JobExecutor
    ) -> None:
        self.progress = progress
        self.semaphore = asyncio.Semaphore(limit)
        self.executor = executor
        self.noted: set[str] = set()  # scenarios whose tools: disagreement was shown
        self.broken: Counter[tuple[str, str]] = Counter()  # (scenario, check) -> runs it failed
        self.limit = limit
        self.writer = RunWriter(results)
        self.down_after = max(DOWN_AFTER, 2 * limit)
        self.failing: dict[str, tuple[int, str]] = {}
        """Endpoint -> (runs in a row that ended in infra_error, the last one's reason)."""

    def close(self) -> None:
        # Every write of a finished run is on disk before the manifest says so.
        self.writer.close()

    def say_broken(self) -> dict[str, dict[str, int]]:
        """How many runs each check that failed itself left unjudged (its traceback was shown
        once): a judge that never grades must not pass for one that graded. Returned as
        scenario -> check -> runs, for the history."""
        out: dict[str, dict[str, int]] = {}
        for (scenario, name), count in sorted(self.broken.items()):
            out.setdefault(scenario, {})[name] = count
            if count > 1:
                self.progress.note(
                    f"scenario {scenario}: {check_named(name)} failed itself on {count} runs in all; "
                    "they are judged without it"
                )
        return out

    async def run_all(
        self, jobs: Sequence[Job], finished: Callable[[RunRecord, str | None], None]
    ) -> None:
        """Run ``jobs`` (each endpoint's in order) and hand each to ``finished`` as it ends.

        Only as many tasks exist as could run at once, not one per job: every
        ``asyncio.run`` walks every task of the process, and litellm's sync
        ``completion`` makes three, so with a task per queued run a sync agent's
        model calls cost more CPU the bigger the night (``benchmarks/bench_runner.py
        --runs 2000`` against ``--runs 200``). Each endpoint gets its own workers, as
        many as it may serve at once, so runs queued for a slow endpoint never keep
        another's waiting.
        """
        queues: dict[str, collections.deque[Job]] = {}
        for job in jobs:
            queues.setdefault(job.endpoint.label, collections.deque()).append(job)

        async def worker(queue: collections.deque[Job]) -> None:
            while queue:
                finished(*await self.run(queue.popleft()))

        workers = [
            asyncio.ensure_future(worker(queue))
            for queue in queues.values()
            for _ in range(
                min(len(queue), self.limit, queue[0].endpoint.max_concurrency or self.limit)
            )
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:  # a bug in one run stops the night's other workers
                task.cancel()

    def _not_run(self, job: Job) -> JobResult | None:
        """The record of a job whose endpoint is down for the night, instead of running it:
        each run left would wait out its retries and timeouts for the same answer (hours
        against a hung endpoint), and the night is the outage it is in minutes."""
        label = job.endpoint.label
        streak, last = self.failing.get(label, (0, ""))
        if streak < self.down_after:
            return None
        return infra_run(
            job,
            f"not run: the last {streak} runs against {label} ended in infra_error, so it is "
            f"taken as down for the rest of the night (the last: {last})",
        )

    def _count(self, label: str, record: RunRecord) -> None:
        """Count ``record`` in its endpoint's run of infra_errors (as runs end, not start)."""
        reason = record.reason or ""
        if reason.startswith(WORKER_LOST):
            return  # the cluster's fault, not the endpoint's: no evidence either way
        if record.outcome == "infra_error":
            self.failing[label] = (self.failing.get(label, (0, ""))[0] + 1, reason)
        else:
            self.failing.pop(label, None)

    async def run(self, job: Job) -> tuple[RunRecord, str | None]:
        """One run, executed and written; the traceback too if it crashed."""
        # The endpoint's own limit is its number of workers (run_all): a run waiting
        # for the local server holds no slot a run against another endpoint could use.
        skipped = self._not_run(job)
        if skipped is not None:
            self.writer.write(skipped.record, skipped.trajectory, None)
            self.progress.update(skipped.record, 0.0)
            return skipped.record, None
        async with self.semaphore:
            result = await self.executor.execute(job)
            self._count(job.endpoint.label, result.record)
            sc = job.scenario
            disagreement = tools_disagreement(result.trajectory, sc.tools)
            if disagreement and sc.id not in self.noted:
                self.noted.add(sc.id)
                self.progress.note(f"scenario {sc.id}: {disagreement}")
            for name, failure in result.broken_checks.items():
                self.broken[(sc.id, name)] += 1
                if self.broken[(sc.id, name)] == 1:  # once a night: one bug, one report
                    row = result.record.row
                    self.progress.note(
                        f"scenario {sc.id}: {check_named(name)} failed itself on "
                        f"{result.record.run_id}{f' (row {row!r})' if row else ''} (the "
                        "check's bug, not the agent's; runs are "
                        f"judged without it):\n{redact_text(failure)}"
                    )
            self.writer.write(result.record, result.trajectory, result.first_request)
            self.progress.update(result.record, result.rate_wait_s)
            return result.record, result.traceback


# -- the night: claimed, planned, checked -----------------------------------------------------


@dataclass
class OpenNight:
    """A results directory claimed for one night, and the night's plan."""

    suite: Suite
    results: ResultsDir
    plans: list[ScenarioPlan]
    manifest: Manifest
    """As written when the night (re)started; kept current while it runs."""
    adaptive: AdaptiveSettings | None
    previous: list[RunRecord]
    """Runs a resumed directory already holds."""
    unclosed: bool = False
    """Resuming a directory whose last process never closed it (status still running)."""

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(m for plan in self.plans for m in plan.models))

    def save(self, **update: Any) -> None:
        self.manifest = self.manifest.model_copy(update=update)
        self.results.write_manifest(self.manifest)


def _manifest(
    suite: Suite, plans: list[ScenarioPlan], labels: list[str], adaptive: AdaptiveSettings | None
) -> Manifest:
    from evalrunner._version import __version__

    return Manifest(
        suite=suite.name,
        models=labels,
        runs={p.scenario.id: p.scenario.runs for p in plans},
        rows={p.scenario.id: len(p.scenario.selected_rows) for p in plans if p.scenario.data}
        or None,
        scenarios={p.scenario.id: p.scenario.fingerprint for p in plans},
        models_by_scenario={p.scenario.id: list(p.models) for p in plans},
        adaptive=adaptive,
        run_ids=[],
        started_at=iso_now(),
        evalrunner_version=__version__,
    )


@contextlib.contextmanager
def open_night(suite: Suite, out: Path, options: RunOptions) -> Iterator[OpenNight]:
    """Claim ``out`` and settle the night's plan; every check that needs no model runs here.

    A fresh night is planned from the suite and the options; a resumed one
    continues the plan its manifest recorded (options given again must agree).
    Model strings are resolved and agents imported before the first run, so a
    typo costs one line, not a night. The directory stays locked until the
    block ends.
    """
    with claim(out, resume=options.resume) as results:
        old = results.read_manifest() if options.resume else None
        o = options
        if old is None:
            plans = choose(
                suite, runs=o.runs, models=o.models, scenario_ids=o.scenarios, rows=o.rows
            )
            settings = adaptive_settings(o.adaptive, o.batch, o.max_runs)
        else:
            where = results.manifest_path
            plans = resumed(
                suite,
                old,
                where=where,
                runs=o.runs,
                models=o.models,
                scenario_ids=o.scenarios,
                rows=o.rows,
            )
            settings = resumed_adaptive(where, old, o.adaptive, o.batch, o.max_runs)
        labels = list(dict.fromkeys(m for plan in plans for m in plan.models))
        if old is None:
            check_requested_models(suite, options.models, labels)
        else:
            for label in labels:
                check_model(label, f"{results.manifest_path}: models")
            check_judge_models(suite)
        if (problem := same_files(labels)) is not None:
            raise ConfigError(problem)
        for plan in plans:
            plan.scenario.load_agent()  # a bad agent path fails now, not halfway through the night
            plan.scenario.load_checks()
        manifest = _manifest(suite, plans, labels, settings)
        if old is not None:
            manifest = old.model_copy(
                update={
                    "format_version": manifest.format_version,
                    "models_by_scenario": manifest.models_by_scenario,
                    "status": "running",
                    "ended_at": None,
                    "invocations": old.invocations + 1,
                }
            )
        previous = results.records() if old is not None else []
        unclosed = old is not None and old.status == "running"
        yield OpenNight(suite, results, plans, manifest, settings, previous, unclosed)


async def _execute(night: OpenNight, planner: Planner, driver: _Driver, report: RunReport) -> None:
    """Every batch the planner gives, minus the runs a resumed directory holds."""
    finished = {r.run_id: r for r in night.previous}
    # Every run the directory held, escalation's included: a batch the plan gives again
    # may be settled without the runs escalation added to it the first time.
    report.resumed_skipped = len(finished)
    batch = planner.next_jobs([])
    while batch:
        # The manifest lists a batch's runs before they start: they belong to the night.
        night.save(run_ids=sorted({*(night.manifest.run_ids or []), *(j.run_id for j in batch)}))
        todo = [job for job in batch if job.run_id not in finished]
        driver.progress.total += len(todo)

        def done(record: RunRecord, tb: str | None) -> None:
            finished[record.run_id] = record
            if tb:
                report.crashes.append((record.run_id, tb))

        await driver.run_all(todo, done)
        batch = planner.next_jobs(list(finished.values()))


def _limited(endpoint: Endpoint, suite: Suite) -> Endpoint:
    """The endpoint with its model's ``rate_limits`` max_concurrency, where the suite sets one."""
    limit = suite.spec.rate_limits.get(endpoint.label)
    if limit is None or limit.max_concurrency is None:
        return endpoint
    caps = [c for c in (endpoint.max_concurrency, limit.max_concurrency) if c is not None]
    return dataclasses.replace(endpoint, max_concurrency=min(caps))


def _capped(endpoints: Sequence[Endpoint], limit: int, notify: Notify) -> None:
    for ep in endpoints:
        if ep.max_concurrency is not None and ep.max_concurrency < limit:
            notify(
                f"runs against {ep.label} go {ep.max_concurrency} at a time (it answers one "
                f"request at a time); concurrency {limit} applies to the other models"
            )


async def run_night(
    night: OpenNight,
    *,
    pool: EndpointPool,
    concurrency: int | None = None,
    progress_stream: TextIO | None = None,
    adaptive: Adaptive | None = None,
    notify: Notify | None = None,
    executor: JobExecutor | None = None,
) -> RunReport:
    """Execute ``night``'s plan; write each run as it finishes; return the night's records.

    Jobs run in ``executor`` (default: a :class:`LocalExecutor`, this process); the
    caller closes an executor it passed. The thread pools this needs are its own,
    shut down before it returns; the event loop's default executor is left alone.
    """
    # A fixed plan may still take an Adaptive: escalation (adaptive.adaptive False) adds runs.
    if (adaptive is None or not adaptive.adaptive) != (night.adaptive is None):
        raise ConfigError(
            f"{night.results.root}: the plan is {'adaptive' if night.adaptive else 'fixed'}; "
            "pass the matching Adaptive (run_live does)"
        )
    say = notify or (lambda text: None)
    judges = [
        judge.model
        for plan in night.plans
        if (judge := plan.scenario.checks.judge) is not None and judge.model
    ]
    endpoints = {
        m: _limited(pool.resolve(m), night.suite) for m in dict.fromkeys([*night.labels, *judges])
    }
    night.save()
    say(f"suite {night.suite.name}: results in {night.results.root}")
    planner: Planner = (
        FixedPlanner(night.plans, endpoints)
        if adaptive is None
        else AdaptivePlanner.of(night.plans, endpoints, adaptive)
    )
    limit = concurrency or night.suite.concurrency
    _capped(list(endpoints.values()), limit, say)
    report = RunReport(out=night.results.root, records=[], resumed_unclosed=night.unclosed)
    owned = executor is None  # one we start, we close (its command agents' proxy included)
    executor = executor or LocalExecutor(night.suite.spec.rate_limits)
    driver = _Driver(night.results, Progress(0, progress_stream), limit, executor)
    try:
        try:
            with heap_frozen():
                await _execute(night, planner, driver, report)
            report.broken_checks = driver.say_broken()
        finally:
            with contextlib.ExitStack() as closing:
                if owned:
                    closing.callback(executor.close)
                driver.close()  # raises a failed write's error, after the executor is closed
    except BaseException:
        # Ctrl-C, SIGTERM, cancellation or our own bug: finished runs are on disk; say so.
        night.save(status="interrupted", ended_at=iso_now())
        raise
    if isinstance(planner, AdaptivePlanner):
        report.adaptive, report.adaptive_notes = planner.summary, planner.notes
    night.save(status="finished", ended_at=iso_now())
    report.records = night.results.records()
    return report
