"""Live mode: run a suite's scenarios N times against model endpoints and record each run."""

from evalrunner.live._checks import evaluate_checks
from evalrunner.live._classify import Classification, classify
from evalrunner.live._context import RunContext
from evalrunner.live._endpoints import Endpoint, EndpointPool
from evalrunner.live._loader import find_suites, load_suite, load_suite_by_name
from evalrunner.live._night import LiveResult, run_live
from evalrunner.live._plan import Adaptive, Job, ScenarioPlan, StopRule, choose
from evalrunner.live._record import OUTCOMES, CellKey, Outcome, RunKey, RunRecord
from evalrunner.live._results import ResultsDir, load_records
from evalrunner.live._runner import RunReport, run_suite
from evalrunner.live._schema import (
    Checks,
    Mask,
    RateLimit,
    RetryPolicy,
    RunSettings,
    ScenarioSpec,
    SkipRules,
    SuiteSpec,
)
from evalrunner.live._settings import ResolvedScenario, Suite, resolve_suite

__all__ = [
    "OUTCOMES",
    "Adaptive",
    "CellKey",
    "Checks",
    "Classification",
    "Endpoint",
    "EndpointPool",
    "Job",
    "LiveResult",
    "Mask",
    "Outcome",
    "RateLimit",
    "ResolvedScenario",
    "ResultsDir",
    "RetryPolicy",
    "RunContext",
    "RunKey",
    "RunRecord",
    "RunReport",
    "RunSettings",
    "ScenarioPlan",
    "ScenarioSpec",
    "SkipRules",
    "StopRule",
    "Suite",
    "SuiteSpec",
    "choose",
    "classify",
    "evaluate_checks",
    "find_suites",
    "load_records",
    "load_suite",
    "load_suite_by_name",
    "resolve_suite",
    "run_live",
    "run_suite",
]
