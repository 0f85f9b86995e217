"""The true oracle of a first night: the best test that knows the night law exactly.

It gets the runs the engine got (an anchor of ``nights x runs`` and ``n`` runs tonight) and
the engine's own bar for the change (``fdr_q`` over the night's gating tests: 0.05 / 25 for
a lone change in a 5 x 1 night), and nothing the engine estimates: the law of every
night's parameters is known. Its statistic is tonight's share (or mean) minus the
anchor's, in the harmful direction; its critical value is that statistic's exact null
quantile at the bar, found by simulating the null law (cached per law, profile, anchor
and runs). Its power is the share of changed nights past that value. By Neyman-Pearson
no test with as many runs at that level does much better, so it is the ceiling the
engine's rows are read against (issue 52); the engine *told* tau^2 is not one.

The laws mirror ``benchmarks/calibrate_stats.py``'s generator (``Profile.night``):

* ``quiet``: no night effect;
* ``drift``: success U(+/-0.10), skip U(+/-0.02) a night, paths Dirichlet(200 x shares),
  steps exp(N(0, 0.05));
* ``logit``: rates N(0, 0.3) on the logit scale, steps exp(N(0, 0.1)), paths as above.

Shared by ``tests/unit/stats/test_true_oracle.py`` (size and a row against the engine told
tau^2) and ``benchmarks/calibrate_stats.py`` (the power and A/A tables' first column).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

STEPS_SIZE = 10.0
"""The generator's negative-binomial size for step counts."""
LAWS = ("quiet", "drift", "logit")
DRAWS = 200_000
"""Null and changed nights per oracle: ~400 null draws past a bar of 0.002."""
FloatArray = np.ndarray


@dataclass(frozen=True)
class Law:
    """What the oracle knows of one cell: its long-run parameters and how nights move them."""

    law: str
    p_pass: float = 0.9
    p_skip: float = 0.03
    p_crash: float = 0.01
    p_infra: float = 0.01
    usual: float = 0.7
    """The usual tool path's share."""
    steps: float = 5.0


@dataclass(frozen=True)
class Oracle:
    """A metric's true-oracle test at one bar, with its power on a changed law."""

    metric: str
    power: float
    size: float
    """The null rejection rate of the critical value, on fresh null draws."""
    critical: float
    runs: int


def _logit_move(rng: np.random.Generator, p: float, m: int) -> FloatArray:
    logit = np.log(p / (1 - p)) + rng.normal(0, 0.3, m)
    out: FloatArray = 1 / (1 + np.exp(-logit))
    return out


def _rates(law: Law, rng: np.random.Generator, m: int) -> tuple[FloatArray, FloatArray]:
    """``m`` nights' pass and skip probabilities (among non-infra runs) under ``law``."""
    if law.law == "quiet":
        return np.full(m, law.p_pass), np.full(m, law.p_skip)
    if law.law == "logit":
        skip = _logit_move(rng, law.p_skip, m)
        passed = _logit_move(rng, law.p_pass, m)
        return np.minimum(1 - skip - law.p_crash - 0.005, passed), skip
    skip = np.clip(law.p_skip + rng.uniform(-0.02, 0.02, m), 0.0, 0.5)
    top = 1 - skip - law.p_crash
    passed = np.minimum(top - 0.005, np.maximum(0.02, law.p_pass + rng.uniform(-0.1, 0.1, m)))
    return passed, skip


def _non_infra(law: Law, rng: np.random.Generator, m: int, runs: int) -> FloatArray:
    return np.maximum(rng.binomial(runs, 1 - law.p_infra, m), 1)


def _success(law: Law, rng: np.random.Generator, m: int, runs: int) -> tuple[FloatArray, ...]:
    """Passed runs and non-infra runs of ``m`` nights (success over non-infra runs)."""
    passed, _ = _rates(law, rng, m)
    k = _non_infra(law, rng, m, runs)
    return rng.binomial(k, passed), k


def _skip(law: Law, rng: np.random.Generator, m: int, runs: int) -> tuple[FloatArray, ...]:
    _, skip = _rates(law, rng, m)
    k = _non_infra(law, rng, m, runs)
    return rng.binomial(k, skip), k


def _crash(law: Law, rng: np.random.Generator, m: int, runs: int) -> tuple[FloatArray, ...]:
    """Crashed runs (no law moves the crash rate) and non-infra runs."""
    k = _non_infra(law, rng, m, runs)
    return rng.binomial(k, law.p_crash), k


