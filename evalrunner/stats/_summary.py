"""A short summary of one cell's runs, for baseline files (reviewers read it in diffs)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalrunner.stats._formulas import pass_at_k, pass_hat_k, wilson
from evalrunner.stats._observe import Runs
from evalrunner.suite._metrics import sequence_label
from evalrunner.suite._record import RunRecord

_MEDIANS = (
    "step_count",
    "llm_calls",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
)


class Rate(BaseModel):
    """A rate with its 95 % Wilson interval."""

    model_config = ConfigDict(extra="forbid")

    estimate: float | None
    ci95: tuple[float, float] | None
    k: int
    n: int

    @classmethod
    def of(cls, k: int, n: int) -> Rate:
        if n == 0:
            return cls(estimate=None, ci95=None, k=k, n=n)
        return cls(estimate=k / n, ci95=wilson(k, n), k=k, n=n)


class Summary(BaseModel):
    """Rates, medians, the most common tool paths and pass^k / pass@k of one cell's runs."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(description="Runs, infra errors excluded.")
    n_valid: int = Field(description="Runs that passed or failed.")
    infra_excluded: int
    rates: dict[str, Rate]
    medians: dict[str, float | None]
    tool_sequences: dict[str, float] = Field(description="Share of valid runs per path (top 10).")
    pass_hat_k: dict[str, float] | None = None
    pass_at_k: dict[str, float] | None = None


def summarize(records: Sequence[RunRecord]) -> Summary:
    """The summary a baseline file shows for these runs."""
    runs = Runs.of(records)
    n_valid = len(runs.valid)
    passed = runs.count("passed")
    medians = {
        column: float(np.median(runs.valid_numbers(column))) if n_valid else None
        for column in _MEDIANS
    }
    sequences = runs.valid_tools()
    counts = Counter(sequence_label(seq) for seq in sequences)
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    ks = [k for k in (1, 3, 5) if k <= runs.n]
    return Summary(
        n=runs.n,
        n_valid=n_valid,
        infra_excluded=runs.infra,
        rates={
            "success_rate": Rate.of(passed, runs.n),
            "success_rate_valid": Rate.of(passed, n_valid),
            "crash_rate": Rate.of(runs.count("crashed"), runs.n),
            "skip_rate": Rate.of(runs.count("skipped"), runs.n),
        },
        medians=medians,
        tool_sequences={label: count / len(sequences) for label, count in top},
        pass_hat_k={str(k): pass_hat_k(runs.n, passed, k) for k in ks} if ks else None,
        pass_at_k={str(k): pass_at_k(runs.n, passed, k) for k in ks} if ks else None,
    )
