"""``evalrunner sentinel``: has the model changed under the same name? A cheap canary."""

from __future__ import annotations

from pathlib import Path

import click

from evalrunner._next import NextStep, Said
from evalrunner.baseline import load_baselines
from evalrunner.cli import _exit, _options
from evalrunner.cli._run import notice
from evalrunner.endpoints import EndpointPool
from evalrunner.endpoints._endpoints import requested_models
from evalrunner.night import SentinelResult, run_sentinel
from evalrunner.night._sentinel import DEFAULT_CALLS
from evalrunner.suite import CellKey, Suite, load_suite_by_name


@click.command("sentinel")
@_options.suite_name
@click.option(
    "--scenario", "scenarios", multiple=True, help="Only these scenario ids (default: all)."
)
@click.option(
    "--model", "models", multiple=True, help="Only these model labels (default: the suite's)."
)
@_options.positive("--calls", DEFAULT_CALLS, "Times each baseline's first request is sent.")
@_options.baselines_dir()
@_options.suites_dir
def sentinel_cmd(
    suite_name: str,
    scenarios: tuple[str, ...],
    models: tuple[str, ...],
    calls: int,
    baselines_dir: Path,
    suites_dir: Path,
) -> None:
    """Send each baseline's own first request to its model again, --calls times, and compare
    what the model does first (which tool, or answering) with what the baseline's runs did.

    The request is the same, so a different distribution is the model's doing. Exit 1 when
    a model answers otherwise, 3 when no call got through, 2 when no baseline keeps a
    request to send (accept new ones), 0 otherwise (docs/explain.md).
    """
    suite = load_suite_by_name(suite_name, suites_dir)
    cells = _cells(suite, scenarios, models)
    baselines = load_baselines(baselines_dir, suite.name, cells)
    if not baselines:
        raise click.UsageError(
            _options.say(
                Said(
                    f"no baseline under {baselines_dir / suite.name} for these scenarios: "
                    "write them first with '",
                    NextStep("baseline", suite.name),
                    "'",
                )
            )
        )
    with EndpointPool(notify=notice) as pool:
        seen = run_sentinel(suite, baselines, sorted(baselines), calls=calls, pool=pool)
    for cell, result in seen.items():
        click.echo(f"{cell.scenario} × {cell.model}: {_options.say(result.line())}")
    _exit.exit_with(_code(list(seen.values())))


def _cells(suite: Suite, scenarios: tuple[str, ...], models: tuple[str, ...]) -> list[CellKey]:
    unknown = sorted(set(scenarios) - {s.id for s in suite.scenarios})
    if unknown:
        raise click.UsageError(f"suite {suite.name} has no scenario {', '.join(unknown)}")
    return [
        CellKey(s.id, m)
        for s in suite.scenarios
        if not scenarios or s.id in scenarios
        for m in requested_models(models, s.models)
    ]


def _code(seen: list[SentinelResult]) -> int:
    """1: a model answers otherwise; 3: no call got through at all; 2: no baseline keeps a
    request to send (a canary that checked nothing must not pass); else 0."""
    if not seen:
        return 0
    if all(r.unavailable for r in seen):
        return 2
    if not any(r.tonight for r in seen) and any(r.unreachable for r in seen):
        return 3
    return 1 if any(r.changed for r in seen) else 0