def _path(law: Law, rng: np.random.Generator, m: int, runs: int) -> tuple[FloatArray, ...]:
    """Runs on the usual path (its night share Beta(200 s, 200 (1 - s)) when drifting: the
    Dirichlet's marginal)."""
    share = (
        np.full(m, law.usual)
        if law.law == "quiet"
        else rng.beta(200 * law.usual, 200 * (1 - law.usual), m)
    )
    return rng.binomial(runs, share), np.full(m, runs)


def _steps(law: Law, rng: np.random.Generator, m: int, runs: int) -> tuple[FloatArray, ...]:
    """Total steps of ``m`` nights (max(1, NB(10, mean)) a run) and the runs."""
    sd = {"quiet": 0.0, "drift": 0.05, "logit": 0.1}[law.law]
    mean = law.steps * np.exp(rng.normal(0, sd, m)) if sd else np.full(m, law.steps)
    p = STEPS_SIZE / (STEPS_SIZE + mean)
    steps = np.maximum(1, rng.negative_binomial(STEPS_SIZE, p[:, None], (m, runs)))
    return steps.sum(axis=1).astype(float), np.full(m, runs)


_STATS: dict[str, tuple[Callable[..., tuple[FloatArray, ...]], int]] = {
    "success_rate": (_success, -1),
    "crash_rate": (_crash, +1),
    "skip_rate": (_skip, +1),
    "tool_sequence": (_path, -1),
    "step_count": (_steps, +1),
}
"""Per metric: the night's (numerator, denominator) draw and the harmful sign."""


def night_draws(
    metric: str, law: Law, rng: np.random.Generator, m: int, runs: int
) -> tuple[FloatArray, ...]:
    """``m`` nights' (numerator, denominator) of ``metric`` under ``law``, ``runs`` a night."""
    fn, _ = _STATS[metric]
    return fn(law, rng, m, runs)


def harmful_sign(metric: str) -> int:
    """+1 where a larger share or mean is the harmful side, -1 where a smaller one is."""
    return _STATS[metric][1]


def statistic(
    metric: str,
    anchor_law: Law,
    tonight_law: Law,
    anchor: tuple[int, int],
    runs: int,
    draws: int,
    seed: int,
) -> FloatArray:
    """``draws`` values of (tonight's share or mean - the anchor's), signed so that larger is
    more harmful: the anchor ``nights x runs`` under ``anchor_law``, ``runs`` tonight under
    ``tonight_law``, every night its own draw of the law."""
    rng = np.random.default_rng(seed)
    base = anchor_share(metric, anchor_law, rng, draws, anchor)
    a, b = night_draws(metric, tonight_law, rng, draws, runs)
    out: FloatArray = harmful_sign(metric) * (a / b - base)
    return out


def anchor_share(
    metric: str, law: Law, rng: np.random.Generator, m: int, anchor: tuple[int, int]
) -> FloatArray:
    """``m`` anchors' share (or mean) of ``metric``: ``nights x runs``, each night its own
    draw of ``law``."""
    nights, per_night = anchor
    top, bottom = np.zeros(m), np.zeros(m)
    for _ in range(nights):
        a, b = night_draws(metric, law, rng, m, per_night)
        top += a
        bottom += b
    out: FloatArray = top / bottom
    return out


@functools.cache
def critical(
    metric: str, law: Law, anchor: tuple[int, int], runs: int, bar: float, draws: int, seed: int
) -> float:
    """The statistic's exact null ``1 - bar`` quantile (``draws`` simulated null nights),
    rounded up to a value the statistic takes so that ``> critical`` holds size <= bar."""
    null = statistic(metric, law, law, anchor, runs, draws, seed)
    return float(np.quantile(null, 1 - bar, method="higher"))


def true_oracle(
    metric: str,
    law: Law,
    changed: Law,
    anchor: tuple[int, int],
    runs: int,
    bar: float,
    draws: int = DRAWS,
    seed: int = 0,
) -> Oracle:
    """The true oracle's power against ``changed`` (tonight's long-run law) for ``metric``:
    ``runs`` tonight, the anchor under ``law``, one-sided at ``bar`` in the harmful
    direction. Its size is measured on fresh null draws (another seed)."""
    limit = critical(metric, law, anchor, runs, bar, draws, seed)
    fresh = statistic(metric, law, law, anchor, runs, draws, seed + 1)
    alt = statistic(metric, law, changed, anchor, runs, draws, seed + 2)
    return Oracle(metric, float((alt > limit).mean()), float((fresh > limit).mean()), limit, runs)


ORACLE_STATISTICS = tuple(_STATS)
"""The metrics the true oracle has a law for."""
