"""Committed baselines: the raw runs of accepted nights, and comparing tonight with them."""

from evalrunner.baseline._build import build_baselines
from evalrunner.baseline._compare import compare_records, compare_with_baselines
from evalrunner.baseline._file import (
    Baseline,
    baseline_path,
    load_baseline,
    load_baselines,
    save_baseline,
)

__all__ = [
    "Baseline",
    "baseline_path",
    "build_baselines",
    "compare_records",
    "compare_with_baselines",
    "load_baseline",
    "load_baselines",
    "save_baseline",
]
