"""``--executor ray``: a night's runs on a Ray cluster (extra ``evalrunner[ray]``).

Each job is a Ray actor task on one of a pool of worker actors. A worker is a
process that imports evalrunner, litellm and the agents once and then runs
many jobs at the same time in its own event loop: runs wait on endpoints, not
on CPU, so a process per run (a plain Ray task each) would pay litellm's
import for every run and hold a CPU slot doing nothing. The driver (this
process) still schedules, bounds the concurrency, writes every result and keeps
the manifest, exactly as with the local executor.

When a worker process dies (killed, out of memory, its node lost), Ray
restarts it and runs its unfinished jobs again (``max_restarts``,
``max_task_retries``); a job that still cannot finish ends as ``infra_error``
with the reason "worker lost: ...", never lost and never ``crashed``.

The embedded model (``local``) is served on every node by a node-pinned actor,
one server per node, started before the first run; a worker sends its runs to
its own node's server (on loopback, so nothing is exposed). The driver still
sends one run at a time to ``local`` (as on one machine: hosted endpoints are
the normal case at scale); the servers are stopped when the night ends.

The suite's ``rate_limits`` are kept by one limiter actor that every worker
asks before each model call, so the whole cluster stays within a provider's
limits. Workers import agents by their suite path: the project must be
importable on every node (installed there, or shipped with Ray's runtime
environment: ``working_dir``, ``py_modules``, ``pip``, ``env_vars``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import os
import signal
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from evalrunner.endpoints._endpoints import (
    LOCAL,
    Endpoint,
    Notify,
    ServeLocal,
    loopback_without_proxy,
)
from evalrunner.errors import ConfigError, EndpointError, EvalrunnerError
from evalrunner.live._command import CommandAgents
from evalrunner.live._execute import (
    JobExecutor,
    JobResult,
    LocalExecutor,
    _AgentThreads,
    execute_job,
    infra_run,
)
from evalrunner.live._limits import Pacer
from evalrunner.live._outage import WORKER_LOST
from evalrunner.live._schedule import Job
from evalrunner.suite._schema import RateLimit

__all__ = ["EXECUTORS", "WORKER_LOST", "RayExecutor", "lost_run", "open_executor"]

EXECUTORS = ("local", "ray")

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
    return infra_run(
        job, f"{WORKER_LOST}: {type(exc).__name__}" + (f": {detail}" if detail else "")
    )


class _NodeModel:
    """The embedded model's server on one node (an actor pinned there)."""

    def __init__(self) -> None:
        from evalrunner.endpoints._local_model import LocalModelServer

        loopback_without_proxy()
        self.server: LocalModelServer | None = None
        self.error: str | None = None
        try:
            self.server = LocalModelServer().start()
        except EvalrunnerError as exc:  # not installed here, or it would not start: say why
            self.error = str(exc)

    def api_base(self) -> tuple[str | None, str | None]:
        """(base URL, None) once serving, or (None, why it is not)."""
        return (self.server.api_base, None) if self.server is not None else (None, self.error)

    def died(self, node: str) -> str | None:
        """The night's line if this node's server exited on its own (None while it runs)."""
        return self.server.death_notice(f" on Ray node {node}") if self.server else None

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(keep_log=self.server.died() is not None)


def _node_model(node_id: str) -> Any:
    """The handle of ``node_id``'s embedded-model actor, started there if it is not yet."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return (
        _actor_classes()[2]
        .options(
            name=f"evalrunner-local-model-{node_id}",
            get_if_exists=True,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        )
        .remote()
    )


class _LimiterActor:
    """The night's :class:`~evalrunner.live._limits.Pacer`, one for the whole cluster."""

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        import time

        self._now = time.monotonic
        self.schedule = Pacer(dict(limits))

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

    def __init__(self, limits: Mapping[str, RateLimit], limiter: str | None) -> None:
        from evalrunner import _signals
        from evalrunner._litellm import import_litellm

        # An agent's own KeyboardInterrupt here is its run's crash: the driver stops this
        # process by cancelling its tasks, never with a Ctrl-C (issue 53, row 2 on Ray).
        _signals.in_worker()
        import_litellm()  # seconds, paid when the worker starts rather than by its first run
        self.limits = dict(limits)
        # By name, not by handle: a handle among the constructor's arguments is kept in the
        # object store, and a restart after losing it would fail (ray-project/ray#53727).
        self.limiter = _RemoteLimiter(_ray().get_actor(limiter)) if limiter is not None else None
        self.agents = _AgentThreads()
        self.commands = CommandAgents()

        self._local_base: str | None = None

    def pid(self) -> int:
        return os.getpid()

    async def run(self, job: Job) -> JobResult:
        if job.endpoint.per_node:
            base, error = await self._node_server()
            if base is None:
                return infra_run(job, f"embedded model unavailable on this node: {error}")
            job = dataclasses.replace(
                job, endpoint=dataclasses.replace(job.endpoint, api_base=base, per_node=False)
            )
        return await execute_job(job, self.agents, self.commands, self.limiter, self.limits)

    async def _node_server(self) -> tuple[str | None, str | None]:
        """This node's embedded-model server: (base URL, None), or (None, why not)."""
        if self._local_base is not None:
            return self._local_base, None
        node = _ray().get_runtime_context().get_node_id()
        base, error = await _node_model(node).api_base.remote()
        self._local_base = base
        return base, error


