"""Committed baselines: raw runs of accepted nights, and comparing tonight with them."""

from evalrunner.baseline._build import build_baselines
from evalrunner.baseline._compare import (
    CellPair,
    Comparison,
    compare_night,
    compare_records,
    compare_with_baselines,
)
from evalrunner.baseline._file import (
    Baseline,
    Night,
    baseline_path,
    load_baseline,
    load_baselines,
    save_baseline,
)

__all__ = [
    "Baseline",
    "CellPair",
    "Comparison",
    "Night",
    "baseline_path",
    "build_baselines",
    "compare_night",
    "compare_records",
    "compare_with_baselines",
    "load_baseline",
    "load_baselines",
    "save_baseline",
]
