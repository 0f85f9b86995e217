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


def test_a_check_s_wrong_types_are_its_bug_and_numpy_s_are_what_they_say() -> None:
    """Types are checked, not coerced: ``passed="false"`` counted as passed (a non-empty
    string is true) and ``score="0.5"`` raised a TypeError outside the guard, ending the
    night (issue 53, row 3). numpy's booleans and numbers are taken as what they are."""
    import numpy as np

    from evalrunner.suite._code_checks import CheckResult

    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )
    returns = {
        "text_passed": CheckResult(passed="false"),  # type: ignore[arg-type]
        "text_score": CheckResult(score="0.5"),  # type: ignore[arg-type]
        "numpy_bool": np.bool_(False),
        "numpy_score": np.float32(0.25),
        "numpy_int": np.int64(1),
        "result_numpy": CheckResult(passed=np.bool_(True), score=np.float64(0.5)),  # type: ignore[arg-type]
    }
    checks = [(name, lambda run, value=value: value) for name, value in returns.items()]
    checked = code_checks(checks, run)
    assert set(checked.broken) == {"text_passed", "text_score"}
    assert "passed is 'false', not True or False" in checked.broken["text_passed"]
    assert "score is '0.5', not a number" in checked.broken["text_score"]
    assert checked.held == {"code:numpy_bool": False, "code:result_numpy": True}
    assert checked.scores == {"numpy_score": 0.25, "numpy_int": 1.0, "result_numpy": 0.5}


async def _exits(run: CheckInput) -> bool:
    raise SystemExit(2)


async def _cancels_itself(run: CheckInput) -> bool:
    raise asyncio.CancelledError("the check's own")


def _exits_in_thread(run: CheckInput) -> bool:
    raise SystemExit(3)


def test_a_check_that_exits_or_cancels_itself_ends_the_check_not_the_night() -> None:
    """An async check's ``sys.exit(2)`` exited the whole night with 2, silently; a
    CancelledError of its own stopped it too. Now each is the check's bug, named."""
    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )
    checks = [("exits", _exits), ("cancels", _cancels_itself), ("thread", _exits_in_thread)]
    checked = code_checks([*checks, ("fine", lambda run: True)], run)
    assert set(checked.broken) == {"exits", "cancels", "thread"}
    assert "SystemExit(2)" in checked.broken["exits"]
    assert "CancelledError" in checked.broken["cancels"]
    assert checked.held == {"code:fine": True}


def test_a_night_being_stopped_still_stops_a_check() -> None:
    """Cancelling the task that runs the checks (Ctrl-C, the night's own cancel) is not
    the check's bug: it goes through."""
    from evalrunner.suite._code_checks import acode_checks

    run = CheckInput(
        answer="Paris", output=None, trajectory={}, tools=[], context=None, scenario="s"
    )

    async def main() -> str:
        task = asyncio.ensure_future(acode_checks([("awaits", _awaits)], run))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert asyncio.run(main()) == "cancelled"
