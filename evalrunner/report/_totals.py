"""What the suite's charts sum of a night's records, read with the night's texts when it
is selected (:func:`~evalrunner.report._select.select`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from evalrunner.history._store import Source
    from evalrunner.history._values import FloatArray


@dataclass(frozen=True)
class RecordTotals:
    """What the suite's charts sum of a night's records: read with the night's other
    columns when it is selected, so the charts open no file again."""

    prompt: float
    completion: float
    costs: FloatArray
    """The cost of each run that has one (priced)."""

    @classmethod
    def of(cls, source: Source, rows: Sequence[int]) -> RecordTotals:
        """The totals of ``source``'s records at ``rows`` (ascending)."""

        def kept(name: str) -> FloatArray:
            array = source.floats("records", name)
            return array if len(rows) == len(array) else array[list(rows)]

        costs = kept("cost_usd")
        return cls(
            float(kept("prompt_tokens").sum()),
            float(kept("completion_tokens").sum()),
            costs[~np.isnan(costs)],
        )
