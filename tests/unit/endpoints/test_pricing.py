"""A run's price: the suite's own entry, else litellm's bundled table (read offline), else
unpriced, never $0 (issue 55)."""

from __future__ import annotations

import math

import pytest

from evalrunner.endpoints._pricing import Price, price_of
from evalrunner.suite._cost import spent, usd


def test_a_known_model_is_priced_from_litellm_s_table_with_or_without_its_prefix() -> None:
    bare, prefixed = price_of("gpt-4o-mini"), price_of("openai/gpt-4o-mini")
    assert bare is not None and bare == prefixed
    assert bare.input > 0 and bare.output > bare.input and bare.cache_read < bare.input


def test_the_suite_s_own_price_wins_and_an_unknown_model_is_unpriced() -> None:
    own = Price.per_million(1.0, 2.0)
    assert price_of("openai/gpt-4o-mini", own) is own
    assert price_of("local") is None
    assert price_of("openai/a-model-nobody-prices") is None


def test_cached_tokens_are_priced_at_their_own_rates() -> None:
    price = Price.per_million(3.0, 15.0, cache_read_usd=0.3, cache_write_usd=3.75)
    # 1,000 prompt tokens of which 600 read from the cache and 100 written to it.
    cost = price.cost(1000, 200, cache_read_tokens=600, cache_write_tokens=100)
    assert math.isclose(cost, (300 * 3.0 + 600 * 0.3 + 100 * 3.75 + 200 * 15.0) / 1e6)
    # Without caching figures every prompt token is an input token.
    assert math.isclose(Price.per_million(3.0, 15.0).cost(1000, 0), 0.003)


@pytest.mark.parametrize(
    ("amount", "said"),
    [
        (12.3, "$12.30"),
        (1234.5, "$1,234.50"),
        (0.0123, "$0.0123"),
        (0.000045, "$0.000045"),
        (0.0, "$0"),
    ],
)
def test_dollars_read_as_people_write_them(amount: float, said: str) -> None:
    assert usd(amount) == said


def test_runs_without_a_price_are_unpriced_not_free() -> None:
    assert spent([None, None]) == "unpriced"
    assert spent([0.002, 0.002]) == "$0.004"
    assert spent([0.002, None]) == "≥$0.002"