@functools.cache
def _actor_classes() -> tuple[Any, Any, Any]:
    ray = _ray()
    worker = ray.remote(
        num_cpus=0, max_restarts=RESTARTS, max_task_retries=RESTARTS, max_concurrency=1000
    )(_Worker)
    limiter = ray.remote(num_cpus=0, max_restarts=-1)(_LimiterActor)
    # No restart: a server that died mid-night turns its node's runs into infra errors.
    node_model = ray.remote(num_cpus=0, max_restarts=0)(_NodeModel)
    return worker, limiter, node_model


@contextlib.contextmanager
def _own_sigterm() -> Iterator[None]:
    """Keep the process's SIGTERM handler through ``ray.init``, which sets one of its own
    (``sys.exit(15)``, with a native stack dump): a cancelled CI job is then an interrupt
    like any other, exit 143 with the line that resumes the night."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, kept)


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
            with _own_sigterm():
                ray.init(
                    address=address,
                    include_dashboard=False,
                    runtime_env=dict(runtime_env) if runtime_env else None,
                    log_to_driver=False,
                )
        worker_cls, limiter_cls, _ = _actor_classes()
        self.node_models: dict[str, Any] = {}  # node id -> its embedded-model actor
        self.limits = dict(limits or {})
        name = f"evalrunner-limiter-{uuid.uuid4().hex}" if self.limits else None
        self.limiter = limiter_cls.options(name=name).remote(self.limits) if name else None
        self.workers = [
            worker_cls.options(scheduling_strategy="SPREAD").remote(self.limits, name)
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

    @property
    def serve_local(self) -> ServeLocal:
        return self._serve_local

    def _serve_local(self, notify: Notify) -> Endpoint:
        """Start the embedded model on every live node (before any run) and name it."""
        from evalrunner.endpoints._local_model import LOCAL_API_KEY, MODEL_ALIAS

        ray = _ray()
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        notify(f"starting local model (the embedded SmolLM2-135M) on {len(nodes)} Ray node(s) ...")
        self.node_models = {node: _node_model(node) for node in nodes}
        answers = ray.get([actor.api_base.remote() for actor in self.node_models.values()])
        failed = [
            f"node {n}: {error}" for n, (_, error) in zip(nodes, answers, strict=True) if error
        ]
        if failed:
            raise EndpointError(
                "the embedded model did not start on every Ray node: " + "; ".join(failed)
            )
        notify(f"local model ready on {len(nodes)} Ray node(s)")
        return Endpoint(
            label=LOCAL,
            model=f"openai/{MODEL_ALIAS}",
            api_key=LOCAL_API_KEY,
            max_concurrency=1,
            per_node=True,
        )

    def local_servers_died(self) -> list[str]:
        """A line for each node whose embedded-model server exited on its own during the
        night (the driver's pool only knows a server it started itself)."""
        ray = _ray()
        lines = []
        for node, actor in self.node_models.items():
            try:
                line = ray.get(actor.died.remote(node), timeout=30)
            except Exception as exc:  # the actor went with its node: say that instead
                line = (
                    f"the embedded model on Ray node {node} could not be asked how it ended: {exc}"
                )
            if line is not None:
                lines.append(line)
        return lines

    def worker_pids(self) -> list[int]:
        """The worker processes' ids (tests kill one to show no run is lost)."""
        ray = _ray()
        return [int(ray.get(w.pid.remote())) for w in self.workers]

    def close(self) -> None:
        ray = _ray()
        with contextlib.suppress(Exception):  # a server's own watchdog stops it if this fails
            ray.get([actor.stop.remote() for actor in self.node_models.values()], timeout=30)
        for actor in [*self.workers, self.limiter, *self.node_models.values()]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        self.workers, self.limiter, self.node_models = [], None, {}


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
