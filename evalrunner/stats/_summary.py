"""One cell's runs summed up: the counts every table reads, and the summary baseline files show.

:class:`CellCounts` is the one rule for a cell's n (infra errors left out:
they are the endpoint's), its success and skip rates and pass^k / pass@k; the
terminal tables, the report and :func:`summarize` (baseline files, which
reviewers read in diffs) all read them here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalrunner.stats._formulas import pass_at_k, pass_hat_k, wilson
from evalrunner.stats._observe import Runs
from evalrunner.suite._metrics import sequence_label
from evalrunner.suite._record import Outcome, RunRecord

_MEDIANS = (
    "step_count",
    "llm_calls",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
)


def _faults(outcomes: Mapping[str, int]) -> int:
    """The runs whose outcome was the infrastructure's (see ``OutcomeTraits.fault``)."""
    faults = [n for o, n in outcomes.items() if Outcome(o).traits.fault]
    return sum(faults)


@dataclass(frozen=True)
class CellCounts:
    """A cell's runs counted by outcome."""

    outcomes: Counter[str]
    rows: tuple[tuple[int, int], ...] = ()
    """A dataset scenario's (runs that measured the agent, passed) per row; empty outside
    datasets."""

    @classmethod
    def of(cls, records: Iterable[RunRecord]) -> CellCounts:
        records = list(records)
        by_row: dict[str, Counter[str]] = {}
        for r in records:
            if r.row is not None:
                by_row.setdefault(r.row, Counter())[r.outcome] += 1
        rows = tuple(
            (sum(c.values()) - _faults(c), c[Outcome.PASSED]) for _, c in sorted(by_row.items())
        )
        return cls(Counter(r.outcome for r in records), rows)

    @property
    def attempted(self) -> int:
        return sum(self.outcomes.values())

    @property
    def infra(self) -> int:
        return _faults(self.outcomes)

    @property
    def n(self) -> int:
        """Runs that measured the agent: infra errors are the endpoint's."""
        return self.attempted - self.infra

    @property
    def passed(self) -> int:
        return self.outcomes[Outcome.PASSED]

    def rate(self, outcome: str) -> float | None:
        """The share of the ``n`` runs with this outcome (None with no such run)."""
        return self.outcomes[outcome] / self.n if self.n else None

    def pass_k(self, k: int) -> tuple[float, float] | None:
        """pass^k (all k tries pass) and pass@k (at least one does); None below k runs.

        A dataset scenario's rows are its tasks: k tries of one task, averaged over the rows
        with k runs that measured the agent (None when no row has k). Pooled, k tries would
        mix rows, and a scenario that always passes one row and always fails the other would
        read as sometimes passing each.
        """
        if self.rows:
            each = [(pass_hat_k(n, c, k), pass_at_k(n, c, k)) for n, c in self.rows if n >= k]
            if not each:
                return None
            return sum(h for h, _ in each) / len(each), sum(a for _, a in each) / len(each)
        if self.n < k:
            return None
        return pass_hat_k(self.n, self.passed, k), pass_at_k(self.n, self.passed, k)


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


def _medians(runs: Runs) -> dict[str, float | None]:
    """Each count's and cost's median over the valid runs (None without any)."""
    return {
        column: float(np.median(runs.valid_numbers(column))) if runs.valid else None
        for column in _MEDIANS
    }


def _top_paths(runs: Runs) -> dict[str, float]:
    """The ten commonest tool paths and their shares of the valid runs."""
    sequences = runs.valid_tools()
    paths = Counter(sequence_label(seq) for seq in sequences)
    top = sorted(paths.items(), key=lambda item: (-item[1], item[0]))[:10]
    return {label: count / len(sequences) for label, count in top}


def summarize(records: Sequence[RunRecord]) -> Summary:
    """The summary a baseline file shows for these runs."""
    runs = Runs.of(records)
    counts = CellCounts.of(records)
    n_valid = len(runs.valid)
    passed = counts.passed
    by_k = {str(k): p for k in (1, 3, 5) if (p := counts.pass_k(k)) is not None}
    return Summary(
        n=runs.n,
        n_valid=n_valid,
        infra_excluded=runs.infra,
        rates={
            "success_rate": Rate.of(passed, runs.n),
            "success_rate_valid": Rate.of(passed, n_valid),
            "crash_rate": Rate.of(runs.count(Outcome.CRASHED), runs.n),
            "skip_rate": Rate.of(runs.count(Outcome.SKIPPED), runs.n),
        },
        medians=_medians(runs),
        tool_sequences=_top_paths(runs),
        pass_hat_k={k: hat for k, (hat, _) in by_k.items()} or None,
        pass_at_k={k: at for k, (_, at) in by_k.items()} or None,
    )
