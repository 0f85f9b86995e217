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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from pydantic import Field

from evalrunner.baseline._file import Baseline, load_baselines
from evalrunner.endpoints._endpoints import EndpointPool, Notify
from evalrunner.history._store import DEFAULT_ROOT as DEFAULT_HISTORY
from evalrunner.live._driver import OpenNight, run_night
from evalrunner.live._execute import LoopThreads
from evalrunner.live._outage import DEFAULT_OUTAGE_SHARE, Outage, model_outages, outage_of
from evalrunner.live._ray import DEFAULT_WORKERS, open_executor
from evalrunner.live._results import AdaptiveSettings
from evalrunner.live._schedule import Adaptive, CellBudget, RunOptions, ScenarioSchedule
from evalrunner.night._after import Before, after_the_runs
from evalrunner.night._open import open_night
from evalrunner.night._result import OUTAGE_EXIT, LiveResult
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import CellKey, RunRecord
from evalrunner.suite._settings import ResolvedScenario, Suite

if TYPE_CHECKING:
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
    budget_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="USD the night may spend (the suite's budget_usd by default): no run "
        "starts that would cross it; a resumed night's earlier runs count.",
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
                    budget_usd=options.budget_usd or suite.spec.budget_usd,
                )
            )
            _back_to(cwd, say)
            for died in [pool.local_server_died(), *jobs.local_servers_died()]:
                if died is not None:
                    say(died)
            result = LiveResult(report, outage=outage_of(report.records, options.outage_share))
            if report.budget_spent is not None:
                return result  # not finished: compared and kept once --resume finishes it
            if result.outage is None:
                result.model_outages = model_outages(report.records, options.outage_share)
            # Inside the pool: the sentinel reaches the models the runs did.
            after_the_runs(night, result, baselines_dir, history, before, options.explain, pool)
    return result


def _back_to(cwd: str, say: Notify) -> None:
    """The working directory the night started in, if an agent moved the process."""
    if os.getcwd() != cwd:
        say(f"an agent changed the working directory to {os.getcwd()}; back to {cwd}")
        os.chdir(cwd)


def _before_the_runs(
    night: OpenNight, baselines_dir: Path | None, history: str | None
) -> tuple[Before, Adaptive | None]:
    """What the night reads and fits before its runs, and the statistics' look rule for them."""
    before = Before()
    adaptive_cfg = None
    if baselines_dir is not None:
        cells = [c for schedule in night.schedules for c in schedule.cells()]
        # Read once, before the runs: a broken baseline stops us before the night's
        # runs are spent, and escalation and the comparison use the same objects.
        before.loaded = load_baselines(baselines_dir, night.suite.name, cells)
        before.evidence = _evidence_so_far(night.suite.name, history, cells)
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
    night's loop runs in a thread of its own while this one waits, as for any blocking call,
    and an interrupt of this one (KeyboardInterrupt) cancels the night there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _on_own_loop(night)
    running: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]]
    running = concurrent.futures.Future()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="evalrunner-night") as pool:
        ended = pool.submit(_on_own_loop, _told(night, running))
        try:
            return ended.result()
        except BaseException:
            # An interrupt (the notebook's stop button) arrives in this thread, not the
            # night's: stop the night as Ctrl-C does, instead of waiting for its end.
            if not ended.done():
                loop, task = running.result()
                loop.call_soon_threadsafe(task.cancel)
            raise


async def _told(night: Coroutine[Any, Any, T], running: concurrent.futures.Future[Any]) -> T:
    """``night``, once its loop and task are given to ``running`` (to be cancelled from
    another thread)."""
    running.set_result((asyncio.get_running_loop(), asyncio.current_task()))
    return await night


def _on_own_loop(night: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(night)``, on a loop whose default executor waits for no thread at its
    end (:class:`~evalrunner.live._execute.LoopThreads`)."""
    with asyncio.Runner() as runner:
        runner.get_loop().set_default_executor(LoopThreads())
        return runner.run(night)


def _evidence_so_far(
    suite: str, history: str | None, cells: Sequence[CellKey]
) -> dict[CellKey, EvidenceState]:
    """Tonight's cells' evidence accumulated before tonight (none without a history)."""
    from evalrunner.history._store import evidence_so_far

    return {} if history is None else evidence_so_far(history, suite, cells)
