"""run_suite owns its thread pools: the caller's event loop and default executor stay as they were.

Sync agents run in threads the runner starts for the call, run files are
written on a thread of its own, and both are done before run_suite returns;
nothing is created when the module is imported.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import io
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fake_endpoint import FakeEndpoint, Reply, most_in_flight
from runner_agents import fake_pool, one_scenario_night, write_suite
from suite_runs import run_suite

import evalrunner.live._execute as runner_module
from evalrunner.live._driver import RunReport
from evalrunner.live._progress import Progress
from evalrunner.suite._loader import load_suite


def names(fn: object) -> list[str]:
    """The functions inside a (nested) functools.partial, outermost first."""
    if isinstance(fn, functools.partial):
        return [*names(fn.func), *(n for arg in fn.args for n in names(arg))]
    return [getattr(fn, "__name__", type(fn).__name__)]


class WatchedExecutor(ThreadPoolExecutor):
    """The caller's default executor: notes the functions submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="callers-default")
        self.functions: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.functions += names(fn)
        return super().submit(fn, *args, **kwargs)


def ours() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("evalrunner-"))


def test_run_suite_leaves_the_default_executor_alone_and_its_pools_shut(tmp_path: Path) -> None:
    scenarios = [
        {"id": sid, "agent": f"runner_agents:{agent}", "input": "Capital of France?"}
        for sid, agent in (("sync", "tool_agent"), ("async", "atool_agent"))
    ]
    path = write_suite(tmp_path, "pools", scenarios, runs=3, concurrency=2)
    callers = WatchedExecutor()

    async def night(api_base: str) -> tuple[RunReport, list[str], str]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(callers)
        report = await run_suite(
            load_suite(path),
            out=tmp_path / "out",
            pool=fake_pool(api_base),
            progress_stream=io.StringIO(),
        )
        submitted = list(callers.functions)
        # Still the caller's: a plain run_in_executor lands on its thread.
        name = await loop.run_in_executor(None, lambda: threading.current_thread().name)
        return report, submitted, name

    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        report, submitted, default_thread = asyncio.run(night(ep.api_base))
    assert sorted(r.outcome for r in report.records) == ["passed"] * 6
    # litellm.acompletion (the async agent's own call) uses the default executor;
    # the runner puts neither a sync agent nor a run-file write there.
    assert "completion" in submitted
    assert not {"tool_agent", "write_run"} & set(submitted)
    assert default_thread.startswith("callers-default")
    # The writer pool is joined before run_suite returns; idle agent workers exit on their own.
    deadline = time.monotonic() + 10
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours() == []


def test_importing_the_runner_creates_no_pool() -> None:
    assert [
        name for name, value in vars(runner_module).items() if isinstance(value, Executor)
    ] == []


def test_a_night_holds_a_task_per_run_it_may_run_at_once_not_per_queued_run(
    tmp_path: Path,
) -> None:
    # Every asyncio.run walks every task of the process, and litellm's sync completion
    # makes three per call: a task per queued run made a big night's calls dearer.
    import runner_agents

    runner_agents.TASKS_SEEN.clear()
    report = _night_of(tmp_path, "task_counting_agent", runs=40, concurrency=4)
    assert [r.outcome for r in report.records] == ["passed"] * 40
    assert len(runner_agents.TASKS_SEEN) == 40
    # 4 runs' workers, the night's own task and litellm's (5-14 seen; litellm's logging
    # tasks come and go): never one per queued run, which held 40 and more.
    assert max(runner_agents.TASKS_SEEN) < 20, runner_agents.TASKS_SEEN


def _night_of(tmp_path: Path, agent: str, runs: int, concurrency: int = 2) -> RunReport:
    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        return one_scenario_night(tmp_path, ep.api_base, agent, runs=runs, concurrency=concurrency)


