"""Which runs to make: the scenarios and models chosen, and the jobs, batch by batch.

Pure scheduling, no I/O: the driver (:mod:`evalrunner.live._driver`) asks a
scheduler for a batch, executes it, and asks again with every record finished so
far, until the scheduler returns no more jobs. :class:`FixedScheduler` schedules
every run at once; :class:`AdaptiveScheduler` schedules batches per scenario x model
and asks a :data:`LookRule` (the statistics' ``decide``) after each batch how many
more runs a cell needs.
A resumed night's schedule is the one its manifest recorded (:func:`resumed`); the
manifest and the messages about it still call it the night's plan.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.endpoints._endpoints import Endpoint, requested_models
from evalrunner.errors import ConfigError
from evalrunner.live._results import AdaptiveSettings, Manifest, run_id
from evalrunner.suite._record import CellKey, RunKey, RunRecord, group_records
from evalrunner.suite._settings import ResolvedScenario, Suite

__all__ = [
    "Adaptive",
    "AdaptiveScheduler",
    "CellBudget",
    "FixedScheduler",
    "Job",
    "LookRule",
    "RunOptions",
    "ScenarioSchedule",
    "Scheduler",
    "choose",
    "resumed",
]


@dataclass(frozen=True)
class ScenarioSchedule:
    """A chosen scenario and the model strings it runs against."""

    scenario: ResolvedScenario
    models: tuple[str, ...]

    def cells(self) -> list[CellKey]:
        # A model string is also its endpoint's label, which records carry.
        return [CellKey(self.scenario.id, model) for model in self.models]


def choose(
    suite: Suite,
    *,
    runs: int | None = None,
    models: Sequence[str] = (),
    scenario_ids: Sequence[str] = (),
    rows: int | None = None,
) -> list[ScenarioSchedule]:
    """The scenarios to run, each with its model strings, after CLI overrides.

    ``rows`` applies to dataset scenarios only (a stable subset of their rows)."""
    _check_scenario_ids(suite, scenario_ids)
    chosen = [
        ScenarioSchedule(
            _overridden(scenario, runs, rows),
            tuple(requested_models(tuple(models), scenario.models)),
        )
        for scenario in suite.scenarios
        if not scenario_ids or scenario.id in scenario_ids
    ]
    if rows is not None and not any(schedule.scenario.data is not None for schedule in chosen):
        raise ConfigError(
            f"--rows applies to dataset scenarios, and suite {suite.name!r} has none among those "
            "chosen; drop --rows"
        )
    return chosen


def _check_scenario_ids(suite: Suite, scenario_ids: Sequence[str]) -> None:
    """Every scenario asked for is one of the suite's (the first that is not, named)."""
    known = [s.id for s in suite.scenarios]
    unknown = [s for s in scenario_ids if s not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"suite {suite.name!r} has no scenario {unknown[0]!r}; {hint}its scenarios: {', '.join(known)}"
        )


def _overridden(scenario: ResolvedScenario, runs: int | None, rows: int | None) -> ResolvedScenario:
    """``scenario`` with ``--runs`` and (a dataset scenario) ``--rows``, neither fingerprinted."""
    if runs is not None:
        scenario = scenario.model_copy(update={"runs": runs})
    if rows is not None and scenario.data is not None:
        scenario = scenario.model_copy(update={"rows": rows})
    return scenario


def _conflict(where: object, option: str, recorded: str) -> ConfigError:
    return ConfigError(
        f"{where}: {option} conflicts with the plan this directory was started with "
        f"({recorded}); --resume continues that plan: drop the option, or start a new --out"
    )


def _check_resume_options(
    where: object,
    manifest: Manifest,
    runs: int | None,
    models: Sequence[str],
    scenario_ids: Sequence[str],
    rows: int | None = None,
) -> None:
    """Options given with --resume must say what the manifest says (or be left out)."""
    if scenario_ids and set(scenario_ids) != set(manifest.scenarios):
        given = " ".join(f"--scenario {s}" for s in scenario_ids)
        raise _conflict(where, given, f"scenarios {', '.join(manifest.scenarios)}")
    if runs is not None and set(manifest.runs.values()) != {runs}:
        shown = ", ".join(f"{sid} {n}" for sid, n in manifest.runs.items())
        raise _conflict(where, f"--runs {runs}", f"runs {shown}")
    _check_resumed_rows(where, manifest, rows)
    if models and set(models) != set(manifest.models):
        given = " ".join(f"--model {m}" for m in models)
        raise _conflict(where, given, f"models {', '.join(manifest.models)}")


