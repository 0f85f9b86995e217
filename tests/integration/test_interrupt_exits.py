"""Ctrl-C ends the ``evalrunner`` process, whatever its agents' threads are doing.

A night interrupted in its first seconds hung for good: a sync agent's thread was
inside an import when the interpreter shut down and froze it, holding the import
lock, and a finaliser (litellm's HTTP client's, run as the interpreter collected
it) imported a module, waiting for that lock forever. Which import is under way
at the moment of a Ctrl-C is timing; here the agent module's finaliser waits on a
lock that nobody releases, as that one did, so the old hang is certain.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from fake_endpoint import FakeEndpoint
from night_process import EVALRUNNER, respond
from runner_agents import fake_env, write_suite

AGENT = '''
import builtins
import pathlib
import threading
import time


class Client:
    """Collected at shutdown, and stuck there, as litellm's client was."""

    def __del__(self, held=threading.Lock()):
        held.acquire()
        held.acquire()  # a lock nobody will release


# Where the interpreter certainly lets go of it at shutdown, as it did of litellm's.
builtins._evalrunner_test_client = Client()


def agent(task, ctx):
    pathlib.Path("agent-started").touch()
    time.sleep(600)  # still running when the night is interrupted
    return "Tokyo."
'''


def test_ctrl_c_ends_the_process_without_waiting_for_finalisers_or_agent_threads(
    tmp_path: Path,
) -> None:
    (tmp_path / "stuck_agent.py").write_text(AGENT, encoding="utf-8")
    scenario = {"id": "stuck", "agent": "stuck_agent:agent", "input": "Capital of Japan?"}
    write_suite(tmp_path, "stuck", [scenario], runs=2, concurrency=2, timeout_s=300)
    returncode, stderr = _interrupted(tmp_path, "stuck", "agent-started")
    assert returncode == 130, stderr[-3000:]
    assert "interrupted; finished runs are saved. Resume with:" in stderr
    assert "Traceback" not in stderr


def _interrupted(tmp_path: Path, suite: str, started: str) -> tuple[int, str]:
    """A night of ``suite`` in its own process, given one Ctrl-C once the file ``started``
    appears: its exit code and stderr (the process is killed if it has not ended 30 s on,
    where it hung for good before)."""
    with FakeEndpoint(responder=respond) as ep:
        env = fake_env(ep.api_base)
        env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), env["PYTHONPATH"]))
        argv = [EVALRUNNER, "run", "--suites-dir", str(tmp_path), "--suite", suite]
        proc = subprocess.Popen(
            [*argv, "--out", str(tmp_path / "out"), "--no-history"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not (tmp_path / started).exists():
                assert proc.poll() is None, proc.communicate()[1][-2000:]
                assert time.monotonic() < deadline, f"{started} never appeared"
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return proc.returncode, stderr


FULL_DISK_AGENT = AGENT.replace(
    "def agent(task, ctx):",
    '''import errno
import itertools

from evalrunner.live._results import ResultsDir

_calls = itertools.count()


