"""The live-mode job as one call: run, compare with baselines, append to history.

``evalrunner run`` is a thin layer over :func:`run_live`; nightly jobs and
scripts can call it directly.

Everything that can be checked without a model is checked before the first
run (suite, options, models, agents, baselines, the results and history
locations). Once the runs are done nothing is lost to a later step: a
comparison or history append that fails is reported in
:attr:`LiveResult.problems`, after the night's tables. A night in which more
than ``outage_share`` of the runs are ``infra_error`` is an :class:`Outage`:
no verdicts are computed from it, and its history entry says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from pydantic import Field

from evalrunner._clock import iso_now
from evalrunner._next import NextStep, Said
from evalrunner.baseline._compare import Comparison, compare_with_baselines
from evalrunner.baseline._explain import Explanation, SentinelResult, explain_night
from evalrunner.baseline._file import Baseline, load_baselines, typical_trajectory
from evalrunner.endpoints._endpoints import EndpointPool, Notify
from evalrunner.errors import EvalrunnerError
from evalrunner.history._store import DEFAULT_ROOT as DEFAULT_HISTORY
from evalrunner.live._driver import OpenNight, RunReport, run_night
from evalrunner.live._outage import DEFAULT_OUTAGE_SHARE, Outage, model_outages, outage_of
from evalrunner.live._ray import DEFAULT_WORKERS, open_executor
from evalrunner.live._results import AdaptiveSettings
from evalrunner.live._schedule import Adaptive, CellBudget, RunOptions, ScenarioSchedule
from evalrunner.night._open import open_night
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import OUTCOME_TRAITS, CellKey, Outcome, RunRecord, group_records
from evalrunner.suite._settings import ResolvedScenario, Suite

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig
    from evalrunner.stats._evidence_state import EvidenceState
    from evalrunner.stats._reference import CellReference
    from evalrunner.stats._sequential import Budget

__all__ = [
    "DEFAULT_OUTAGE_SHARE",
    "OUTAGE_EXIT",
    "LiveResult",
    "NightOptions",
    "Outage",
    "model_outages",
    "outage_of",
    "run_live",
]

DEFAULT_BASELINES = Path("baselines")
T = TypeVar("T")


OUTAGE_EXIT = 3
"""What ``evalrunner run`` exits with when an endpoint failed (see :meth:`LiveResult.exit_code`)."""


@dataclass
class LiveResult:
    """What one night did: its runs, the comparison with the baselines, the history entry.

    For a gate in your own code, :meth:`exit_code` is what ``evalrunner run`` would exit
    with (0 fine, 1 failed, 3 an endpoint failed); :attr:`regressed` alone misses crashed
    runs, outages and failed steps after the runs.
    """

    report: RunReport
    """The night's runs (``report.records``) and where they are (``report.out``)."""
    comparison: Comparison | None = None
    """Each scenario x model against its baseline; None: not compared (no baselines
    directory, or an outage)."""
    history_path: str | None = None
    """The history entry written for the night, if one was."""
    outage: Outage | None = None
    """Set when every model's endpoint failed (too many infra_error runs): nothing compared."""
    problems: list[str] = field(default_factory=list)
    """Steps after the runs that failed (comparison, history), one line each."""
    history_note: str | None = None
    """Why nothing was appended to the history, when nothing was."""
    explanations: dict[CellKey, Explanation] = field(default_factory=dict)
    """Why each cell that fails the night changed (``NightOptions.explain``)."""
    model_outages: dict[str, Outage] = field(default_factory=dict)
    """Models whose endpoint failed tonight while others answered: their scenarios were not
    compared; the other models' were."""

    @property
    def regressed(self) -> bool:
        """A gating metric of some scenario x model regressed against its baseline."""
        return bool(self.comparison and self.comparison.regressions)

    def exit_code(self, *, gate: bool = True, fail_on_failure: bool = False) -> int:
        """What ``evalrunner run`` exits with for this night: 3 when every endpoint failed;
        1 for a crashed run, a regression (with ``gate``), a failed step after the runs, or
        (with ``fail_on_failure``) a run that failed its checks; 3 when one model's endpoint
        failed and nothing else did; else 0."""
        if self.outage is not None:
            return OUTAGE_EXIT
        # All records of the night, so a resumed run still fails on earlier crashes.
        outcomes = {r.outcome for r in self.report.records}
        fails = any(OUTCOME_TRAITS[o].fails_command for o in outcomes)  # a run crashed
        if fails or (gate and self.regressed) or self.problems:
            return 1
        if self.model_outages:
            return OUTAGE_EXIT
        return 1 if fail_on_failure and Outcome.FAILED in outcomes else 0


def _fitting(
    found: Mapping[CellKey, Baseline],
    scenarios: Mapping[str, ResolvedScenario],
    fingerprints: Mapping[str, str],
) -> dict[CellKey, Baseline]:
    """The baselines tonight's runs will be compared with (same model and configuration)."""
    return {
        cell: b
        for cell, b in found.items()
        if b.model == cell.model
        and b.fingerprint
        == (fingerprints.get(cell.scenario) or scenarios[cell.scenario].fingerprint)
    }