def _check_resumed_rows(where: object, manifest: Manifest, rows: int | None) -> None:
    """``--rows`` given with --resume must be the subset the night started with."""
    recorded = manifest.rows or {}
    if rows is not None and set(recorded.values()) != {rows}:
        shown = ", ".join(f"{sid} {n}" for sid, n in recorded.items()) or "every row"
        raise _conflict(where, f"--rows {rows}", f"rows {shown}")


def resumed(
    suite: Suite,
    manifest: Manifest,
    *,
    where: object,
    runs: int | None = None,
    models: Sequence[str] = (),
    scenario_ids: Sequence[str] = (),
    rows: int | None = None,
) -> list[ScenarioSchedule]:
    """The schedule ``manifest`` recorded, against ``suite`` as it is now.

    Options given again must agree with it; a scenario that left the suite or
    whose configuration changed (fingerprint) cannot be resumed.
    """
    if manifest.suite != suite.name:
        raise ConfigError(
            f"{where}: holds suite {manifest.suite!r}, not {suite.name!r}; pick another --out"
        )
    _check_resume_options(where, manifest, runs, models, scenario_ids, rows)
    known = {s.id for s in suite.scenarios}
    gone = [sid for sid in manifest.scenarios if sid not in known]
    if gone:
        raise ConfigError(
            f"{where}: scenario {gone[0]!r} of this directory's plan is no longer in suite "
            f"{suite.name!r}; start a new --out instead of --resume"
        )
    # In suite order, as a fresh night schedules them.
    return [
        _as_recorded(where, manifest, scenario)
        for scenario in suite.scenarios
        if scenario.id in manifest.scenarios
    ]


def _as_recorded(where: object, manifest: Manifest, scenario: ResolvedScenario) -> ScenarioSchedule:
    """``scenario`` with the runs, rows and models ``manifest`` recorded for it, unless its
    configuration changed since."""
    sid = scenario.id
    if scenario.fingerprint != manifest.scenarios[sid]:
        raise ConfigError(
            f"{where}: scenario {sid!r} changed since this directory was started "
            "(configuration fingerprint differs); start a new --out instead of --resume"
        )
    cells = (manifest.models_by_scenario or {}).get(sid, manifest.models)
    kept = {"runs": manifest.runs[sid]}
    if manifest.rows and sid in manifest.rows:
        kept["rows"] = manifest.rows[sid]
    return ScenarioSchedule(scenario.model_copy(update=kept), tuple(cells))


def resumed_adaptive(
    where: object,
    manifest: Manifest,
    adaptive: bool,
    batch: int | None,
    max_runs: int | None,
) -> AdaptiveSettings | None:
    """The adaptive settings a resumed night continues with (the manifest's); given ones must agree."""
    recorded = manifest.adaptive
    if recorded is None:
        if adaptive or batch is not None or max_runs is not None:
            raise _conflict(where, "--adaptive", "a fixed plan, not --adaptive")
        return None
    for option, value, kept in (
        ("--batch", batch, recorded.batch),
        ("--max-runs", max_runs, recorded.max_runs),
    ):
        if value is not None and value != kept:
            raise _conflict(where, f"{option} {value}", f"--adaptive {option} {kept}")
    return recorded


def adaptive_settings(
    adaptive: bool, batch: int | None, max_runs: int | None
) -> AdaptiveSettings | None:
    """A fresh night's adaptive settings (None: a fixed schedule); defaults where not given."""
    if not adaptive:
        return None
    given = {"batch": batch, "max_runs": max_runs}
    return AdaptiveSettings(**{k: v for k, v in given.items() if v is not None})


@dataclass(frozen=True)
class Job:
    """One run to make: a resolved scenario, the endpoint it talks to, its repetition index."""

    scenario: ResolvedScenario
    endpoint: Endpoint
    index: int
    judge: Endpoint | None = None
    """Where the scenario's judge grades the run, when its judge names a model of its own
    (None: the run's endpoint)."""

    @classmethod
    def of(
        cls, scenario: ResolvedScenario, endpoints: Mapping[str, Endpoint], model: str, index: int
    ) -> Job:
        """Run ``index`` of ``scenario`` against ``model`` (its dataset row, its judge)."""
        judge = scenario.checks.judge
        judged = endpoints[judge.model] if judge is not None and judge.model else None
        return cls(scenario.at(index), endpoints[model], index, judged)

    @property
    def key(self) -> RunKey:
        return RunKey(self.scenario.id, self.endpoint.label, self.index)

    @property
    def run_id(self) -> str:
        return run_id(self.key)


