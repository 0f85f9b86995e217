"""A night's spending limit: no run starts that would take what is spent past it (issue 55).

What a run will cost is projected from the night's own priced runs (their mean cost); until
one has finished nothing is known, so the first runs start, as many as may run at once: the
night stops within one batch of its budget. A run that started always finishes (and is
kept); runs not started stay in the results directory's plan, so ``--resume`` with a larger
``--budget`` finishes the night. The budget is the whole night's: runs a resumed directory
already holds count against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evalrunner.errors import ConfigError
from evalrunner.suite._cost import usd
from evalrunner.suite._record import RunRecord

__all__ = ["Budget", "BudgetSpent"]


@dataclass(frozen=True)
class BudgetSpent:
    """How a night that reached its budget ended: spent, the limit, runs done and planned."""

    spent: float
    limit: float
    done: int
    planned: int

    def line(self) -> str:
        """'budget: $0.0480 of $0.05 spent, 24 of 40 runs done; ...'."""
        return (
            f"budget: {usd(self.spent)} of {usd(self.limit)} spent, {self.done} of "
            f"{self.planned} runs done; the rest were not started (one more would have "
            "crossed it), and nothing was compared"
        )


@dataclass
class Budget:
    """The night's limit in USD and what its runs have spent so far."""

    limit: float
    spent: float = 0.0
    """What the finished priced runs cost, their judges' included (a resumed directory's
    runs too): a running total, as each start asks for it."""
    priced: int = 0
    """How many runs :attr:`spent` covers."""
    in_flight: int = 0
    stopped: bool = False
    """A run was held back: the night ends when those started have."""

    @classmethod
    def of(cls, limit: float, previous: Iterable[RunRecord]) -> Budget:
        if not math.isfinite(limit) or limit <= 0:
            raise ConfigError(f"--budget {limit}: give a positive amount in USD (e.g. 5 or 0.50)")
        budget = cls(limit)
        for record in previous:
            budget.count(record)
        return budget

    def count(self, record: RunRecord) -> None:
        """Add a finished run's cost (nothing for an unpriced one)."""
        if record.cost_usd is not None:
            self.spent += record.cost_usd + (record.judge_cost_usd or 0.0)
            self.priced += 1

    def may_start(self) -> bool:
        """Whether one more run fits: what is spent, the runs under way and this one, at
        the mean cost of the night's runs so far (before any has finished: yes, while
        nothing is spent past the limit)."""
        if self.stopped:
            return False
        per_run = self.spent / self.priced if self.priced else 0.0
        # A hair over the limit is the sums' rounding, not a run too many ($0.006 + $0.004).
        if self.spent + (self.in_flight + 1) * per_run > self.limit * (1 + 1e-9):
            self.stopped = True
        return not self.stopped

    def started(self) -> None:
        self.in_flight += 1

    def finished(self, record: RunRecord) -> None:
        self.in_flight -= 1
        self.count(record)

    def spent_for(self, records: Sequence[RunRecord], planned: int) -> BudgetSpent:
        return BudgetSpent(self.spent, self.limit, len(records), planned)


def unpriced_for_budget(labels: Iterable[str], priced: dict[str, bool]) -> str | None:
    """Why a budget cannot be kept for these models (None: it can): a model without a price
    would spend without counting."""
    unpriced = sorted(label for label in labels if not priced.get(label))
    if not unpriced:
        return None
    return (
        f"--budget: {', '.join(unpriced)} is unpriced (not in litellm's price table), so "
        "what its runs spend cannot be counted; give it a pricing: entry in the suite "
        "(USD per million tokens, suites/README.md), or run without --budget"
    )
