"""Checks in code: the user's own functions decide whether a run did what it should.

A scenario names them under ``checks: code: ['package.module:function', ...]``.
Each gets a :class:`CheckInput` (the answer, what the agent returned, the
trajectory, the tools called, the run's context) and returns:

- ``True`` / ``False``: the check held or not, like any declarative check;
- a number in [0, 1]: a score, kept per run and compared across nights as the
  metric ``score:<function>`` (it passes or fails nothing by itself);
- a :class:`CheckResult`: ``passed`` and/or ``score``, with a ``reason`` that
  goes into a failed run's reason.

Sync or async. A check that raises, returns anything else, or has not returned
after the scenario's ``timeout_s`` is the check's bug, never the agent's failure: that run is judged without it, and the night
prints the check's traceback once (frozen mode fails the test with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import math
import numbers
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrunner.suite._contract import RunContext

__all__ = ["CheckInput", "CheckResult", "CodeChecked", "acode_checks", "code_checks"]

CheckFn = Callable[..., Any]


@dataclass(frozen=True)
class CheckInput:
    """The run as a code check sees it."""

    answer: str | None
    """The agent's final answer (what the declarative checks read)."""
    output: Any
    """What the agent callable returned (None for a ``command:`` agent)."""
    trajectory: Mapping[str, Any]
    """The run's ATIF trajectory, as captured."""
    tools: list[str]
    """Every tool called, in order (sub-agents' after the agent's own)."""
    context: RunContext | None
    """The run's model endpoint and settings (None where there is none, e.g. a replay)."""
    scenario: str
    """The scenario's id."""
    row: Mapping[str, Any] = field(default_factory=dict)
    """The dataset row's fields, its ``id`` included (empty outside dataset scenarios)."""


@dataclass(frozen=True)
class CheckResult:
    """What a check may return instead of a bool or a number."""

    passed: bool | None = None
    score: float | None = None
    """In [0, 1]; compared across nights as ``score:<function>``."""
    reason: str | None = None
    """Why it failed, for the run's reason."""


@dataclass
class CodeChecked:
    """The code checks of one run."""

    held: dict[str, bool] = field(default_factory=dict)
    """``code:<function>`` -> whether it held (checks that returned only a score are absent)."""
    reasons: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    """``<function>`` -> score in [0, 1]."""
    broken: dict[str, str] = field(default_factory=dict)
    """``<function>`` -> the traceback (or the wrong return) of a check that failed itself."""
    judge: Any = None
    """The judge's grades of the run (a ``JudgeResult``), when the scenario has a judge."""
    judge_cost_usd: float | None = None
    """What the judge's calls cost, where its model is priced."""

    def recorded(self) -> dict[str, Any]:
        """What the run's record keeps of these checks besides whether they held."""
        judge = self.judge
        return {
            "scores": self.scores,
            "judge_grades": list(judge.grades) if judge is not None else [],
            "judge_agreed": judge.agreed if judge is not None else None,
            "judge_cost_usd": self.judge_cost_usd,
        }


def _take(name: str, value: Any, out: CodeChecked) -> None:
    """File one check's return value under ``out``; anything else is the check's bug."""
    read = _read_return(value)
    if isinstance(read, str):
        out.broken[name] = read
        return
    passed, score, reason = read
    if passed is not None:
        out.held[f"code:{name}"] = bool(passed)
        if reason and not passed:
            out.reasons[f"code:{name}"] = " ".join(str(reason).split())[:200]
    if score is not None:
        out.scores[name] = score


def _read_return(value: Any) -> tuple[bool | None, float | None, Any] | str:
    """A check's return value as (passed, score, reason), or why it is the check's bug.

    Types are checked, not coerced: ``passed="false"`` is a string, which Python would
    count as true, and a score of ``"0.5"`` is not a number (it raised a TypeError
    outside the check's guard and ended the night). numpy's booleans and numbers are
    what they say (a check computing with numpy returns them)."""
    if isinstance(value, CheckResult):
        return _read_result(value)
    if _is_bool(value):
        return bool(value), None, None
    if _is_number(value):
        return _in_range(float(value), None, None)
    return (
        f"returned {type(value).__name__}; a check returns True/False, a score in [0, 1] "
        "or an evalrunner.CheckResult"
    )


def _read_result(value: CheckResult) -> tuple[bool | None, float | None, Any] | str:
    passed, score = value.passed, value.score
    if passed is None and score is None:
        return "returned a CheckResult with neither passed nor score"
    if passed is not None and not _is_bool(passed):
        return f"returned a CheckResult whose passed is {passed!r}, not True or False"
    if score is not None and not _is_number(score):
        return f"returned a CheckResult whose score is {score!r}, not a number in [0, 1]"
    return _in_range(
        None if score is None else float(score),
        None if passed is None else bool(passed),
        value.reason,
    )