class Scheduler(Protocol):
    """What the runner executes: batches of jobs until an empty one."""

    @property
    def scheduled(self) -> list[Job]:
        """Every job scheduled so far (including those a resumed directory already holds)."""
        ...

    def next_jobs(self, finished: Sequence[RunRecord]) -> list[Job]:
        """The next jobs, given every record finished so far; [] when done."""
        ...


class FixedScheduler:
    """Every scenario's ``runs`` against each of its models, in one batch."""

    def __init__(
        self, schedules: Sequence[ScenarioSchedule], endpoints: Mapping[str, Endpoint]
    ) -> None:
        self._jobs = [
            Job.of(schedule.scenario, endpoints, model, index)
            for schedule in schedules
            for model in schedule.models
            for index in range(schedule.scenario.cell_runs)
        ]
        self._given = False

    @property
    def scheduled(self) -> list[Job]:
        return list(self._jobs)

    def next_jobs(self, finished: Sequence[RunRecord]) -> list[Job]:
        if self._given:
            return []
        self._given = True
        return list(self._jobs)


LookRule = Callable[[CellKey, Sequence[RunRecord]], tuple[int, str]]
"""``(cell, its finished records) -> (runs to add now, why)``: the statistics' look
(:func:`evalrunner.stats.decide`) asked after each batch; 0 settles the cell."""


@dataclass(frozen=True)
class CellBudget:
    """One cell's runs under a :data:`LookRule`: before its first look, its N, and at most."""

    first: int
    runs: int
    cap: int


class RunOptions(BaseModel):
    """Which runs a night makes: what ``evalrunner run`` was asked for.

    ``None`` means "not given": the suite's value on a fresh night, the
    manifest's on a resumed one (a value given again must agree with it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs: int | None = Field(
        default=None, ge=1, description="Runs per scenario and model (per row in a dataset)."
    )
    rows: int | None = Field(
        default=None, ge=1, description="Dataset scenarios: a stable subset of this many rows."
    )
    models: tuple[str, ...] = Field(
        default=(), description="litellm model strings, or 'local' (default: the suite's)."
    )
    scenarios: tuple[str, ...] = Field(default=(), description="Only these scenario ids.")
    resume: bool = Field(default=False, description="Finish the results directory's night.")
    adaptive: bool = Field(
        default=False, description="Look at each scenario in batches and stop it when settled."
    )
    batch: int | None = Field(
        default=None, ge=1, description="Runs per look after the first (escalation's too)."
    )
    max_runs: int | None = Field(
        default=None,
        ge=1,
        description="The N a scenario with a baseline is planned for under adaptive (one "
        "without a baseline runs the suite's runs).",
    )


_ADAPTIVE_DEFAULTS = AdaptiveSettings()


@dataclass(frozen=True)
class Adaptive:
    """A night scheduled by its looks: each cell with a baseline runs by its budget, and
    ``look`` says after each batch how many runs it adds (escalation, and with
    ``--adaptive`` stopping early); cells without one run their ``runs`` at once."""

    look: LookRule
    budgets: Mapping[CellKey, CellBudget]
    """Cells ``look`` can judge (those with a baseline): their first look, N and cap."""
    adaptive: bool = True
    """False: the night's schedule is fixed (every cell gets its N) and only escalation adds runs."""
    batch: int = _ADAPTIVE_DEFAULTS.batch
    max_runs: int = _ADAPTIVE_DEFAULTS.max_runs
    """``batch`` and ``max_runs`` are what --adaptive was given, for the manifest: the budgets
    already hold what they mean for each cell."""

    @property
    def settings(self) -> AdaptiveSettings:
        return AdaptiveSettings(batch=self.batch, max_runs=self.max_runs)


