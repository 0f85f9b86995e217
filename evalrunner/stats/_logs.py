"""Tokens and latency: the mean of log values against the baseline's nights (normal).

Means of logs are close to normal at a handful of runs for token counts and
latencies (roughly log-normal), so the tail is the normal one. The run variance
is the baseline's, or tonight's if larger (as Welch's test would), so a night
whose runs scatter more does not pass for a shifted one.
"""

from __future__ import annotations

import math

import numpy as np

from evalrunner.stats._formulas import FloatArray, normal_sf
from evalrunner.stats._measured import Measured, Moments, Reference, normal_interval
from evalrunner.stats._observe import LOG_OFFSETS

_LOG_VAR_FLOOR = 1e-4
"""Log-scale run variance floor: identical token counts still allow a 1 % wobble."""


def moments(values: FloatArray) -> Moments:
    """The mean log value and its run variance (floored)."""
    n = values.size
    var = float(values.var(ddof=1)) if n > 1 else 0.0
    return Moments(float(values.mean()) if n else 0.0, max(var, _LOG_VAR_FLOOR), np.zeros(0))


def measure(ref: Reference, values: FloatArray, level: float) -> Measured:
    n = values.size
    x = float(values.mean())
    own = float(values.var(ddof=1)) / n if n > 1 else 0.0
    within = max(ref.within_var(n), own)
    z = (x - ref.mean) / math.sqrt(within + ref.night_var + ref.base_var)
    diff = x - ref.mean
    low, high = normal_interval(diff, within + ref.base_var, level)
    offset = LOG_OFFSETS[ref.name]

    def back(value: float) -> float:
        return math.exp(value) - offset

    b_low, b_high = normal_interval(ref.mean, ref.base_var, level)
    n_low, n_high = normal_interval(x, own, level)
    return Measured(
        n=n,
        z=z,
        p_lower=normal_sf(-z),
        p_higher=normal_sf(z),
        effect=math.exp(diff),
        effect_ci=(math.exp(low), math.exp(high)),
        baseline_estimate=back(ref.mean),
        baseline_ci=(back(b_low), back(b_high)),
        night_estimate=back(x),
        night_ci=(back(n_low), back(n_high)),
        test=f"mean of log values, nights as clusters (rho {ref.icc:.3f}), normal tail",
    )
