"""A tool path's baseline fit as the path test reads it, built from its numbers instead of
from runs: for the MDE's edge cases (``tests/unit/stats/test_mde.py``,
``benchmarks/path_mde_edges.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PathFit:
    """A tool path's baseline fit as the path test reads it: shares of the usual, another
    known and a new path; the night effect a share ``icc`` of the run variance; ``nights``
    nights of ``per`` runs."""

    shares: tuple[float, float, float]
    icc: float
    nights: int
    per: int

    @property
    def estimate(self) -> float:
        return self.shares[1] + 2 * self.shares[2]

    mean = estimate

    @property
    def run_var(self) -> float:
        return self.shares[1] + 4 * self.shares[2] - self.estimate**2

    @property
    def night_var(self) -> float:
        return self.icc * self.run_var

    @property
    def base_var(self) -> float:
        return self.run_var * ((1 - self.icc) / (self.nights * self.per) + self.icc / self.nights)

    def within_var(self, n: int) -> float:
        return self.run_var * (1 - self.icc) / n

    def null_var(self, n: int) -> float:
        return self.within_var(n) + self.night_var + self.base_var
