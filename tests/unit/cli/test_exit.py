"""The exit code of ``run`` and ``compare``: outage 3, then crashes, gated regressions,
failed steps after the runs and (when asked) failed runs exit 1; anything else 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.baseline._compare import Comparison
from evalrunner.cli._exit import FAILED, OK, compare_code, run_code
from evalrunner.live._driver import RunReport
from evalrunner.night._night import OUTAGE_EXIT as OUTAGE
from evalrunner.night._night import LiveResult, Outage
from evalrunner.stats._metric_result import MetricResult, Verdict
from evalrunner.suite._record import RunRecord


def night(
    *outcomes: str,
    verdict: Verdict | None = None,
    outage: bool = False,
    problems: tuple[str, ...] = (),
) -> LiveResult:
    records = [
        RunRecord(run_id=f"s/m/{i}", suite="demo", scenario="s", model="m", index=i, outcome=o)
        for i, o in enumerate(outcomes)
    ]
    comparison = None if verdict is None else Comparison(results=[gating(verdict)])
    return LiveResult(
        report=RunReport(out=Path("results"), records=records),
        comparison=comparison,
        outage=Outage(infra=3, total=4, threshold=0.5) if outage else None,
        problems=list(problems),
    )


def gating(verdict: Verdict, *, is_gating: bool = True) -> MetricResult:
    return MetricResult(
        scenario="s",
        model="m",
        metric="success_rate",
        kind="binary",
        gating=is_gating,
        direction="lower",
        margin=0.1,
        verdict=verdict,
    )


def test_an_outage_exits_3_before_crashes_and_regressions() -> None:
    result = night("crashed", "infra_error", verdict="regression", outage=True)
    assert run_code(result, gate=True, fail_on_failure=True) == OUTAGE == 3


def test_one_model_s_outage_exits_3_after_crashes_and_regressions_of_the_others() -> None:
    down = {"m2": Outage(infra=4, total=4, threshold=0.5, model="m2")}
    regressed = night("passed", verdict="regression")
    regressed.model_outages = down
    assert run_code(regressed, gate=True, fail_on_failure=False) == FAILED
    assert run_code(regressed, gate=False, fail_on_failure=False) == OUTAGE
    quiet = night("passed", verdict="ok")
    quiet.model_outages = down
    assert run_code(quiet, gate=True, fail_on_failure=True) == OUTAGE


@pytest.mark.parametrize("gate", [True, False])
def test_a_crash_fails_the_run_with_or_without_the_gate(gate: bool) -> None:
    result = night("passed", "crashed")
    assert run_code(result, gate=gate, fail_on_failure=False) == FAILED == 1


def test_a_gating_regression_fails_the_run_only_with_the_gate() -> None:
    result = night("passed", "passed", verdict="regression")
    assert run_code(result, gate=True, fail_on_failure=False) == FAILED
    assert run_code(result, gate=False, fail_on_failure=False) == OK == 0


@pytest.mark.parametrize("verdict", ["ok", "inconclusive", "improvement"])
def test_a_verdict_that_does_not_fail_the_night_exits_0(verdict: Verdict) -> None:
    assert run_code(night("passed", verdict=verdict), gate=True, fail_on_failure=False) == OK


def test_failed_runs_and_infra_errors_fail_the_run_only_with_fail_on_failure() -> None:
    result = night("passed", "failed", "infra_error")
    assert run_code(result, gate=True, fail_on_failure=False) == OK
    assert run_code(result, gate=True, fail_on_failure=True) == FAILED
    only_infra = night("passed", "infra_error")
    assert run_code(only_infra, gate=True, fail_on_failure=True) == OK


def test_a_failed_step_after_the_runs_fails_the_run() -> None:
    result = night("passed", problems=("history: cannot write history/demo",))
    assert run_code(result, gate=False, fail_on_failure=False) == FAILED


def test_compare_fails_on_a_gating_regression_only_with_the_gate() -> None:
    assert compare_code([gating("changed")], gate=True) == FAILED
    assert compare_code([gating("changed")], gate=False) == OK
    assert compare_code([gating("regression", is_gating=False)], gate=True) == OK
    assert compare_code([gating("improvement")], gate=True) == OK
