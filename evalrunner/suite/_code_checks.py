"""Checks in code: the user's own functions decide whether a run did what it should.

A scenario names them under ``checks: code: ['package.module:function', ...]``.
Each gets a :class:`CheckInput` (the answer, what the agent returned, the
trajectory, the tools called, the run's context) and returns:

- ``True`` / ``False``: the check held or not, like any declarative check;
- a number in [0, 1]: a score, kept per run and compared across nights as the
  metric ``score:<function>`` (it passes or fails nothing by itself);
- a :class:`CheckResult`: ``passed`` and/or ``score``, with a ``reason`` that
  goes into a failed run's reason.

Sync or async. A check that raises, or returns anything else, is the check's
bug, never the agent's failure: that run is judged without it, and the night
prints the check's traceback once (frozen mode fails the test with it).
"""

from __future__ import annotations

import asyncio
import inspect
import math
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

    def recorded(self) -> dict[str, Any]:
        """What the run's record keeps of these checks besides whether they held."""
        judge = self.judge
        return {
            "scores": self.scores,
            "judge_grades": list(judge.grades) if judge is not None else [],
            "judge_agreed": judge.agreed if judge is not None else None,
        }


def _take(name: str, value: Any, out: CodeChecked) -> None:
    """File one check's return value under ``out``; anything else is the check's bug."""
    passed, score, reason = None, None, None
    if isinstance(value, CheckResult):
        passed, score, reason = value.passed, value.score, value.reason
        if passed is None and score is None:
            out.broken[name] = "returned a CheckResult with neither passed nor score"
            return
    elif isinstance(value, bool):
        passed = value
    elif isinstance(value, int | float):
        score = float(value)
    else:
        out.broken[name] = (
            f"returned {type(value).__name__}; a check returns True/False, a score in [0, 1] "
            "or an evalrunner.CheckResult"
        )
        return
    if score is not None and not (math.isfinite(score) and 0 <= score <= 1):
        out.broken[name] = f"returned the score {score!r}, outside [0, 1]"
        return
    if passed is not None:
        out.held[f"code:{name}"] = bool(passed)
        if reason and not passed:
            out.reasons[f"code:{name}"] = " ".join(str(reason).split())[:200]
    if score is not None:
        out.scores[name] = score


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


async def acode_checks(checks: Sequence[tuple[str, CheckFn]], run: CheckInput) -> CodeChecked:
    """Run each check on ``run``: async ones awaited, sync ones in a thread (they may do I/O)."""
    out = CodeChecked()
    for name, fn in checks:
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(run)
            else:
                value = await asyncio.to_thread(fn, run)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:  # the check's own bug: never the agent's failure
            out.broken[name] = _failure(exc)
            continue
        _take(name, value, out)
    return out


def code_checks(checks: Sequence[tuple[str, CheckFn]], run: CheckInput) -> CodeChecked:
    """:func:`acode_checks` from synchronous code (frozen mode)."""
    return asyncio.run(acode_checks(checks, run))
