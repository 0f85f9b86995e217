"""Committed baselines: the raw runs of accepted nights, and comparing tonight with them."""

from evalrunner.baseline._build import build_baselines
from evalrunner.baseline._compare import compare_records, compare_with_baselines
from evalrunner.baseline._explain import Explanation, explain, explain_night, explain_results
from evalrunner.baseline._file import (
    Baseline,
    baseline_path,
    load_baseline,
    load_baselines,
    save_baseline,
)

__all__ = [
    "Baseline",
    "Explanation",
    "baseline_path",
    "build_baselines",
    "compare_records",
    "compare_with_baselines",
    "explain",
    "explain_night",
    "explain_results",
    "load_baseline",
    "load_baselines",
    "save_baseline",
]
