"""Explaining a night whose runs sent nothing: a crash before the first model call is no
request drift and no first action (a user journey read "request changed" and "runs diverge
at the first action" off runs that never called the model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrunner._jsonio import canonical
from evalrunner.baseline._explain import NONE_FOUND, Explanation, explain_night
from evalrunner.baseline._file import Baseline
from evalrunner.baseline._traces import FirstRequest, RunTrace
from evalrunner.live._results import ResultsDir
from evalrunner.suite._record import CellKey, RunRecord
from evalrunner.suite._settings import Suite, resolve_suite
from evalrunner.suite._suite_spec import SuiteSpec

from .conftest import baseline_of, passed_records, record

CELL = CellKey("s", "m")
Run = tuple[RunRecord, dict[str, Any]]
LOOKUP = {"function": {"name": "lookup_capital", "parameters": {"type": "object"}}}


def _suite() -> Suite:
    scenario = {"id": "s", "agent": "pkg.mod:fn", "input": "Capital of France?"}
    return resolve_suite(
        SuiteSpec.model_validate({"format_version": 1, "name": "t", "scenarios": [scenario]})
    )


def _baseline(runs: int = 16) -> Baseline:
    """Every run looked the capital up, then answered, after one same first request."""
    records = passed_records([None] * runs)
    traces = [
        RunTrace(run_id=r.run_id, actions=[("lookup_capital", "fr", "paris")], first_response=1)
        for r in records
    ]
    request = FirstRequest(
        system="Be brief.",
        user="Capital of France?",
        tools={"lookup_capital": canonical(LOOKUP)},
        runs=runs,
    )
    return baseline_of(records, traces, requests=[request])


def _looked_up() -> dict[str, Any]:
    """A run that sent the baseline's request and looked the capital up, then answered."""
    return {
        "agent": {"name": "a", "tool_definitions": [LOOKUP]},
        "steps": [
            {"source": "system", "message": "Be brief."},
            {"source": "user", "message": "Capital of France?"},
            {
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {
                        "tool_call_id": "c1",
                        "function_name": "lookup_capital",
                        "arguments": {"country": "fr"},
                    }
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": "paris"}]},
            },
            {"source": "agent", "message": "Paris."},
        ],
    }


def _night(tmp_path: Path, runs: list[Run]) -> ResultsDir:
    results = ResultsDir(tmp_path / "night")
    for run, trajectory in runs:
        results.write_run(run, trajectory)
    return results


def _crashed_before_call(i: int) -> Run:
    # What a command: agent that raised before its first call leaves: no step, no tools.
    run = record(i, outcome="crashed", crashed=True, reason="RuntimeError: no config", llm_calls=0)
    return run, {"agent": {"name": "a"}, "steps": []}


def _explained(tmp_path: Path, runs: list[Run]) -> Explanation:
    return explain_night(_suite(), _night(tmp_path, runs), {CELL: _baseline()}, [CELL])[CELL]


def test_runs_that_all_crashed_before_their_first_model_call_have_no_request_to_compare(
    tmp_path: Path,
) -> None:
    why = _explained(tmp_path, [_crashed_before_call(i) for i in range(12)])
    assert why.line() == (
        "cause: the agent crashed before its first model call (12 of 12 runs); "
        "no request to compare"
    )
    # Nothing was sent and nothing was done: no request drift, no diff against an empty
    # text, no divergence of runs that made no call.
    assert (why.request, why.request_diff, why.divergence) == ([], [], None)


def test_runs_that_crashed_before_their_first_model_call_are_left_out_and_said_to_be(
    tmp_path: Path,
) -> None:
    called = [
        (record(i, outcome="passed", llm_calls=2, tool_calls=1), _looked_up()) for i in range(6, 16)
    ]
    why = _explained(tmp_path, [_crashed_before_call(i) for i in range(6)] + called)
    # The runs that called the model did as the baseline's: the six that made no call are
    # no model answering otherwise at the first action (lookup_capital 10/16, answer 6/16).
    assert why.divergence is None and why.request == []
    assert why.line() == (
        f"{NONE_FOUND}; 6 of 16 runs crashed before their first model call (left out)"
    )


def test_runs_that_crashed_after_a_model_call_are_compared_as_before(tmp_path: Path) -> None:
    # Their request was sent and their first action taken: they are the agent's behaviour.
    answered = {
        **_looked_up(),
        "steps": [*_looked_up()["steps"][:2], {"source": "agent", "message": "Paris."}],
    }
    runs = [(record(i, outcome="crashed", crashed=True, llm_calls=1), answered) for i in range(12)]
    why = _explained(tmp_path, runs)
    assert why.request == [] and why.divergence is not None
    assert why.line().startswith("cause: model (same first request; at the first action:")


def test_a_cell_whose_runs_all_ended_in_infra_error_is_not_said_to_be_as_in_the_baseline(
    tmp_path: Path,
) -> None:
    runs: list[Run] = [(record(i, outcome="infra_error", reason="503"), {}) for i in range(4)]
    assert _explained(tmp_path, runs).line() == (
        "cause: unavailable (all 4 of tonight's runs ended in infra_error: none measured the agent)"
    )
