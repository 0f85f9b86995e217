"""Opening a night: its results directory claimed, its schedule settled, and every check
that needs no model made before the first run.

A fresh night is scheduled from the suite and the options; a resumed one
continues the schedule its manifest recorded (options given again must agree).
What comes out, an :class:`~evalrunner.live._driver.OpenNight`, is what
:func:`~evalrunner.live._driver.run_night` runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from evalrunner._clock import iso_now
from evalrunner.endpoints._endpoints import check_judge_models, check_model, check_requested_models
from evalrunner.errors import ConfigError
from evalrunner.live._driver import OpenNight
from evalrunner.live._results import AdaptiveSettings, Manifest, ResultsDir, claim
from evalrunner.live._schedule import (
    RunOptions,
    ScenarioSchedule,
    adaptive_settings,
    choose,
    resumed,
    resumed_adaptive,
)
from evalrunner.suite._record import same_files
from evalrunner.suite._settings import Suite

__all__ = ["open_night"]


def _manifest(
    suite: Suite,
    schedules: list[ScenarioSchedule],
    labels: list[str],
    adaptive: AdaptiveSettings | None,
) -> Manifest:
    from evalrunner._version import __version__

    return Manifest(
        suite=suite.name,
        models=labels,
        runs={p.scenario.id: p.scenario.runs for p in schedules},
        rows={p.scenario.id: len(p.scenario.selected_rows) for p in schedules if p.scenario.data}
        or None,
        scenarios={p.scenario.id: p.scenario.fingerprint for p in schedules},
        models_by_scenario={p.scenario.id: list(p.models) for p in schedules},
        adaptive=adaptive,
        run_ids=[],
        started_at=iso_now(),
        evalrunner_version=__version__,
    )


@contextlib.contextmanager
def open_night(suite: Suite, out: Path, options: RunOptions) -> Iterator[OpenNight]:
    """Claim ``out`` and settle the night's schedule; every check that needs no model runs here.

    A fresh night is scheduled from the suite and the options; a resumed one
    continues the schedule its manifest recorded (options given again must agree).
    Model strings are resolved and agents imported before the first run, so a
    typo costs one line, not a night. The directory stays locked until the
    block ends.
    """
    with claim(out, resume=options.resume) as results:
        old = results.read_manifest() if options.resume else None
        schedules, settings = _schedule(suite, results, old, options)
        labels = list(dict.fromkeys(m for schedule in schedules for m in schedule.models))
        _check(suite, results, old, options, schedules, labels)
        manifest = _manifest(suite, schedules, labels, settings)
        if old is None:
            yield OpenNight(suite, results, schedules, manifest, settings, [])
            return
        manifest = old.model_copy(
            update={
                "format_version": manifest.format_version,
                "models_by_scenario": manifest.models_by_scenario,
                "status": "running",
                "ended_at": None,
                "invocations": old.invocations + 1,
            }
        )
        unclosed = old.status == "running"
        yield OpenNight(suite, results, schedules, manifest, settings, results.records(), unclosed)


def _schedule(
    suite: Suite, results: ResultsDir, old: Manifest | None, o: RunOptions
) -> tuple[list[ScenarioSchedule], AdaptiveSettings | None]:
    """A fresh night's schedule from the suite and the options, or the one ``old`` recorded."""
    if old is None:
        schedules = choose(
            suite, runs=o.runs, models=o.models, scenario_ids=o.scenarios, rows=o.rows
        )
        return schedules, adaptive_settings(o.adaptive, o.batch, o.max_runs)
    where = results.manifest_path
    schedules = resumed(
        suite, old, where=where, runs=o.runs, models=o.models, scenario_ids=o.scenarios, rows=o.rows
    )
    return schedules, resumed_adaptive(where, old, o.adaptive, o.batch, o.max_runs)


def _check(
    suite: Suite,
    results: ResultsDir,
    old: Manifest | None,
    options: RunOptions,
    schedules: list[ScenarioSchedule],
    labels: list[str],
) -> None:
    """The checks that need no model: model strings resolve, no two models write the same
    files, every agent and check imports."""
    if old is None:
        check_requested_models(suite, options.models, labels)
    else:
        for label in labels:
            check_model(label, f"{results.manifest_path}: models")
        check_judge_models(suite)
    if (problem := same_files(labels)) is not None:
        raise ConfigError(problem)
    for schedule in schedules:
        schedule.scenario.load_agent()  # a bad agent path fails now, not halfway through the night
        schedule.scenario.load_checks()
