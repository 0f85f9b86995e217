"""The threads sync agents run in: reused once idle, never queued behind a stuck agent."""

from __future__ import annotations

import threading
import time

import pytest

from evalrunner.live._execute import _AgentThreads


def _thread_name() -> str:
    return threading.current_thread().name


def test_a_finished_run_s_thread_takes_the_next_run() -> None:
    threads = _AgentThreads()
    names = [threads.submit(_thread_name).result(timeout=10) for _ in range(20)]
    # Each run waited for: the one thread that ran the first is idle again for the next.
    assert len(set(names)) == 1, names
    assert names[0].startswith("evalrunner-agent-")


def test_a_run_that_holds_its_thread_does_not_hold_up_the_next() -> None:
    threads = _AgentThreads()
    release = threading.Event()
    stuck = threads.submit(release.wait, 30)
    try:
        # With the only thread held by an agent that will not return, the next run
        # gets a thread of its own at once.
        assert threads.submit(_thread_name).result(timeout=10).startswith("evalrunner-agent-")
        assert not stuck.done()
    finally:
        release.set()
    assert stuck.result(timeout=10) is True


def test_an_agent_s_exception_reaches_its_future_and_the_thread_serves_on() -> None:
    threads = _AgentThreads()

    def crash() -> None:
        raise ValueError("the agent's own bug")

    with pytest.raises(ValueError, match="own bug"):
        threads.submit(crash).result(timeout=10)
    assert threads.submit(lambda: 7).result(timeout=10) == 7


def test_an_idle_thread_ends_and_a_later_run_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_AgentThreads, "IDLE_S", 0.05)
    threads = _AgentThreads()
    first = threads.submit(threading.current_thread).result(timeout=10)
    first.join(timeout=10)
    assert not first.is_alive()  # a night's threads do not outlive it by more than IDLE_S
    assert threads.submit(lambda: "again").result(timeout=10) == "again"


def test_many_runs_at_once_each_run_once() -> None:
    threads = _AgentThreads()
    seen: list[int] = []
    lock = threading.Lock()

    def run(i: int) -> int:
        time.sleep(0.001)
        with lock:
            seen.append(i)
        return i

    futures = [threads.submit(run, i) for i in range(300)]
    assert [f.result(timeout=30) for f in futures] == list(range(300))
    assert sorted(seen) == list(range(300))


def test_shutdown_ends_every_thread_once_its_run_is_done() -> None:
    # Before: a night's threads lived on for IDLE_S (10 s) after it, so a process running
    # nights back to back (a notebook) held 4, 8, 12, ... of them (a review counted).
    threads = _AgentThreads()
    release = threading.Event()

    def stuck_agent() -> threading.Thread:
        release.wait(30)
        return threading.current_thread()

    stuck = threads.submit(stuck_agent)
    started = [threads.submit(threading.current_thread).result(timeout=10) for _ in range(3)]
    threads.shutdown()
    for thread in started:
        thread.join(timeout=5)
        assert not thread.is_alive()
    release.set()  # the stuck agent's thread ends once its run does
    held = stuck.result(timeout=10)
    held.join(timeout=5)
    assert not held.is_alive()
