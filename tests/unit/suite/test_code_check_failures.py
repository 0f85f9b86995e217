"""A code check that fails itself is reported with its own traceback, not ours."""

from __future__ import annotations

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
