"""What follows a night's runs: the comparison with the baselines (and, for cells whose
configuration changed, what their runs sent otherwise), why flagged cells changed (the
sentinel's word included), and the history entry. Each step's failure is reported in
:attr:`~evalrunner.night.LiveResult.problems`, never raised: the runs are kept whatever
follows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner._clock import iso_now
from evalrunner._next import NextStep, Said
from evalrunner.baseline._compare import compare_with_baselines
from evalrunner.baseline._explain import Explanation, SentinelResult, explain_night
from evalrunner.baseline._file import Baseline, typical_trajectory
from evalrunner.endpoints._endpoints import EndpointPool
from evalrunner.errors import EvalrunnerError
from evalrunner.live._driver import OpenNight
from evalrunner.suite._record import CellKey, RunRecord, group_records

Trajectory = dict[str, Any]

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig
    from evalrunner.night._result import LiveResult
    from evalrunner.stats._evidence_state import EvidenceState
    from evalrunner.stats._reference import CellReference


@dataclass
class Before:
    """What the night read and fitted before its runs, for the comparison after them."""

    loaded: Mapping[CellKey, Baseline] = field(default_factory=dict)
    evidence: Mapping[CellKey, EvidenceState] = field(default_factory=dict)
    references: Mapping[CellKey, CellReference] | None = None


def after_the_runs(
    night: OpenNight,
    result: LiveResult,
    baselines_dir: Path | None,
    history: str | None,
    before: Before,
    explain: bool = True,
    pool: EndpointPool | None = None,
) -> None:
    """Compare and append to the history; a failure here is reported, never raised."""
    if result.outage is None and baselines_dir is not None:
        _compare(night, result, baselines_dir, before)
    if explain and result.comparison is not None and result.comparison.regressions:
        _explain(night, result, pool)
    if history is not None:
        _to_history(night, result, history)


def _compare(night: OpenNight, result: LiveResult, baselines_dir: Path, before: Before) -> None:
    """Tonight's runs against their baselines, with what was read and fitted before them."""
    # A model whose endpoint failed measured the endpoint: its runs are not compared.
    measured = [r for r in result.report.records if r.model not in result.model_outages]
    try:
        result.comparison = compare_with_baselines(
            night.suite,
            measured,
            baselines_dir,
            fingerprints=night.manifest.scenarios,
            evidence=before.evidence,
            loaded=before.loaded,
            references=before.references,
            night_dir=night.results.shown,
            planned=_planned(night),
        )
    except EvalrunnerError as exc:
        result.problems.append(f"not compared with baselines: {exc}")
        return
    _what_was_resent(night, result)


def _what_was_resent(night: OpenNight, result: LiveResult) -> None:
    """For each cell whose configuration changed since its baseline, what its runs sent
    otherwise: the night names the change, not only a fingerprint."""
    assert result.comparison is not None
    stale = result.comparison.stale
    if not stale:
        return
    try:
        said = explain_night(night.suite, night.results, stale, sorted(stale))
    except (EvalrunnerError, OSError) as exc:
        result.problems.append(f"what changed in the unmatched configurations was not read: {exc}")
        return
    result.resent = {cell: said[cell].request for cell in sorted(said)}


def _planned(night: OpenNight) -> dict[str, int]:
    """Each scenario's runs per cell in the night's plan (a dataset's: per row, times rows)."""
    rows = night.manifest.rows or {}
    return {sid: runs * max(1, rows.get(sid, 1)) for sid, runs in night.manifest.runs.items()}


def _explain(night: OpenNight, result: LiveResult, pool: EndpointPool | None) -> None:
    """Why each cell that fails the night changed, the sentinel's word included."""
    assert result.comparison is not None
    flagged = sorted({CellKey(r.scenario, r.model) for r in result.comparison.regressions})
    try:
        result.explanations = explain_night(
            night.suite, night.results, result.comparison.baselines, flagged
        )
        _sentinel(night, result, pool)
    except (EvalrunnerError, OSError) as exc:
        result.problems.append(f"the flagged scenarios were not explained: {exc}")


def _to_history(night: OpenNight, result: LiveResult, history: str) -> None:
    """Append the night's runs the history lacks; a failure is reported, never raised."""
    appended = set(night.manifest.history_run_ids)
    new = [r for r in result.report.records if r.run_id not in appended]
    if not new:
        result.history_note = "every run of this night is in the history already; nothing appended"
        return
    try:
        result.history_path = _append_history(night, new, result, history)
    except (EvalrunnerError, OSError) as exc:
        # The night's runs are on disk: --resume appends what the history lacks.
        resume = ("--out", str(night.results.shown), "--resume", "--history", history)
        result.problems.append(
            Said(
                f"history not written to {history}: {exc}; once it can be, append the night with ",
                NextStep("run", night.suite.name, resume),
            )
        )
        return
    night.save(history_run_ids=sorted(appended | {r.run_id for r in new}))