def _in_range(
    score: float | None, passed: bool | None, reason: Any
) -> tuple[bool | None, float | None, Any] | str:
    if score is not None and not (math.isfinite(score) and 0 <= score <= 1):
        return f"returned the score {score!r}, outside [0, 1]"
    return passed, score, reason


def _is_bool(value: Any) -> bool:
    """True/False, or numpy's (a 0-d boolean)."""
    kind = type(value)
    return isinstance(value, bool) or (
        kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")  # numpy 2, 1
    )


def _is_number(value: Any) -> bool:
    """A real number, numpy's included; not a boolean, not a string."""
    return isinstance(value, numbers.Real) and not _is_bool(value)


_CALLERS = frozenset({"evalrunner", "asyncio", "concurrent", "threading"})
"""Modules whose frames above a check say nothing its author can act on (our loop, the
thread a sync check runs in)."""


def _failure(exc: BaseException) -> str:
    """The traceback from the check's own first frame: printed whole, it was mostly ours."""
    tb = exc.__traceback__
    while (
        tb is not None
        and tb.tb_next is not None
        and str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0] in _CALLERS
    ):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


async def acode_checks(
    checks: Sequence[tuple[str, CheckFn]], run: CheckInput, timeout_s: float | None = None
) -> CodeChecked:
    """Run each check on ``run``: async ones awaited, sync ones in a thread of their own
    (they may do I/O); one that has not returned after ``timeout_s`` (the scenario's, as
    for the agent) is the check's bug, like one that raised. An async check that blocks
    the loop itself (``time.sleep``, a sync HTTP call) cannot be interrupted there."""
    out = CodeChecked()
    for name, fn in checks:
        bound = asyncio.timeout(timeout_s)
        try:
            async with bound:
                value = await _called(name, fn, run)
        except (SystemExit, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and _stopping():
                raise  # the night is being stopped: not the check's doing
            # sys.exit() or a cancellation of the check's own (an inner task it awaited)
            # ends the check, not the night (before: the night exited with the check's code).
            out.broken[name] = (
                f"raised {type(exc).__name__}({exc}), so the run is judged without it"
            )
            continue
        except Exception as exc:  # the check's own bug: never the agent's failure
            # A TimeoutError of the check's own (urllib's, its own asyncio.timeout) is its
            # failure, shown with its traceback; only ours is "did not return".
            out.broken[name] = (
                f"did not return within {timeout_s:g} s (the scenario's timeout_s), so the "
                "run is judged without it; a check that waits on something needs a timeout "
                "of its own"
                if bound.expired() and timeout_s is not None
                else _failure(exc)
            )
            continue
        _take(name, value, out)
    return out


def _stopping() -> bool:
    """This task was asked to stop (the night is being cancelled), rather than the check
    raising a CancelledError of its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _called(name: str, fn: CheckFn, run: CheckInput) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(run)
    value = await _in_own_thread(name, fn, run)
    return await value if inspect.isawaitable(value) else value


async def _in_own_thread(name: str, fn: CheckFn, run: CheckInput) -> Any:
    """``fn(run)`` in a daemon thread: one that never returns is left behind when its wait
    times out or the night is stopped. In ``asyncio.to_thread`` it held the loop's executor,
    whose shutdown waits for it, so a hung check hung the night and the first Ctrl-C."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, exc: BaseException | None) -> None:
        if not done.done():
            if exc is None:
                done.set_result(value)
            else:
                done.set_exception(exc)

    def work() -> None:
        value, exc = None, None
        try:
            value = context.run(fn, run)
        except Exception as error:  # handed to the loop, which raises it in the wait
            exc = error
        except BaseException as error:  # sys.exit() in a check stops the check, not the night
            exc = RuntimeError(f"the check raised {type(error).__name__}({error})")
        with contextlib.suppress(RuntimeError):  # the loop closed while the check ran on
            loop.call_soon_threadsafe(settle, value, exc)

    threading.Thread(target=work, name=f"code check {name}", daemon=True).start()
    return await done


def code_checks(
    checks: Sequence[tuple[str, CheckFn]], run: CheckInput, timeout_s: float | None = None
) -> CodeChecked:
    """:func:`acode_checks` from synchronous code (frozen mode)."""
    return asyncio.run(acode_checks(checks, run, timeout_s))
