"""A code check that fails itself is reported with its own traceback, not ours."""

from __future__ import annotations

import asyncio
import threading
import time

from evalrunner.suite._code_checks import CheckInput, code_checks


def _buggy(run: CheckInput) -> bool:
    found: dict[str, bool] = {}
    return found["capital"]


async def _abuggy(run: CheckInput) -> bool:
    raise ValueError("the check's own bug")


def test_a_broken_checks_traceback_starts_at_the_check() -> None:
    # Before: the runner's and asyncio's thread frames came first (_code_checks.py,
    # asyncio/threads.py, concurrent/futures/thread.py), the check's own line last.
    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )
    broken = code_checks([("buggy", _buggy), ("abuggy", _abuggy)], run).broken
    for name, line in (("buggy", 'return found["capital"]'), ("abuggy", "raise ValueError")):
        shown = broken[name]
        frames = [x for x in shown.splitlines() if x.lstrip().startswith("File ")]
        assert frames and all(__file__ in x for x in frames), shown
        assert line in shown
        assert "asyncio" not in shown and "_code_checks.py" not in shown


def _waits(run: CheckInput) -> bool:
    threading.Event().wait(5)
    return True


async def _awaits(run: CheckInput) -> bool:
    await asyncio.sleep(5)
    return True


def test_a_check_that_has_not_returned_by_the_timeout_is_broken_and_not_waited_for() -> None:
    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )
    started = time.monotonic()
    checked = code_checks([("waits", _waits), ("awaits", _awaits)], run, timeout_s=0.2)
    assert time.monotonic() - started < 4  # the loop's shutdown does not wait for the thread
    assert set(checked.broken) == {"waits", "awaits"}
    assert "did not return within 0.2 s" in checked.broken["waits"]
    assert not checked.held


def _times_out_itself(run: CheckInput) -> bool:
    raise TimeoutError("the check's own HTTP call timed out")


def test_a_checks_own_timeout_error_is_its_failure_not_ours() -> None:
    # A TimeoutError the check raised (urllib's, its own asyncio.timeout) was said to be
    # "did not return within 60 s", its traceback lost; with no bound it raised TypeError.
    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )
    for bound in (60.0, None):
        broken = code_checks([("own", _times_out_itself)], run, timeout_s=bound).broken
        assert "TimeoutError: the check's own HTTP call timed out" in broken["own"]
        assert "did not return" not in broken["own"]
