"""``evalrunner list``: suites and their scenarios."""

from __future__ import annotations

from pathlib import Path

import click

from evalrunner.cli import _options
from evalrunner.suite import find_suites, load_suite


@click.command("list")
@_options.suites_dir
def list_cmd(suites_dir: Path) -> None:
    """List suites and their scenarios."""
    found = find_suites(suites_dir)
    if not found:
        click.echo(f"no suites in {suites_dir}/")
        return
    for name, path in found.items():
        suite = load_suite(path)
        click.echo(f"{name}  ({path}, {len(suite.scenarios)} scenarios, runs {suite.spec.runs})")
        for sc in suite.scenarios:
            tags = f"  [{', '.join(sc.tags)}]" if sc.tags else ""
            click.echo(f"  {sc.id}{tags}  {sc.description}".rstrip())
