"""Executing one job: the agent run and captured, judged, and its record made.

Every executor calls :func:`execute_job`: :class:`LocalExecutor` in this
process (sync agents in threads of their own, :class:`_AgentThreads`), and the
Ray executor's workers (:mod:`evalrunner.live._ray`). An executor only turns a
job into a :class:`JobResult`; the driver (:mod:`evalrunner.live._driver`)
writes it.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol, TypeVar

from evalrunner._clock import iso_now
from evalrunner._redact import redact_text
from evalrunner.core._faults import InfraLog, describe
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._response import Usage
from evalrunner.core._scope import CaptureResult, arun_captured
from evalrunner.core._transport import Gate
from evalrunner.core._warnings import missed_calls_message
from evalrunner.endpoints._endpoints import ServeLocal
from evalrunner.endpoints._pricing import Price
from evalrunner.live._command import CommandAgents
from evalrunner.live._limits import Limiter, LocalLimiter, gate_for
from evalrunner.live._run_record import row_of, run_record
from evalrunner.live._schedule import Job
from evalrunner.suite._checks import Judged, judged
from evalrunner.suite._code_checks import CheckInput, CodeChecked, acode_checks
from evalrunner.suite._contract import RunContext
from evalrunner.suite._record import Outcome, RunRecord
from evalrunner.suite._schema import RateLimit

__all__ = ["JobExecutor", "JobResult", "LocalExecutor", "LoopThreads", "execute_job", "infra_run"]

P = ParamSpec("P")
T = TypeVar("T")


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

    def __init__(self, prefix: str = "evalrunner-agent") -> None:
        self._prefix = prefix
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
            name = f"{self._prefix}-{next(self._numbers)}"
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


class LoopThreads(ThreadPoolExecutor):
    """The night loop's default executor (``asyncio.to_thread`` and ``run_in_executor(None,
    ...)`` in async agents, the loop's own name lookups): daemon threads, as sync agents get.

    asyncio's own waits for every call at the loop's end: an async agent whose run timed
    out inside ``to_thread`` (a tool blocked on a socket) kept the night from ending until
    that call returned, for good if it never did. A ThreadPoolExecutor in name only, as
    ``loop.set_default_executor`` requires: it starts no thread of that kind.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self._daemons = _AgentThreads(prefix="evalrunner-loop")

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self._daemons.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Waits for nothing (see :meth:`_AgentThreads.shutdown`)."""
        self._daemons.shutdown()


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
        row=row_of(job),
        outcome=Outcome.INFRA_ERROR,
        reason=redact_text(reason),
        started_at=iso_now(),
    )
    return JobResult(record, {})


class JobExecutor(Protocol):
    """Where jobs run: this process (:class:`LocalExecutor`) or a Ray cluster.

    The driver (:func:`~evalrunner.live._driver.run_night`) schedules, bounds the concurrency, writes every
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
    gate = gate_for(limiter, limits, job.endpoint.label)
    started = iso_now()
    t0 = time.monotonic()
    res, infra = await _captured(job, agents, commands, gate)
    # Waiting for the shared rate limit is the night's throughput, and failed attempts with
    # their backoff are the endpoint's faults: neither is the agent's latency.
    latency = max(0.0, time.monotonic() - t0 - infra.rate_wait_s - infra.retried_s)
    run = judged(res, sc.normalize_config())
    code, judge_fault = await _checked(job, res, run, limiter, limits)
    record = run_record(job, res, started, latency, run, code)
    fault = judge_fault
    if res.missed_calls:
        # Calls that went past capture are in no step: the run's shape is not its behaviour.
        fault = missed_calls_message(record.llm_calls, res.missed_calls)
    if fault is not None:
        # The answer could not be graded, or the run not seen whole: nothing is known of
        # the run's behaviour.
        record = record.model_copy(update={"outcome": Outcome.INFRA_ERROR, "reason": fault})
    # Every crashed run gets its section; a command agent that timed out has no traceback,
    # and its reason (where it stopped) is what there is to print.
    tb = (res.traceback or record.reason) if record.outcome == Outcome.CRASHED else None
    return JobResult(
        record,
        res.trajectory,
        tb,
        round(infra.rate_wait_s, 3),
        res.first_request,
        code.broken if code is not None else {},
    )


async def _captured(
    job: Job, agents: Executor, commands: CommandAgents, gate: Gate | None
) -> tuple[CaptureResult, InfraLog]:
    """The agent run under capture, in this process or (``command:``) under the proxy, and
    the log of its model calls."""
    sc = job.scenario
    infra = InfraLog(sc.retry)
    if sc.command is not None:
        res = await commands.run(job, gate)
        return res, res.infra or infra  # the proxy's log of the run's calls, waits included
    res = await arun_captured(
        sc.load_agent(),
        sc.input,
        RunContext.for_scenario(sc, job.endpoint),
        name=sc.id,
        transport=LiteLLMTransport(infra, gate),
        timeout=sc.timeout_s,
        executor=agents,
    )
    return res, infra


async def _checked(
    job: Job,
    res: CaptureResult,
    run: Judged,
    limiter: Limiter | None,
    limits: Mapping[str, RateLimit],
) -> tuple[CodeChecked | None, str | None]:
    """A finished run's code checks and judge: their results (None: it has none), and why
    the judge's endpoint failed it (None: it did not)."""
    sc = job.scenario
    if res.error is not None or res.timed_out:
        return None, None
    code = None
    if sc.checks.code:
        context = RunContext.for_scenario(sc, job.endpoint)
        seen = CheckInput(
            run.answer, res.output, res.trajectory, run.tools, context, sc.id, sc.row_values
        )
        code = await acode_checks(sc.load_checks(), seen, sc.timeout_s)
    if sc.checks.judge is None or run.answer is None:
        return code, None
    code = code or CodeChecked()
    return code, await _grade(job, run.answer, code, limiter, limits)


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
    usages: list[Usage] = []
    complete = sent_through(transport, endpoint.litellm_kwargs(), judge, usages)
    try:
        file_judgement(out, await agrade(judge, sc.input, answer, complete))
    except JudgeAnswerError as exc:  # the judge's own failure: reported like a check's bug
        out.broken["judge"] = str(exc)
    except Exception as exc:  # the judge's endpoint: a fault, never the agent's failure
        return redact_text(f"judge {endpoint.label} unreachable: {describe(exc)}")
    finally:
        out.judge_cost_usd = _priced(endpoint.price, usages)
    return None


def _priced(price: Price | None, usages: Sequence[Usage]) -> float | None:
    """What these calls cost at ``price`` (None: unpriced)."""
    if price is None:
        return None
    costs = [
        price.cost(u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens)
        for u in usages
    ]
    return round(math.fsum(costs), 8)


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
