"""The suite: the vocabulary every mode shares.

A suite file (``suites/<name>.yaml``, format in suites/README.md) is read and
validated (:func:`load_suite`) into a :class:`Suite` of resolved scenarios; an
agent receives a :class:`RunContext` (the agent contract); every live run
becomes a :class:`RunRecord`, keyed by scenario x model (:class:`CellKey`); the
metric registry and the :class:`Tolerance` say what is measured and how
strictly. Nothing here runs an agent or talks to a model.
"""

from evalrunner.suite._code_checks import CheckInput, CheckResult
from evalrunner.suite._contract import RunContext
from evalrunner.suite._loader import find_suites, load_suite, load_suite_by_name
from evalrunner.suite._record import OUTCOMES, CellKey, Outcome, RunKey, RunRecord
from evalrunner.suite._schema import Checks, Mask, RateLimit, RetryPolicy, SkipRules
from evalrunner.suite._settings import ResolvedScenario, Suite
from evalrunner.suite._suite_spec import RunSettings, ScenarioSpec, SuiteSpec
from evalrunner.suite._tolerance import Tolerance

__all__ = [
    "OUTCOMES",
    "CellKey",
    "CheckInput",
    "CheckResult",
    "Checks",
    "Mask",
    "Outcome",
    "RateLimit",
    "ResolvedScenario",
    "RetryPolicy",
    "RunContext",
    "RunKey",
    "RunRecord",
    "RunSettings",
    "ScenarioSpec",
    "SkipRules",
    "Suite",
    "SuiteSpec",
    "Tolerance",
    "find_suites",
    "load_suite",
    "load_suite_by_name",
]
