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

from evalrunner.stats._evidence import EvidenceState, MetricEvidence
from evalrunner.stats._formulas import (
    cliffs_delta,
    newcombe_diff,
    normalize_answer,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from evalrunner.stats._night import CellComparison, CellNight, NightComparison, compare_night
from evalrunner.stats._planner import CellPlan, MetricPlan, Plan, plan
from evalrunner.stats._reference import CellBaseline, CellReference, fit_references
from evalrunner.stats._results import FAILING, MetricResult, Verdict
from evalrunner.stats._sequential import Budget, Driven, Step, decide, drive
from evalrunner.stats._stats import Tolerance
from evalrunner.stats._summary import Rate, Summary, summarize
from evalrunner.stats._verdict import finalize

__all__ = [
    "FAILING",
    "Budget",
    "CellBaseline",
    "CellComparison",
    "CellNight",
    "CellPlan",
    "CellReference",
    "Driven",
    "EvidenceState",
    "MetricEvidence",
    "MetricPlan",
    "MetricResult",
    "NightComparison",
    "Plan",
    "Rate",
    "Step",
    "Summary",
    "Tolerance",
    "Verdict",
    "cliffs_delta",
    "compare_night",
    "decide",
    "drive",
    "finalize",
    "fit_references",
    "newcombe_diff",
    "normalize_answer",
    "pass_at_k",
    "pass_hat_k",
    "plan",
    "summarize",
    "wilson",
]