def _sequential(
    schedules: Sequence[ScenarioSchedule],
    loaded: Mapping[CellKey, Baseline],
    settings: AdaptiveSettings | None,
    evidence: Mapping[CellKey, EvidenceState],
    fingerprints: Mapping[str, str],
) -> tuple[Adaptive | None, Mapping[CellKey, CellReference] | None]:
    """The statistics' look rule for tonight: escalation of suspicious cells (every night with
    baselines), and with ``--adaptive`` the early look that stops unremarkable cells.

    One look rule per night: :func:`evalrunner.stats.decide` on the cell's runs so far,
    against its anchored baseline, fitted once across the suite; the fit is returned so
    the comparison after the runs uses the same one. Cells without a usable baseline run
    their N.
    """
    from evalrunner.stats._sequential import decide

    scenarios = {schedule.scenario.id: schedule.scenario for schedule in schedules}
    baselines = _fitting(loaded, scenarios, fingerprints)
    if not baselines:
        return None, None
    refs = _fit(baselines, scenarios, evidence)
    cells = sum(len(schedule.cells()) for schedule in schedules)
    budgets = {cell: _budget(scenarios[cell.scenario], settings, cells) for cell in baselines}
    if settings is None and all(b.cap <= b.runs for b in budgets.values()):
        return None, refs  # escalation off everywhere (escalate_to: 1): a fixed schedule

    def look(cell: CellKey, records: Sequence[RunRecord]) -> tuple[int, str]:
        step = decide(refs[cell], records, budgets[cell], evidence.get(cell))
        return (step.more if step.action == "continue" else 0), step.reason

    # batch and max_runs only matter for the manifest of an --adaptive night: with a look
    # rule every cell with a baseline runs by its budget, the others their N.
    recorded = settings or AdaptiveSettings()
    adaptive = Adaptive(
        look=look,
        budgets={cell: CellBudget(b.first_look, b.runs, b.cap) for cell, b in budgets.items()},
        adaptive=settings is not None,
        batch=recorded.batch,
        max_runs=recorded.max_runs,
    )
    return adaptive, refs


def _fit(
    baselines: Mapping[CellKey, Baseline],
    scenarios: Mapping[str, ResolvedScenario],
    evidence: Mapping[CellKey, EvidenceState],
) -> dict[CellKey, CellReference]:
    """The matching baselines fitted once across the suite, with their evidence."""
    from evalrunner.stats._reference import CellBaseline, fit_references

    return fit_references(
        [
            CellBaseline(
                cell,
                scenarios[cell.scenario].tolerance,
                [n.records for n in b.nights],
                b.anchor,
                scenarios[cell.scenario].row_ids,
            )
            for cell, b in baselines.items()
        ],
        evidence,
    )


def _budget(scenario: ResolvedScenario, settings: AdaptiveSettings | None, cells: int) -> Budget:
    """A cell's runs tonight: --adaptive schedules it for --max-runs (its N) and may stop it at
    half of that; otherwise it runs its N, and escalation may take it to the cap."""
    from evalrunner.stats._sequential import Budget

    return Budget.of(
        scenario.tolerance,
        # Per row for a dataset scenario, as runs is.
        settings.max_runs * max(1, len(scenario.selected_rows))
        if settings is not None
        else scenario.cell_runs,
        cells=cells,
        adaptive=settings is not None,
        batch=settings.batch if settings else None,
    )


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class NightOptions(RunOptions):
    """Everything ``evalrunner run`` decides about a night; the CLI's defaults are these."""

    out: Path = Field(description="The results directory (claimed for the night).")
    concurrency: int | None = Field(
        default=None, ge=1, description="Runs at the same time (default: the suite's)."
    )
    baselines_dir: Path | None = Field(
        default=DEFAULT_BASELINES, description="Baselines to compare with; None: no comparison."
    )
    history: str | None = Field(
        default=DEFAULT_HISTORY, description="History location; None: not appended to."
    )
    outage_share: float = Field(
        default=DEFAULT_OUTAGE_SHARE,
        gt=0,
        le=1,
        description="A night with more than this share of infra_error runs is an outage.",
    )
    executor: Literal["local", "ray"] = Field(
        default="local", description="Where runs execute: this process, or a Ray cluster."
    )
    ray_address: str | None = Field(
        default=None, description="Ray cluster (default: RAY_ADDRESS, else a local Ray)."
    )
    ray_workers: int = Field(
        default=DEFAULT_WORKERS, ge=1, description="Worker processes for the Ray executor."
    )
    explain: bool = Field(
        default=True,
        description="Say why each scenario that fails the night changed (request, tool, "
        "model, where the runs diverge): read from the run files, no model calls.",
    )


