"""``evalrunner list``: suites and their scenarios."""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.core import ParameterSource

from evalrunner.cli import _options
from evalrunner.errors import ConfigError
from evalrunner.suite import find_suites, load_suite
from evalrunner.suite._loader import BUILT_IN_EXAMPLE


@click.command("list")
@_options.suites_dir
def list_cmd(suites_dir: Path) -> None:
    """List suites and their scenarios."""
    if not suites_dir.is_dir():
        source = click.get_current_context().get_parameter_source("suites_dir")
        # EVALRUNNER_SUITES is the default's source, but a directory the user named.
        if source is not ParameterSource.DEFAULT or os.environ.get("EVALRUNNER_SUITES"):
            raise ConfigError(
                f"suites directory {suites_dir} does not exist; pass --suites-dir (or set "
                "EVALRUNNER_SUITES), or create it with evalrunner init"
            )
        # Outside a project: what `run --suite example` runs here, the packaged example.
        _show("example", BUILT_IN_EXAMPLE, "built in")
        click.echo(f"note: no {suites_dir}/ here; evalrunner init creates one", err=True)
        return
    found = find_suites(suites_dir)
    if not found:
        click.echo(f"no suites in {suites_dir}/")
        return
    for name, path in found.items():
        _show(name, path)


def _show(name: str, path: Path, where: str | None = None) -> None:
    suite = load_suite(path)
    count = len(suite.scenarios)
    scenarios = f"{count} scenario{'s' if count != 1 else ''}"
    click.echo(f"{name}  ({where or path}, {scenarios}, runs {suite.spec.runs})")
    for sc in suite.scenarios:
        tags = f"  [{', '.join(sc.tags)}]" if sc.tags else ""
        if sc.data:  # runs are per row: say what a model runs in all, as plan does
            rows = len(sc.selected_rows)
            runs = f"  ({rows} rows of {sc.dataset} x {sc.runs} runs = {rows * sc.runs} runs)"
        else:
            runs = f"  (runs {sc.runs})" if sc.runs != suite.spec.runs else ""
        click.echo(f"  {sc.id}{tags}{runs}  {sc.description}".rstrip())
