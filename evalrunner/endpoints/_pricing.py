"""What a model's tokens cost: litellm's bundled price table, read offline, or the suite's own.

A run's cost is priced from the usage its endpoint reported (prompt tokens, of which some
were read from or written to the provider's prompt cache, and completion tokens) at its
model's price. The price comes from the suite's ``pricing:`` entry for the model where it
has one (a model the table does not know, the embedded model, a negotiated rate), else from
the table litellm ships (``model_prices_and_context_window_backup.json``), read as data: no
import of litellm, no fetch of its remote copy. A model in neither is unpriced: its runs'
cost is None and every place that shows cost says "unpriced", never $0.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.suite._schema import Pricing

__all__ = ["Price", "bundled_model_map", "price_of", "suite_price"]

_PER_MILLION = 1e-6


@dataclass(frozen=True)
class Price:
    """USD per token of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    @classmethod
    def per_million(
        cls,
        input_usd: float,
        output_usd: float,
        cache_read_usd: float | None = None,
        cache_write_usd: float | None = None,
    ) -> Price:
        """A suite's entry, in USD per million tokens (cache reads and writes default to the
        input price: what a provider without prompt caching charges for them)."""
        return cls(
            input_usd * _PER_MILLION,
            output_usd * _PER_MILLION,
            (input_usd if cache_read_usd is None else cache_read_usd) * _PER_MILLION,
            (input_usd if cache_write_usd is None else cache_write_usd) * _PER_MILLION,
        )

    def cost(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> float:
        """USD for one run's usage; ``prompt_tokens`` include the cached ones (as litellm and
        the records count them), which are priced at their own rates."""
        read, written = cache_read_tokens or 0, cache_write_tokens or 0
        plain = max(prompt_tokens - read - written, 0)
        return (
            plain * self.input
            + read * self.cache_read
            + written * self.cache_write
            + completion_tokens * self.output
        )


@functools.cache
def bundled_model_map() -> Mapping[str, Any]:
    """litellm's bundled model map (prices, output caps), read as data once (tens of ms;
    importing litellm would cost seconds). Empty if the file is not where it was."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    where = list(spec.submodule_search_locations or []) if spec else []
    try:
        path = Path(where[0]) / "model_prices_and_context_window_backup.json"
        data = json.loads(path.read_bytes())
    except (IndexError, OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _from_table(model: str) -> Price | None:
    """The table's price of ``model`` (``openai/gpt-4o-mini`` is found as ``gpt-4o-mini``)."""
    table = bundled_model_map()
    entry = table.get(model)
    if entry is None and "/" in model:
        entry = table.get(model.split("/", 1)[1])
    if not isinstance(entry, dict):
        return None
    try:
        paid_in = float(entry["input_cost_per_token"])
        paid_out = float(entry["output_cost_per_token"])
    except (KeyError, TypeError, ValueError):
        return None
    read = entry.get("cache_read_input_token_cost")
    written = entry.get("cache_creation_input_token_cost")
    return Price(
        paid_in,
        paid_out,
        paid_in if read is None else float(read),
        paid_in if written is None else float(written),
    )


def price_of(model: str, own: Price | None = None) -> Price | None:
    """``model``'s price: the suite's own entry, else litellm's table, else None (unpriced)."""
    return own if own is not None else _from_table(model)


def suite_price(pricing: Mapping[str, Pricing], label: str, model: str) -> Price | None:
    """The price of the model a suite calls ``label`` (``model``: the litellm string it
    resolves to): the suite's ``pricing`` entry for the label, else litellm's table."""
    own = pricing.get(label)
    if own is None:
        return price_of(model)
    return Price.per_million(
        own.input_per_million,
        own.output_per_million,
        own.cached_input_per_million,
        own.cache_write_per_million,
    )
