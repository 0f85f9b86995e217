"""Outages: nights the endpoints failed, told apart from nights that measured the agent.

The run's exit code, the history entry and ``evalrunner baseline`` read the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalrunner.suite._record import RunRecord

DEFAULT_OUTAGE_SHARE = 0.5
"""A night with more than this share of infra_error runs is an outage."""


@dataclass(frozen=True)
class Outage:
    """A night the endpoints failed: too many runs are infra_error to say anything."""

    infra: int
    total: int
    share: float

    def line(self) -> str:
        return (
            f"outage: {self.infra} of {self.total} runs ended in infra_error "
            f"({self.infra / self.total:.0%}, more than {self.share:.0%}): the endpoints failed, "
            "not the agent; no pass^k or verdicts were computed from this night"
        )


def outage_of(records: Sequence[RunRecord], share: float = DEFAULT_OUTAGE_SHARE) -> Outage | None:
    """The night's outage, if more than ``share`` of its runs are infra_error."""
    infra = sum(r.outcome == "infra_error" for r in records)
    if records and infra / len(records) > share:
        return Outage(infra, len(records), share)
    return None