def run_live(
    suite: Suite | str | Path,
    options: NightOptions,
    *,
    progress_stream: TextIO | None = None,
    notify: Notify | None = None,
) -> LiveResult:
    """Run a suite live, compare each scenario with its baseline, append the night to the history.

    ``suite``: a loaded suite, or a suite file's path. ``options.resume`` continues
    the schedule recorded in ``options.out``'s manifest (options given again must agree
    with it). ``progress_stream`` gets a line per finished run (default stderr;
    ``io.StringIO()`` keeps them quiet). ``notify`` hears one-line notices (where the
    results go, the embedded model starting, a concurrency cap); default stderr.
    ``options.executor``: where the runs execute, 'local' (this process) or 'ray'
    (see :mod:`evalrunner.live._ray`). Callable from a thread or from inside a
    running event loop (a notebook): it blocks until the night is done.
    :meth:`LiveResult.exit_code` is what ``evalrunner run`` would exit with.
    """
    if not isinstance(suite, Suite):  # a suite file's path
        suite = load_suite(suite)
    # An in-process agent may change the working directory (coding agents do): the
    # results directory is anchored where it was given (ResultsDir), and the directory is
    # given back after the runs, so the history and every path read after them are the
    # user's as given.
    cwd = os.getcwd()
    say = notify or _to_stderr
    history, baselines_dir = options.history, options.baselines_dir
    if history is not None:
        from evalrunner.history._store import check_writable

        check_writable(history)  # a bad location fails before the night's runs, not after
    with open_night(suite, options.out, options) as night:
        before, adaptive_cfg = _before_the_runs(night, baselines_dir, history)
        with (
            open_executor(
                options.executor,
                suite.spec.rate_limits,
                ray_address=options.ray_address,
                ray_workers=options.ray_workers,
            ) as jobs,
            EndpointPool(notify=say, serve_local=jobs.serve_local) as pool,
        ):
            report = _run_to_end(
                run_night(
                    night,
                    pool=pool,
                    concurrency=options.concurrency,
                    progress_stream=progress_stream,
                    adaptive=adaptive_cfg,
                    notify=say,
                    executor=jobs,
                )
            )
            _back_to(cwd, say)
            for died in [pool.local_server_died(), *jobs.local_servers_died()]:
                if died is not None:
                    say(died)
            result = LiveResult(report, outage=outage_of(report.records, options.outage_share))
            if result.outage is None:
                result.model_outages = model_outages(report.records, options.outage_share)
            # Inside the pool: the sentinel reaches the models the runs did.
            _after_the_runs(night, result, baselines_dir, history, before, options.explain, pool)
    return result


def _back_to(cwd: str, say: Notify) -> None:
    """The working directory the night started in, if an agent moved the process."""
    if os.getcwd() != cwd:
        say(f"an agent changed the working directory to {os.getcwd()}; back to {cwd}")
        os.chdir(cwd)


def _before_the_runs(
    night: OpenNight, baselines_dir: Path | None, history: str | None
) -> tuple[_Before, Adaptive | None]:
    """What the night reads and fits before its runs, and the statistics' look rule for them."""
    before = _Before()
    adaptive_cfg = None
    if baselines_dir is not None:
        cells = [c for schedule in night.schedules for c in schedule.cells()]
        # Read once, before the runs: a broken baseline stops us before the night's
        # runs are spent, and escalation and the comparison use the same objects.
        before.loaded = load_baselines(baselines_dir, night.suite.name, cells)
        before.evidence = _evidence_so_far(night.suite.name, history)
        # Escalation needs the baselines; --adaptive without them still runs in batches.
        adaptive_cfg, before.references = _sequential(
            night.schedules,
            before.loaded,
            night.adaptive,
            before.evidence,
            night.manifest.scenarios,
        )
    if adaptive_cfg is None and night.adaptive is not None:
        # --adaptive with no baseline to look against: every cell runs its N.
        adaptive_cfg = Adaptive(
            look=lambda cell, records: (0, "no baseline"),
            budgets={},
            batch=night.adaptive.batch,
            max_runs=night.adaptive.max_runs,
        )
    return before, adaptive_cfg


def _run_to_end(night: Coroutine[Any, Any, T]) -> T:
    """Run the night's event loop to its end, also when this thread already runs one (a
    notebook's cell, an async service): asyncio.run refuses to start a loop there, so the
    night's loop runs in a thread of its own while this one waits, as for any blocking call."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(night)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="evalrunner-night") as pool:
        return pool.submit(asyncio.run, night).result()


@dataclass
class _Before:
    """What the night read and fitted before its runs, for the comparison after them."""

    loaded: Mapping[CellKey, Baseline] = field(default_factory=dict)
    evidence: Mapping[CellKey, EvidenceState] = field(default_factory=dict)
    references: Mapping[CellKey, CellReference] | None = None


def _after_the_runs(
    night: OpenNight,
    result: LiveResult,
    baselines_dir: Path | None,
    history: str | None,
    before: _Before,
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


def _compare(night: OpenNight, result: LiveResult, baselines_dir: Path, before: _Before) -> None:
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


def _evidence_so_far(suite: str, history: str | None) -> dict[CellKey, EvidenceState]:
    """Each cell's evidence accumulated before tonight (none without a history)."""
    from evalrunner.history._store import evidence_so_far

    return {} if history is None else evidence_so_far(history, suite)


Trajectory = dict[str, Any]


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
    from evalrunner.history._store import BaselineSummary, HistoryEntry, Why, append

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
    )
    return append(entry, root)
