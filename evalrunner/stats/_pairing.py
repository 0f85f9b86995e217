"""Dataset rows: the same rows run every night, so what differs between rows cancels.

A dataset scenario runs the same rows every night; pairing tonight's runs with the
baseline's by row leaves only the spread within rows, and the baseline's runs are
worth more exchangeable runs than their number (:func:`within_share`). The night share
is then estimated on the paired scale too (:func:`_paired_icc`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evalrunner.stats._formulas import FloatArray, icc
from evalrunner.stats._kinds import KINDS, MetricKind
from evalrunner.stats._observe import Coding, Runs
from evalrunner.suite._metrics import Kind, metric

PAIRED_FLOOR = 0.1
"""The least share of a run's variance pairing by dataset row may leave (at most 10 times
the runs' worth): rows estimated to be perfectly repeatable are not taken at their word."""


def paired_share(
    coding: Coding,
    nights: Sequence[Runs],
    per_night: Sequence[FloatArray],
    sorted_base: FloatArray,
    own: tuple[float, int] | None,
) -> tuple[float, tuple[float, int] | None]:
    """(within_share, own rho): what pairing by dataset row leaves of the run variance and
    the night share estimated as tonight's paired test will use it (with the rows' own
    differences removed from each night's spread); (1, own) without rows."""
    flat = _rows(coding, nights)
    if flat is None:
        return 1.0, own
    kind = metric(coding.metric).kind
    values = np.concatenate(per_night) if per_night else np.zeros(0)
    share = within_share(kind, values, flat, sorted_base)
    if share >= 1.0:
        return share, own
    return share, _paired_icc(KINDS[kind], per_night, flat, sorted_base) or own


def _rows(coding: Coding, nights: Sequence[Runs]) -> list[str | None] | None:
    """Every value's dataset row, night after night; None unless every night has rows."""
    rows = [coding.rows(night) for night in nights]
    if not rows or any(part is None for part in rows):
        return None
    return [row for part in rows for row in part or ()]


def _paired_icc(
    kind: MetricKind,
    per_night: Sequence[FloatArray],
    rows: Sequence[str | None],
    sorted_base: FloatArray,
) -> tuple[float, int] | None:
    """The intraclass correlation of runs by night with each row's own level removed,
    on the scale of the whole run variance.

    Balanced rows make a night's mean vary by far less than the run variance says (the
    rows' differences are the same every night), so the plain ANOVA estimate of the
    between-night variance is too small, which a paired test, whose noise is only the
    spread within rows, would turn into false alarms under drift. Centring each run on
    its row's mean first gives the ANOVA the noise the paired test has.
    """
    scale = [kind.on_test_scale(v, sorted_base) for v in per_night]
    flat = np.concatenate(scale) if scale else np.zeros(0)
    if flat.size < 2 or len(rows) != flat.size:
        return None
    labels = {row: i for i, row in enumerate(dict.fromkeys(rows))}
    codes = np.array([labels[row] for row in rows])
    sums = np.bincount(codes, flat)
    counts = np.bincount(codes)
    centred = flat - (sums / counts)[codes] + float(flat.mean())
    parts = np.split(centred, np.cumsum([v.size for v in scale])[:-1])
    found = icc(parts)
    total = float(flat.var(ddof=1))
    if found is None or total <= 0:
        return None
    rho, df = found
    return rho * float(centred.var(ddof=1)) / total, df


def within_share(
    kind: Kind, values: FloatArray, rows: Sequence[str | None], sorted_base: FloatArray
) -> float:
    """The share of the baseline's run variance left within dataset rows (1: no pairing).

    Pooled within-row variance over total variance, on the test scale (0/1 for rates,
    placements for counts), the within-row part taken one standard error high (its
    degrees of freedom are the runs less the rows). The within-row spread also holds the
    night-to-night part, so the share is not understated by it. Rates and counts only:
    token and latency tests take tonight's own spread, which pairing does not change.
    """
    found = KINDS[kind]
    if not found.paired or None in rows or len(rows) != values.size:
        return 1.0
    scale = found.on_test_scale(values, sorted_base)
    groups: dict[str | None, list[float]] = {}
    for value, row in zip(scale.tolist(), rows, strict=True):
        groups.setdefault(row, []).append(value)
    df = sum(len(g) - 1 for g in groups.values())
    total = float(scale.var(ddof=1)) if scale.size > 1 else 0.0
    if df < 2 or total <= 0:
        return 1.0
    within = sum(float(((np.array(g) - np.mean(g)) ** 2).sum()) for g in groups.values()) / df
    within *= 1 + math.sqrt(2 / df)
    return min(1.0, max(PAIRED_FLOOR, within / total))
