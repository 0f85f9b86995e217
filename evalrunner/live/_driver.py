"""The driver: a night's schedule run batch by batch, each result written as it comes back.

:func:`run_night` is given an :class:`OpenNight` (a claimed results directory
and its schedule, settled and checked by :func:`evalrunner.night._open.open_night`)
and runs it: the scheduler hands out batches of jobs, :class:`_Driver` runs them
through an executor (:mod:`evalrunner.live._execute`) within the concurrency
limits and writes each result, and the progress (:mod:`evalrunner.live._progress`)
shows them. Results land on disk as each run finishes; the records come back for
the statistics.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evalrunner._clock import iso_now
from evalrunner._heap import heap_frozen
from evalrunner._litellm import import_litellm
from evalrunner._redact import redact_text
from evalrunner.endpoints._endpoints import Endpoint, EndpointPool, Notify
from evalrunner.endpoints._pricing import suite_price
from evalrunner.errors import ConfigError
from evalrunner.live._budget import Budget, BudgetSpent, unpriced_for_budget
from evalrunner.live._classify import tools_disagreement
from evalrunner.live._execute import JobExecutor, JobResult, LocalExecutor, infra_run
from evalrunner.live._outage import WORKER_LOST
from evalrunner.live._progress import Progress
from evalrunner.live._results import AdaptiveSettings, Manifest, ResultsDir, RunWriter
from evalrunner.live._schedule import (
    Adaptive,
    AdaptiveScheduler,
    AdaptiveSummary,
    FixedScheduler,
    Job,
    ScenarioSchedule,
    Scheduler,
)
from evalrunner.suite._record import RunRecord
from evalrunner.suite._schema import JUDGE
from evalrunner.suite._settings import Suite

__all__ = ["OpenNight", "RunReport", "check_named", "run_night"]


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
    budget_spent: BudgetSpent | None = None
    """Set when the night reached its ``--budget``: runs were left unstarted."""

    def __repr__(self) -> str:
        # Short: Python 3.11's asyncio.run formats the finished night's task, result and
        # all, twice (signal.getsignal on its SIGINT handler), and every record's repr cost
        # 0.06 ms of the night's CPU.
        return (
            f"RunReport(out={str(self.out)!r}, {len(self.records)} records, "
            f"{len(self.crashes)} crashes)"
        )


@dataclass
class OpenNight:
    """A results directory claimed for one night, and the night's schedule (what
    :func:`run_night` is given)."""

    suite: Suite
    results: ResultsDir
    schedules: list[ScenarioSchedule]
    manifest: Manifest
    """As written when the night (re)started; kept current while it runs."""
    adaptive: AdaptiveSettings | None
    previous: list[RunRecord]
    """Runs a resumed directory already holds."""
    unclosed: bool = False
    """Resuming a directory whose last process never closed it (status still running)."""

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(m for schedule in self.schedules for m in schedule.models))

    def save(self, **update: Any) -> None:
        self.manifest = self.manifest.model_copy(update=update)
        self.results.write_manifest(self.manifest)


DOWN_AFTER = 10
"""Runs in a row that ended in infra_error (each after its retries) after which an
endpoint is taken as down for the rest of the night (at least twice the concurrency)."""


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
        self,
        results: ResultsDir,
        progress: Progress,
        limit: int,
        executor: JobExecutor,
        budget: Budget | None = None,
    ) -> None:
        self.budget = budget
        self.progress = progress
        self.semaphore = asyncio.Semaphore(limit)
        self.executor = executor
        self.noted: set[str] = set()  # scenarios whose tools: disagreement was shown
        self.broken: Counter[tuple[str, str]] = Counter()  # (scenario, check) -> runs it failed
        self.limit = limit
        self._write_failed = asyncio.get_running_loop().create_future()
        self.writer = RunWriter(results, on_failure=self._stop_on_write_failure)
        self.down_after = max(DOWN_AFTER, 2 * limit)
        self.failing: dict[str, tuple[int, str]] = {}
        """Endpoint -> (runs in a row that ended in infra_error, the last one's reason)."""

    def close(self) -> None:
        # Every write of a finished run is on disk before the manifest says so.
        self.writer.close()

    def _stop_on_write_failure(self) -> None:
        """Called on the writer's thread: the night's loop stops its runs (see run_all)."""
        loop = self._write_failed.get_loop()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to stop
            loop.call_soon_threadsafe(_settle, self._write_failed)

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
            while queue and self._may_start() and not self._write_failed.done():
                finished(*await self._budgeted(queue.popleft()))

        self.writer.raise_failure()  # a write that failed before this batch starts none of it

        workers = [
            asyncio.ensure_future(worker(queue))
            for queue in queues.values()
            for _ in range(
                min(len(queue), self.limit, queue[0].endpoint.max_concurrency or self.limit)
            )
        ]
        gathered = asyncio.gather(*workers)
        try:
            # A run file that could not be written stops the night at once, not when the
            # runs in flight end: their agents may be minutes from their timeouts.
            await asyncio.wait((gathered, self._write_failed), return_when=asyncio.FIRST_COMPLETED)
            self.writer.raise_failure()
            await gathered
        finally:
            for task in workers:  # a bug in one run stops the night's other workers
                task.cancel()
            # Its outcome is the night's no more once a failed write stopped it: read, so
            # that asyncio does not report it as never retrieved.
            gathered.add_done_callback(lambda done: done.cancelled() or done.exception())

    def _may_start(self) -> bool:
        return self.budget is None or self.budget.may_start()

    async def _budgeted(self, job: Job) -> tuple[RunRecord, str | None]:
        """:meth:`run`, counted against the night's budget where it has one."""
        if self.budget is None:
            return await self.run(job)
        self.budget.started()
        record, tb = await self.run(job)
        self.budget.finished(record)
        return record, tb

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.budget.stopped

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
        if not record.measured:  # the infrastructure's fault
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


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _run_batches(
    night: OpenNight, scheduler: Scheduler, driver: _Driver, report: RunReport
) -> None:
    """Every batch the scheduler gives, minus the runs a resumed directory holds."""
    finished = {r.run_id: r for r in night.previous}
    # Every run the directory held, escalation's included: a batch the schedule gives again
    # may be settled without the runs escalation added to it the first time.
    report.resumed_skipped = len(finished)
    batch = scheduler.next_jobs([])
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
        if driver.over_budget:
            break  # the schedule's next look would take a night cut short for its behaviour
        batch = scheduler.next_jobs(list(finished.values()))


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
                f"runs against {ep.label} go {ep.max_concurrency} at a time (as many as it "
                f"answers at once); concurrency {limit} applies to the other models"
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
    budget_usd: float | None = None,
) -> RunReport:
    """Execute ``night``'s schedule; write each run as it finishes; return the night's records.

    Jobs run in ``executor`` (default: a :class:`LocalExecutor`, this process); the
    caller closes an executor it passed. The thread pools this needs are its own,
    shut down before it returns; the event loop's default executor is left alone.
    ``budget_usd``: no run starts that would take the night's spending past it
    (:mod:`._budget`); the report's ``budget_spent`` says where it stopped.
    """
    _check_adaptive(night, adaptive)
    say = notify or (lambda text: None)
    endpoints = _endpoints(night, pool)
    budget = _budget(budget_usd, night, endpoints)
    night.save()
    say(f"suite {night.suite.name}: results in {night.results.shown}")
    scheduler: Scheduler = (
        FixedScheduler(night.schedules, endpoints)
        if adaptive is None
        else AdaptiveScheduler.of(night.schedules, endpoints, adaptive)
    )
    limit = concurrency or night.suite.concurrency
    _capped(list(endpoints.values()), limit, say)
    report = RunReport(out=night.results.shown, records=[], resumed_unclosed=night.unclosed)
    owned = executor is None  # one we start, we close (its command agents' proxy included)
    executor = executor or LocalExecutor(night.suite.spec.rate_limits)
    if isinstance(executor, LocalExecutor):
        # litellm's first import is seconds of CPU (12-19 s on a loaded machine): paid
        # here, before any run's clock starts, not inside the first run's timeout, where
        # it made runs infra_error with no model call (issue 53). Ray workers import it
        # when they start.
        import_litellm()
    # Built before the night counts as started: a failure here leaves it "running".
    driver = _Driver(night.results, Progress(0, progress_stream), limit, executor, budget)
    try:
        await _drive(night, scheduler, report, driver, executor if owned else None)
    except BaseException:
        # Ctrl-C, SIGTERM, cancellation or our own bug: finished runs are on disk; say so.
        night.save(status="interrupted", ended_at=iso_now())
        raise
    if isinstance(scheduler, AdaptiveScheduler) and not driver.over_budget:
        report.adaptive, report.adaptive_notes = scheduler.summary, scheduler.notes
    report.records = night.results.records()
    _close_night(night, report, budget)
    return report