@dataclass
class _Lane:
    """One scenario x model under --adaptive."""

    scenario: ResolvedScenario
    endpoint: Endpoint
    cap: int
    next: int = 0
    settled: bool = False
    first: int = 0
    """Runs before the first look (a cell without a budget: all of them)."""
    runs: int = 0
    """The N the cell is scheduled for (escalation goes beyond it, adaptive stops short)."""
    pending: int = 0
    """Runs the last look asked for."""

    @property
    def key(self) -> CellKey:
        return CellKey(self.scenario.id, self.endpoint.label)

    @property
    def open(self) -> bool:
        return not self.settled and self.next < self.cap


@dataclass(frozen=True)
class AdaptiveSummary:
    """What --adaptive did, in numbers the words printed about it can be checked against."""

    made: int
    """Runs scheduled (and so made, unless interrupted), resumed ones included."""
    maximum: int
    """Runs the caps allowed: --max-runs per cell with a baseline, ``runs`` per cell without."""
    fixed: int
    """Runs a fixed schedule (each scenario's ``runs``) would have made."""
    stopped: int
    """Cells a look stopped before their cap."""
    cells: int
    escalated: int = 0
    """Cells that ran past their first look's runs because a look found them suspicious."""
    adaptive: bool = True
    """False: a fixed schedule that only escalation changed."""

    def line(self) -> str:
        if not self.adaptive:
            return (
                f"made {self.made} runs ({self.made - self.fixed:+d} on the fixed plan's "
                f"{self.fixed}); {self.escalated} of {self.cells} scenario x model cells "
                "escalated because they looked suspicious"
            )
        return (
            f"made {self.made} runs, {self.maximum - self.made} fewer than the {self.maximum} "
            f"allowed; {self.stopped} of {self.cells} scenario x model cells stopped early "
            f"(a fixed plan makes {self.fixed})"
        )


@dataclass
class AdaptiveScheduler:
    """Batches per scenario x model until its look settles it or it reaches its cap."""

    adaptive: Adaptive
    lanes: list[_Lane]
    scheduled: list[Job] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fixed: int = 0
    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        schedules: Sequence[ScenarioSchedule],
        endpoints: Mapping[str, Endpoint],
        adaptive: Adaptive,
    ) -> AdaptiveScheduler:
        scheduler = cls(adaptive, [], endpoints=endpoints)
        for schedule in schedules:
            for model in schedule.models:
                runs = schedule.scenario.cell_runs
                lane = _Lane(schedule.scenario, endpoints[model], runs, first=runs, runs=runs)
                scheduler.fixed += runs
                budget = adaptive.budgets.get(lane.key)
                if budget is not None:
                    lane.cap, lane.first, lane.runs = budget.cap, budget.first, budget.runs
                elif adaptive.adaptive:
                    scheduler.notes.append(f"{lane.key.token()}: no baseline, runs the full {runs}")
                scheduler.lanes.append(lane)
        return scheduler

    @property
    def summary(self) -> AdaptiveSummary:
        return AdaptiveSummary(
            made=len(self.scheduled),
            maximum=sum(lane.cap for lane in self.lanes),
            fixed=self.fixed,
            stopped=sum(lane.settled and lane.next < lane.cap for lane in self.lanes),
            cells=len(self.lanes),
            escalated=sum(bool(lane.runs) and lane.next > lane.runs for lane in self.lanes),
            adaptive=self.adaptive.adaptive,
        )

    def next_jobs(self, finished: Sequence[RunRecord]) -> list[Job]:
        if self.scheduled:  # a batch ran: ask about every open cell first
            self._settle(group_records(finished))
        batch: list[Job] = []
        for lane in self.lanes:
            size = lane.pending if lane.next else lane.first
            lane.pending = 0
            while lane.open and size > 0:
                batch.append(Job.of(lane.scenario, self.endpoints, lane.key.model, lane.next))
                lane.next += 1
                size -= 1
        self.scheduled += batch
        return batch

    def _settle(self, by_cell: Mapping[CellKey, Sequence[RunRecord]]) -> None:
        for lane in self.lanes:
            if not lane.open or lane.key not in self.adaptive.budgets:
                continue
            more, why = self.adaptive.look(lane.key, by_cell.get(lane.key, []))
            if more > 0:
                lane.pending = min(more, lane.cap - lane.next)
                if lane.next >= lane.runs:
                    self.notes.append(f"{lane.key.token()}: escalating, {why}")
                continue
            lane.settled = True
            if self.adaptive.adaptive and lane.next < lane.runs:
                self.notes.append(
                    f"{lane.key.token()}: stopped after {lane.next} of at most {lane.cap} runs: {why}"
                )