def _disk_full(self, record, *args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", str(self.run_path(record.run_id)))


ResultsDir.write_run = _disk_full  # the first finished run's file finds the disk full


def agent(task, ctx):
    if next(_calls) != 1:  # the second run stays in its thread; the others finish
        return "Tokyo."''',
)


def test_a_disk_that_fills_mid_night_ends_the_process_with_agent_threads_still_running(
    tmp_path: Path,
) -> None:
    # The error line was printed, then the process hung for good on 2 tries in 6 (a
    # review): the same frozen-import hang as an interrupt's, on the exit after an error.
    done = _night_of_four_runs(tmp_path, FULL_DISK_AGENT)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "No space left on device. Resume with:" in done.stderr
    assert "Traceback" not in done.stderr


LATE_FAILURE_AGENT = FULL_DISK_AGENT.replace(
    "ResultsDir.write_run = _disk_full",
    """import threading

from evalrunner.live._results import RunWriter

_handed_over = itertools.count(1)
_all_handed_over = threading.Event()
_hand_over = RunWriter.write


def _counted(self, *args, **kwargs):
    _hand_over(self, *args, **kwargs)
    if next(_handed_over) == 3:  # every run but the one that sleeps
        _all_handed_over.set()


def _late_disk_full(self, record, *args, **kwargs):
    _all_handed_over.wait(30)
    _disk_full(self, record)


RunWriter.write = _counted
ResultsDir.write_run = _late_disk_full  # fails once no run is left to hand one over""",
)


def test_a_run_file_that_fails_after_the_last_hand_over_stops_the_night_at_once(
    tmp_path: Path,
) -> None:
    # A failed write was seen only at the next run's hand-over: here none comes, and the
    # night waited on the run still in flight (its timeout, 300 s) before saying so. In CI
    # the writer's thread was late enough once in a full suite, and the test above hung.
    done = _night_of_four_runs(tmp_path, LATE_FAILURE_AGENT)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "No space left on device. Resume with:" in done.stderr
    assert done.stderr.count("] passed ") == 3  # the three quick runs ended before it
    assert "Traceback" not in done.stderr


ASYNC_AGENT_BLOCKED_IN_A_THREAD = """
import asyncio
import time


async def agent(task, ctx):
    await asyncio.to_thread(time.sleep, 600)  # a blocking tool that never answers
    return "Tokyo."
"""


def test_a_night_ends_when_its_runs_time_out_whatever_an_async_agents_thread_is_doing(
    tmp_path: Path,
) -> None:
    # The run timed out and was recorded, then the process waited for the thread: asyncio's
    # default executor waits for every call at the loop's end (600 s here, for good if the
    # tool never answers).
    done = _night_of_four_runs(tmp_path, ASYNC_AGENT_BLOCKED_IN_A_THREAD, timeout_s=2)
    assert done.returncode == 1, done.stderr[-3000:]  # runs that time out in the agent crash
    assert done.stderr.count("crashed (timed out in the agent after 2 s") == 4
    assert "night: 4 runs (4 crashed)" in done.stderr


def _night_of_four_runs(
    tmp_path: Path, agent_source: str, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """A night of four runs, two at a time, of the agent ``agent_source`` defines, in its
    own process (killed 60 s on, where it hung before)."""
    (tmp_path / "night_agent.py").write_text(agent_source, encoding="utf-8")
    scenario = {"id": "full", "agent": "night_agent:agent", "input": "Capital of Japan?"}
    write_suite(tmp_path, "full", [scenario], runs=4, concurrency=2, timeout_s=timeout_s)
    with FakeEndpoint(responder=respond) as ep:
        env = fake_env(ep.api_base)
        env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), env["PYTHONPATH"]))
        argv = [EVALRUNNER, "run", "--suites-dir", str(tmp_path), "--suite", "full"]
        return subprocess.run(
            [*argv, "--out", str(tmp_path / "out"), "--no-history"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


HUNG_CHECK = """
import pathlib
import time


def agent(task, ctx):
    return "Tokyo."


def hangs(run):
    pathlib.Path("check-started").touch()
    time.sleep(600)  # a check waiting on a service that never answers
    return True
"""


def test_ctrl_c_ends_a_night_whose_code_check_never_returns(tmp_path: Path) -> None:
    # Before: the first Ctrl-C (or timeout's SIGTERM) did nothing; the loop's shutdown
    # waited for the check's thread, and only a second signal ended the process.
    (tmp_path / "hung_check.py").write_text(HUNG_CHECK, encoding="utf-8")
    scenario = {
        "id": "hung",
        "agent": "hung_check:agent",
        "input": "Capital of Japan?",
        "checks": {"code": ["hung_check:hangs"]},
    }
    write_suite(tmp_path, "hung", [scenario], runs=2, concurrency=2, timeout_s=300)
    returncode, stderr = _interrupted(tmp_path, "hung", "check-started")
    assert returncode == 130, stderr[-3000:]
    assert "interrupted; finished runs are saved. Resume with:" in stderr