def _close_night(night: OpenNight, report: RunReport, budget: Budget | None) -> None:
    """The manifest's last word: finished, or (runs left unstarted at the budget) not, so
    that --resume finishes it; the report says where the budget stopped it."""
    if budget is not None and budget.stopped:
        night.save(status="interrupted", ended_at=iso_now())
        report.budget_spent = budget.spent_for(report.records, len(night.manifest.run_ids or []))
    else:
        night.save(status="finished", ended_at=iso_now())


def _budget(
    limit: float | None, night: OpenNight, endpoints: Mapping[str, Endpoint]
) -> Budget | None:
    """The night's budget, refused where a model it runs against has no price (its runs
    would spend without counting)."""
    if limit is None:
        return None
    priced = {label: e.price is not None for label, e in endpoints.items()}
    refused = unpriced_for_budget(night.labels, priced)
    if refused is not None:
        raise ConfigError(refused)
    return Budget.of(limit, night.previous)


def _check_adaptive(night: OpenNight, adaptive: Adaptive | None) -> None:
    """``adaptive`` must match the night's schedule; a fixed one may still take an Adaptive:
    escalation (``adaptive.adaptive`` False) adds runs."""
    if (adaptive is None or not adaptive.adaptive) != (night.adaptive is None):
        raise ConfigError(
            f"{night.results.shown}: the plan is {'adaptive' if night.adaptive else 'fixed'}; "
            "pass the matching Adaptive (run_live does)"
        )


