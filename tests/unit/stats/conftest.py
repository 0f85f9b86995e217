"""Small fixed runs for the statistics tests: ``runs(n, passed=..., steps=..., tools=...)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from evalrunner.stats import CellBaseline, CellNight
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord

Values = int | float | Sequence[int] | Sequence[float]


def _at(value: Values, i: int) -> float:
    return float(value[i % len(value)]) if isinstance(value, Sequence) else float(value)


def make_runs(
    n: int,
    *,
    passed: int | None = None,
    skipped: int = 0,
    crashed: int = 0,
    infra: int = 0,
    tools: Sequence[Sequence[str]] = (("search", "read"),),
    steps: Values = 3,
    prompt: Values = 1000,
    completion: Values = 200,
    latency: Values = 2.0,
    answer: str = "Paris",
    scenario: str = "s",
    model: str = "m",
    start: int = 0,
) -> list[RunRecord]:
    """n runs: the first ``skipped`` skip, then ``crashed`` crash, then ``infra`` infra errors,
    then ``passed`` pass (default: all the rest) and the rest fail. Per-run values cycle
    through sequences."""
    ok = n - skipped - crashed - infra if passed is None else passed
    outcomes = (
        ["skipped"] * skipped
        + ["crashed"] * crashed
        + ["infra_error"] * infra
        + ["passed"] * ok
        + ["failed"] * (n - skipped - crashed - infra - ok)
    )
    return [
        RunRecord(
            run_id=f"{scenario}/{model}/{start + i}",
            suite="t",
            scenario=scenario,
            model=model,
            index=start + i,
            outcome=outcome,  # type: ignore[arg-type]
            step_count=int(_at(steps, i)),
            llm_calls=int(_at(steps, i)),
            tool_calls=len(tools[i % len(tools)]),
            tools=list(tools[i % len(tools)]),
            prompt_tokens=int(_at(prompt, i)),
            completion_tokens=int(_at(completion, i)),
            latency_s=_at(latency, i),
            final_answer=answer if outcome == "passed" else "no",
            crashed=outcome == "crashed",
        )
        for i, outcome in enumerate(outcomes)
    ]


RunsMaker = Callable[..., list[RunRecord]]


@pytest.fixture(name="runs")
def runs_fixture() -> RunsMaker:
    return make_runs


def cell_night(
    nights: Sequence[Sequence[RunRecord]],
    tonight: Sequence[RunRecord],
    *,
    scenario: str = "s",
    model: str = "m",
    tolerance: Tolerance | None = None,
    anchor: str = "a1",
) -> CellNight:
    key = CellKey(scenario, model)
    return CellNight(CellBaseline(key, tolerance or Tolerance(), nights, anchor), tonight)


@pytest.fixture(name="cell")
def cell_fixture() -> Callable[..., CellNight]:
    return cell_night
