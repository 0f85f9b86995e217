"""The night variance a suite's cells share, estimated from all of them at once.

Every cell of a suite sees the same endpoint, so each cell's estimate of tau^2 is
another look at one night law; five nights of one cell say little, five cells' say
more. :func:`pool_tau2` combines them on the scale where the law is one size for every
cell (:attr:`~evalrunner.stats._reference.MetricReference.night_scale`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Estimate(Protocol):
    """One cell's fit of a metric, as the pool reads it
    (:class:`~evalrunner.stats._reference.MetricReference`)."""

    @property
    def night_scale(self) -> float: ...

    def own_tau2(self, at: float | None = None) -> tuple[float, float] | None: ...

    def rho_of(self, tau2: float) -> float: ...


@dataclass(frozen=True)
class Pool:
    """The night variance a suite's cells share, for one metric family and model.

    On the common scale: a cell's tau^2 is :attr:`tau2` times its
    :attr:`Estimate.night_scale` (the kind's ``night_scale`` says why)."""

    tau2: float
    """The suite-wide between-night variance (common scale)."""
    mean_var: float
    """Variance of that estimate (common scale)."""
    spread: float
    """Variance of the cells' true tau^2 around it (common scale; 0: one drift for all)."""


POOL_ROUNDS = 3
"""Fixed-point rounds of :func:`pool_tau2` (each cell's sampling variance is evaluated at
the pooled value; three rounds settle it to well under its standard error)."""


def pool_tau2(refs: Sequence[Estimate]) -> Pool | None:
    """The suite's night variance from its cells' own estimates: a random-effects
    meta-analysis on the common scale (DerSimonian-Laird).

    Each cell's estimate of tau^2, divided by its :attr:`Estimate.night_scale`,
    estimates the endpoint's one night variance, and is weighed by the inverse of its
    sampling variance there: a 0.6 success rate says far more about how far a night moves
    rates than a 0.97 one, whose runs barely vary. The sampling variances are evaluated
    at the pooled value, not at each cell's own estimate (weights that grow as an
    estimate falls would pull the pooled value down), so the two are found together.
    What the estimates scatter beyond their sampling error is :attr:`Pool.spread`: cells
    that really drift differently. None when no cell has two nights.
    """
    own = [(r, r.night_scale, r.own_tau2()) for r in refs if r.night_scale > 0]
    cells = [(r, scale) for r, scale, found in own if found is not None]
    if not cells:
        return None
    start = [found[0] / scale for _, scale, found in own if found is not None]
    pool = Pool(max(float(np.median(start)), 0.0), 0.0, 0.0)
    for _ in range(POOL_ROUNDS):
        pool = _pool_round(cells, pool.tau2)
    return pool


def _pool_round(cells: Sequence[tuple[Estimate, float]], level: float) -> Pool:
    """One DerSimonian-Laird estimate with every cell's sampling variance at ``level``."""
    found = [r.own_tau2(r.rho_of(level * s)) for r, s in cells]
    x = np.array([f[0] / s for f, (_, s) in zip(found, cells, strict=True) if f is not None])
    v = np.array([f[1] / s**2 for f, (_, s) in zip(found, cells, strict=True) if f is not None])
    if float(v.max()) <= 0:  # no estimate has sampling noise (no run varies)
        return Pool(max(float(x.mean()), 0.0), 0.0, 0.0)
    # A cell whose estimate has no sampling noise still weighs finitely.
    v = np.maximum(v, 1e-9 * float(v.max()))
    least = float(v.min())
    w = least / v  # inverse-variance weights, scaled to at most 1 (no overflow)
    fixed = float((w * x).sum() / w.sum())
    spread = 0.0
    if x.size > 1:
        q = float((w * (x - fixed) ** 2).sum())  # Cochran's Q times ``least``
        spread = max(0.0, (q - (x.size - 1) * least) / float(w.sum() - (w**2).sum() / w.sum()))
    w_re = 1 / (v + spread)
    return Pool(max(float((w_re * x).sum() / w_re.sum()), 0.0), float(1 / w_re.sum()), spread)
