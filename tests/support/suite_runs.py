"""Open a night and run it in one call: the tests' and benchmarks' shortcut.

``evalrunner.night.run_live`` is the product's path (it also compares and
appends to the history); tests of the runner alone need only
:func:`~evalrunner.night._open.open_night` then
:func:`~evalrunner.live._driver.run_night`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from evalrunner.endpoints._endpoints import EndpointPool
from evalrunner.live._driver import RunReport, run_night
from evalrunner.live._execute import JobExecutor
from evalrunner.live._schedule import Adaptive, RunOptions
from evalrunner.night._open import open_night
from evalrunner.suite._settings import Suite


async def run_suite(
    suite: Suite,
    *,
    out: Path,
    runs: int | None = None,
    models: Sequence[str] = (),
    scenario_ids: Sequence[str] = (),
    concurrency: int | None = None,
    resume: bool = False,
    pool: EndpointPool,
    progress_stream: TextIO | None = None,
    adaptive: Adaptive | None = None,
    executor: JobExecutor | None = None,
) -> RunReport:
    """Run the suite into ``out`` (:func:`open_night`, then :func:`run_night`)."""
    # An escalation-only Adaptive runs a fixed plan: only an adaptive one plans in batches.
    settings = adaptive.settings if adaptive is not None and adaptive.adaptive else None
    options = RunOptions(
        runs=runs,
        models=tuple(models),
        scenarios=tuple(scenario_ids),
        resume=resume,
        adaptive=settings is not None,
        batch=settings.batch if settings else None,
        max_runs=settings.max_runs if settings else None,
    )
    with open_night(suite, out, options) as night:
        return await run_night(
            night,
            pool=pool,
            concurrency=concurrency,
            progress_stream=progress_stream,
            adaptive=adaptive,
            executor=executor,
        )
