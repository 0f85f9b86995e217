"""Code checks the suites in tests name (``checks: code: ['checks_for_tests:<name>']``)."""

from __future__ import annotations

import asyncio
import time

from evalrunner import CheckInput, CheckResult


def names_paris(run: CheckInput) -> bool:
    return "Paris" in (run.answer or "")


async def brevity(run: CheckInput) -> float:
    """A score: 1 for a short answer, less the longer it gets."""
    await asyncio.sleep(0)
    return min(1.0, 40 / max(40, len(run.answer or "")))


def cites_a_source(run: CheckInput) -> CheckResult:
    cited = "source:" in (run.answer or "")
    return CheckResult(passed=cited, reason=None if cited else "no 'source:' in the answer")


def sees_the_run(run: CheckInput) -> bool:
    """Everything a check is promised is there."""
    return (
        run.scenario != ""
        and isinstance(run.trajectory.get("steps"), list)
        and run.tools == ["lookup"]
        and (run.context is None or run.context.model != "")
    )


def buggy(run: CheckInput) -> bool:
    raise ValueError("the check's own bug")


def says_yes(run: CheckInput) -> str:
    return "yes"


def names_the_rows_capital(run: CheckInput) -> CheckResult:
    """A check that reads the dataset row it runs on."""
    expected = str(run.row.get("capital", ""))
    held = bool(expected) and expected in (run.answer or "")
    return CheckResult(
        passed=held, reason=None if held else f"row {run.row.get('id')}: no {expected!r}"
    )


def takes_nothing() -> bool:
    """Written without the run it is given: a configuration error, not a check's bug."""
    return True


def hangs(run: CheckInput) -> bool:
    """Waits on something that never answers (a service without a timeout)."""
    time.sleep(30)
    return True


async def ahangs(run: CheckInput) -> bool:
    await asyncio.sleep(30)
    return True
