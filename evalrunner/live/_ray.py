"""``--executor ray``: a night's runs on a Ray cluster (extra ``evalrunner[ray]``).

Each job is a Ray actor task on one of a pool of worker actors. A worker is a
process that imports evalrunner, litellm and the agents once and then runs
many jobs at the same time in its own event loop: runs wait on endpoints, not
on CPU, so a process per run (a plain Ray task each) would pay litellm's
import for every run and hold a CPU slot doing nothing. The driver (this
process) still plans, bounds the concurrency, writes every result and keeps
the manifest, exactly as with the local executor.

When a worker process dies (killed, out of memory, its node lost), Ray
restarts it and runs its unfinished jobs again (``max_restarts``,
``max_task_retries``); a job that still cannot finish ends as ``infra_error``
with the reason "worker lost: ...", never lost and never ``crashed``.

The suite's ``rate_limits`` are kept by one limiter actor that every worker
asks before each model call, so the whole cluster stays within a provider's
limits. Workers import agents by their suite path: the project must be
importable on every node (installed there, or shipped with Ray's runtime
environment: ``working_dir``, ``py_modules``, ``pip``, ``env_vars``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
from collections.abc import Iterator, Mapping
from typing import Any

from evalrunner._clock import iso_now
from evalrunner._redact import redact_text
from evalrunner.errors import ConfigError
from evalrunner.live._command import CommandAgents
from evalrunner.live._limits import Schedule
from evalrunner.live._plan import Job
from evalrunner.live._record import RunRecord
from evalrunner.live._runner import (
    JobExecutor,
    JobResult,
    LocalExecutor,
    _ThreadPerRun,
    execute_job,
)
from evalrunner.live._schema import RateLimit

__all__ = ["EXECUTORS", "WORKER_LOST", "RayExecutor", "lost_run", "open_executor"]

EXECUTORS = ("local", "ray")

WORKER_LOST = "worker lost"
DEFAULT_WORKERS = 4
"""Worker processes when not told: each runs many jobs at a time."""
RESTARTS = 3
"""How often Ray restarts a dead worker, and reruns each of its jobs, before giving up."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'evalrunner[ray]' (or pass --executor local)"
        ) from None
    return ray


def lost_run(job: Job, exc: BaseException) -> JobResult:
    """The record of a job whose worker died more often than Ray retries: infra_error."""
    detail = " ".join(str(exc).split())[:200]
    record = RunRecord(
        run_id=job.run_id,
        suite=job.scenario.suite,
        scenario=job.scenario.id,
        model=job.endpoint.label,
        index=job.index,
        outcome="infra_error",
        reason=redact_text(
            f"{WORKER_LOST}: {type(exc).__name__}" + (f": {detail}" if detail else "")
        ),
        started_at=iso_now(),
    )
    return JobResult(record, {})


class _LimiterActor:
    """The night's :class:`~evalrunner.live._limits.Schedule`, one for the whole cluster."""

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        import time

        self._now = time.monotonic
        self.schedule = Schedule(dict(limits))

    def reserve(self, model: str, tokens: int) -> float:
        return self.schedule.reserve(model, tokens, self._now())

    def refuse(self, model: str, retry_after: float | None) -> None:
        self.schedule.refuse(model, retry_after, self._now())


class _RemoteLimiter:
    """A worker's view of the limiter actor (a :class:`~evalrunner.live._limits.Limiter`)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def reserve(self, model: str, tokens: int) -> float:
        return float(_ray().get(self.actor.reserve.remote(model, tokens)))

    async def areserve(self, model: str, tokens: int) -> float:
        return float(await self.actor.reserve.remote(model, tokens))

    def refuse(self, model: str, retry_after: float | None) -> None:
        self.actor.refuse.remote(model, retry_after)


class _Worker:
    """One worker process: runs jobs concurrently in its event loop."""

    def __init__(self, limits: Mapping[str, RateLimit], limiter: Any) -> None:
        from evalrunner._litellm import import_litellm

        import_litellm()  # seconds, paid when the worker starts rather than by its first run
        self.limits = dict(limits)
        self.limiter = _RemoteLimiter(limiter) if limiter is not None else None
        self.agents = _ThreadPerRun()
        self.commands = CommandAgents()

    def pid(self) -> int:
        return os.getpid()

    async def run(self, job: Job) -> JobResult:
        return await execute_job(job, self.agents, self.commands, self.limiter, self.limits)


@functools.cache
def _actor_classes() -> tuple[Any, Any]:
    ray = _ray()
    worker = ray.remote(
        num_cpus=0, max_restarts=RESTARTS, max_task_retries=RESTARTS, max_concurrency=1000
    )(_Worker)
    limiter = ray.remote(num_cpus=0, max_restarts=-1)(_LimiterActor)
    return worker, limiter


class RayExecutor:
    """Runs jobs on Ray worker actors; the driver's concurrency bounds how many at once.

    ``address``: a cluster (``ray://head:10001`` or ``auto``), else ``RAY_ADDRESS``,
    else a local Ray started for this night. ``workers``: worker processes
    (default: 4). ``runtime_env`` is handed to ``ray.init`` (how workers get the
    project and its environment). A Ray already initialised in this process is used as is.
    """

    def __init__(
        self,
        limits: Mapping[str, RateLimit] | None = None,
        *,
        address: str | None = None,
        workers: int = DEFAULT_WORKERS,
        runtime_env: Mapping[str, Any] | None = None,
    ) -> None:
        ray = _ray()
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or None
            ray.init(
                address=address,
                include_dashboard=False,
                runtime_env=dict(runtime_env) if runtime_env else None,
                log_to_driver=False,
            )
        worker_cls, limiter_cls = _actor_classes()
        self.limits = dict(limits or {})
        self.limiter = limiter_cls.remote(self.limits) if self.limits else None
        self.workers = [
            worker_cls.options(scheduling_strategy="SPREAD").remote(self.limits, self.limiter)
            for _ in range(max(1, workers))
        ]
        self._next = itertools.cycle(range(len(self.workers)))

    async def execute(self, job: Job) -> JobResult:
        ray = _ray()
        worker = self.workers[next(self._next)]
        ref = worker.run.remote(job)
        try:
            result: JobResult = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)  # Ctrl-C: the run is not finished, so resume runs it again
            raise
        except (
            ray.exceptions.RayActorError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.NodeDiedError,
        ) as exc:
            return lost_run(job, exc)
        return result

    def worker_pids(self) -> list[int]:
        """The worker processes' ids (tests kill one to show no run is lost)."""
        ray = _ray()
        return [int(ray.get(w.pid.remote())) for w in self.workers]

    def close(self) -> None:
        ray = _ray()
        for actor in [*self.workers, self.limiter]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        self.workers, self.limiter = [], None


@contextlib.contextmanager
def open_executor(
    kind: str,
    limits: Mapping[str, RateLimit],
    *,
    ray_address: str | None = None,
    ray_workers: int = DEFAULT_WORKERS,
) -> Iterator[JobExecutor]:
    """The executor named ``kind`` ('local' or 'ray'), closed when the block ends."""
    if kind not in EXECUTORS:
        raise ConfigError(f"unknown executor {kind!r}; use one of: {', '.join(EXECUTORS)}")
    executor: JobExecutor = (
        LocalExecutor(limits)
        if kind == "local"
        else RayExecutor(limits, address=ray_address, workers=ray_workers)
    )
    try:
        yield executor
    finally:
        executor.close()
