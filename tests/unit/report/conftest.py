"""Histories shared by the report tests (built once per session: the first uses the real statistics)."""

from __future__ import annotations

import pytest
from history_factory import build_entries, history_from_entries, make_history
from report_pages import EVIL_MODEL

from evalrunner.history._store import History
from evalrunner.report._html import render_html
from evalrunner.suite._record import CellKey

NIGHTS = 6


@pytest.fixture(scope="session")
def history() -> History:
    # Real statistics (compare_scenario + finalize), so the verdicts are the ones a night would give.
    return make_history(
        nights=NIGHTS,
        scenarios=4,
        models=2,
        runs=15,
        baseline_runs=40,
        real_stats=True,
        regressed=(0,),
    )


@pytest.fixture(scope="session")
def html(history: History) -> str:
    return render_html(history, generated_at="test")


@pytest.fixture(scope="session")
def hostile() -> History:
    return make_history(nights=4, scenarios=2, models=1, runs=12, hostile=True, regressed=(0,))


@pytest.fixture(scope="session")
def hostile_model() -> History:
    """A model whose name is hostile: it lands in attributes, headers and table cells."""
    entries = build_entries(nights=2, scenarios=2, models=1, regressed=(0,))
    renamed = [
        e.model_copy(
            update={
                "records": [r.model_copy(update={"model": EVIL_MODEL}) for r in e.records],
                "verdicts": [v.model_copy(update={"model": EVIL_MODEL}) for v in e.verdicts],
                "typical": {CellKey(k.scenario, EVIL_MODEL): v for k, v in e.typical.items()},
                "baseline_typical": {
                    CellKey(k.scenario, EVIL_MODEL): v for k, v in e.baseline_typical.items()
                },
            }
        )
        for e in entries
    ]
    return history_from_entries(renamed)


@pytest.fixture(scope="session")
def unconfirmed() -> History:
    """The latest night's first inconclusive gating result marked ``unconfirmed``: every run
    moved, which the night could not confirm."""
    entries = build_entries(nights=2, scenarios=2, models=1, regressed=())
    last = entries[-1]
    verdicts = list(last.verdicts)
    i = next(i for i, v in enumerate(verdicts) if v.gating)
    verdicts[i] = verdicts[i].model_copy(
        update={"verdict": "inconclusive", "unconfirmed": True, "p": 0.02, "runs_needed": None}
    )
    return history_from_entries([*entries[:-1], last.model_copy(update={"verdicts": verdicts})])
