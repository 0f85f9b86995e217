"""The sentinel's share of a night's model calls (night/_sentinel.py); its line and the cause
it adds are the baseline's (tests/unit/baseline/test_sentinel_parts.py)."""

from __future__ import annotations

from evalrunner.night._sentinel import sentinel_calls


def test_the_night_gives_the_sentinel_a_tenth_of_its_calls_and_never_too_few() -> None:
    assert sentinel_calls(night_calls=400, cells=1) == 20  # capped at 20 a cell
    assert sentinel_calls(night_calls=400, cells=4) == 10
    assert sentinel_calls(night_calls=40, cells=1) == 0  # 4 calls tell nothing: not run