def _sentinel_cells(result: LiveResult) -> list[CellKey]:
    """The failing cells whose first request did not change, and that have a baseline."""
    assert result.comparison is not None
    baselines = result.comparison.baselines
    return [
        cell
        for cell, why in result.explanations.items()
        if not why.request and not why.unavailable and cell in baselines
    ]


def _sentinel(night: OpenNight, result: LiveResult, pool: EndpointPool | None) -> None:
    """Send the baseline's first request again for failing cells whose first request did not
    change (the one case where it can tell the model from the agent), within its share of calls."""
    from evalrunner.night._sentinel import MIN_CALLS, run_sentinel, sentinel_calls

    assert result.comparison is not None
    baselines = result.comparison.baselines
    cells = _sentinel_cells(result)
    if not cells:
        return
    calls = sentinel_calls(sum(r.llm_calls for r in result.report.records), len(cells))
    if calls == 0:
        for cell in cells:
            result.explanations[cell].sentinel = SentinelResult.not_run(
                cell,
                Said(
                    "not run: sending the baseline's first request again, to tell a model "
                    f"change from an agent change, takes at least {MIN_CALLS} calls a failing "
                    "scenario, and its share of tonight's calls (a tenth) is fewer; `",
                    NextStep("sentinel", night.suite.name),
                    "` runs it alone",
                ),
            )
        return
    for cell, seen in run_sentinel(night.suite, baselines, cells, calls=calls, pool=pool).items():
        result.explanations[cell].sentinel = seen


def _typical_runs(
    night: OpenNight, result: LiveResult
) -> tuple[dict[CellKey, Trajectory], dict[CellKey, dict[str, Trajectory]]]:
    """A typical run of each cell tonight, and of each dataset row a failing cell names
    (for the report to open), as normalised trajectories."""
    scenarios = {s.id: s for s in night.suite.scenarios}
    typical: dict[CellKey, Trajectory] = {}
    row_runs: dict[CellKey, dict[str, Trajectory]] = {}
    for cell, records in group_records(result.report.records).items():
        scenario = scenarios.get(cell.scenario)
        config = scenario.normalize_config() if scenario else None
        trajectory = typical_trajectory(night.results, records, config)
        if trajectory is not None:
            typical[cell] = trajectory
        why = result.explanations.get(cell)
        if why is not None and (rows := _row_runs(night, records, why, config)):
            row_runs[cell] = rows
    return typical, row_runs


def _row_runs(
    night: OpenNight,
    records: Sequence[RunRecord],
    why: Explanation,
    config: NormalizeConfig | None,
) -> dict[str, Trajectory]:
    """A typical run of each dataset row ``why`` names, where one is on disk."""
    found: dict[str, Trajectory] = {}
    for row in [m.row for m in why.moved]:
        of_row = [r for r in records if r.row == row]
        trajectory = typical_trajectory(night.results, of_row, config)
        if trajectory is not None:
            found[row] = trajectory
    return found


def _append_history(night: OpenNight, new: list[RunRecord], result: LiveResult, root: str) -> str:
    """One history entry holding the night's runs not yet in the history (each run id once)."""
    from evalrunner.history._entry import BaselineSummary, HistoryEntry, Why
    from evalrunner.history._store import append

    typical, row_runs = _typical_runs(night, result)
    comparison = result.comparison
    baselines = comparison.baselines if comparison else {}
    entry = HistoryEntry(
        suite=night.suite.name,
        created_at=iso_now(),
        manifest=night.manifest,
        records=new,
        verdicts=comparison.results if comparison else [],
        baselines={
            cell: BaselineSummary.model_validate(b.summary) for cell, b in baselines.items()
        },
        typical=typical,
        baseline_typical={cell: b.typical for cell, b in baselines.items() if b.typical},
        outage=result.outage is not None,
        broken_checks=result.report.broken_checks,
        evidence=comparison.evidence if comparison else {},
        causes={
            cell: Why(
                cause=why.line(),
                divergence=why.divergence.line() if why.divergence else None,
                request_diff=why.request_diff,
                sentinel=why.sentinel.line() if why.sentinel else None,
                rows=why.rows,
                row_runs=row_runs.get(cell, {}),
            )
            for cell, why in result.explanations.items()
        },
        not_compared=_not_compared(result),
    )
    return append(entry, root)


def _not_compared(result: LiveResult) -> dict[CellKey, str]:
    """Why each cell the night ran was not compared, and what its runs sent otherwise than
    its baseline's where that was read: the report says it on the night it happened."""
    comparison = result.comparison
    if comparison is None:
        return {}
    found: dict[CellKey, str] = {}
    for cell, why in comparison.why_not.items():
        resent = result.resent.get(cell)
        sent = f" (its runs sent otherwise: {'; '.join(resent)})" if resent else ""
        found[cell] = f"{str(why).strip()}{sent}"
    return found
