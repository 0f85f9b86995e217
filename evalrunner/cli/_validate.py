"""``evalrunner validate``: check suite files without running anything."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalrunner._next import NextStep
from evalrunner.cli import _options
from evalrunner.endpoints._endpoints import (
    LOCAL,
    check_requested_models,
    missing_keys,
    requested_models,
)
from evalrunner.errors import FileFormatError
from evalrunner.suite import Suite, find_suites, load_suite

if TYPE_CHECKING:
    from evalrunner.baseline._file import Baseline


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_options.suites_dir
@_options.baselines_dir()
def validate(files: tuple[Path, ...], suites_dir: Path, baselines_dir: Path) -> None:
    """Check suite files without running anything (default: every suite in --suites-dir).

    Agents and code checks are imported and every model string is checked as litellm resolves
    it (openai/ and anthropic/ by their prefix, without importing litellm). The suite's
    committed baselines and goldens are read, so a bad merge or edit is found here. A model
    whose provider's API key is not set here gets a note (the nightly job may have it).
    """
    paths = list(files) or list(find_suites(suites_dir).values())
    if not paths:
        raise click.UsageError(f"no suite files given and none in {suites_dir}/")
    for path in paths:
        _validate_one(path, baselines_dir)


def _validate_one(path: Path, baselines_dir: Path) -> None:
    """Check one suite file, its agents, checks, models and committed files; say ``ok``."""
    suite = load_suite(path)
    for sc in suite.scenarios:
        sc.load_agent()
        sc.load_checks()
    models = _check_models(suite, path)
    if LOCAL in models:
        # A night would start the embedded model: say now if it is not installed.
        from evalrunner.endpoints._local_model import check_embedded_model

        check_embedded_model()
    rows = sum(len(sc.data.rows) for sc in suite.scenarios if sc.data is not None)
    data = f", {rows} dataset rows" if rows else ""
    count = len(suite.scenarios)
    broken = _committed_files(suite, path, baselines_dir, models)
    if broken:
        raise FileFormatError(
            f"{path}: {broken} of the suite's committed files cannot be read (above)"
        )
    click.echo(f"ok  {path}  ({count} scenario{'' if count == 1 else 's'}{data})")


def _model_note(file: Path, model: str, path: Path, models: list[str]) -> str | None:
    """A baseline a night would not use for its model: its name and its model field
    disagree (a file renamed by hand), or its model is not one a night of the suite runs
    (a model dropped, or a model string renamed: "openai/x" to "hosted_vllm/x")."""
    from evalrunner.suite._record import model_slug

    named = f"{model_slug(model)}.json"
    if not file.name.endswith(f"--{named}"):
        return (
            f"{file}: holds the baseline of model {model!r}, whose file name ends --{named}; "
            "a night reads it for no model: rename it back, or set its model field to the "
            "model its name is for"
        )
    if model in models:
        return None
    return (
        f"{file}: model {model!r} is not one a night of {path} runs ({', '.join(models)}); "
        "delete the file if the model is gone, or, for a model string renamed, rename the "
        "file and set its model field to the new string"
    )


def _check_models(suite: Suite, path: Path) -> list[str]:
    """The models a night of ``suite`` would use, checked as ``run`` checks them (the suite's,
    EVALRUNNER_MODEL's and EVALRUNNER_API_BASE), each without its API key noted."""
    runs = {m: None for sc in suite.scenarios for m in requested_models(suite=list(sc.models))}
    check_requested_models(suite, (), list(runs))
    judges = (sc.checks.judge for sc in suite.scenarios if sc.checks.judge is not None)
    models = list(dict.fromkeys([*runs, *(j.model for j in judges if j.model)]))
    for model in models:
        for key in missing_keys(model):
            # A note, not a failure: the nightly job's environment may hold what this
            # shell does not.
            click.echo(
                f"note: {path}: model {model!r} reads {key}, which is not set here; a night "
                "run like this would stop as an outage (the endpoint refuses every call)",
                err=True,
            )
    return models


def _committed_files(suite: Suite, path: Path, baselines_dir: Path, models: list[str]) -> int:
    """Read every baseline and golden of the suite; say what cannot be read (each on its
    own line, so one run names every file a merge broke) and which baselines belong to
    no scenario or model of the suite (``models``: those a night would run). Returns how
    many cannot be read."""
    from evalrunner.baseline._file import load_baseline
    from evalrunner.frozen._golden import Golden, golden_path_for, is_script
    from evalrunner.frozen._script import Script

    broken = 0
    for file in sorted((baselines_dir / suite.name).glob("*.json")):
        try:
            baseline = load_baseline(file)
        except FileFormatError as exc:
            click.echo(f"error: {exc}", err=True)
            broken += 1
            continue
        _baseline_note(suite, path, file, baseline, models)
    for file in sorted(golden_path_for(path, suite.name, "").parent.glob("*.json")):
        if file.name.endswith(".llm.json"):
            load: Callable[[Path], object] = Script.load
        elif is_script(file):
            continue  # the proxy's and a judge's recordings: read where they are replayed
        else:
            load = Golden.load
        try:
            load(file)
        except FileFormatError as exc:
            click.echo(f"error: {exc}", err=True)
            broken += 1
    return broken


def _baseline_note(
    suite: Suite, path: Path, file: Path, baseline: Baseline, models: list[str]
) -> None:
    """A note when a readable baseline belongs to no scenario or model of the suite, or
    to a scenario that has changed since it was recorded."""
    scenarios = {sc.id: sc for sc in suite.scenarios}
    if baseline.scenario not in scenarios:
        click.echo(
            f"note: {file}: scenario {baseline.scenario!r} is not in {path}; delete the "
            "file if the scenario is gone, or move it and its scenario field to the new id",
            err=True,
        )
    elif baseline.fingerprint != scenarios[baseline.scenario].fingerprint:
        # What a night would say ("not compared, the configuration changed"), said
        # before it spends its runs on a scenario it then cannot compare.
        refresh = NextStep(
            "baseline", suite.name, ("--scenario", baseline.scenario, "--model", baseline.model)
        )
        click.echo(
            f"note: {file}: scenario {baseline.scenario!r} has changed since it was "
            f"recorded (its checks, input, agent or dataset rows; fingerprint "
            f"{baseline.fingerprint} -> {scenarios[baseline.scenario].fingerprint}): a night "
            f"will not compare it; refresh it with: {_options.say(refresh)}",
            err=True,
        )
    else:
        note = _model_note(file, baseline.model, path, models)
        if note:
            click.echo(f"note: {note}", err=True)