def test_a_night_keeps_what_the_process_held_before_it_out_of_the_collectors_way(
    tmp_path: Path,
) -> None:
    # litellm's modules and tables live all night; each full collection walked them again.
    import runner_agents

    runner_agents.FROZEN_SEEN.clear()
    gc.unfreeze()  # whatever this test process froze before (a test's own freeze)
    report = _night_of(tmp_path, "freeze_noting_agent", runs=3)
    assert [r.outcome for r in report.records] == ["passed"] * 3
    assert len(runner_agents.FROZEN_SEEN) == 3
    assert min(runner_agents.FROZEN_SEEN) > 10_000, runner_agents.FROZEN_SEEN
    # Given back after the night: what died during it is collected as before.
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_its_own_heap_finds_it_frozen_after_a_night(
    tmp_path: Path,
) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        report = _night_of(tmp_path, "atool_agent", runs=2)
        assert [r.outcome for r in report.records] == ["passed"] * 2
        # Not given back to the collector (the count only drops as frozen objects die).
        assert gc.get_freeze_count() > frozen // 2
    finally:
        gc.unfreeze()


def test_runs_queued_for_a_one_at_a_time_endpoint_keep_no_other_endpoint_waiting(
    tmp_path: Path,
) -> None:
    from evalrunner.endpoints._endpoints import Endpoint, EndpointPool

    served: dict[str, list[tuple[float, float]]] = {"slow": [], "fast": []}
    lock = threading.Lock()

    def respond(body: dict[str, Any], n: int) -> Reply:
        started = time.monotonic()
        time.sleep(0.05)
        with lock:
            served[body["model"]].append((started, time.monotonic()))
        return Reply("Paris.")

    class Pool(EndpointPool):
        def __init__(self, api_base: str) -> None:
            self.api_base = api_base

        def resolve(self, model: str) -> Endpoint:
            one = 1 if model == "openai/slow" else None
            return Endpoint(
                label=model,
                model=model,
                api_base=self.api_base,
                api_key="sk-fake-key-0000",
                max_concurrency=one,
            )

    scenario = {"id": "s", "agent": "runner_agents:plain_agent", "input": "Capital?"}
    path = write_suite(
        tmp_path, "two", [scenario], models=["openai/slow", "openai/fast"], runs=8, concurrency=4
    )
    with FakeEndpoint(responder=respond) as ep:
        asyncio.run(
            run_suite(
                load_suite(path),
                out=tmp_path / "out",
                pool=Pool(ep.api_base),
                progress_stream=io.StringIO(),
            )
        )

    assert len(served["slow"]) == len(served["fast"]) == 8
    assert most_in_flight(served["slow"]) == 1
    # The fast endpoint's runs went 3 at a time beside the slow one's (concurrency 4),
    # and were all done while the slow endpoint still had runs to go.
    assert most_in_flight(served["fast"]) >= 3
    assert max(b for _, b in served["fast"]) < max(b for _, b in served["slow"])


def test_a_finished_run_is_handed_to_one_writer_thread_and_the_night_does_not_wait_for_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Awaiting each write on a pool cost a thread hand-off and a wake-up per run. Here
    # every write is held until the night has counted all its runs: a night that waited
    # for each file would count one run and then sit out each write's hold.
    from evalrunner.live import _results

    runs, counted, writers, held_out = 4, [], [], []
    all_counted = threading.Event()
    real_update, real_write = Progress.update, _results.ResultsDir.write_run

    def update(self: Any, record: Any, *args: Any) -> None:
        counted.append(record.run_id)
        if len(counted) == runs:
            all_counted.set()
        real_update(self, record, *args)

    def write_run(self: Any, record: Any, *args: Any) -> None:
        writers.append(threading.current_thread().name)
        if not all_counted.wait(timeout=2):
            held_out.append(record.run_id)
        real_write(self, record, *args)

    monkeypatch.setattr(Progress, "update", update)
    monkeypatch.setattr(_results.ResultsDir, "write_run", write_run)
    with FakeEndpoint(responder=lambda body, n: Reply("Paris.")) as ep:
        report = one_scenario_night(tmp_path, ep.api_base, "tool_agent", runs=runs, concurrency=1)
    assert held_out == []
    assert set(writers) == {"evalrunner-write"} and len(writers) == runs
    # Every run handed over is on disk when the night returns, and read back from there.
    assert sorted(r.run_id for r in report.records) == sorted(counted)
    assert len(list((tmp_path / "out" / "runs").rglob("*.json"))) == runs
