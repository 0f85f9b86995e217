"""A blatant change is flagged in a night of 50 scenarios x 3 models.

On the old engine, permutation p values bottomed out at 1/2001 and Benjamini-Hochberg
over ~750 gating tests needs p <= 0.05/750: a night where every run took a new tool
path, or took ten more steps, was flagged on 5 % of nights. Exact and analytic tails
have no floor.
"""

from __future__ import annotations

from collections.abc import Callable

from evalrunner.stats import CellNight, compare_night
from evalrunner.suite._record import RunRecord

from .conftest import RunsMaker

USUAL = [("search", "read")] * 7 + [("search",)] * 2 + [("lookup", "read")]
STEPS = (3, 4, 3, 5, 3, 2, 4, 3, 3, 4)


def _night(runs: RunsMaker, scenario: str, model: str, **change: object) -> list[RunRecord]:
    settings: dict[str, object] = {"passed": 18, "tools": USUAL, "steps": STEPS, **change}
    return runs(20, scenario=scenario, model=model, **settings)


def test_a_blatant_change_is_flagged_among_150_cells(
    runs: RunsMaker, cell: Callable[..., CellNight]
) -> None:
    cells = []
    for s in range(50):
        for m in range(3):
            sc, mo = f"s{s:02d}", f"m{m}"
            nights = [_night(runs, sc, mo) for _ in range(5)]
            if (s, m) == (7, 1):
                tonight = _night(runs, sc, mo, tools=[("browse", "browse")])
            elif (s, m) == (31, 2):
                tonight = _night(runs, sc, mo, steps=[v + 10 for v in STEPS])
            else:
                tonight = _night(runs, sc, mo)
            cells.append(cell(nights, tonight, scenario=sc, model=mo))
    night = compare_night(cells)
    failing = {(r.scenario, r.model, r.metric): r for r in night.failures}
    path = failing[("s07", "m1", "tool_sequence")]
    assert path.verdict == "regression"
    assert path.p is not None and path.p < 1e-9  # far below 1/2001
    assert path.bar is not None and path.bar < 1e-4  # what BH needs of a lone change here
    steps = failing[("s31", "m2", "step_count")]
    assert steps.verdict == "changed"
    assert steps.p is not None and steps.p < 1e-9
    # Nothing else fails (tool_used/first_tool of the new-path cell are diagnostics).
    assert {(s, m) for s, m, _ in failing} == {("s07", "m1"), ("s31", "m2")}
    assert len(night.results) > 150 * 13
