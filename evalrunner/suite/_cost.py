"""What runs cost, as the tables, the report and the summary say it (issue 55).

A run's ``cost_usd`` is None where its model has no price (``endpoints._pricing``): such
runs are "unpriced", never counted as $0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def usd(amount: float) -> str:
    """Dollars as people read them: "$12.30", "$0.0123", "$0.000045" (up to four
    significant digits below a dollar, never in exponent form)."""
    if amount >= 1:
        return f"${amount:,.2f}"
    if amount <= 0:
        return "$0"
    return "$" + f"{amount:.{3 - math.floor(math.log10(amount))}f}".rstrip("0")


def spent(costs: Sequence[float | None]) -> str:
    """What runs of these costs came to: "$0.0123", "unpriced" where none is priced, and
    "≥$0.0123" where some are not (their cost is unknown, not nothing)."""
    priced = [c for c in costs if c is not None]
    if not priced:
        return "unpriced"
    total = usd(math.fsum(priced))
    return total if len(priced) == len(costs) else f"≥{total}"
