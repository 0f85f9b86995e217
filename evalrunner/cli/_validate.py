"""``evalrunner validate``: check suite files without running anything."""

from __future__ import annotations

from pathlib import Path

import click

from evalrunner.cli import _options
from evalrunner.endpoints._endpoints import LOCAL, check_suite_models, requested_models
from evalrunner.suite import find_suites, load_suite


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_options.suites_dir
def validate(files: tuple[Path, ...], suites_dir: Path) -> None:
    """Check suite files without running anything (default: every suite in --suites-dir).

    Agents and code checks are imported and every model string is checked as litellm resolves
    it (openai/ and anthropic/ by their prefix, without importing litellm).
    """
    paths = list(files) or list(find_suites(suites_dir).values())
    if not paths:
        raise click.UsageError(f"no suite files given and none in {suites_dir}/")
    for path in paths:
        suite = load_suite(path)
        for sc in suite.scenarios:
            sc.load_agent()
            sc.load_checks()
        check_suite_models(suite)
        if any(LOCAL in requested_models(suite=list(sc.models)) for sc in suite.scenarios):
            # A night would start the embedded model: say now if it is not installed.
            from evalrunner.endpoints._local_model import check_embedded_model

            check_embedded_model()
        rows = sum(len(sc.data.rows) for sc in suite.scenarios if sc.data is not None)
        data = f", {rows} dataset rows" if rows else ""
        count = len(suite.scenarios)
        click.echo(f"ok  {path}  ({count} scenario{'' if count == 1 else 's'}{data})")
