"""DataFrame bridges to the statistics, for the synthetic history (history_factory.py).

The package's callers all pass records (``evalrunner.stats``); only the test
history factory and its benchmark still build DataFrames, so the bridges live
here with them: :func:`compare_scenario`, :func:`finalize`, :func:`summarize`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalrunner.stats._formulas import (
    FloatArray,
    cliffs_delta,
    newcombe_diff,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from evalrunner.stats._metric_result import MetricResult
from evalrunner.stats._observe import LOG_OFFSETS
from evalrunner.suite._metrics import TOOL_USED, Direction, Kind
from evalrunner.suite._tolerance import Tolerance

if TYPE_CHECKING:
    import pandas as pd

    from evalrunner.suite._record import RunRecord

__all__ = [
    "LOG_OFFSETS",
    "MetricResult",
    "Tolerance",
    "cliffs_delta",
    "compare_scenario",
    "finalize",
    "js_distance",
    "newcombe_diff",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
    "wilson",
]


def _metric_info(name: str) -> tuple[Kind, Direction]:
    from evalrunner.suite._metrics import metric

    found = metric(name)
    return found.kind, found.direction


def _records(frame: pd.DataFrame | None) -> list[RunRecord]:
    import math

    from evalrunner.errors import FileFormatError
    from evalrunner.suite._record import RunRecord

    if frame is None or not len(frame):
        return []
    if "outcome" not in frame.columns:
        raise FileFormatError("records have no 'outcome' column; each row must be a RunRecord")
    out = []
    for i, row in enumerate(frame.to_dict("records")):
        data = {
            k: v
            for k, v in row.items()
            if k in RunRecord.model_fields and not (isinstance(v, float) and math.isnan(v))
        }
        data.setdefault("run_id", f"row/{i}")
        data.setdefault("index", i)
        for key in ("suite", "scenario", "model"):
            data.setdefault(key, "")
        try:
            out.append(RunRecord.model_validate(data))
        except ValidationError as exc:
            raise FileFormatError(f"record {i}: {exc.errors()[0]['msg']}") from None
    return out


def _one_night(tolerance: Tolerance | None) -> Tolerance:
    return (tolerance or Tolerance()).model_copy(update={"min_baseline_nights": 1})


def compare_scenario(
    baseline: pd.DataFrame,
    night: pd.DataFrame,
    *,
    tolerance: Tolerance | None = None,
    scenario: str = "",
    model: str = "",
    seed: int = 0,
    metrics: Collection[str] | None = None,
    n_resamples: int = 0,
) -> list[MetricResult]:
    """Bridge: one cell, the baseline frame as one night (``seed`` and ``n_resamples`` are
    unused: nothing is resampled)."""
    from evalrunner.stats._comparison import CellNight, compare_night
    from evalrunner.stats._reference import CellBaseline
    from evalrunner.suite._record import CellKey

    del seed, n_resamples
    key = CellKey(scenario, model)
    cell = CellBaseline(key, _one_night(tolerance), [_records(baseline)], "bridge")
    results = compare_night([CellNight(cell, _records(night))]).results
    if metrics is None:
        return results
    return [
        r
        for r in results
        if r.metric in metrics or (r.metric.startswith(TOOL_USED + ":") and TOOL_USED in metrics)
    ]


def finalize(
    results: Sequence[MetricResult], tolerance_by_scenario: Mapping[str, Tolerance] | None = None
) -> list[MetricResult]:
    """Bridge to :func:`evalrunner.stats._verdict.finalize`."""
    from evalrunner.stats._verdict import finalize as decide_all

    return decide_all(results, tolerance_by_scenario)


def summarize(df: pd.DataFrame) -> dict[str, Any]:
    """Bridge: the summary of a frame's runs as the baseline file stores it."""
    from evalrunner.stats._summary import summarize as summary

    return summary(_records(df)).model_dump(mode="json", exclude_none=True)


def js_distance(
    p_counts: Sequence[float] | FloatArray, q_counts: Sequence[float] | FloatArray
) -> float:
    """Jensen-Shannon distance (base 2) of two count vectors (tests/support's stand-in uses it)."""
    from scipy.spatial.distance import jensenshannon

    return float(jensenshannon(p_counts, q_counts, base=2))
