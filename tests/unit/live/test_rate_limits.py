"""The shared rate-limit schedule: requests spread within rpm and tpm; a 429 holds back the model."""

from __future__ import annotations

import itertools

import pytest

from evalrunner.live._limits import HEADROOM, Pacer, estimate_tokens
from evalrunner.suite._schema import RateLimit

M = "openai/gpt-4o-mini"


def starts(schedule: Pacer, count: int, tokens: int = 0, now: float = 0.0) -> list[float]:
    """When each of ``count`` requests asked at ``now`` may go."""
    return [now + schedule.reserve(M, tokens, now) for _ in range(count)]


def test_requests_are_spread_so_no_minute_holds_more_than_rpm() -> None:
    times = starts(Pacer({M: RateLimit(rpm=60)}), 200)
    assert times[0] == 0.0
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(times)}
    assert gaps == {round(1 / HEADROOM, 6)}
    assert max(sum(t <= s < t + 60 for s in times) for t in times) <= 60


def test_tpm_spaces_requests_by_their_tokens() -> None:
    times = starts(Pacer({M: RateLimit(tpm=6000)}), 3, tokens=1000)
    assert times[1] - times[0] == pytest.approx(10 / HEADROOM)


def test_a_429_holds_back_every_request_to_the_model() -> None:
    schedule = Pacer({M: RateLimit(rpm=6000)})
    schedule.refuse(M, retry_after=5.0, now=100.0)
    assert schedule.reserve(M, 0, 100.0) == pytest.approx(5.0)
    assert schedule.reserve(M, 0, 100.0) > 5.0
    schedule.refuse(M, retry_after=None, now=200.0)  # no Retry-After: a default pause
    assert schedule.reserve(M, 0, 200.0) > 0


def test_models_without_limits_never_wait() -> None:
    schedule = Pacer({M: RateLimit(max_concurrency=2)})
    assert starts(schedule, 5) == [0.0] * 5
    assert Pacer({}).reserve("other/model", 10, 0.0) == 0.0


def test_token_estimate_counts_messages_and_max_tokens() -> None:
    request = {"messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    assert 100 <= estimate_tokens(request) - 50 <= 120
