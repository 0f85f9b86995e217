"""How big a change a night can see: MDE, runs needed, and the chance a look ends in a flag.

All three use the level the verdict uses. Benjamini-Hochberg flags a lone change
only at raw p <= fdr_q / m (m tests in its family tonight): that is the ``bar``.
The verdict also needs the change's interval to reach the margin. A change is
flagged when tonight's estimate passes both thresholds, so the MDE is the change
whose estimate passes the larger one with probability 0.8, counting tonight's
night effect and the baseline's own uncertainty. Rates and tool paths are summed
exactly (:func:`evalrunner.stats._binary.mde`, :func:`evalrunner.stats._paths.mde`); the
other kinds use the normal model (:func:`evalrunner.stats._measured.normal_mde`), on
their test scale.
"""

from __future__ import annotations

import math

from evalrunner.stats._formulas import normal_sf, z_upper
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._measured import normal_mde
from evalrunner.stats._reference import MetricReference

MAX_RUNS = 100_000


def to_test_scale(ref: MetricReference, margin: float) -> float:
    """The margin in the units the test works in."""
    return KINDS[ref.kind].to_test_scale(margin)


def to_effect(ref: MetricReference, value: float) -> float:
    """A change on the test scale in the metric's effect units."""
    return KINDS[ref.kind].to_effect(value)


def _sides(ref: MetricReference) -> tuple[int, ...]:
    return {"lower": (-1,), "higher": (1,)}.get(ref.direction, (-1, 1))


def mde(
    ref: MetricReference, n: int, bar: float, margin: float, level: float, *, exact: bool = True
) -> float | None:
    """The change (effect units) flagged with probability 0.8 at ``n`` runs; None if none is.

    Two-sided metrics split ``bar`` between the sides and report the larger of the
    two sides' MDEs (where a side can be flagged at all). Rates and paths are summed
    exactly unless ``exact`` is False (the night's diagnostics: the normal model, ten
    times cheaper; within ~0.02 of the exact figure at 20 runs for rates, ~0.03 below it
    for paths).
    """
    if n < 1 or ref.n < 1:
        return None
    sides = _sides(ref)
    level_bar = bar / len(sides)
    margin_t = to_test_scale(ref, margin)
    found = [_side_mde(ref, n, level_bar, margin_t, level, side, exact) for side in sides]
    return max((value for value in found if value is not None), default=None)


def _side_mde(
    ref: MetricReference, n: int, bar: float, margin_t: float, level: float, side: int, exact: bool
) -> float | None:
    """One side's MDE (effect units), None where that side cannot be flagged."""
    kind = KINDS[ref.kind]
    if kind.exact_mde is not None and exact:
        return kind.exact_mde(ref, n, bar, margin_t, level, side)
    value = normal_mde(ref, n, bar, margin_t, level)
    if kind.bounds is None:
        return kind.to_effect(value)
    # A rate cannot fall below 0 or rise above 1: a side needing more has no MDE.
    low, high = kind.bounds
    room = ref.estimate - low if side < 0 else high - ref.estimate
    return value if value <= room else None


def runs_needed(ref: MetricReference, bar: float, margin: float, level: float) -> int | None:
    """Night runs at which a change of the margin is flagged with probability 0.8.

    Normal model on the test scale; None when even unlimited runs tonight cannot,
    because tonight's night effect and the baseline's own uncertainty are wider
    than the margin allows (pool more baseline nights).
    """
    if ref.n < 1:
        return None
    margin_t = to_test_scale(ref, margin)
    side_bar = bar / len(_sides(ref))
    if normal_mde(ref, MAX_RUNS, side_bar, margin_t, level) > margin_t:
        return None
    low, high = 1, MAX_RUNS
    while low < high:
        mid = (low + high) // 2
        if normal_mde(ref, mid, side_bar, margin_t, level) <= margin_t:
            high = mid
        else:
            low = mid + 1
    return max(low, 2)


def predictive_power(z: float, info_now: float, info_final: float, bar: float) -> float:
    """Chance the final look reaches z >= z(bar), the effect drawn from what the data say now.

    The canonical group-sequential form: with information I (1 / variance of the
    estimate) the score z sqrt(I) is a Brownian motion in I, and with a flat prior
    the predictive power is Phi((z sqrt(r) - z_bar) / sqrt(r - 1)), r = I_final / I_now
    (Spiegelhalter, Freedman & Blackburn 1986).
    """
    ratio = info_final / info_now
    if ratio <= 1.0 + 1e-9:
        return 1.0 if z >= z_upper(bar) else 0.0
    return normal_sf(-(z * math.sqrt(ratio) - z_upper(bar)) / math.sqrt(ratio - 1.0))