def _endpoints(night: OpenNight, pool: EndpointPool) -> dict[str, Endpoint]:
    """Each model the night runs against, and each judge's, as its endpoint."""
    judges = [
        judge.model
        for schedule in night.schedules
        if (judge := schedule.scenario.checks.judge) is not None and judge.model
    ]
    return {
        m: _priced(_limited(pool.resolve(m), night.suite), night.suite)
        for m in dict.fromkeys([*night.labels, *judges])
    }


def _priced(endpoint: Endpoint, suite: Suite) -> Endpoint:
    """The endpoint with its model's price: the suite's ``pricing`` entry, else litellm's
    table (None: unpriced)."""
    price = suite_price(suite.spec.pricing, endpoint.label, endpoint.model)
    return dataclasses.replace(endpoint, price=price)


async def _drive(
    night: OpenNight,
    scheduler: Scheduler,
    report: RunReport,
    driver: _Driver,
    owned: JobExecutor | None,
) -> None:
    """Every batch run through ``driver``; then ``owned`` (an executor we started) closed."""
    try:
        with heap_frozen():
            await _run_batches(night, scheduler, driver, report)
        report.broken_checks = driver.say_broken()
    finally:
        with contextlib.ExitStack() as closing:
            if owned is not None:
                closing.callback(owned.close)
            driver.close()  # raises a failed write's error, after the executor is closed
