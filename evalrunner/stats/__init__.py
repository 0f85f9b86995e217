"""Statistics over live runs: did a scenario's behaviour change, tonight or since its anchor?

One call per question, typed records in and typed results out (docs/calibration.md
has the design and its measured error rates):

* :func:`compare_night`: every cell of a night against its anchored baseline
  (:class:`CellNight` in, :class:`NightComparison` out, with each cell's
  :class:`EvidenceState` to store for the next night);
* :func:`decide` / :func:`drive`: escalation and adaptive stopping for one cell
  during the night, given its :class:`CellReference` (:func:`fit_references`)
  and a :class:`Budget`;
* :func:`plan`: runs per scenario for 80 % power, and the cost;
* :func:`summarize`: the summary a baseline file shows.
"""

# Lazy: the engine's modules load numpy and scipy, which a plain `import evalrunner`
# (and `evalrunner --help`) should not pay for. Names resolve on first use.

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from evalrunner.stats._comparison import (
        CellComparison,
        CellNight,
        NightComparison,
        compare_night,
    )
    from evalrunner.stats._evidence_state import EvidenceState
    from evalrunner.stats._formulas import pass_at_k, pass_hat_k
    from evalrunner.stats._metric_result import MetricResult, Verdict
    from evalrunner.stats._planner import Plan, plan
    from evalrunner.stats._reference import CellBaseline, CellReference, fit_references
    from evalrunner.stats._sequential import Budget, Driven, Step, decide, drive
    from evalrunner.stats._summary import Summary, summarize

_WHERE: dict[str, str] = {
    "EvidenceState": "evalrunner.stats._evidence_state",
    "pass_at_k": "evalrunner.stats._formulas",
    "pass_hat_k": "evalrunner.stats._formulas",
    "CellComparison": "evalrunner.stats._comparison",
    "CellNight": "evalrunner.stats._comparison",
    "NightComparison": "evalrunner.stats._comparison",
    "compare_night": "evalrunner.stats._comparison",
    "Plan": "evalrunner.stats._planner",
    "plan": "evalrunner.stats._planner",
    "CellBaseline": "evalrunner.stats._reference",
    "CellReference": "evalrunner.stats._reference",
    "fit_references": "evalrunner.stats._reference",
    "MetricResult": "evalrunner.stats._metric_result",
    "Verdict": "evalrunner.stats._metric_result",
    "Budget": "evalrunner.stats._sequential",
    "Driven": "evalrunner.stats._sequential",
    "Step": "evalrunner.stats._sequential",
    "decide": "evalrunner.stats._sequential",
    "drive": "evalrunner.stats._sequential",
    "Summary": "evalrunner.stats._summary",
    "summarize": "evalrunner.stats._summary",
}

__all__ = [
    "Budget",
    "CellBaseline",
    "CellComparison",
    "CellNight",
    "CellReference",
    "Driven",
    "EvidenceState",
    "MetricResult",
    "NightComparison",
    "Plan",
    "Step",
    "Summary",
    "Verdict",
    "compare_night",
    "decide",
    "drive",
    "fit_references",
    "pass_at_k",
    "pass_hat_k",
    "plan",
    "summarize",
]


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'evalrunner.stats' has no attribute {name!r}")
    return getattr(_importlib.import_module(where), name)
