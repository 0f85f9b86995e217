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
from evalrunner.live._results import AdaptiveSettings, Manifest, claim
from evalrunner.live._schedule import (
    RunOptions,
    ScenarioPlan,
    adaptive_settings,
    choose,
    resumed,
    resumed_adaptive,
)
from evalrunner.suite._record import same_files
from evalrunner.suite._settings import Suite

__all__ = ["open_night"]


def _manifest(
    suite: Suite, plans: list[ScenarioPlan], labels: list[str], adaptive: AdaptiveSettings | None
) -> Manifest:
    from evalrunner._version import __version__

    return Manifest(
        suite=suite.name,
        models=labels,
        runs={p.scenario.id: p.scenario.runs for p in plans},
        rows={p.scenario.id: len(p.scenario.selected_rows) for p in plans if p.scenario.data}
        or None,
        scenarios={p.scenario.id: p.scenario.fingerprint for p in plans},
        models_by_scenario={p.scenario.id: list(p.models) for p in plans},
        adaptive=adaptive,
        run_ids=[],
        started_at=iso_now(),
        evalrunner_version=__version__,
    )


@contextlib.contextmanager
def open_night(suite: Suite, out: Path, options: RunOptions) -> Iterator[OpenNight]:
    """Claim ``out`` and settle the night's plan; every check that needs no model runs here.

    A fresh night is planned from the suite and the options; a resumed one
    continues the plan its manifest recorded (options given again must agree).
    Model strings are resolved and agents imported before the first run, so a
    typo costs one line, not a night. The directory stays locked until the
    block ends.
    """
    with claim(out, resume=options.resume) as results:
        old = results.read_manifest() if options.resume else None
        o = options
        if old is None:
            plans = choose(
                suite, runs=o.runs, models=o.models, scenario_ids=o.scenarios, rows=o.rows
            )
            settings = adaptive_settings(o.adaptive, o.batch, o.max_runs)
        else:
            where = results.manifest_path
            plans = resumed(
                suite,
                old,
                where=where,
                runs=o.runs,
                models=o.models,
                scenario_ids=o.scenarios,
                rows=o.rows,
            )
            settings = resumed_adaptive(where, old, o.adaptive, o.batch, o.max_runs)
        labels = list(dict.fromkeys(m for plan in plans for m in plan.models))
        if old is None:
            check_requested_models(suite, options.models, labels)
        else:
            for label in labels:
                check_model(label, f"{results.manifest_path}: models")
            check_judge_models(suite)
        if (problem := same_files(labels)) is not None:
            raise ConfigError(problem)
        for plan in plans:
            plan.scenario.load_agent()  # a bad agent path fails now, not halfway through the night
            plan.scenario.load_checks()
        manifest = _manifest(suite, plans, labels, settings)
        if old is not None:
            manifest = old.model_copy(
                update={
                    "format_version": manifest.format_version,
                    "models_by_scenario": manifest.models_by_scenario,
                    "status": "running",
                    "ended_at": None,
                    "invocations": old.invocations + 1,
                }
            )
        previous = results.records() if old is not None else []
        unclosed = old is not None and old.status == "running"
        yield OpenNight(suite, results, plans, manifest, settings, previous, unclosed)
